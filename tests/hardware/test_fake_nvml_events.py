"""Events in the fake NVML (tests/hardware/nvml/fake_nvml.c), driven through
the real pynvml: an event appended to the events file by any process
reaches a blocked nvmlEventSetWait_v2 once per registered set; nothing
within the timeout is NVML_ERROR_TIMEOUT. The cyborg_like driver is not
involved here."""

import ctypes
import subprocess
import threading
import time

import pynvml
import pytest

from harness.infra import wait_for
from tests.hardware.nvml.devices import A100_UUID
from tests.hardware.nvml.devices import H100_UUID

pytest_plugins = ('tests.hardware.nvml.fixtures',)

XID = pynvml.nvmlEventTypeXidCriticalError
DBE = pynvml.nvmlEventTypeDoubleBitEccError
SBE = pynvml.nvmlEventTypeSingleBitEccError


@pytest.fixture
def nvml(fake_nvml):
    pynvml.nvmlInit()
    yield
    pynvml.nvmlShutdown()


def handle_of(uuid):
    return pynvml.nvmlDeviceGetHandleByUUID(uuid.encode())


def key(handle):
    return ctypes.cast(handle, ctypes.c_void_p).value


def watching(uuid, types=XID | DBE):
    events = pynvml.nvmlEventSetCreate()
    pynvml.nvmlDeviceRegisterEvents(handle_of(uuid), types, events)
    return events


def test_nothing_within_the_timeout_is_a_timeout(nvml):
    events = watching(A100_UUID)
    started = time.monotonic()
    with pytest.raises(pynvml.NVMLError_Timeout):
        pynvml.nvmlEventSetWait(events, 150)
    assert 0.14 <= time.monotonic() - started < 2
    pynvml.nvmlEventSetFree(events)


def test_an_event_from_another_process_ends_a_blocked_wait(nvml, fake_nvml):
    events = watching(A100_UUID)
    got = {}

    def wait():
        got['event'] = pynvml.nvmlEventSetWait(events, 10000)
    polls = fake_nvml.event_polls()
    waiter = threading.Thread(target=wait)
    waiter.start()
    # Blocked: it looked and found nothing (no waiting on time).
    wait_for(lambda: fake_nvml.event_polls() > polls, timeout=5,
             interval=0.01, message='the wait never looked for an event')
    assert 'event' not in got
    subprocess.run(['sh', '-c', 'echo "xid %s 79" >> %s'
                    % (A100_UUID, fake_nvml.events_path)], check=True)
    waiter.join(5)

    # The event, long before the wait's 10 s timeout would have answered.
    event = got['event']
    assert (event.eventType, event.eventData) == (XID, 79)
    assert key(event.device) == key(handle_of(A100_UUID))
    assert event.gpuInstanceId == 0xFFFFFFFF        # not a MIG device's
    pynvml.nvmlEventSetFree(events)


def test_each_set_gets_each_event_once(nvml, fake_nvml):
    first, second = watching(A100_UUID), watching(A100_UUID)
    fake_nvml.inject('xid', A100_UUID, 48)
    fake_nvml.inject('dbe', A100_UUID)

    for events in (first, second):
        xid = pynvml.nvmlEventSetWait(events, 1000)
        dbe = pynvml.nvmlEventSetWait(events, 1000)
        assert [(e.eventType, e.eventData) for e in (xid, dbe)] == [
            (XID, 48), (DBE, 0)]
        with pytest.raises(pynvml.NVMLError_Timeout):
            pynvml.nvmlEventSetWait(events, 50)
        pynvml.nvmlEventSetFree(events)


def test_a_set_gets_only_what_it_registered_after_it_was_made(nvml,
                                                              fake_nvml):
    fake_nvml.inject('xid', A100_UUID, 79)          # before the set
    events = watching(A100_UUID, XID)
    fake_nvml.inject('dbe', A100_UUID)              # a type not asked for
    fake_nvml.inject('xid', H100_UUID, 74)          # a GPU not registered
    fake_nvml.inject('xid', 'GPU-not-on-this-host', 74)
    fake_nvml.inject('xid', A100_UUID, 31, 3, 0)    # of a GPU instance

    event = pynvml.nvmlEventSetWait(events, 1000)
    assert (event.eventData, event.gpuInstanceId,
            event.computeInstanceId) == (31, 3, 0)
    with pytest.raises(pynvml.NVMLError_Timeout):
        pynvml.nvmlEventSetWait(events, 50)
    pynvml.nvmlEventSetFree(events)


def test_supported_event_types_follow_ecc(nvml, fake_nvml):
    a100 = handle_of(A100_UUID)
    assert pynvml.nvmlDeviceGetSupportedEventTypes(a100) & (XID | DBE | SBE) \
        == XID | DBE | SBE
    pynvml.nvmlShutdown()
    del fake_nvml.gpu(A100_UUID)['ecc_uncorrected_volatile']    # ECC off
    fake_nvml.gpu(H100_UUID)['event_types'] = '0x0'
    fake_nvml.write()
    pynvml.nvmlInit()

    a100 = handle_of(A100_UUID)
    assert pynvml.nvmlDeviceGetSupportedEventTypes(a100) & (DBE | SBE) == 0
    events = pynvml.nvmlEventSetCreate()
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceRegisterEvents(a100, XID | DBE, events)
    pynvml.nvmlDeviceRegisterEvents(a100, XID, events)
    assert pynvml.nvmlDeviceGetSupportedEventTypes(handle_of(H100_UUID)) == 0
    pynvml.nvmlEventSetFree(events)


def test_a_driver_without_events_says_not_supported(fake_nvml):
    fake_nvml.gpu(A100_UUID)['errors'] = {
        'nvmlDeviceRegisterEvents': 'NOT_SUPPORTED'}
    fake_nvml.write()
    pynvml.nvmlInit()
    try:
        events = pynvml.nvmlEventSetCreate()
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceRegisterEvents(handle_of(A100_UUID), XID,
                                            events)
        pynvml.nvmlEventSetFree(events)
    finally:
        pynvml.nvmlShutdown()


def test_a_line_it_cannot_use_fails_the_wait(nvml, fake_nvml):
    events = watching(A100_UUID)
    fake_nvml.inject('xdi', A100_UUID, 79)
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlEventSetWait(events, 1000)
    pynvml.nvmlEventSetFree(events)


def test_sets_are_gone_after_the_last_shutdown(fake_nvml):
    pynvml.nvmlInit()
    events = pynvml.nvmlEventSetCreate()
    pynvml.nvmlShutdown()
    pynvml.nvmlInit()
    try:
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlEventSetWait(events, 10)
    finally:
        pynvml.nvmlShutdown()


def test_event_data_layout_matches_pynvml(fake_nvml_lib):
    struct = pynvml.c_nvmlEventData_t

    def layout(field=None):
        return fake_nvml_lib.fake_nvml_layout(
            b'nvmlEventData_t', field.encode() if field else None)

    assert layout() == ctypes.sizeof(struct)
    for field, *_ in struct._fields_:
        assert layout(field) == getattr(struct, field).offset, field
