"""Small .deb packages standing in for the vendor driver packages.

Built with dpkg-deb from a directory tree; each ships the vendor tool the
verify playbooks run (fake_tools/) with the data it reports, so a package
version and the devices seen come from what is installed in the target.
"""

import hashlib
import json
import os
import shutil
import subprocess

from tests.hardware.nvml import devices as nvml_devices

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, 'fake_tools')
# Inside the target, where the fake NVML reads its devices (the tests pass
# it as FAKE_NVML_DATA; fake_nvml.c reads that variable).
NVML_DATA = '/usr/share/cyborg-like-fake/nvml.conf'

UNIT = """[Unit]
Description=%s (cyborg_like test stand-in)

[Service]
ExecStart=/bin/true

[Install]
WantedBy=multi-user.target
"""


def arch():
    return subprocess.run(['dpkg', '--print-architecture'], check=True,
                          capture_output=True, text=True).stdout.strip()


def multiarch():
    return subprocess.run(['dpkg-architecture', '-qDEB_HOST_MULTIARCH'],
                          capture_output=True, text=True).stdout.strip() \
        or 'x86_64-linux-gnu'


def build(out_dir, package, version, files, postinst=None):
    """A .deb of ``files`` ({path: (bytes or source file, mode)})."""
    tree = os.path.join(out_dir, '%s_%s.tree' % (package, version))
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(os.path.join(tree, 'DEBIAN'))
    for path, (content, mode) in files.items():
        dest = os.path.join(tree, path.lstrip('/'))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if isinstance(content, bytes):
            with open(dest, 'wb') as f:
                f.write(content)
        else:
            shutil.copyfile(content, dest)
        os.chmod(dest, mode)
    control = ('Package: %s\nVersion: %s\nArchitecture: %s\n'
               'Maintainer: cyborg_like tests <tests@example.invalid>\n'
               'Description: stand-in for %s (cyborg_like tests)\n'
               % (package, version, arch(), package))
    _write(os.path.join(tree, 'DEBIAN', 'control'), control, 0o644)
    if postinst:
        _write(os.path.join(tree, 'DEBIAN', 'postinst'),
               '#!/bin/sh\nset -e\n' + postinst, 0o755)
    deb = os.path.join(out_dir, '%s_%s_%s.deb' % (package, version, arch()))
    subprocess.run(['dpkg-deb', '--root-owner-group', '--build', tree, deb],
                   check=True, capture_output=True)
    shutil.rmtree(tree)
    return deb


def nvidia_driver(out_dir, version, nvml_lib, gpus=2):
    """nvidia-driver: the fake NVML, nvidia-smi and nvidia-persistenced;
    NVML reports the package's upstream version and ``gpus`` GPUs."""
    system = dict(nvml_devices.SYSTEM, driver_version=upstream(version))
    data = nvml_devices.render(system, nvml_devices.GPUS[:gpus])
    lib_dir = '/usr/lib/%s' % multiarch()
    return build(out_dir, 'nvidia-driver', version, {
        lib_dir + '/libnvidia-ml.so.1': (nvml_lib, 0o644),
        NVML_DATA: (data.encode(), 0o644),
        '/usr/bin/nvidia-smi': (os.path.join(TOOLS, 'nvidia-smi'), 0o755),
        '/lib/systemd/system/nvidia-persistenced.service': (
            (UNIT % 'NVIDIA persistence daemon').encode(), 0o644),
    }, postinst='ldconfig\n')


def nvidia_vgpu_manager(out_dir, version):
    return build(out_dir, 'nvidia-vgpu-manager', version, {
        '/lib/systemd/system/nvidia-vgpu-mgr.service': (
            (UNIT % 'NVIDIA vGPU manager').encode(), 0o644),
    })


def opae(out_dir, version, cards=2):
    data = {'version': upstream(version), 'cards': [
        {'object_id': '0xF%06X' % i, 'address': '0000:%02x:00.0' % (0x5e + i),
         'device_id': '0x0B30'} for i in range(cards)]}
    return build(out_dir, 'opae', version, {
        '/usr/bin/fpgainfo': (os.path.join(TOOLS, 'fpgainfo'), 0o755),
        '/usr/share/cyborg-like-fake/opae.json': (
            json.dumps(data).encode(), 0o644),
    })


def xrt(out_dir, version, cards=1):
    data = {'version': upstream(version), 'cards': [
        {'address': '0000:%02x:00.0' % (0x3b + i),
         'shell': 'xilinx_u250_gen3x16_base_4'} for i in range(cards)]}
    return build(out_dir, 'xrt', version, {
        '/opt/xilinx/xrt/bin/xbmgmt': (os.path.join(TOOLS, 'xbmgmt'), 0o755),
        '/usr/share/cyborg-like-fake/xrt.json': (
            json.dumps(data).encode(), 0o644),
    })


def write_packages_index(repo):
    """Packages and Release of a flat repository ("deb file:REPO ./")
    holding the .deb files in ``repo``, as apt-ftparchive would."""
    stanzas = []
    for name in sorted(os.listdir(repo)):
        if not name.endswith('.deb'):
            continue
        path = os.path.join(repo, name)
        control = subprocess.run(['dpkg-deb', '--field', path], check=True,
                                 capture_output=True, text=True).stdout
        with open(path, 'rb') as f:
            content = f.read()
        stanzas.append(control.rstrip('\n') + '\nFilename: ./%s\nSize: %d\n'
                       'SHA256: %s\n' % (name, len(content),
                                         hashlib.sha256(content).hexdigest()))
    index = '\n'.join(stanzas).encode()
    with open(os.path.join(repo, 'Packages'), 'wb') as f:
        f.write(index)
    release = ('Origin: cyborg_like tests\nLabel: cyborg_like tests\n'
               'Architectures: %s\nSHA256:\n %s %d Packages\n'
               % (arch(), hashlib.sha256(index).hexdigest(), len(index)))
    _write(os.path.join(repo, 'Release'), release, 0o644)


def upstream(version):
    """The upstream part of a Debian version (no epoch, no revision)."""
    return version.split(':', 1)[-1].rsplit('-', 1)[0]


def _write(path, text, mode):
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)
