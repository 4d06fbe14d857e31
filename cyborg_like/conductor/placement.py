"""Keeping OpenStack Placement in step with the inventory.

Nova schedules accelerators through Placement: a flavor's device profile
becomes request groups (``resources1=FPGA:1&required1=CUSTOM_...``) that
Placement answers with resource providers. The conductor publishes, for
every host, one child resource provider per deployable under the host's
compute node provider (which Nova creates, named after the hypervisor
hostname):

- uuid: the deployable's ``rp_uuid``; name ``<hostname>_<device uuid>_<name>``
  (the device uuid alone if that would pass Placement's 200 characters);
- inventory: its ``rc`` attribute as resource class, ``total`` =
  ``num_accelerators``; ``reserved`` = ``total`` while the device is disabled
  (status ``maintaining``) or unhealthy, so the scheduler stops picking it;
  none when the deployable has no ``rc`` or no accelerators;
- traits: the values of its ``trait*`` attributes, ``CUSTOM_VENDOR_<vendor>``,
  ``CUSTOM_MODEL_<model>``, ``CUSTOM_REGION_<deployable name>`` for FPGA
  regions, ``CUSTOM_BITSTREAM_<bitstream id>`` once programmed (names upper
  cased, other characters than A-Z, 0-9 and _ turned into _), and
  ``CUSTOM_CYBORG_LIKE_MANAGED``, which marks providers as ours. The trait
  set is replaced as a whole: traits added by hand to our providers go.

Custom resource classes and traits are created as needed; names Placement
does not know and cannot take are dropped with a warning. Providers of ours
(marked by the trait or named ``<hostname>_<uuid>_...``) whose deployable is
gone are deleted; Placement refuses while allocations hold them, and the
next sync tries again.

Only hosts marked dirty in the database are synced (see
db/placement_sync.py); the first run after a start checks every host.
Every inventory or trait write carries the provider generation read just
before; a 409 generation conflict means someone else wrote meanwhile, so
the sync re-reads and re-applies, a bounded number of times. A host stays
marked until one sync of it succeeds, so an unreachable Placement, a
missing compute node or a refused delete are retried at the next run.
Syncs are idempotent and generation-checked, so any number of conductors
can run them at once.
"""

import re
import threading
import urllib.parse

from futurist import periodics
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from cyborg_like.db import placement_sync

LOG = logging.getLogger(__name__)

# 1.14 nested providers, 1.18 ?required=, 1.20 POST returns the provider,
# 1.23 error codes, 1.26 reserved may equal total (a disabled device).
MICROVERSION = '1.26'
OWNER_TRAIT = 'CUSTOM_CYBORG_LIKE_MANAGED'
GENERATION_RETRIES = 4
MAX_NAME = 200
ENABLED, UNHEALTHY, FPGA = 'enabled', 'unhealthy', 'FPGA'

CONCURRENT_UPDATE = 'placement.concurrent_update'
INVENTORY_INUSE = 'placement.inventory.inuse'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'

_NAME_OK = re.compile(r'^[A-Z0-9_]+$')
_NOT_NAME = re.compile(r'[^A-Z0-9_]')
_UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'


class Unreachable(Exception):
    """Placement did not answer, or answered with a server error."""


class UnexpectedAnswer(Exception):
    """Placement answered a read with an error: this host is skipped."""


# What Placement should show: pure functions of the database's facts.

def custom_name(prefix, value):
    return prefix + _NOT_NAME.sub('_', str(value).upper())


def provider_name(deployable):
    name = '%s_%s_%s' % (deployable['hostname'], deployable['device_uuid'],
                         deployable['name'])
    return name if len(name) <= MAX_NAME else deployable['device_uuid']


def wanted_traits(deployable):
    traits = {OWNER_TRAIT,
              custom_name('CUSTOM_VENDOR_', deployable['vendor']),
              custom_name('CUSTOM_MODEL_', deployable['model'])}
    traits.update(value for key, value in deployable['attributes'].items()
                  if key.startswith('trait'))
    if deployable['device_type'] == FPGA:
        traits.add(custom_name('CUSTOM_REGION_', deployable['name']))
    if deployable['bitstream_id']:
        traits.add(custom_name('CUSTOM_BITSTREAM_',
                               deployable['bitstream_id']))
    return traits


