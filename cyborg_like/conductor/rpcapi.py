"""Client side of the conductor RPC API.

History (bump the minor version for every compatible change, and note it):

* 1.0 - report_inventory, heartbeat, list_devices, get_device,
        list_deployables, get_deployable, list_hosts
* 1.1 - device profiles (create, list, get, delete) and accelerator
        requests (create, list, get, bind, unbind, delete)
* 1.2 - set_device_status, program_deployable, get_operation,
        list_operations, attributes (list, get, create, delete)
* 1.3 - heartbeat carries device health; get_device_health
* 1.4 - get_quota
"""

import oslo_messaging as messaging

from cyborg_like.common import rpc
from cyborg_like.conf import CONF

TOPIC = 'cyborg_like-conductor'
RPC_API_VERSION = '1.4'


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

    def heartbeat(self, context, host, agent_version, inventory_hash,
                  health):
        kwargs = {'host': host, 'agent_version': agent_version,
                  'inventory_hash': inventory_hash}
        version = '1.0'
        if self._client.can_send_version('1.3'):
            version, kwargs['health'] = '1.3', health
        return self._call(context, 'heartbeat', version=version, **kwargs)

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

    # Device profiles (1.1).
    def create_device_profile(self, context, name, groups, description):
        return self._call(context, 'create_device_profile', version='1.1',
                          name=name, groups=groups, description=description)

    def list_device_profiles(self, context, names, limit, marker, sort_key,
                             sort_dir):
        return self._call(context, 'list_device_profiles', version='1.1',
                          names=names, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_device_profile(self, context, uuid=None, name=None):
        return self._call(context, 'get_device_profile', version='1.1',
                          uuid=uuid, name=name)

    def delete_device_profiles(self, context, uuid=None, names=None):
        return self._call(context, 'delete_device_profiles', version='1.1',
                          uuid=uuid, names=names)

    # Accelerator requests (1.1).
    def create_arqs(self, context, profile_name, group_id):
        return self._call(context, 'create_arqs', version='1.1',
                          profile_name=profile_name, group_id=group_id)

    def list_arqs(self, context, filters, limit, marker, sort_key, sort_dir):
        return self._call(context, 'list_arqs', version='1.1',
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_arq(self, context, uuid):
        return self._call(context, 'get_arq', version='1.1', uuid=uuid)

    def bind_arqs(self, context, bindings):
        return self._call(context, 'bind_arqs', version='1.1',
                          bindings=bindings)

    def unbind_arqs(self, context, uuids):
        return self._call(context, 'unbind_arqs', version='1.1', uuids=uuids)

    def delete_arqs(self, context, uuids=None, instance_uuid=None):
        return self._call(context, 'delete_arqs', version='1.1', uuids=uuids,
                          instance_uuid=instance_uuid)

    # Devices, programming, operations, attributes (1.2).
    def set_device_status(self, context, uuid, status):
        return self._call(context, 'set_device_status', version='1.2',
                          uuid=uuid, status=status)

    def program_deployable(self, context, uuid, bitstream_id):
        return self._call(context, 'program_deployable', version='1.2',
                          uuid=uuid, bitstream_id=bitstream_id)

    def get_operation(self, context, uuid):
        return self._call(context, 'get_operation', version='1.2', uuid=uuid)

    def list_operations(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return self._call(context, 'list_operations', version='1.2',
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def list_attributes(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return self._call(context, 'list_attributes', version='1.2',
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_attribute(self, context, uuid):
        return self._call(context, 'get_attribute', version='1.2', uuid=uuid)

    def create_attribute(self, context, deployable_id, key, value):
        return self._call(context, 'create_attribute', version='1.2',
                          deployable_id=deployable_id, key=key, value=value)

    def delete_attribute(self, context, uuid):
        return self._call(context, 'delete_attribute', version='1.2',
                          uuid=uuid)

    def get_device_health(self, context, uuid, history_limit):
        return self._call(context, 'get_device_health', version='1.3',
                          uuid=uuid, history_limit=history_limit)

    def get_quota(self, context, project_id):
        return self._call(context, 'get_quota', version='1.4',
                          project_id=project_id)
