"""The Xid class table of the nvidia_gpu driver and how fatal events are
held (drivers/nvidia_gpu/events.py)."""

import os
import re

import pytest

from cyborg_like.drivers.nvidia_gpu import events

DOCS = os.path.join(os.path.dirname(__file__), '..', '..', 'docs',
                    'health.md')


@pytest.mark.parametrize('xid', [48, 63, 64, 74, 79, 92, 94, 95, 119, 120])
def test_hardware_xids_are_fatal(xid):
    assert events.classify(xid).fatal


@pytest.mark.parametrize('xid', [13, 31, 43, 45])
def test_application_xids_are_informational(xid):
    assert not events.classify(xid).fatal


def test_an_unknown_xid_is_informational():
    assert events.classify(9999) is events.UNKNOWN
    assert not events.UNKNOWN.fatal


def test_the_docs_table_is_the_code_table():
    with open(DOCS) as f:
        text = f.read()
    section = text.split('## GPU Xid classes', 1)[1].split('\n## ', 1)[0]
    rows = re.findall(r'^\| (\d+) \| (fatal|informational) \| ([^|]+) \|',
                      section, re.M)
    assert {int(n): (c == 'fatal', m.strip()) for n, c, m in rows} == {
        n: (k.fatal, k.meaning) for n, k in events.XID_CLASSES.items()}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_fatal_xid_is_held_then_runs_out():
    clock = Clock()
    latch = events.Latch(600, clock=clock, wall=lambda: 0)

    assert latch.xid('GPU-1', 79) is True
    assert latch.reasons('GPU-1') == [
        'Xid 79 (GPU has fallen off the bus) at 1970-01-01T00:00:00Z']
    assert latch.reasons('GPU-2') == []
    clock.now += 599
    assert not latch.expire()
    assert latch.reasons('GPU-1')
    clock.now += 1
    assert latch.expire()
    assert latch.reasons('GPU-1') == []
    assert latch.last_xid('GPU-1') == {
        'xid': 79, 'meaning': 'GPU has fallen off the bus', 'fatal': True,
        'at': '1970-01-01T00:00:00Z'}


def test_a_storm_of_one_xid_is_one_reason_whose_hold_restarts():
    clock = Clock()
    latch = events.Latch(10, clock=clock, wall=lambda: 0)
    for _ in range(50):
        latch.xid('GPU-1', 74)
        clock.now += 5
    assert len(latch.reasons('GPU-1')) == 1
    latch.double_bit_ecc('GPU-1')
    assert latch.reasons('GPU-1')[-1] == \
        'double-bit ECC error at 1970-01-01T00:00:00Z'


def test_an_informational_xid_is_recorded_not_held():
    latch = events.Latch(600, wall=lambda: 0)
    assert latch.xid('GPU-1', 13) is False
    assert latch.reasons('GPU-1') == []
    assert latch.last_xid('GPU-1')['xid'] == 13
    assert latch.last_xid('GPU-1')['fatal'] is False


def test_no_hold_keeps_nothing():
    latch = events.Latch(0)
    assert latch.xid('GPU-1', 79) is False
    assert latch.reasons('GPU-1') == []
    assert latch.last_xid('GPU-1')['xid'] == 79
