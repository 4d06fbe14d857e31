"""Client side of the conductor RPC API.

History (bump the minor version for every compatible change, and note it):

* 1.0 - report_inventory, heartbeat, list_devices, get_device,
        list_deployables, get_deployable, list_hosts
"""

import oslo_messaging as messaging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

TOPIC = 'cyborg_like-conductor'
RPC_API_VERSION = '1.0'


class ConductorAPI:
    """What the API and the agents ask of the conductor.

    ``timeout`` bounds every call, so an API request answers 503 instead of
    hanging when no conductor is there.
    """

    def __init__(self, timeout=None):
        target = messaging.Target(topic=TOPIC, version=RPC_API_VERSION)
        version_cap = CONF.upgrade_levels.conductor or RPC_API_VERSION
        self._client = rpc.get_client(target, version_cap=version_cap)
        self._timeout = timeout

    def _call(self, context, method, version='1.0', **kwargs):
        cctxt = self._client.prepare(version=version, timeout=self._timeout)
        return cctxt.call(context, method, **kwargs)

    # Agents.
    def report_inventory(self, context, host, devices, inventory_hash):
        return self._call(context, 'report_inventory', host=host,
                          devices=devices, inventory_hash=inventory_hash)

    def heartbeat(self, context, host, agent_version, inventory_hash):
        return self._call(context, 'heartbeat', host=host,
                          agent_version=agent_version,
                          inventory_hash=inventory_hash)

    # API.
    def list_devices(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        return self._call(context, 'list_devices', filters=filters,
                          limit=limit, marker=marker, sort_key=sort_key,
                          sort_dir=sort_dir)

    def get_device(self, context, uuid):
        return self._call(context, 'get_device', uuid=uuid)

    def list_deployables(self, context, filters, limit, marker, sort_key,
                         sort_dir):
        return self._call(context, 'list_deployables', filters=filters,
                          limit=limit, marker=marker, sort_key=sort_key,
                          sort_dir=sort_dir)

    def get_deployable(self, context, uuid):
        return self._call(context, 'get_deployable', uuid=uuid)

    def list_hosts(self, context):
        return self._call(context, 'list_hosts')
