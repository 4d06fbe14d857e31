"""The agent's RPC endpoint: what the conductor may ask of this host."""

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import rpcapi

LOG = logging.getLogger(__name__)


class AgentManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, tracker):
        self.tracker = tracker

    def resync_inventory(self, context):
        LOG.info('Conductor asked for the whole inventory (request %s)',
                 context.request_id)
        self.tracker.update_inventory(force=True)
