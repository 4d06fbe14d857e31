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
* 1.5 - create_arqs takes max_accelerators, the most ARQs one call may
        create (older conductors create them all)
* 1.6 - handle_released (agents confirm releases of attach handles)
* 1.7 - delete_arqs takes delete_bound (may the caller delete Bound and
        BindStarted requests; an older conductor deletes them regardless)
* 1.8 - the image catalog (bitstreams: create, list, get, uploads,
        delete)
* 1.9 - flash_device_firmware (firmware operations on devices)
* 1.10 - driver operations: get_host, start_driver_operation,
         cancel_operation (API); report_driver_progress,
         finish_driver_operation (agents)
* 1.11 - apply_mig_layout (MIG layout operations on GPUs)
* 1.12 - list_arqs filters by device_health (the health of the device an
         ARQ holds); older conductors ignore the filter, so it is not sent
         to them
* 1.13 - heartbeat takes urgent (a driver saw a device's health change:
         the conductor writes the beat at once; an agent capped below 1.13
         sends a plain heartbeat, batched as usual)
* 1.14 - get_availability (the availability feed)
* 1.15 - schedule_arq (standalone scheduling: the conductor picks the
         deployable of an ARQ, no Nova involved)
* 1.16 - device leases: create_lease, list_leases, get_lease, end_lease;
         get_availability takes at (the feed at a future time, leases
         counted; never sent to older conductors)
* 1.17 - read_model_snapshot (the API's read model: generations and
         changed families; docs/design.md)
* 1.18 - fleet rollouts: create_rollout (or its dry run), list_rollouts,
         get_rollout, list_rollout_targets, rollout_action
* 1.19 - set_host_labels; list_hosts takes limit and marker (the client
         pages an older conductor's whole answer); create_rollout takes a
         driver rollout's parameters and timeout, and selector labels
         (never sent to older conductors: they would ignore them)
* 1.20 - read_model_snapshot's generations hold ``arqs`` too (a family
         announced, not copied: api/arq_cache.py); an older conductor's
         answer lacks it and the API then keeps no ARQ answers
* 1.21 - conductors take regular heartbeats off the heartbeat stream too
         (common/heartbeat_stream.py); an agent capped below it calls (or
         casts) them
* 1.22 - list_changes (the change log: who changed what, under which
         request id; db/changes.py)
* 1.23 - set_quota, delete_quota (a project's own limits, local driver;
         never sent to older conductors: 409 until they are upgraded)