def wanted_inventory(deployable):
    resource_class = deployable['attributes'].get('rc')
    total = deployable['num_accelerators']
    if not resource_class or total < 1:
        return {}
    usable = (deployable['status'] == ENABLED
              and deployable['health'] != UNHEALTHY)
    return {resource_class: {
        'total': total, 'reserved': 0 if usable else total,
        'min_unit': 1, 'max_unit': total, 'step_size': 1,
        'allocation_ratio': 1.0}}


def wanted_provider(deployable):
    return {'uuid': deployable['rp_uuid'],
            'name': provider_name(deployable),
            'inventories': wanted_inventory(deployable),
            'traits': wanted_traits(deployable)}


# Talking to Placement: one method per request.

class PlacementClient:
    """Placement's REST API on a keystoneauth session ([placement])."""

    def __init__(self, conf, group='placement'):
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        self._adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth)

    def request(self, method, url, body=None):
        try:
            response = self._adapter.request(
                url, method, json=body, microversion=MICROVERSION,
                raise_exc=False)
        except ks_exc.ClientException as error:
            # Refused, timed out, no endpoint in the catalog, bad auth.
            raise Unreachable('%s %s: %s' % (method, url, error))
        if response.status_code >= 500:
            raise Unreachable('%s %s: %s %s' % (
                method, url, response.status_code, response.text[:200]))
        return response

    def _json(self, method, url, body=None):
        response = self.request(method, url, body)
        if response.status_code != 200:
            raise UnexpectedAnswer('%s %s: %s %s' % (
                method, url, response.status_code, response.text[:200]))
        return response.json()

    def providers(self, **query):
        url = '/resource_providers?' + urllib.parse.urlencode(query)
        return self._json('GET', url)['resource_providers']

    def provider(self, uuid):
        response = self.request('GET', '/resource_providers/%s' % uuid)
        return response.json() if response.status_code == 200 else None

    def create_provider(self, uuid, name, parent_uuid):
        return self.request('POST', '/resource_providers', {
            'uuid': uuid, 'name': name,
            'parent_provider_uuid': parent_uuid})

    def update_provider(self, uuid, name, parent_uuid):
        return self.request('PUT', '/resource_providers/%s' % uuid, {
            'name': name, 'parent_provider_uuid': parent_uuid})

    def delete_provider(self, uuid):
        return self.request('DELETE', '/resource_providers/%s' % uuid)

    def inventories(self, uuid):
        body = self._json('GET', '/resource_providers/%s/inventories' % uuid)
        return body['resource_provider_generation'], body['inventories']

    def set_inventories(self, uuid, generation, inventories):
        return self.request(
            'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': generation,
             'inventories': inventories})

    def traits(self, uuid):
        body = self._json('GET', '/resource_providers/%s/traits' % uuid)
        return body['resource_provider_generation'], set(body['traits'])

    def set_traits(self, uuid, generation, traits):
        return self.request(
            'PUT', '/resource_providers/%s/traits' % uuid,
            {'resource_provider_generation': generation,
             'traits': sorted(traits)})

    def existing_traits(self, names):
        url = '/traits?name=in:' + ','.join(sorted(names))
        return set(self._json('GET', url)['traits'])

    def create_trait(self, name):
        return self.request('PUT', '/traits/%s' % name).status_code in (
            201, 204)

    def resource_class_exists(self, name):
        return self.request('GET', '/resource_classes/%s' % name
                            ).status_code == 200

    def create_resource_class(self, name):
        return self.request('PUT', '/resource_classes/%s' % name
                            ).status_code in (201, 204)


def error_code(response):
    try:
        return response.json()['errors'][0].get('code')
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _describe(response):
    return '%s %s' % (response.status_code, response.text[:300])


# Bringing one host in line.

