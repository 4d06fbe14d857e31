"""Load NVML as the service does and print what it sees, as JSON.

{"devices": N, "driver_version": "...", "error": null} or, when NVML
cannot be loaded or initialised, {"devices": null, "error": "NAME"}.
Runs on the target with its python3 and nothing else (no pynvml).
"""

import ctypes
import json

# nvml.h return codes that tell the operator what to do.
ERRORS = {2: 'INVALID_ARGUMENT', 3: 'NOT_SUPPORTED', 9: 'DRIVER_NOT_LOADED',
          12: 'LIBRARY_NOT_FOUND', 17: 'OPERATING_SYSTEM',
          18: 'LIB_RM_VERSION_MISMATCH', 999: 'UNKNOWN'}


def _error(code):
    return ERRORS.get(code, 'NVML_ERROR_%d' % code)


def main():
    answer = {'devices': None, 'driver_version': None, 'error': None}
    try:
        lib = ctypes.CDLL('libnvidia-ml.so.1')
    except OSError:
        answer['error'] = 'LIBRARY_NOT_FOUND'
        return answer
    rc = lib.nvmlInit_v2()
    if rc:
        answer['error'] = _error(rc)
        return answer
    try:
        count = ctypes.c_uint()
        rc = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
        if rc:
            answer['error'] = _error(rc)
            return answer
        answer['devices'] = count.value
        version = ctypes.create_string_buffer(96)
        if not lib.nvmlSystemGetDriverVersion(version, 96):
            answer['driver_version'] = version.value.decode()
    finally:
        lib.nvmlShutdown()
    return answer


print(json.dumps(main()))
