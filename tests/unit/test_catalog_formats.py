"""The header dispatcher (cyborg_like/catalog/formats/__init__.py)."""

import pytest

from cyborg_like.catalog import formats
from cyborg_like.common import exception


@pytest.fixture
def parsers():
    saved = formats.registered()
    yield formats._registry
    formats._registry.clear()
    formats._registry.update(saved)


def test_unknown_format_has_no_metadata(parsers):
    parsers.clear()
    assert formats.inspect(b'\x00' * 100) is None


def test_first_parser_that_knows_the_format_answers(parsers):
    parsers.clear()
    formats.register('never', lambda head: None)
    formats.register('magic', lambda head: {
        'kind': 'bitstream', 'interface_id': 'abc', 'board': None}
        if head.startswith(b'MAGIC') else None)
    assert formats.inspect(b'MAGIC...') == {'kind': 'bitstream',
                                            'interface_id': 'abc'}
    assert formats.inspect(b'OTHER') is None


def test_malformed_header_is_invalid_image(parsers):
    def broken(head):
        raise exception.InvalidImage(reason='truncated header')

    parsers.clear()
    formats.register('broken', broken)
    with pytest.raises(exception.InvalidImage) as caught:
        formats.inspect(b'...')
    assert caught.value.error_code == 'accel.bitstream.invalid_image'


def test_a_kind_outside_the_list_is_invalid(parsers):
    parsers.clear()
    formats.register('odd', lambda head: {'kind': 'bios'})
    with pytest.raises(exception.InvalidImage, match='bios'):
        formats.inspect(b'...')


def test_unknown_keys_are_a_parser_bug(parsers):
    parsers.clear()
    formats.register('sloppy', lambda head: {'colour': 'red'})
    with pytest.raises(ValueError, match='colour'):
        formats.inspect(b'...')
