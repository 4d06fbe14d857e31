"""The GPUs the fake NVML reports by default, and its data file format.

The format itself is described at the top of fake_nvml.c; render() writes
it from the dictionaries below (one key per line, "migs" as [mig] sections,
"errors" as error.<function> lines).
"""

H100_UUID = 'GPU-8a3c5e1f-2b4d-4c6e-9f01-23456789abcd'
A100_UUID = 'GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f'
H100_ADDRESS = '0000:af:00.0'
A100_ADDRESS = '0000:3b:00.0'
GIB = 1024 ** 3

SYSTEM = {'driver_version': '550.54.15', 'cuda_version': 12040}

# Values as nvidia-smi shows them on such cards. The H100 has MIG on with a
# 1g.10gb and a 3g.40gb instance; the A100 is MIG capable, MIG off.
GPUS = [
    {'name': 'NVIDIA H100 80GB HBM3', 'uuid': H100_UUID,
     'bus_id': '00000000:AF:00.0', 'pci_device_id': '0x233010DE',
     'pci_subsystem_id': '0x16C110DE', 'memory_total': 80 * GIB,
     'memory_reserved': 530 * 1024 ** 2, 'memory_used': 0,
     'numa_node': 1, 'minor_number': 3, 'mig_mode': 1,
     'max_mig_devices': 7,
     'temperature': 41, 'power_mw': 72000, 'ecc_uncorrected_volatile': 0,
     'remapped_rows': '0 0 0 0',
     'migs': [
         {'index': 0, 'name': 'NVIDIA H100 80GB HBM3 MIG 1g.10gb',
          'uuid': 'MIG-0f5c2a4e-1b3d-5e7f-9a1c-2b4d6e8f0a1c',
          'gpu_instance_id': 9, 'compute_instance_id': 0,
          'memory_total': 9856 * 1024 ** 2, 'memory_used': 0},
         {'index': 1, 'name': 'NVIDIA H100 80GB HBM3 MIG 3g.40gb',
          'uuid': 'MIG-7e9a1c3e-5f7b-5d9f-8b2d-4f6a8c0e2b4d',
          'gpu_instance_id': 2, 'compute_instance_id': 0,
          'memory_total': 40192 * 1024 ** 2, 'memory_used': 0}]},
    {'name': 'NVIDIA A100-SXM4-40GB', 'uuid': A100_UUID,
     'bus_id': '00000000:3B:00.0', 'pci_device_id': '0x20B010DE',
     'pci_subsystem_id': '0x134F10DE', 'memory_total': 40 * GIB,
     'memory_reserved': 400 * 1024 ** 2, 'memory_used': 4 * GIB,
     'mig_mode': 0, 'max_mig_devices': 7,
     'utilization_gpu': 37, 'utilization_memory': 12,
     'temperature': 35, 'power_mw': 61500, 'ecc_uncorrected_volatile': 0,
     'ecc_uncorrected_aggregate': 2, 'clock_sm': 1410, 'clock_mem': 1215,
     'retired_pages_pending': 0, 'remapped_rows': '0 0 0 0'},
]


def render(system, gpus):
    """The fake's data file (format: top of fake_nvml.c) for these GPUs."""
    lines = ['%s = %s' % item for item in system.items()]
    for gpu in gpus:
        lines += ['', '[gpu]'] + _keys(gpu)
        for mig in gpu.get('migs', []):
            lines += ['[mig]'] + _keys(mig)
    return '\n'.join(lines) + '\n'


def _keys(entry):
    lines = ['%s = %s' % (key, value) for key, value in entry.items()
             if key not in ('migs', 'errors')]
    return lines + ['error.%s = %s' % item
                    for item in entry.get('errors', {}).items()]