class HostSync:
    """One sync of one host; ``run()`` says whether it is in line now."""

    def __init__(self, client, names, hostname):
        self.client = client
        self.names = names
        self.hostname = hostname

    def run(self, deployables, compute_node):
        wanted = {p['uuid']: p for p in map(wanted_provider, deployables)}
        self.names.filter(wanted.values())
        tree = {p['uuid']: p for p in self.client.providers(
            in_tree=compute_node['uuid'])}
        ours = {p['uuid'] for p in self.client.providers(
            in_tree=compute_node['uuid'], required=OWNER_TRAIT)}
        mine = re.compile('^%s_%s_' % (re.escape(self.hostname), _UUID))
        ours.update(uuid for uuid, p in tree.items()
                    if p['parent_provider_uuid'] == compute_node['uuid']
                    and mine.match(p['name']))
        ok = True
        for uuid in sorted(ours - set(wanted)):
            ok &= self._remove(tree[uuid])
        for uuid, provider in wanted.items():
            ok &= self._apply(compute_node, tree.get(uuid), provider)
        return ok

    def _remove(self, provider):
        response = self.client.delete_provider(provider['uuid'])
        if response.status_code in (204, 404):
            LOG.info('Removed resource provider %s (%s) from Placement',
                     provider['uuid'], provider['name'])
            return True
        LOG.warning('Placement keeps resource provider %s (%s) of host %s '
                    'for now (%s); will retry at the next sync',
                    provider['uuid'], provider['name'], self.hostname,
                    _describe(response))
        return False

    def _apply(self, compute_node, current, wanted):
        uuid = wanted['uuid']
        parent = compute_node['uuid']
        if current is None:
            current = self._create(wanted, parent)
            if current is None:
                return False
        if current['parent_provider_uuid'] != parent:
            # Left under another provider (an old compute node record);
            # re-parenting needs 1.37, deleting and creating works always.
            LOG.warning('Resource provider %s is under %s, not under compute '
                        'node %s; re-creating it', uuid,
                        current['parent_provider_uuid'], parent)
            if not self._remove(current):
                return False
            current = self._create(wanted, parent)
            if current is None:
                return False
        if current['name'] != wanted['name']:
            response = self.client.update_provider(uuid, wanted['name'],
                                                   parent)
            if response.status_code != 200:
                LOG.error('Could not rename resource provider %s to %s: %s',
                          uuid, wanted['name'], _describe(response))
                return False
        return (self._converge(uuid, 'inventory', self.client.inventories,
                               self.client.set_inventories,
                               wanted['inventories'], _same_inventories)
                & self._converge(uuid, 'traits', self.client.traits,
                                 self.client.set_traits, wanted['traits'],
                                 lambda a, b: a == b))

    def _create(self, wanted, parent):
        response = self.client.create_provider(wanted['uuid'],
                                               wanted['name'], parent)
        if response.status_code == 200:
            LOG.info('Created resource provider %s (%s) in Placement',
                     wanted['uuid'], wanted['name'])
            return response.json()
        # 409: another conductor created it meanwhile, or the name is taken.
        existing = self.client.provider(wanted['uuid'])
        if existing is None:
            LOG.error('Could not create resource provider %s (%s) for host '
                      '%s: %s', wanted['uuid'], wanted['name'],
                      self.hostname, _describe(response))
        return existing

    def _converge(self, uuid, what, read, write, wanted, same):
        """Write ``wanted`` unless it is there; re-read on conflicts."""
        for attempt in range(1, GENERATION_RETRIES + 1):
            generation, current = read(uuid)
            if same(current, wanted):
                return True
            response = write(uuid, generation, wanted)
            if response.status_code == 200:
                return True
            code = error_code(response)
            if response.status_code != 409 or code == INVENTORY_INUSE:
                LOG.warning('Placement refused the %s of resource provider '
                            '%s (host %s): %s; will retry at the next sync',
                            what, uuid, self.hostname, _describe(response))
                return False
            LOG.info('Resource provider %s changed while its %s was '
                     'written (generation %s, attempt %s of %s); re-reading',
                     uuid, what, generation, attempt, GENERATION_RETRIES)
        LOG.warning('Resource provider %s kept changing while its %s was '
                    'written; will retry at the next sync', uuid, what)
        return False


def _same_inventories(current, wanted):
    if set(current) != set(wanted):
        return False
    return all(current[rc].get(field) == value
               for rc, fields in wanted.items()
               for field, value in fields.items())


