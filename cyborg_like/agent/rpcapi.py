"""Client side of the agent RPC API; each agent listens on its own host.

History (bump the minor version for every compatible change, and note it):

* 1.0 - resync_inventory
* 1.1 - prepare_attach_handle, release_attach_handle
* 1.2 - program
* 1.3 - flash_firmware
* 1.4 - start_playbook, cancel_playbook (driver operations)
* 1.5 - apply_mig_layout
"""

import oslo_messaging as messaging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

TOPIC = 'cyborg_like-agent'
RPC_API_VERSION = '1.5'


class AgentAPI:
    """What the conductor asks of the agent on one host.

    Calls give up sending after ``[DEFAULT] rpc_publish_retries`` (the
    conductor fails the bind or operation then); casts keep retrying until
    the broker is back, since nobody would carry them out otherwise.
    """

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
                                     timeout=timeout,
                                     retry=rpc.publish_retries())
        return rpc.call_reaching_broker(cctxt, context,
                                        'prepare_attach_handle', job=job)

    def program(self, context, host, job, timeout):
        """Program ``job``'s region with its bitstream; waits ``timeout``."""
        cctxt = self._client.prepare(server=host, version='1.2',
                                     timeout=timeout,
                                     retry=rpc.publish_retries())
        return rpc.call_reaching_broker(cctxt, context, 'program', job=job)

    def start_playbook(self, context, host, job, timeout):
        """Hand a driver operation's playbook to ``host``'s agent; it
        answers once the run started in the background."""
        cctxt = self._client.prepare(server=host, version='1.4',
                                     timeout=timeout,
                                     retry=rpc.publish_retries())
        return rpc.call_reaching_broker(cctxt, context, 'start_playbook',
                                        job=job)

    def cancel_playbook(self, context, host, operation_uuid):
        cctxt = self._client.prepare(server=host, version='1.4')
        cctxt.cast(context, 'cancel_playbook',
                   operation_uuid=operation_uuid)

    def flash_firmware(self, context, host, job, timeout):
        """Flash ``job``'s device with its catalog image and discover it
        again; returns the firmware read before and after ({'old', 'new'}).
        Waits ``timeout`` seconds: a flash may take the best of an hour.
        """
        cctxt = self._client.prepare(server=host, version='1.3',
                                     timeout=timeout,
                                     retry=rpc.publish_retries())
        return rpc.call_reaching_broker(cctxt, context, 'flash_firmware',
                                        job=job)

    def apply_mig_layout(self, context, host, job, timeout):
        """Cut ``job``'s GPU into its MIG ``layout`` and discover it again;
        returns the layout before and after ({'old', 'new'})."""
        cctxt = self._client.prepare(server=host, version='1.5',
                                     timeout=timeout,
                                     retry=rpc.publish_retries())
        return rpc.call_reaching_broker(cctxt, context, 'apply_mig_layout',
                                        job=job)

    def release_attach_handle(self, context, host, released):
        cctxt = self._client.prepare(server=host, version='1.1')
        cctxt.cast(context, 'release_attach_handle', released=released)

    def resync_inventory(self, context, host):
        """Ask ``host``'s agent to send its whole inventory again."""
        cctxt = self._client.prepare(server=host, version='1.0')
        cctxt.cast(context, 'resync_inventory')
