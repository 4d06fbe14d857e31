"""The GBS and xclbin header parsers, on images built in their real
formats by tests/images.py."""

import json
import struct

import pytest

from cyborg_like.catalog import formats
from cyborg_like.catalog.formats import fdt
from cyborg_like.catalog.formats import gbs
from cyborg_like.catalog.formats import xclbin
from cyborg_like.common import exception
from tests import images

IFC = '9346116d-a52d-4ca8-9f87-e2d9e5b3a7c1'
IFC2 = '3fbc8296-873b-4f3b-8fac-272bf18b2899'
AFU = 'd8424dc4-a4a3-c413-f89e-433683f9040b'
XUUID = 'a1b2c3d4-0000-4000-8000-00000000beef'


# -- GBS ---------------------------------------------------------------------

def test_gbs_declares_its_interface_function_and_board():
    assert gbs.parse(images.gbs(IFC, AFU, name='nlb3')) == {
        'kind': 'bitstream', 'vendor': '0x8086', 'board': '0x0b30',
        'interface_id': IFC, 'function_name': 'nlb3', 'hardware_id': AFU}


def test_gbs_of_an_unknown_platform_names_no_board():
    assert gbs.parse(images.gbs(IFC, AFU, platform='mystery'))[
        'board'] is None


def test_gbs_interface_in_any_spelling_is_reported_dashed():
    head = images.gbs(IFC.replace('-', '').upper(), AFU)
    assert gbs.parse(head)['interface_id'] == IFC


@pytest.mark.parametrize('version', [640, 650])
def test_gbs_old_packager_versions_alias_version_1(version):
    assert gbs.parse(images.gbs(IFC, AFU, version=version))[
        'interface_id'] == IFC


def test_signed_gbs_is_parsed_behind_its_authentication_blocks():
    head = images.signed(images.gbs(IFC, AFU), images.SIGNED_GBS)
    assert gbs.parse(head)['interface_id'] == IFC


@pytest.mark.parametrize('content_type,name', [
    (images.SIGNED_FIM, 'fim'), (images.SIGNED_BMC, 'bmc')])
def test_signed_fim_and_bmc_images_are_firmware(content_type, name):
    head = images.signed(b'\x5a' * 4096, content_type)
    assert gbs.parse(head) == {'kind': 'firmware', 'vendor': '0x8086',
                               'function_name': name}


def test_other_formats_are_not_gbs():
    assert gbs.parse(images.xclbin(IFC)) is None
    assert gbs.parse(b'') is None
    assert gbs.parse(b'\x7fELF' + b'\0' * 100) is None


def _gbs_error(head):
    with pytest.raises(exception.InvalidImage) as raised:
        gbs.parse(head)
    return str(raised.value)


def test_gbs_truncated_header():
    assert 'shorter than the 20-byte header' in _gbs_error(
        images.GBS_GUID + b'\1\0')


def test_gbs_metadata_length_past_the_end():
    head = images.GBS_GUID + struct.pack('<I', 500) + b'{}'
    assert 'runs past the end' in _gbs_error(head)


@pytest.mark.parametrize('length', [0, gbs.MAX_METADATA + 1])
def test_gbs_metadata_length_out_of_range(length):
    head = images.GBS_GUID + struct.pack('<I', length) + b' ' * 10
    assert 'out of range' in _gbs_error(head)


def test_gbs_metadata_not_json():
    assert 'not JSON' in _gbs_error(images.gbs(IFC, AFU,
                                               metadata=b'{"version": 1,'))


def test_gbs_metadata_not_an_object():
    assert 'not a JSON object' in _gbs_error(
        images.gbs(IFC, AFU, metadata=b'[1, 2]'))


@pytest.mark.parametrize('version', [2, '1', True, None])
def test_gbs_unsupported_metadata_version(version):
    assert 'unsupported metadata version' in _gbs_error(
        images.gbs(IFC, AFU, version=version))


def test_gbs_without_afu_image():
    raw = json.dumps({'version': 1}).encode()
    assert 'no "afu-image"' in _gbs_error(images.gbs(IFC, AFU,
                                                     metadata=raw))


def test_gbs_wrong_magic_no():
    assert 'magic-no 42' in _gbs_error(images.gbs(IFC, AFU, magic=42))


@pytest.mark.parametrize('interface', ['not-a-uuid', None, 12])
def test_gbs_interface_not_a_uuid(interface):
    head = images.gbs(IFC, AFU, **{'interface-uuid': interface})
    assert 'interface-uuid' in _gbs_error(head)


def test_signed_image_shorter_than_its_blocks():
    head = images.signed(b'', images.SIGNED_GBS)[:600]
    assert 'authentication blocks' in _gbs_error(head)


def test_signed_as_gbs_without_a_gbs_inside():
    head = images.signed(b'\0' * 64, images.SIGNED_GBS)
    assert 'GBS GUID is missing' in _gbs_error(head)


def test_signed_image_of_unknown_content_type():
    assert 'unknown content type 7' in _gbs_error(
        images.signed(b'\0' * 64, 7))


# -- xclbin ------------------------------------------------------------------

def test_xclbin_names_its_interface_in_the_header():
    head = images.xclbin(IFC2, XUUID, sections=[
        (images.IP_LAYOUT, 'ip_layout',
         images.ip_layout('krnl_vadd:krnl_vadd_1')),
        (images.BITSTREAM, 'ocl', b'\xaa' * 333)])
    assert xclbin.parse(head) == {
        'kind': 'bitstream', 'vendor': '0x10ee', 'board': '0x5004',
        'interface_id': IFC2, 'function_name': 'krnl_vadd',
        'hardware_id': XUUID}