class KnownNames:
    """Traits and resource classes Placement has; creates custom ones.

    Remembered for the life of the process, so a sync in line costs no
    request for them.
    """

    def __init__(self, client):
        self.client = client
        self.traits = set()
        self.resource_classes = set()

    def filter(self, providers):
        """Drop from ``providers`` the names Placement cannot take.

        The owner trait is made sure of even with no providers: listing
        providers ``required`` to have it fails while it does not exist.
        """
        self._learn_traits(set().union({OWNER_TRAIT},
                                       *(p['traits'] for p in providers)))
        for provider in providers:
            provider['traits'] &= self.traits
            for rc in list(provider['inventories']):
                if not self._resource_class(rc):
                    del provider['inventories'][rc]

    def _learn_traits(self, names):
        unknown = names - self.traits
        custom = {n for n in unknown if n.startswith('CUSTOM_')
                  and _NAME_OK.match(n)}
        for name in sorted(custom):
            if self.client.create_trait(name):
                self.traits.add(name)
        standard = {n for n in unknown - custom
                    if _NAME_OK.match(n) and not n.startswith('CUSTOM_')}
        if standard:
            self.traits |= self.client.existing_traits(standard)
        for name in sorted(unknown - self.traits):
            LOG.warning('Trait %r is not in Placement and cannot be created '
                        '(custom traits are CUSTOM_ and A-Z, 0-9, _); '
                        'leaving it out', name)

    def _resource_class(self, name):
        if name in self.resource_classes:
            return True
        if not _NAME_OK.match(name):
            known = False
        elif name.startswith('CUSTOM_'):
            known = self.client.create_resource_class(name)
        else:
            known = self.client.resource_class_exists(name)
        if known:
            self.resource_classes.add(name)
        else:
            LOG.warning('Resource class %r is not in Placement and cannot '
                        'be created (custom ones are CUSTOM_ and A-Z, 0-9, '
                        '_); its inventory is left out', name)
        return known


# The conductor's periodic task.

class PlacementSync:
    """Runs the sync every [placement] sync_interval; off without auth."""

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        self._client = None
        self._names = None
        self._worker = None
        self._thread = None
        self._checked_all = False
        self._missing = set()

    @property
    def enabled(self):
        return bool(self.conf.placement.auth_type)

    def start(self):
        if not self.enabled:
            LOG.info('[placement] auth_type is not set: resource providers '
                     'are not synced to Placement')
            return

        @periodics.periodic(self.conf.placement.sync_interval,
                            run_immediately=True)
        def sync():
            try:
                self.sync_now()
            except Exception:
                LOG.exception('Placement sync failed; retrying in %ss',
                              self.conf.placement.sync_interval)

        self._worker = periodics.PeriodicWorker([(sync, (), {})])
        self._thread = threading.Thread(target=self._worker.start,
                                        name='placement-sync', daemon=True)
        self._thread.start()

    def stop(self):
        if self._worker is not None:
            self._worker.stop()
            self._worker.wait()
            self._thread.join()
            self._worker = self._thread = None

    def sync_now(self):
        """One run; returns ``{'synced': [...], 'pending': [...]}`` or
        None when sync is off or Placement could not be reached."""
        if not self.enabled:
            return None
        with self._lock:
            return self._run()

    def _run(self):
        everything = not self._checked_all
        hosts = placement_sync.hosts_to_sync(everything=everything)
        result = {'synced': [], 'pending': []}
        if self._client is None:
            try:
                self._client = PlacementClient(self.conf)
            except ks_exc.ClientException as error:
                LOG.error('Cannot set up the Placement client from '
                          '[placement]: %s; no sync until it is fixed',
                          error)
                return None
            self._names = KnownNames(self._client)
        try:
            for hostname, mark in hosts:
                if self._sync_host(hostname):
                    placement_sync.mark_synced(hostname, mark)
                    result['synced'].append(hostname)
                else:
                    result['pending'].append(hostname)
        except Unreachable as error:
            LOG.warning('Placement is unreachable (%s); %d host(s) stay '
                        'marked and are synced at the next run', error,
                        len(hosts) - len(result['synced']))
            return None
        if everything:
            # Hosts that were in line before and failed now: retry them.
            placement_sync.mark_dirty_now(
                [h for h, mark in hosts if not mark
                 and h in result['pending']])
            self._checked_all = True
        return result

    def _sync_host(self, hostname):
        try:
            return self._try_host(hostname)
        except UnexpectedAnswer as error:
            LOG.error('Could not sync host %s to Placement: %s; will retry '
                      'at the next sync', hostname, error)
            return False

    def _try_host(self, hostname):
        deployables = placement_sync.host_deployables(hostname)
        found = self._client.providers(name=hostname)
        if not found:
            if not deployables:
                return True
            if hostname not in self._missing:
                self._missing.add(hostname)
                LOG.warning(
                    'No compute node resource provider named %r in '
                    'Placement: the accelerators of that host cannot be '
                    'published until Nova registers it under exactly this '
                    'name (nova-compute names it after the hypervisor '
                    'hostname; the agent reports as its [DEFAULT] host, '
                    'which must match, short name or FQDN alike). Will '
                    'retry at every sync', hostname)
            return False
        if hostname in self._missing:
            self._missing.discard(hostname)
            LOG.info('Compute node resource provider %r found in Placement',
                     hostname)
        return HostSync(self._client, self._names, hostname).run(
            deployables, found[0])
