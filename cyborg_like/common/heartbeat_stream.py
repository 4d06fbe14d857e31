"""The heartbeat stream's wire contract, shared by agents and conductors.

An agent's regular heartbeat needs no answer, so (``[agent]
heartbeat_delivery = stream``, conductor RPC 1.21) it is published as an
oslo.messaging notification on a topic of its own rather than sent to the
conductors' RPC topic: the broker shares the beats out among the
conductors, a backlog of beats never stands in front of the API's calls,
and a conductor takes them off the queue in batches
(conductor/heartbeat_stream.py) with no reply to send. A beat carries the
wall-clock time after which it is worth nothing (the agent has sent a
newer one since); a conductor drops it unread past that time.

History of the payload (``version``):

* 1.0 - host, agent_version, inventory_hash, health (as the heartbeat RPC
        takes them), sent_at and expires_at (seconds since the epoch)
"""

import time

TOPIC = 'cyborg_like-heartbeats'
# Notification topics are queues per priority: beats go as "info".
PRIORITY = 'info'
EVENT_TYPE = 'agent.heartbeat'
VERSION = '1.0'


def beat(host, agent_version, inventory_hash, health, ttl, now=None):
    """The payload of one beat, worth nothing ``ttl`` seconds from now."""
    now = time.time() if now is None else now
    return {'version': VERSION, 'host': host, 'agent_version': agent_version,
            'inventory_hash': inventory_hash, 'health': health or [],
            'sent_at': now, 'expires_at': now + ttl}


def expired(payload, now=None):
    """Has ``payload`` outlived its deadline (or does it lack one)?"""
    now = time.time() if now is None else now
    return not payload.get('expires_at', 0) > now
