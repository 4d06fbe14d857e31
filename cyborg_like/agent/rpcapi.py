"""Client side of the agent RPC API; each agent listens on its own host.

History (bump the minor version for every compatible change, and note it):

* 1.0 - resync_inventory
* 1.1 - prepare_attach_handle, release_attach_handle
* 1.2 - program
"""

import oslo_messaging as messaging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

TOPIC = 'cyborg_like-agent'
RPC_API_VERSION = '1.2'


class AgentAPI:
    """What the conductor asks of the agent on one host."""

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version=RPC_API_VERSION)
        version_cap = CONF.upgrade_levels.agent or RPC_API_VERSION
        self._client = rpc.get_client(target, version_cap=version_cap)

    def prepare_attach_handle(self, context, host, job, timeout):
        """Program the region if ``job`` asks, and make its handle usable.

        Returns the bitstream id programmed, if any. Waits ``timeout``
        seconds at most: programming an FPGA takes a while.
        """
        cctxt = self._client.prepare(server=host, version='1.1',
                                     timeout=timeout)
        return cctxt.call(context, 'prepare_attach_handle', job=job)

    def program(self, context, host, job, timeout):
        """Program ``job``'s region with its bitstream; waits ``timeout``."""
        cctxt = self._client.prepare(server=host, version='1.2',
                                     timeout=timeout)
        return cctxt.call(context, 'program', job=job)

    def release_attach_handle(self, context, host, released):
        cctxt = self._client.prepare(server=host, version='1.1')
        cctxt.cast(context, 'release_attach_handle', released=released)

    def resync_inventory(self, context, host):
        """Ask ``host``'s agent to send its whole inventory again."""
        cctxt = self._client.prepare(server=host, version='1.0')
        cctxt.cast(context, 'resync_inventory')
