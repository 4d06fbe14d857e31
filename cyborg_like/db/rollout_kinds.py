"""What differs between the kinds of rollout, one class per kind
(docs/rollouts.md): which targets a selector names, what a target holds
now, the operation that changes it, what the health gate reads back, and
when a workload holds it. db/rollouts.py and db/rollout_targets.py ask
``KINDS[kind]`` and never branch on the kind themselves; a new kind is a
new class here.

A bitstream goes to FPGA regions (program operations), firmware to FPGA
cards (firmware operations), a driver family's version to hosts (driver
operations; the rollout's ``image`` is ``<family>=<version>``, and a host
target's ``target_uuid`` its hostname: hosts have no uuid).
"""

import json

import sqlalchemy as sa

from cyborg_like.common import driver_families
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import bitstream_compat
from cyborg_like.db import deployables
from cyborg_like.db import driver_operations
from cyborg_like.db import firmware
from cyborg_like.db import hosts
from cyborg_like.db import models
from cyborg_like.db import placement_sync

RT = models.RolloutTarget
DEP = models.Deployable
DEV = models.Device
HOST = models.Host

BITSTREAM, FIRMWARE, DRIVER = 'bitstream', 'firmware', 'driver'
PROGRAMMABLE_TYPES = ('FPGA',)
# What a rollout does with targets a workload holds.
SKIP, WAIT, INCLUDE = 'skip', 'wait', 'include'
# Driver parameters that name one version's package file: not reused to
# install another version (a rollback's).
DEB_PATH_KEYS = ('deb_path', 'vgpu_manager_deb_path')


def driver_image(family, version):
    return '%s=%s' % (family, version)


def driver_of(image):
    """(family, version) of a driver rollout's ``image``."""
    family, _sep, version = image.partition('=')
    return family, version


def _in_aggregates(uuids):
    """The host is in one of these Placement aggregates, as its last sync
    read them: ``hosts.aggregates`` is a JSON list of canonical UUIDs
    (db/placement_sync.py), so a quoted UUID found in it is one of them;
    plain LIKE, the same on every database."""
    return sa.or_(*(HOST.aggregates.contains(
        '"%s"' % placement_sync.canonical_uuid(uuid), autoescape=True)
        for uuid in uuids))


def _held(*where):
    """A handle of a deployable matching ``where`` is bound, binding or
    being released."""
    return sa.exists().where(
        models.AttachHandle.deployable_id == DEP.id, *where,
        sa.or_(models.AttachHandle.in_use.is_(True),
               models.AttachHandle.release_pending.is_(True)))


class _DeviceKind:
    """Regions and cards: selected through their device, checked by the
    device's health, refusing a workload's target whatever asks."""

    retry_interrupted = True
    readback_words = ('region', 'image')

    def check_selector(self, selector):
        if {'device_type', 'current_version'} & set(selector):
            raise exception.Invalid('device_type and current_version '
                                    'select hosts of a driver rollout.')

    def selected(self, selector, image):
        """(id, uuid, device id, hostname) of the targets ``selector``
        names."""
        self.check_selector(selector)
        query = self.base_query()
        if selector.get('hostnames'):
            query = query.where(DEV.hostname.in_(selector['hostnames']))
        if selector.get('aggregates'):
            # Of the hosts in one of them: a subquery of the statement.
            query = query.where(DEV.hostname.in_(
                sa.select(HOST.hostname).where(
                    _in_aggregates(selector['aggregates']))))
        if selector.get('labels'):
            query = query.where(DEV.hostname.in_(
                sa.select(HOST.hostname).where(
                    hosts.labelled(selector['labels']))))
        for key in ('vendor', 'model'):
            if selector.get(key):
                query = query.where(getattr(DEV, key) == selector[key])
        return self.narrowed(query, selector)

    def narrowed(self, query, selector):
        return query

    def allows_workloads(self, workloads):
        return workloads != INCLUDE

    def includes_busy(self, strategy):
        return False

    def view(self, rollout):
        return {}

    def begin_options(self, rollout):
        return None

    def unwell(self, image):
        return RT.device_id.in_(sa.select(DEV.id).where(sa.or_(
            DEV.health == 'unhealthy',
            DEV.service_state != states.SERVING)))

    def restore_image(self, rollout_image, last_known_good):
        """What puts a target back; None: nothing to (no erase operation
        exists)."""
        return last_known_good


