"""The file store and the store loader (cyborg_like/catalog/store.py)."""

import os
import uuid

import pytest

from cyborg_like.catalog import store
from cyborg_like.common import exception
from cyborg_like.conf import CONF


@pytest.fixture
def file_store(tmp_path):
    CONF.set_override('file_store_dir', str(tmp_path / 'images'),
                      group='catalog')
    try:
        yield store.load(CONF)
    finally:
        CONF.clear_override('file_store_dir', group='catalog')


def test_put_open_delete_round_trip(file_store):
    image = uuid.uuid4()
    location = file_store.put(image, iter([b'abc', b'def']), {})
    assert location.startswith(str(image))
    assert b''.join(file_store.open(location)) == b'abcdef'
    file_store.delete(location)
    with pytest.raises(exception.ImageDataNotFound):
        file_store.open(location)
    file_store.delete(location)     # twice is fine


def test_each_put_gets_its_own_location(file_store):
    image = uuid.uuid4()
    first = file_store.put(image, [b'one'], {})
    second = file_store.put(image, [b'two'], {})
    assert first != second
    assert b''.join(file_store.open(first)) == b'one'


def test_failed_put_leaves_nothing(file_store):
    def chunks():
        yield b'x' * 10
        raise exception.Invalid('client went away')

    with pytest.raises(exception.Invalid):
        file_store.put(uuid.uuid4(), chunks(), {})
    assert os.listdir(file_store.root) == []


def test_locations_are_names_not_paths(file_store):
    for bad in ('../etc/passwd', '/etc/passwd', '.hidden', ''):
        with pytest.raises(exception.ImageDataNotFound):
            file_store.open(bad)


def test_no_download_url_for_file_store(file_store):
    assert file_store.download_url('x') is None


def test_unknown_store_name_is_refused():
    with pytest.raises(exception.Invalid, match='nosuch'):
        store.load(CONF, 'nosuch')