* 1.24 - create_lease takes preempt (the API's policy decision that the
         lease may take devices other projects' workloads hold); never
         sent to older conductors, which preempt always: a lease that may
         not preempt is refused (409) until they are upgraded
* 1.25 - unbind_arqs takes unbind_bound (the API's policy decision that
         the caller may unbind Bound and BindStarted requests); never
         sent to older conductors, which unbind whatever they are told:
         an unbind that may not take a device from a guest is refused
         (409) until they are upgraded; create_device_profile takes uuid
         (the one the client posted, kept as Cyborg keeps it)
* 1.26 - device dicts (list_devices, get_device, set_device_status,
         read_model_snapshot, the device of flash_device_firmware and
         apply_mig_layout) and get_device_health carry drain_reasons
         (every cause draining the device; db/drain_reasons.py); from an
         older conductor the API shows its driver operations' drains
         (drained_by) alone
* 1.27 - get_usage (usage accounting: device-seconds per project,
         instance, resource class, model and host; db/usage.py)
* 1.28 - get_reply (whether a write's call was carried out, and the
         answer its conductor sent: the change log keeps it, for an API
         whose answer the broker lost)
"""

import copy

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg_like.common import exception
from cyborg_like.common import heartbeat_stream
from cyborg_like.common import rpc
from cyborg_like.conductor import rpc_calls
from cyborg_like.conf import CONF

LOG = logging.getLogger(__name__)
TOPIC = 'cyborg_like-conductor'
# The calls that write nothing (rpc_calls.py: every call classified).
READS = rpc_calls.READS
RPC_API_VERSION = '1.28'


class ConductorAPI:
    """What the API and the agents ask of the conductor.

    ``timeout`` bounds every call, sending included, so an API request
    answers 503 instead of hanging when the conductor or the broker is not
    there (rpc.call_within); the call carries that deadline and a conductor
    drops it once it has passed. ``call_monitor_timeout`` (seconds, >= 2)
    gives up sooner when no conductor shows signs of working on a call.
    ``abandon_calls`` (a stopping service) ends the waits of those calls
    at once. ``in_flight``: a Gauge of the calls whose sending has not
    ended (rpc.call_within).
    """

    def __init__(self, timeout=None, call_monitor_timeout=None,
                 topic=TOPIC, settle_writes=False, in_flight=None):
        # ``topic``: tests aim a real client at an endpoint of their own.
        target = messaging.Target(topic=topic, version=RPC_API_VERSION)
        version_cap = CONF.upgrade_levels.conductor or RPC_API_VERSION
        self._client = rpc.get_client(target, version_cap=version_cap)
        self._timeout = timeout
        self._call_monitor_timeout = call_monitor_timeout
        self._calls = rpc.Calls()
        # The API's: a write that got no answer fails only once no
        # conductor can commit it any more (rpc.call_within's settle).
        self._settle = CONF.rpc_commit_margin if settle_writes else None
        self._in_flight = in_flight

    def abandon_calls(self):
        """Stop waiting for answers: calls under way and made from now on
        (with a ``timeout``) raise rpc.CallAbandoned, a MessagingTimeout,
        at once. For a service's stop (an agent's, whose handlers may be
        calling a conductor that has stopped)."""
        self._calls.abandon()

    def resume_calls(self):
        self._calls.resume()

    def _call(self, context, method, version='1.0', **kwargs):
        if self._timeout is None:
            cctxt = self._client.prepare(
                version=version, retry=rpc.publish_retries(),
                call_monitor_timeout=self._call_monitor_timeout)
            return rpc.call_reaching_broker(cctxt, context, method,
                                            **kwargs)
        try:
            return rpc.call_within(
                self._client, context, method, self._timeout,
                version=version,
                call_monitor_timeout=self._call_monitor_timeout,
                calls=self._calls, in_flight=self._in_flight,
                settle=None if method in READS else self._settle, **kwargs)
        except rpc.WriteNotDone as failure:
            return self._answer_kept(context, method, failure)

    def _answer_kept(self, context, method, failure):
        """A write that got no answer, once no conductor can carry it
        out any more, may have been done before and its answer lost (the
        broker node holding this process's reply queue died): what the
        change log kept decides. Its answer, as if it had come; else the
        failure (a 503 whose text says to ask the change log)."""
        if not CONF.api.lost_answer_timeout or \
                not self._client.can_send_version('1.28'):
            raise failure
        fresh = copy.copy(context)
        fresh.deadline = None       # the write's own has passed
        # Asked again while no conductor answers (the broker recovering)
        # or the write is done without its answer yet (its conductor still
        # finishing the call: a bind's later steps).
        try:
            found = rpc.keep_asking(
                lambda: self.get_reply(fresh, context.request_id, method),
                CONF.api.lost_answer_timeout,
                lambda found: 'reply' in found or not found['done'])
        except messaging.MessagingException as error:
            LOG.warning('Request %s: could not ask the change log whether '
                        '%s was done: %s', context.request_id, method, error)
            raise failure from None
        if 'reply' in found:
            LOG.warning('Request %s: the answer to %s was lost; the '
                        'change log kept it', context.request_id, method)
            return found['reply']
        if found['done']:
            LOG.error('Request %s: %s was done but its answer was lost '
                      'and not kept (the change log names what it '
                      'changed)', context.request_id, method)
        raise failure

    def _newer(self, version, kwargs, newer_version, **newer):
        """(version, kwargs) to send: the ``newer`` arguments go along only
        when the cap allows ``newer_version`` (a rolling upgrade)."""
        if self._client.can_send_version(newer_version):
            return newer_version, dict(kwargs, **newer)
        return version, kwargs

    # Agents.
    def report_inventory(self, context, host, devices, inventory_hash):
        return self._call(context, 'report_inventory', host=host,
                          devices=devices, inventory_hash=inventory_hash)

    def heartbeat(self, context, host, agent_version, inventory_hash,
                  health, urgent=False, cast_ttl=None, stream_ttl=None):
        """A regular (not urgent) beat is worth nothing after ``stream_ttl``
        or ``cast_ttl`` seconds (the next one replaces it). ``stream_ttl``:
        publish it on the heartbeat stream (no reply, a queue of its own,
        taken in batches) when every conductor reads it (1.21), else call.
        ``cast_ttl``: send it as a cast to the conductors' topic. Either is
        dropped unread by a conductor that takes it late.
        """
        version, kwargs = self._newer('1.0', {
            'host': host, 'agent_version': agent_version,
            'inventory_hash': inventory_hash}, '1.3', health=health)
        if urgent:
            version, kwargs = self._newer(version, kwargs, '1.13',
                                          urgent=True)
        elif stream_ttl and self._client.can_send_version('1.21'):
            return rpc.publish(
                heartbeat_stream.TOPIC, heartbeat_stream.PRIORITY,
                heartbeat_stream.EVENT_TYPE, 'agent.%s' % host,
                heartbeat_stream.beat(host, agent_version, inventory_hash,
                                      health, stream_ttl),
                retry=rpc.publish_retries())
        elif cast_ttl:
            return rpc.cast_within(self._client, context, 'heartbeat',
                                   cast_ttl, version=version, **kwargs)
        return self._call(context, 'heartbeat', version=version, **kwargs)

    def can_confirm_releases(self):
        return self._client.can_send_version('1.6')

    def handle_released(self, context, handle_uuid, erased):
        return self._call(context, 'handle_released', version='1.6',
                          handle_uuid=handle_uuid, erased=erased)

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

    def list_hosts(self, context, limit=None, marker=None):
        """A page of hosts in hostname order after ``marker``; a
        conductor before 1.19 answers every host, paged here."""
        if self._client.can_send_version('1.19'):
            return self._call(context, 'list_hosts', version='1.19',
                              limit=limit, marker=marker)
        found = [h for h in self._call(context, 'list_hosts')
                 if marker is None or h['hostname'] > marker]
        return found[:limit] if limit is not None else found

    # Device profiles (1.1).
    def create_device_profile(self, context, name, groups, description,
                              uuid=None):
        """``uuid``: the client's (1.25); an older conductor would make
        another, so a profile with one is not sent to it."""
        if uuid is not None:
            self._require('1.25', 'keep the uuid a device profile is '
                          'posted with')
        version, kwargs = self._newer('1.1', {
            'name': name, 'groups': groups, 'description': description},
            '1.25', uuid=uuid)
        return self._call(context, 'create_device_profile', version=version,
                          **kwargs)

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
    def create_arqs(self, context, profile_name, group_id,
                    max_accelerators=None):
        version, kwargs = self._newer('1.1', {
            'profile_name': profile_name, 'group_id': group_id}, '1.5',
            max_accelerators=max_accelerators)
        return self._call(context, 'create_arqs', version=version, **kwargs)

    def list_arqs(self, context, filters, limit, marker, sort_key, sort_dir):
        version = '1.1'
        if (filters or {}).get('device_health'):
            if not self._client.can_send_version('1.12'):
                raise exception.Conflict(
                    'The conductors cannot filter by device_health until '
                    'they are upgraded ([upgrade_levels] conductor).')
            version = '1.12'
        return self._call(context, 'list_arqs', version=version,
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_arq(self, context, uuid):
        return self._call(context, 'get_arq', version='1.1', uuid=uuid)

    def bind_arqs(self, context, bindings):
        return self._call(context, 'bind_arqs', version='1.1',
                          bindings=bindings)

    def unbind_arqs(self, context, uuids, unbind_bound=True):
        """``unbind_bound``: the API's policy decision (1.25). An older
        conductor unbinds Bound requests for anyone, so an unbind that
        may not is not sent to it."""
        if not unbind_bound:
            self._require('1.25', 'unbind accelerator requests without '
                          'Nova')
        version, kwargs = self._newer('1.1', {'uuids': uuids}, '1.25',
                                      unbind_bound=unbind_bound)
        return self._call(context, 'unbind_arqs', version=version, **kwargs)

    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    delete_bound=False):
        version, kwargs = self._newer('1.1', {
            'uuids': uuids, 'instance_uuid': instance_uuid}, '1.7',
            delete_bound=delete_bound)
        return self._call(context, 'delete_arqs', version=version, **kwargs)

    def schedule_arq(self, context, uuid, instance_uuid, hostname=None,
                     preferences=None):
        if not self._client.can_send_version('1.15'):
            raise exception.Conflict(
                'The conductors cannot schedule accelerator requests until '
                'they are upgraded ([upgrade_levels] conductor).')
        return self._call(context, 'schedule_arq', version='1.15',
                          uuid=uuid, instance_uuid=instance_uuid,
                          hostname=hostname, preferences=preferences)

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

    def get_reply(self, context, request_id, call_name):
        return self._call(context, 'get_reply', version='1.28',
                          request_id=request_id, call_name=call_name)

    def list_changes(self, context, filters, limit, marker, sort_key,
                     sort_dir):
        self._require('1.22', 'keep a change log')
        return self._call(context, 'list_changes', version='1.22',
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

    def get_usage(self, context, start=None, end=None, group_by=None,
                  project_id=None):
        self._require('1.27', 'account usage')
        return self._call(context, 'get_usage', version='1.27',
                          start=start, end=end, group_by=group_by,
                          project_id=project_id)

    def get_quota(self, context, project_id):
        return self._call(context, 'get_quota', version='1.4',
                          project_id=project_id)

    # A project's own limits (1.23).
    def set_quota(self, context, project_id, limits):
        self._require('1.23', "set projects' limits")
        return self._call(context, 'set_quota', version='1.23',
                          project_id=project_id, limits=limits)

    def delete_quota(self, context, project_id):
        self._require('1.23', "set projects' limits")
        return self._call(context, 'delete_quota', version='1.23',
                          project_id=project_id)

    def get_availability(self, context, group_by, since, known_cursor,
                         at=None):
        kwargs = {'group_by': group_by, 'since': since,
                  'known_cursor': known_cursor}
        if at is None:
            return self._call(context, 'get_availability', version='1.14',
                              **kwargs)
        self._require('1.16', 'answer the availability feed at a time')
        return self._call(context, 'get_availability', version='1.16',
                          at=at, **kwargs)

    # Device leases (1.16).
    def _require(self, version, what):
        if not self._client.can_send_version(version):
            raise exception.Conflict(
                'The conductors cannot %s until they are upgraded '
                '([upgrade_levels] conductor).' % what)

    def create_lease(self, context, values, preempt=False):
        """``preempt``: the API's policy decision (1.24). An older
        conductor preempts whatever it is told, so a lease that may not
        preempt is not sent to it."""
        self._require('1.16', 'lease devices')
        if not preempt:
            self._require('1.24', 'lease devices without preempting other '
                          "projects' workloads")
        version, kwargs = self._newer('1.16', {'values': values}, '1.24',
                                      preempt=preempt)
        return self._call(context, 'create_lease', version=version,
                          **kwargs)

    def list_leases(self, context, filters, limit, marker, sort_key,
                    sort_dir):
        self._require('1.16', 'lease devices')
        return self._call(context, 'list_leases', version='1.16',
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_lease(self, context, uuid):
        self._require('1.16', 'lease devices')
        return self._call(context, 'get_lease', version='1.16', uuid=uuid)

    def end_lease(self, context, uuid, event):
        self._require('1.16', 'lease devices')
        return self._call(context, 'end_lease', version='1.16', uuid=uuid,
                          event=event)

    # The API's read model (1.17).
    def can_serve_read_model(self):
        return self._client.can_send_version('1.17')

    def can_keep_arq_answers(self):
        # Every conductor bumps the arqs generation (1.20): an older one
        # would change ARQs unannounced (a rolling upgrade caps below).
        return self._client.can_send_version('1.20')

    def read_model_snapshot(self, context, known):
        return self._call(context, 'read_model_snapshot', version='1.17',
                          known=known)

    # Fleet rollouts (1.18).
    def create_rollout(self, context, values, dry_run=False):
        given = values or {}
        version = '1.18'
        if {'parameters', 'timeout'} & set(given) or \
                'labels' in (given.get('selector') or {}):
            version = '1.19'
        self._require(version, 'roll out changes with these options')
        return self._call(context, 'create_rollout', version=version,
                          values=values, dry_run=dry_run)

    # Host labels (1.19).
    def set_host_labels(self, context, hostname, labels):
        self._require('1.19', 'label hosts')
        return self._call(context, 'set_host_labels', version='1.19',
                          hostname=hostname, labels=labels)

    def list_rollouts(self, context, filters, limit, marker, sort_key,
                      sort_dir):
        self._require('1.18', 'roll out changes')
        return self._call(context, 'list_rollouts', version='1.18',
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_rollout(self, context, uuid):
        self._require('1.18', 'roll out changes')
        return self._call(context, 'get_rollout', version='1.18', uuid=uuid)

    def list_rollout_targets(self, context, uuid, filters, limit, marker):
        self._require('1.18', 'roll out changes')
        return self._call(context, 'list_rollout_targets', version='1.18',
                          uuid=uuid, filters=filters, limit=limit,
                          marker=marker)

    def rollout_action(self, context, uuid, action):
        self._require('1.18', 'roll out changes')
        return self._call(context, 'rollout_action', version='1.18',
                          uuid=uuid, action=action)

    # The image catalog (1.8).
    def create_bitstream(self, context, values):
        return self._call(context, 'create_bitstream', version='1.8',
                          values=values)

    def list_bitstreams(self, context, filters, limit, marker, sort_key,
                        sort_dir):
        return self._call(context, 'list_bitstreams', version='1.8',
                          filters=filters, limit=limit, marker=marker,
                          sort_key=sort_key, sort_dir=sort_dir)

    def get_bitstream(self, context, uuid):
        return self._call(context, 'get_bitstream', version='1.8',
                          uuid=uuid)

    def begin_bitstream_upload(self, context, uuid):
        return self._call(context, 'begin_bitstream_upload', version='1.8',
                          uuid=uuid)

    def finish_bitstream_upload(self, context, uuid, upload_id, size,
                                sha256, store, location, declared):
        return self._call(context, 'finish_bitstream_upload', version='1.8',
                          uuid=uuid, upload_id=upload_id, size=size,
                          sha256=sha256, store=store, location=location,
                          declared=declared)

    def fail_bitstream_upload(self, context, uuid, upload_id, reason):
        return self._call(context, 'fail_bitstream_upload', version='1.8',
                          uuid=uuid, upload_id=upload_id, reason=reason)

    def delete_bitstream(self, context, uuid):
        return self._call(context, 'delete_bitstream', version='1.8',
                          uuid=uuid)

    # Firmware (1.9).
    def flash_device_firmware(self, context, uuid, image_uuid):
        return self._call(context, 'flash_device_firmware', version='1.9',
                          uuid=uuid, image_uuid=image_uuid)

    # MIG layouts (1.11).
    def apply_mig_layout(self, context, uuid, layout):
        return self._call(context, 'apply_mig_layout', version='1.11',
                          uuid=uuid, layout=layout)

    # Driver operations (1.10).
    def get_host(self, context, hostname):
        return self._call(context, 'get_host', version='1.10',
                          hostname=hostname)

    def start_driver_operation(self, context, hostname, request):
        return self._call(context, 'start_driver_operation', version='1.10',
                          hostname=hostname, request=request)

    def cancel_operation(self, context, uuid):
        return self._call(context, 'cancel_operation', version='1.10',
                          uuid=uuid)

    def report_driver_progress(self, context, operation_uuid, batch):
        return self._call(context, 'report_driver_progress', version='1.10',
                          operation_uuid=operation_uuid, batch=batch)

    def finish_driver_operation(self, context, operation_uuid, outcome):
        return self._call(context, 'finish_driver_operation', version='1.10',
                          operation_uuid=operation_uuid, outcome=outcome)
