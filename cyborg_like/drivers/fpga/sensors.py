"""Reading a card's hwmon sensors and judging them against the card's own
thresholds.

The attribute names and units are the kernel's hwmon ABI
(Documentation/hwmon/sysfs-interface.rst): ``<kind><N>_input`` with its
``_label``, ``_max`` and ``_crit``; temperatures in millidegrees Celsius,
voltages in millivolts, currents in milliamperes, power in microwatts. A
sensor the firmware cannot read at the moment (a BMC answers 0xdeadbeef
for an empty QSFP cage, which intel-m10-bmc-hwmon turns into ENODATA)
reads as absent and is skipped.

A reading at or above its ``_crit`` makes the card unhealthy; above its
``_max`` (but under ``_crit``) it is a warning only: the card keeps working,
an operator should look.
"""

import dataclasses
import re

from cyborg_like.drivers.fpga import driver
from cyborg_like.drivers import pci

# kind -> (unit shown, divisor from the hwmon ABI's unit)
UNITS = {'temp': ('°C', 1000), 'in': ('V', 1000), 'curr': ('A', 1000),
         'power': ('W', 1000000)}
_INPUT = re.compile(r'^(temp|in|curr|power)(\d+)_input$')


@dataclasses.dataclass
class Sensor:
    kind: str                   # temp, in, curr, power
    label: str
    value: float
    max: float | None = None
    crit: float | None = None

    @property
    def unit(self):
        return UNITS[self.kind][0]


def name(hwmon):
    """The hwmon device's ``name``, with '-' as '_' (the hwmon core
    refuses dashes: ``n3000bmc-hwmon`` is registered as
    ``n3000bmc_hwmon``)."""
    return (pci.attribute(hwmon, 'name') or '').replace('-', '_')


def read(hwmon):
    """The sensors of one hwmon device, in channel order."""
    found = []
    channels = []
    for attribute in hwmon.attributes.available_attributes:
        match = _INPUT.match(attribute)
        if match:
            channels.append((match.group(1), int(match.group(2))))
    for kind, number in sorted(channels):
        prefix = '%s%d' % (kind, number)
        value = _value(hwmon, prefix + '_input', kind)
        if value is None:
            continue
        found.append(Sensor(
            kind=kind, value=value,
            label=(pci.attribute(hwmon, prefix + '_label')
                   or '%s %s' % (name(hwmon), prefix)),
            max=_value(hwmon, prefix + '_max', kind),
            crit=_value(hwmon, prefix + '_crit', kind)))
    return found


def _value(hwmon, attribute, kind):
    text = pci.attribute(hwmon, attribute)
    try:
        return int(text) / UNITS[kind][1] if text else None
    except ValueError:
        return None


def judge(sensors, source):
    """(reasons, warnings) for ``sensors`` read from ``source`` (words
    naming where they come from, e.g. 'BMC sensor')."""
    reasons, warnings = [], []
    for sensor in sensors:
        if sensor.crit is not None and sensor.value >= sensor.crit:
            reasons.append('%s %s reads %s, at or above its critical '
                           'threshold %s' % (source, sensor.label,
                                             _show(sensor, sensor.value),
                                             _show(sensor, sensor.crit)))
        elif sensor.max is not None and sensor.value > sensor.max:
            warnings.append('%s %s reads %s, above its maximum %s'
                            % (source, sensor.label,
                               _show(sensor, sensor.value),
                               _show(sensor, sensor.max)))
    return reasons, warnings


def _show(sensor, value):
    return '%g %s' % (value, sensor.unit)


def hwmons(device):
    """All hwmon devices below ``device``, in natural order."""
    return driver.children(device, r'^hwmon\d+$')
