"""An Ansible connection that runs every task inside a directory tree.

For the playbook tests only: the target is a Debian root made by
tools/make-debian-root.sh, named by the inventory host (or ansible_host).
Commands run as ``chroot ROOT /bin/sh -c CMD``; files are copied in and
out under ROOT. ansible-core has no chroot connection of its own and the
collection that has one is a large install; this is the part we need.
"""

import os
import shutil
import subprocess

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection import ConnectionBase

DOCUMENTATION = """
name: chroot_dir
short_description: Run tasks in a directory tree with chroot(8)
description:
  - Runs commands with chroot(8) in the root directory named by the host,
    and copies files into and out of that tree. Needs root on the
    controller.
author: cyborg_like developers
options:
  remote_addr:
    description: Absolute path of the root directory.
    default: inventory_hostname
    type: str
    vars:
      - name: inventory_hostname
      - name: ansible_host
"""


class Connection(ConnectionBase):

    transport = 'chroot_dir'
    # Modules go to the interpreter on stdin: no temporary files needed.
    has_pipelining = True
    default_user = 'root'

    def _connect(self):
        if not self._connected:
            root = self.get_option('remote_addr')
            if not os.path.isfile(os.path.join(root, 'bin', 'sh')):
                raise AnsibleConnectionFailure(
                    '%s is not a root directory (no bin/sh)' % root)
            self._root = root
            self._connected = True
        return self

    def _in_root(self, path):
        return os.path.join(self._root, path.lstrip('/'))

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        proc = subprocess.run(['chroot', self._root, '/bin/sh', '-c', cmd],
                              input=in_data, capture_output=True)
        return proc.returncode, proc.stdout, proc.stderr

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        shutil.copyfile(in_path, self._in_root(out_path))

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        shutil.copyfile(self._in_root(in_path), out_path)

    def close(self):
        self._connected = False