def test_xclbin_interface_from_partition_metadata_when_header_has_none():
    head = images.xclbin(None, XUUID, sections=[
        (images.PARTITION_METADATA, 'partition_metadata',
         images.partition_metadata(IFC2, IFC))])
    assert xclbin.parse(head)['interface_id'] == IFC2


def test_flat_xclbin_names_no_interface():
    head = images.xclbin(None, XUUID, vbnv='xilinx_u200_xdma_201830_2',
                         sections=[(images.BITSTREAM, 'flat', b'\1' * 64)])
    parsed = xclbin.parse(head)
    assert (parsed['kind'], parsed['interface_id'], parsed['board']) == (
        'bitstream', None, '0x5000')


def test_xclbin_with_a_flash_image_is_firmware():
    head = images.xclbin(None, XUUID, vbnv='xilinx_u250_gen3x16_base_3',
                         sections=[
                             (images.PARTITION_METADATA, 'pm',
                              images.partition_metadata(IFC2)),
                             (images.MCS, 'mcs', b'\xff' * 128)])
    parsed = xclbin.parse(head)
    assert (parsed['kind'], parsed['interface_id'], parsed['board']) == (
        'firmware', None, '0x5004')


def test_sections_past_the_head_are_not_read():
    head = images.xclbin(None, XUUID, sections=[
        (images.BITSTREAM, 'ocl', b'\xaa' * 4096),
        (images.PARTITION_METADATA, 'pm', images.partition_metadata(IFC2))])
    assert xclbin.parse(head[:4096])['interface_id'] is None
    assert xclbin.parse(head)['interface_id'] == IFC2


def test_other_formats_are_not_xclbin():
    assert xclbin.parse(images.gbs(IFC, AFU)) is None
    assert xclbin.parse(b'xclbin0\0' + b'\0' * 600) is None


def _xclbin_error(head):
    with pytest.raises(exception.InvalidImage) as raised:
        xclbin.parse(head)
    return str(raised.value)


def test_xclbin_truncated_header():
    assert 'shorter than its 456-byte header' in _xclbin_error(
        images.xclbin(IFC2)[:400])


def test_xclbin_section_table_past_the_head():
    head = images.xclbin(IFC2, num_sections=50)
    assert 'section table of 50 entries' in _xclbin_error(head)


def test_xclbin_too_many_sections():
    head = images.xclbin(IFC2, num_sections=0x10001)
    assert 'more than XRT accepts' in _xclbin_error(head)


def test_xclbin_section_past_the_declared_length():
    head = images.xclbin(IFC2, sections=[(images.BITSTREAM, 'ocl',
                                          b'\1' * 256)], length=600)
    assert 'past the file length 600' in _xclbin_error(head)


def test_xclbin_header_length_shorter_than_its_headers():
    assert 'shorter than its headers' in _xclbin_error(
        images.xclbin(IFC2, length=100))


def test_xclbin_corrupt_partition_metadata():
    blob = bytearray(images.partition_metadata(IFC2))
    blob[0:4] = b'\0\0\0\0'
    head = images.xclbin(None, sections=[(images.PARTITION_METADATA, 'pm',
                                          bytes(blob))])
    assert 'bad device tree magic' in _xclbin_error(head)


def test_xclbin_partition_metadata_interface_not_a_uuid():
    blob = images.fdt({'': {}, 'interfaces': {},
                       'interfaces/@0': {'interface_uuid': 'zzz'}})
    head = images.xclbin(None, sections=[(images.PARTITION_METADATA, 'pm',
                                          blob)])
    assert "interface_uuid 'zzz'" in _xclbin_error(head)


def test_xclbin_ip_layout_overflowing_its_section():
    layout = struct.pack('<i4x', 9) + b'\0' * 80
    head = images.xclbin(IFC2, sections=[(images.IP_LAYOUT, 'ip', layout)])
    assert 'IP_LAYOUT of 9 entries' in _xclbin_error(head)


# -- the device tree reader --------------------------------------------------

def test_fdt_lists_properties_with_their_paths():
    blob = images.fdt({'': {'model': 'x'}, 'a': {'p': 'one'},
                       'a/b': {'q': 'two'}})
    assert list(fdt.properties(blob)) == [
        ('/', 'model', b'x\0'), ('/a', 'p', b'one\0'),
        ('/a/b', 'q', b'two\0')]


def test_fdt_truncated_blob():
    blob = images.fdt({'': {'model': 'x'}})
    with pytest.raises(fdt.FDTError, match='run past'):
        list(fdt.properties(blob[:-4]))


# -- through the registry --------------------------------------------------

def test_inspect_finds_the_parser_of_each_format():
    assert formats.inspect(images.gbs(IFC, AFU))['interface_id'] == IFC
    assert formats.inspect(images.xclbin(IFC2, XUUID))[
        'hardware_id'] == XUUID
    assert formats.inspect(b'plain data, no header') is None


def test_parsers_need_no_more_than_the_head_the_api_reads():
    assert max(gbs.HEAD_SIZE, xclbin.HEAD_SIZE) <= formats.HEAD_SIZE
    assert set(formats.registered()) >= {'gbs', 'xclbin'}


def test_registry_reports_a_malformed_header():
    with pytest.raises(exception.InvalidImage, match='magic-no'):
        formats.inspect(images.gbs(IFC, AFU, magic=1))
