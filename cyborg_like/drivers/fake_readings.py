"""Readings of the fake driver that change over time, so that a demo (the
all-in-one), ``device health show`` and the dashboards have something to
show, and a test can tell one heartbeat's readings from the next.

A device entry of the inventory file may carry ``readings``: the values a
real driver would read (the keys of the nvidia_gpu and FPGA drivers:
``gpu_percent``, ``memory_percent``, ``memory_used_bytes``,
``memory_total_bytes``, ``temperature_c``, ``power_w``,
``board_power_w``...) and how they move:

- by default each number swings around its value by ``swing`` (a fraction,
  0.2) along a sine of ``period_seconds`` (60), each key at its own phase
  so they do not move in step; totals and limits (``FIXED``) stay put;
- with ``samples``, a list of mappings, the values are those of one sample
  after the other, each for ``step_seconds`` (10), on top of the fixed
  values beside them. A sample may set ``healthy`` and ``reasons`` too, to
  play a device falling ill and recovering.

Everything is a function of the time alone: the same time gives the same
readings in every process, and tests pass the time they want.
"""

import collections
import math
import zlib

DEFAULT_PERIOD = 60.0
DEFAULT_SWING = 0.2
DEFAULT_STEP = 10.0
# What a board does not change while it runs.
FIXED = frozenset({'memory_total_bytes', 'board_power_max_w'})
# Keys of ``readings`` that say how the values move, not values.
SETTINGS = frozenset({'period_seconds', 'swing', 'samples', 'step_seconds',
                      'healthy', 'reasons'})
# Percentages stay within 0-100 however far they swing.
PERCENT_SUFFIX = '_percent'

Reading = collections.namedtuple('Reading', 'healthy reasons utilization')


def at(readings, now):
    """The :class:`Reading` of a device's ``readings`` mapping at ``now``
    (seconds since the epoch); ``healthy`` and ``reasons`` are None when
    the readings do not say."""
    values = {key: value for key, value in readings.items()
              if key not in SETTINGS}
    health = readings
    if readings.get('samples'):
        sample = _sample(readings, now)
        values.update({key: value for key, value in sample.items()
                       if key not in SETTINGS})
        if 'healthy' in sample:
            health = sample
    else:
        values = _swung(values, readings, now)
    healthy = health.get('healthy')
    return Reading(None if healthy is None else bool(healthy),
                   None if healthy is None
                   else list(health.get('reasons') or []),
                   _bounded(values))


def _sample(readings, now):
    """The sample shown at ``now``: one after the other, each for
    ``step_seconds``."""
    samples = readings['samples']
    step = float(readings.get('step_seconds', DEFAULT_STEP))
    return dict(samples[int(now // step) % len(samples)])


def _swung(values, readings, now):
    """Each number but the FIXED ones, moved along its own sine."""
    period = float(readings.get('period_seconds', DEFAULT_PERIOD))
    swing = float(readings.get('swing', DEFAULT_SWING))
    return {key: _moved(value, swing * math.sin(
                2 * math.pi * (now / period + _phase(key))))
            if _is_number(value) and key not in FIXED else value
            for key, value in values.items()}


def _phase(key):
    """A fixed phase per key (0-1): the same in every process."""
    return zlib.crc32(key.encode()) / 2 ** 32


def _moved(value, fraction):
    moved = value * (1 + fraction)
    return int(round(moved)) if isinstance(value, int) else round(moved, 1)


def _bounded(values):
    """Percentages within 0-100, memory used within the total."""
    bounded = dict(values)
    for key, value in values.items():
        if key.endswith(PERCENT_SUFFIX) and _is_number(value):
            bounded[key] = min(100, max(0, value))
    total = bounded.get('memory_total_bytes')
    used = bounded.get('memory_used_bytes')
    if _is_number(total) and _is_number(used):
        bounded['memory_used_bytes'] = min(total, max(0, used))
    return bounded


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