class Bitstream(_DeviceKind):
    name, target_kind = BITSTREAM, 'deployable'
    order = (DEV.hostname, DEP.id)

    def base_query(self):
        return sa.select(DEP.id, DEP.uuid, DEV.id.label('device_id'),
                         DEV.hostname).join(
            DEV, DEP.device_id == DEV.id).where(
            DEV.type.in_(PROGRAMMABLE_TYPES), DEP.parent_id.is_(None))

    def narrowed(self, query, selector):
        if selector.get('deployable_names'):
            query = query.where(DEP.name.in_(selector['deployable_names']))
        if 'current_image' in selector:
            query = query.where(
                DEP.bitstream_id == selector['current_image']
                if selector['current_image'] is not None
                else DEP.bitstream_id.is_(None))
        return query

    def check_image(self, session, image):
        """A catalog image must be an active bitstream (each region's fit
        is checked when its turn comes; other ids name files of the
        agents' bitstream_dir, which nothing here can check)."""
        found = bitstream_compat.catalog_image(session, image)
        if found is not None and found.kind == 'firmware':
            raise exception.IncompatibleImage(
                'Image %s is firmware, not a bitstream for regions.'
                % found.uuid)

    def current(self, session, target, image):
        return _restorable(session, session.scalar(
            sa.select(DEP.bitstream_id).where(
                DEP.uuid == target.target_uuid)))

    def start(self, session, target_uuid, image, project_id,
              conductor_uuid, force=False, options=None):
        job, operation, _dep = deployables.program_in(
            session, target_uuid, image, project_id, conductor_uuid)
        return job, operation

    def applied(self, image, job):
        return job['bitstream_id']

    def busy(self, image):
        return _held(DEP.device_id == RT.device_id,
                     DEP.uuid == RT.target_uuid)

    def readback(self, image):
        """A region reads back its bitstream."""
        return ~sa.select(DEP.uuid).where(
            DEP.uuid == RT.target_uuid,
            DEP.bitstream_id == RT.applied).exists()


class Firmware(_DeviceKind):
    name, target_kind = FIRMWARE, 'device'
    order = (DEV.hostname, DEV.id)
    # A card's interrupted flash may have left half an image: the card
    # stays drained for an operator (db/operations.py keep_drained).
    retry_interrupted = False

    def check_selector(self, selector):
        super().check_selector(selector)
        if {'deployable_names', 'current_image'} & set(selector):
            raise exception.Invalid(
                'deployable_names and current_image select regions; a '
                'firmware rollout selects cards.')

    def base_query(self):
        return sa.select(DEV.id, DEV.uuid, DEV.id.label('device_id'),
                         DEV.hostname).where(
            DEV.type.in_(firmware.FLASHABLE_TYPES))

    def check_image(self, session, image):
        """An active firmware image of the catalog (each card's vendor and
        board are checked when its turn comes)."""
        firmware.firmware_image(session, image)

    def current(self, session, target, image):
        return firmware.last_flashed(session, target.target_uuid)

    def start(self, session, target_uuid, image, project_id,
              conductor_uuid, force=False, options=None):
        job, operation, _device = firmware.flash_in(
            session, target_uuid, image, project_id, conductor_uuid)
        return job, operation

    def applied(self, image, job):
        return image

    def busy(self, image):
        return _held(DEP.device_id == RT.device_id)

    def readback(self, image):
        """A card's firmware was read back by its agent after the flash
        (the operation's result)."""
        return sa.false()


class Driver:
    name, target_kind = DRIVER, 'host'
    order = (HOST.hostname,)
    retry_interrupted = True
    readback_words = ('host', 'driver version')

    def selected(self, selector, image):
        """Hosts: ``hostnames``; ``aggregates``: the host is in one of
        them; ``labels``: the host has all of them; ``vendor``, ``model``
        and ``device_type``: a device of the host has them;
        ``current_version``: the family's version the host's record holds
        (None: none)."""
        if {'deployable_names', 'current_image'} & set(selector):
            raise exception.Invalid(
                'deployable_names and current_image select regions; a '
                'driver rollout selects hosts.')
        query = sa.select(HOST.id, HOST.hostname.label('uuid'),
                          sa.cast(sa.null(), sa.Integer).label('device_id'),
                          HOST.hostname)
        if selector.get('hostnames'):
            query = query.where(HOST.hostname.in_(selector['hostnames']))
        if selector.get('aggregates'):
            query = query.where(_in_aggregates(selector['aggregates']))
        if selector.get('labels'):
            query = query.where(hosts.labelled(selector['labels']))
        device = [DEV.hostname == HOST.hostname]
        for key, column in (('vendor', DEV.vendor), ('model', DEV.model),
                            ('device_type', DEV.type)):
            if selector.get(key):
                device.append(column == selector[key])
        if len(device) > 1:
            query = query.where(sa.exists().where(*device))
        if 'current_version' in selector:
            query = query.where(_installed(driver_of(image)[0],
                                           selector['current_version']))
        return query

    def check_image(self, session, image):
        if driver_of(image)[0] not in driver_families.FAMILIES:
            raise exception.Invalid('Unknown driver family in %s.' % image)

    def allows_workloads(self, workloads):
        return True

    def includes_busy(self, strategy):
        """Only ``workloads: include`` changes hosts a workload holds
        (their operations are forced)."""
        return strategy.get('workloads') == INCLUDE

    def view(self, rollout):
        found = dict(zip(('driver', 'version'), driver_of(rollout.image)))
        found.update(_options(rollout))
        return found

    def begin_options(self, rollout):
        """What ``begin`` passes on to a target's operation: the rollout's
        options and its version (to tell a rollback's version)."""
        return dict(_options(rollout), version=driver_of(rollout.image)[1])

    def current(self, session, target, image):
        return _host_version(session, target.hostname, driver_of(image)[0])

    def start(self, session, target_uuid, image, project_id,
              conductor_uuid, force=False, options=None):
        operation, job = driver_operations.start_in(
            session, target_uuid, _driver_request(
                session, target_uuid, image, force, options),
            project_id, conductor_uuid)
        return job, operation

    def applied(self, image, job):
        return driver_of(image)[1] or job['bitstream_id']

    def restore_image(self, rollout_image, last_known_good):
        """The host's version before, or no driver: remove it."""
        return driver_image(driver_of(rollout_image)[0],
                            last_known_good or '')

    def busy(self, image):
        return _held(DEP.device_id == DEV.id,
                     *_family_devices(driver_of(image)[0]))

    def unwell(self, image):
        """A device of the family on the target's host is unhealthy, out
        of service or drained, or read unhealthy since the change ended."""
        family = driver_of(image)[0]
        return sa.or_(
            sa.exists().where(*_family_devices(family), sa.or_(
                DEV.health == 'unhealthy',
                DEV.service_state != states.SERVING,
                DEV.drained_by.is_not(None))),
            sa.exists().where(
                *_family_devices(family),
                models.DeviceMetric.device_id == DEV.id,
                models.DeviceMetric.healthy.is_(False),
                models.DeviceMetric.recorded_at >= RT.finished_at))

    def readback(self, image):
        """A host's record holds the version the driver operation's
        playbook reported installed (its result's version_after)."""
        family = driver_of(image)[0]
        return ~sa.exists().where(
            HOST.hostname == RT.hostname, HOST.driver_versions.contains(
                sa.literal('"%s": "' % family) + RT.applied + '"'))


