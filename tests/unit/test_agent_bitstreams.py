"""The agent finds bitstreams by name inside its directory, never by path."""

import pytest

from cyborg_like.agent import bitstreams
from cyborg_like.common import exception


@pytest.fixture
def bitstream_dir(tmp_path):
    (tmp_path / 'bs-1.gbs').write_bytes(b'image')
    (tmp_path / 'bs-1.gbs\n').write_bytes(b'another file')
    return str(tmp_path)


def test_a_name_in_the_directory_is_found(bitstream_dir):
    assert bitstreams.locate(bitstream_dir, 'bs-1.gbs') == (
        bitstream_dir + '/bs-1.gbs')


@pytest.mark.parametrize('bitstream_id', [
    '../bs-1.gbs', '/etc/passwd', '.hidden', '',
    'bs-1.gbs\n',       # `$` would let a trailing newline through
    'x' * 256,
])
def test_anything_but_a_plain_name_is_refused(bitstream_dir, bitstream_id):
    with pytest.raises(exception.Invalid):
        bitstreams.locate(bitstream_dir, bitstream_id)


def test_a_missing_image_is_a_driver_error(bitstream_dir):
    with pytest.raises(exception.DriverError, match='not in'):
        bitstreams.locate(bitstream_dir, 'bs-2.gbs')
