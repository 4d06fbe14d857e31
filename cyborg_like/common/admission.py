"""Whether a deployable may be bound: the admission rules of a binding,
with no SQL (docs/design.md, "Binding").

db/arqs.py gathers the facts under the locks of the bind's transaction
(the deployable's and its device's rows) and asks ``refusal``; standalone
scheduling (db/scheduling.py) and leases (db/leases.py) filter their
candidates with ``unmet_by``. The rules live here, in common/, because
the database layer applies them inside its transactions and may not
import the conductor.
"""

import collections

from cyborg_like.common import exception
from cyborg_like.common import states

# What a bind knows of its deployable when it asks: ``programming`` (an
# operation unfinished on it), ``release_pending`` (a handle its agent has
# not confirmed released), ``latest`` (the device's drain and service
# state, read under its row lock), ``beside`` (None, or the deployable of
# the same device held the other way -- whole or in parts -- and how) and
# ``host_up`` (a recent heartbeat).
Facts = collections.namedtuple(
    'Facts', 'deployable device programming release_pending latest beside '
             'host_up')


def refusal(facts, group):
    """Raise why ``facts.deployable`` cannot serve profile ``group`` now
    (BindFailed, or ReleasePending: the caller may try again soon);
    nothing when it can."""
    deployable, device = facts.deployable, facts.device
    if facts.programming:
        raise exception.BindFailed(reason='Deployable %s is being '
                                          'programmed.' % deployable.uuid)
    if facts.release_pending:
        # Its agent may be erasing it: what it holds is not known yet.
        raise exception.ReleasePending(deployable=deployable.uuid)
    if device.status != 'enabled':
        raise exception.BindFailed(reason='Device %s is %s.' % (
            device.uuid, device.status))
    _check_drained(device, facts.latest)
    if deployable.num_accelerators < 1:
        raise exception.BindFailed(
            reason='Deployable %s offers no accelerators (its device is '
                   'partitioned).' % deployable.uuid)
    if facts.beside is not None:
        held, how = facts.beside
        raise exception.BindFailed(
            reason='Device %s is bound %s (deployable %s): it is handed '
                   'out whole or in parts, never both.' % (
                       device.uuid, how, held.uuid))
    if not facts.host_up:
        raise exception.BindFailed(
            reason='Host %s is down (no recent heartbeat).' % device.hostname)
    unmet = unmet_by(deployable.uuid, deployable.attributes, group)
    if unmet is not None:
        raise exception.BindFailed(reason=unmet)


def _check_drained(device, latest):
    if latest.drained_by is not None:
        raise exception.BindFailed(reason='Device %s is drained: %s' % (
            device.uuid, latest.drain_reason))
    if latest.service_state == states.DRAINED:
        raise exception.BindFailed(
            reason='Device %s is drained as unhealthy: %s' % (
                device.uuid, latest.health_reasons))


def unmet_by(deployable_uuid, attributes, group):
    """Why a deployable with ``attributes`` (Attribute rows) cannot serve
    profile ``group`` (its resource class, required and forbidden traits),
    or None when it can. Binds check it; standalone scheduling
    (db/scheduling.py) filters its candidates with it."""
    attributes = {a.key: a.value for a in attributes}
    traits = {v for k, v in attributes.items() if k.startswith('trait')}
    for key, value in group.items():
        name = key.split(':', 1)[1]
        if key.startswith('resources:') and attributes.get('rc') != name:
            return 'Deployable %s provides %s, not %s.' % (
                deployable_uuid, attributes.get('rc'), name)
        if key.startswith('trait:') and (value == 'required') != (
                name in traits):
            return 'Deployable %s does not satisfy trait %s=%s.' % (
                deployable_uuid, name, value)
    return None