KINDS = {kind.name: kind for kind in (Bitstream(), Firmware(), Driver())}


def includes_busy(kind, strategy):
    """Whether a rollout changes targets a workload holds: only driver
    rollouts with ``workloads: include`` (programming and flashing refuse
    a busy region or card whatever asks)."""
    return KINDS[kind].includes_busy(strategy)


def _options(rollout):
    """A driver rollout's ``parameters`` and ``timeout``."""
    return dict({'parameters': {}, 'timeout': None},
                **json.loads(rollout.operation_options or '{}'))


def _installed(family, version):
    """The host's record says ``version`` of ``family`` is installed
    (driver_versions is JSON written with sort_keys; db/driver_operations)
    -- or, with ``version`` None, that none is."""
    if version is None:
        return sa.or_(HOST.driver_versions.is_(None),
                      ~HOST.driver_versions.contains('"%s": ' % family,
                                                     autoescape=True))
    return HOST.driver_versions.contains(
        json.dumps({family: version}, sort_keys=True)[1:-1], autoescape=True)


def _family_devices(family):
    """The devices a host target's driver family drives on its host."""
    return (DEV.hostname == RT.hostname,
            sa.func.lower(DEV.vendor).in_(driver_families.vendors(family)))


def _host_version(session, hostname, family):
    text = session.scalar(sa.select(HOST.driver_versions).where(
        HOST.hostname == hostname))
    return (json.loads(text) if text else {}).get(family)


def _driver_request(session, hostname, image, force=False, options=None):
    """The driver operation that puts ``image`` (``<family>=<version>``,
    or ``<family>=``: none) on the host: install when the host's record
    has no version of the family, upgrade over one, remove for none
    Never waiting; forced only for
    ``workloads: include``, else a host a workload holds is refused, as by
    the API (the rollout skips or waits for it). ``options``: the
    rollout's ``parameters`` (for an install or upgrade to another version
    than the rollout's, a rollback's, those that name one version's file
    are left out: DEB_PATH_KEYS) and ``timeout``."""
    family, version = driver_of(image)
    options = options or {}
    extra = {'force': True} if force else {}
    if options.get('timeout'):
        extra['timeout'] = options['timeout']
    if not version:
        return dict(extra, family=family, action=driver_families.REMOVE,
                    parameters={})
    parameters = dict(options.get('parameters') or {})
    if version != options.get('version'):
        for key in DEB_PATH_KEYS:
            parameters.pop(key, None)
    action = driver_families.UPGRADE if _host_version(
        session, hostname, family) else driver_families.INSTALL
    return dict(extra, family=family, action=action,
                parameters=dict(parameters, version=version))


def _restorable(session, current):
    """What to program to put ``current`` back: the catalog image whose
    uuid or loaded id it is, else the id itself (a file agents know)."""
    if current is None:
        return None
    image = session.scalar(sa.select(models.Bitstream.uuid).where(
        models.Bitstream.status == states.ACTIVE,
        sa.or_(models.Bitstream.uuid == current,
               models.Bitstream.hardware_id == current)).limit(1))
    return image or current
