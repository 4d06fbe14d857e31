"""The dcgm-exporter series: its label names with its values, as the
nvidia_gpu agent reports them, and today's values for a device without
them (conductor/dcgm_metrics.py)."""

import pytest

from cyborg_like.conductor import dcgm_metrics

H100_UUID = 'GPU-8a3c5e1f-2b4d-4c6e-9f01-23456789abcd'
MIB = 1048576
GPU = {'type': 'GPU', 'hostname': 'h1', 'utilization': {}}


def _gpu(**fields):
    return dict(GPU, **fields)


def _samples(devices, holders=None):
    """[(name, labels, value)] of every sample."""
    return [(s.name, s.labels, s.value)
            for family in dcgm_metrics.families(devices, holders or {})
            for s in family.samples]


def _only(samples, name, **labels):
    found = [(ls, v) for n, ls, v in samples
             if n == name and set(labels.items()) <= set(ls.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_labels_are_what_the_agent_reported():
    h100 = _gpu(id=7, uuid='u-h100', model='NVIDIA H100 80GB HBM3',
                pci_address='0000:af:00.0',
                vendor_board_info={'uuid': H100_UUID, 'index': 2,
                                   'minor': 5, 'driver_version': '550.54.15'},
                utilization={'gpu_percent': 37, 'memory_percent': 12,
                             'temperature_c': 61, 'power_w': 70.5,
                             'last_xid': 79, 'ecc_uncorrected_volatile': 3,
                             'ecc_uncorrected_aggregate': 5,
                             'sm_clock_mhz': 1980, 'memory_clock_mhz': 2619})
    samples = _samples([h100], {7: [('proj-a', 'inst-1')]})
    labels, value = _only(samples, 'DCGM_FI_DEV_GPU_UTIL')
    assert value == 37
    assert labels == {
        'gpu': '2', 'UUID': H100_UUID, 'pci_bus_id': '00000000:AF:00.0',
        'device': 'nvidia5', 'modelName': 'NVIDIA H100 80GB HBM3',
        'GPU_I_PROFILE': '', 'GPU_I_ID': '', 'Hostname': 'h1',
        'DCGM_FI_DRIVER_VERSION': '550.54.15', 'device_uuid': 'u-h100',
        'project_id': 'proj-a'}
    for name, wanted in (('DCGM_FI_DEV_MEM_COPY_UTIL', 12),
                         ('DCGM_FI_DEV_GPU_TEMP', 61),
                         ('DCGM_FI_DEV_POWER_USAGE', 70.5),
                         ('DCGM_FI_DEV_XID_ERRORS', 79),
                         ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 3),
                         ('DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 5),
                         ('DCGM_FI_DEV_SM_CLOCK', 1980),
                         ('DCGM_FI_DEV_MEM_CLOCK', 2619)):
        assert _only(samples, name, UUID=H100_UUID)[1] == wanted
    # No memory reading: no framebuffer series (not a made-up zero).
    assert not [s for s in samples if s[0].startswith('DCGM_FI_DEV_FB_')]


def test_an_older_agent_keeps_the_place_on_the_host():
    # Two GPUs of one host without uuid/index/minor, and one reporting
    # only its index: gpu/device by PCI order, UUID our device uuid.
    devices = [
        _gpu(id=1, uuid='u-1', model='T4', pci_address='0000:3b:00.0',
             utilization={'gpu_percent': 10}),
        _gpu(id=2, uuid='u-2', model='T4', pci_address='0000:af:00.0',
             vendor_board_info={'index': 4, 'minor': None},
             utilization={'gpu_percent': 20}),
        _gpu(id=3, uuid='u-3', model='T4', pci_address='0000:d8:00.0',
             hostname='h2', vendor_board_info='not json',
             utilization={'gpu_percent': 30}),
        dict(GPU, id=4, uuid='u-fpga', type='FPGA', model='N3000',
             pci_address='0000:5e:00.0', utilization={'gpu_percent': 1})]
    samples = _samples(devices)
    first = _only(samples, 'DCGM_FI_DEV_GPU_UTIL', device_uuid='u-1')[0]
    assert (first['gpu'], first['device'], first['UUID'],
            first['project_id']) == ('0', 'nvidia0', 'u-1', '')
    second = _only(samples, 'DCGM_FI_DEV_GPU_UTIL', device_uuid='u-2')[0]
    assert (second['gpu'], second['device'], second['UUID']) == (
        '4', 'nvidia4', 'u-2')
    other_host = _only(samples, 'DCGM_FI_DEV_GPU_UTIL', device_uuid='u-3')[0]
    assert (other_host['gpu'], other_host['Hostname']) == ('0', 'h2')
    assert not [s for s in samples if s[1]['device_uuid'] == 'u-fpga']


def test_mig_instances_carry_gpu_i_labels():
    h100 = _gpu(id=7, uuid='u-h100', model='NVIDIA H100 80GB HBM3',
                pci_address='0000:af:00.0',
                vendor_board_info={'uuid': H100_UUID, 'index': 0,
                                   'minor': 3},
                utilization={
                    'gpu_percent': 50, 'memory_used_bytes': 1024 * MIB,
                    'memory_total_bytes': 81559 * MIB,
                    'mig_devices': {
                        'MIG-a': {'profile': '1g.10gb', 'gpu_instance_id': 9,
                                  'memory_used_bytes': 512 * MIB,
                                  'memory_total_bytes': 9856 * MIB},
                        'MIG-b': {'profile': '3g.40gb', 'gpu_instance_id': 2,
                                  'memory_used_bytes': 0,
                                  'memory_total_bytes': 40192 * MIB},
                        # An older agent's reading: no instance id.
                        'MIG-c': {'profile': '2g.20gb',
                                  'memory_used_bytes': 1}}})
    samples = _samples([h100], {7: [('p2', 'i2'), ('p1', 'i1')]})
    fb_used = {(ls['GPU_I_PROFILE'], ls['GPU_I_ID']): v
               for n, ls, v in samples if n == 'DCGM_FI_DEV_FB_USED'}
    assert fb_used == {('', ''): 1024, ('1g.10gb', '9'): 512,
                       ('3g.40gb', '2'): 0}
    labels, free = _only(samples, 'DCGM_FI_DEV_FB_FREE', GPU_I_ID='9')
    assert free == 9856 - 512
    # The instance is of its GPU: same UUID, gpu and device; the holders
    # of a partitioned GPU are listed in order.
    assert (labels['UUID'], labels['gpu'], labels['device'],
            labels['project_id']) == (H100_UUID, '0', 'nvidia3', 'p1,p2')
    # Utilization is the GPU's alone: NVML gives none per instance.
    assert [(ls['GPU_I_ID'], v) for n, ls, v in samples
            if n == 'DCGM_FI_DEV_GPU_UTIL'] == [('', 50)]


@pytest.mark.parametrize('address, bus_id', [
    ('0000:af:00.0', '00000000:AF:00.0'),
    ('10000:3b:1f.7', '00010000:3B:1F.7'),
    ('', ''),
    (None, ''),
    ('not-an-address', 'not-an-address')])
def test_pci_bus_id_as_nvml_writes_it(address, bus_id):
    assert dcgm_metrics.pci_bus_id(address) == bus_id
