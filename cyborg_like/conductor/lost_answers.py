"""The answer of a write that was done but whose answer was neither sent
nor kept: its conductor died between the COMMIT and keeping the answer
(tests/cluster, a conductor SIGKILLed with a RabbitMQ node). The API,
asking the change log (rpcapi ``_answer_kept``), would answer 503 for a
write that was carried out; for the writes whose answer the change log
can give again, it gets that answer instead.

An answer is made again only where it is the same as the one that was
lost: calls that answer nothing (their HTTP answer is a 202 or a 204),
the ARQs a create made, read back by the uuids the change log names (all
of them, else none), and a device profile made (never changed after).
Leases and rollouts are not: their answer is their state at creation,
which has moved on since.

The same answers serve a call the broker delivered twice (``of_call``,
asked by common/rpc.py DropsLateCalls): its second delivery is answered
from the change log instead of carried out again.
"""

from oslo_utils import uuidutils

from cyborg_like.common import exception
from cyborg_like.conductor import rpc_calls
from cyborg_like.db import arqs
from cyborg_like.db import changes
from cyborg_like.db import device_profiles

# Calls whose answer is nothing (manager.py: they return None).
ANSWER_NOTHING = frozenset(('bind_arqs', 'unbind_arqs', 'delete_arqs'))


def completed(found, method):
    """What db/changes.py found of a call of ``method``, with its answer
    made again where it was done and its answer not kept."""
    target = found.pop('target', None)
    if target is not None:
        found.update(again(method, target))
    return found


def of_call(call_id, method):
    """Whether call ``call_id`` of ``method`` was carried out before (its
    message delivered again: common/rpc.py DropsLateCalls): None, not (a
    read is never looked up); else {'reply': answer}, or {} where its
    answer cannot be given."""
    if method in rpc_calls.READS:
        return None
    found = completed(changes.reply_of_call(call_id), method)
    if not found['done']:
        return None
    return {'reply': found['reply']} if 'reply' in found else {}


def again(method, target):
    """``{'reply': answer}`` for ``method`` done with change-log
    ``target`` (the ids it names), or {} where it cannot be made again."""
    if method in ANSWER_NOTHING:
        return {'reply': None}
    if method == 'create_arqs' and target and '...' not in target:
        # A create names nothing it was given: its target is the ARQs it
        # made. Every one must still be there.
        made = arqs.list_arqs({'uuids': target}, None)
        if len(made) == len(target):
            return {'reply': made}
    if method == 'create_device_profile':
        return _profile_made(target)
    return {}


def _profile_made(target):
    """The profile a create made: its target names the profile's name
    (and a posted uuid), then, last, the uuid of the row it inserted."""
    if not target or not uuidutils.is_uuid_like(target[-1]):
        return {}
    try:
        made = device_profiles.get(uuid=target[-1])
    except exception.NotFound:
        return {}       # deleted since: nothing to answer with
    return {'reply': made} if made['name'] in target else {}
