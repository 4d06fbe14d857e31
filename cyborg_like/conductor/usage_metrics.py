"""The usage counter: device-seconds per project, resource class and
model since records began (issue 33; docs/metrics.md, docs/usage.md).

``cyborg_like_usage_device_seconds_total`` is a fleet series (the
exporting conductor serves it, with the others of conductor/fleet_metrics.py):
it is computed from the usage records at each snapshot, the closed ones
whole and the held ones up to now, plus what pruned records counted
(db/usage.py), so it is the same whichever conductor exports it and never
goes down. CloudKitty's Prometheus collector rates its ``increase`` over
each collect period; the API's ``GET /v2/usage`` answers the same figures
for any period.
"""

from oslo_log import log as logging
from prometheus_client import core

from cyborg_like.db import usage

LOG = logging.getLogger(__name__)

NAME = 'cyborg_like_usage_device_seconds'
LABELS = ('project_id', 'resource_class', 'model')
HELP = ('Device-seconds held by accelerator requests bound to devices, per '
        'project, resource class and device model, from the bind and '
        'unbind times the conductor records (GET /v2/usage for a period).')


def families():
    """The usage counter, as a metric family (two queries); none when
    the database cannot answer (the rest of the snapshot still serves).
    """
    try:
        totals = usage.counter_totals()
    except Exception as error:
        LOG.warning('Could not count usage for the metrics: %s', error)
        return []
    counter = core.CounterMetricFamily(NAME, HELP, labels=LABELS)
    for key, seconds in sorted(totals.items()):
        counter.add_metric(list(key), seconds)
    return [counter]
