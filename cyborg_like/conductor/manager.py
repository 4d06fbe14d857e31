"""The conductor's RPC endpoint: the one way to the database."""

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_like.agent import rpcapi as agent_rpcapi
from cyborg_like.conductor import rpcapi
from cyborg_like.conf import CONF
from cyborg_like.db import deployables
from cyborg_like.db import devices
from cyborg_like.db import hosts
from cyborg_like.db import inventory

LOG = logging.getLogger(__name__)


class ConductorManager:
    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self):
        self.agent_api = agent_rpcapi.AgentAPI()

    def report_inventory(self, context, host, devices, inventory_hash):
        summary = inventory.reconcile(host, devices, inventory_hash)
        LOG.info('Inventory of host %(host)s applied: %(summary)s',
                 {'host': host, 'summary': summary})
        return summary

    def heartbeat(self, context, host, agent_version, inventory_hash):
        known_hash = hosts.record_heartbeat(host, agent_version)
        if known_hash != inventory_hash:
            # We hold another inventory than the agent does (a new host,
            # a lost report, a database restored from backup): ask again.
            LOG.info('Inventory of host %s is out of date, asking for it',
                     host)
            self.agent_api.resync_inventory(context, host)

    def list_devices(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        return devices.list_devices(filters, limit, marker, sort_key,
                                    sort_dir)

    def get_device(self, context, uuid):
        return devices.get_device(uuid)

    def list_deployables(self, context, filters, limit, marker, sort_key,
                         sort_dir):
        return deployables.list_deployables(filters, limit, marker, sort_key,
                                            sort_dir)

    def get_deployable(self, context, uuid):
        return deployables.get_deployable(uuid)

    def list_hosts(self, context):
        return hosts.list_hosts(CONF.conductor.host_down_after)
