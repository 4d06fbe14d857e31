"""What a built fake NVML library exports: its functions, read with nm,
and the layout of its structs, to compare with pynvml's."""

import ctypes
import shutil
import subprocess

import pytest


def exported_symbols(path):
    """The functions the library at ``path`` exports (nm -D)."""
    if shutil.which('nm') is None:
        pytest.fail('nm (binutils) is required to list the fake NVML\'s '
                    'symbols', pytrace=False)
    result = subprocess.run(['nm', '-D', '--defined-only', path],
                            capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in result.stdout.splitlines()}


def layout_mismatches(lib, struct, c_name):
    """Where the fake's C struct ``c_name`` is laid out unlike pynvml's
    ctypes ``struct``: ``[(field, fake's offset, pynvml's offset)]``, the
    size as field None; empty when they agree."""
    def layout(field=None):
        return lib.fake_nvml_layout(c_name.encode(),
                                    field.encode() if field else None)

    found = [(None, layout(), ctypes.sizeof(struct))]
    found += [(field, layout(field), getattr(struct, field).offset)
              for field, *_ in struct._fields_]
    return [row for row in found if row[1] != row[2]]
