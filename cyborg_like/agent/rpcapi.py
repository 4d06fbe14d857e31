"""Client side of the agent RPC API; each agent listens on its own host.

History (bump the minor version for every compatible change, and note it):

* 1.0 - resync_inventory
"""

import oslo_messaging as messaging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

TOPIC = 'cyborg_like-agent'
RPC_API_VERSION = '1.0'


class AgentAPI:
    """What the conductor asks of the agent on one host."""

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version=RPC_API_VERSION)
        version_cap = CONF.upgrade_levels.agent or RPC_API_VERSION
        self._client = rpc.get_client(target, version_cap=version_cap)

    def resync_inventory(self, context, host):
        """Ask ``host``'s agent to send its whole inventory again."""
        cctxt = self._client.prepare(server=host, version='1.0')
        cctxt.cast(context, 'resync_inventory')
