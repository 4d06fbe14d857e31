"""Which catalog image may go on which region, decided before any agent
is called.

A region offers the interfaces its driver reports as the traits
``CUSTOM_FPGA_INTERFACE_<32 hex digits>`` (drivers/fpga: Intel's PR
interface id, Xilinx's shell interface uuid). An image fits a region when
the region offers the image's ``interface_id``; an image declaring none
fits only regions offering none (the fake driver's), so an image of unknown
needs never reaches real hardware.

Ids in profiles and program requests that are not a catalog image's uuid
are left to the agent's ``[agent] bitstream_dir`` (deployments from before
the catalog): nothing is known about them to check.
"""

import sqlalchemy as sa

from cyborg_like.catalog import metadata
from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.db import models

BS = models.Bitstream
TRAIT_PREFIX = 'CUSTOM_FPGA_INTERFACE_'


def catalog_image(session, bitstream_id):
    """The catalog image ``bitstream_id`` names, or None when it names
    none (a file in the agents' bitstream_dir). An image that is not
    active cannot be programmed."""
    uuid = metadata.normalized_uuid(bitstream_id)
    if uuid is None:
        return None
    row = session.scalars(sa.select(BS).where(BS.uuid == uuid)).first()
    if row is None:
        return None
    if row.status != states.ACTIVE:
        raise exception.BitstreamBadState(uuid=row.uuid, status=row.status,
                                          expected=states.ACTIVE)
    return row


def offered(deployable):
    """The interface ids (dashed UUIDs) a region offers."""
    found = set()
    for attribute in deployable.attributes:
        value = attribute.value or ''
        if attribute.key.startswith('trait') and \
                value.startswith(TRAIT_PREFIX):
            uuid = metadata.normalized_uuid(value[len(TRAIT_PREFIX):])
            if uuid:
                found.add(uuid)
    return found


def fits(image, interfaces):
    if image.interface_id is None:
        return not interfaces
    return image.interface_id in interfaces


def check(image, deployable):
    """Raise IncompatibleImage unless ``image`` fits ``deployable``,
    naming both interfaces."""
    interfaces = offered(deployable)
    if image.kind != 'bitstream':
        raise exception.IncompatibleImage(
            'Image %s is %s, not a bitstream for a region; flash it on '
            'the device instead.' % (image.uuid, image.kind))
    if not fits(image, interfaces):
        raise exception.IncompatibleImage(
            image=image.uuid, needed=image.interface_id or 'none declared',
            region='%s (%s)' % (deployable.uuid, deployable.name),
            offered=', '.join(sorted(interfaces)) or 'none')


def holds(deployable, image):
    """Whether the region has ``image`` loaded already."""
    current = metadata.normalized_uuid(deployable.bitstream_id)
    return current is not None and current in (image.uuid,
                                                image.hardware_id)


def for_function(session, deployable, name, version=None):
    """The active image of function ``name`` (and ``version``) to put on
    ``deployable``: one it holds already, else the newest that fits.
    Raises IncompatibleImage when none fits."""
    query = sa.select(BS).where(BS.function_name == name,
                                BS.status == states.ACTIVE,
                                BS.kind == 'bitstream')
    if version:
        query = query.where(BS.function_version == version)
    images = session.scalars(
        query.order_by(BS.created_at.desc(), BS.id.desc())).all()
    interfaces = offered(deployable)
    fitting = [i for i in images if fits(i, interfaces)]
    for image in fitting:
        if holds(deployable, image):
            return image
    if fitting:
        return fitting[0]
    raise exception.IncompatibleImage(
        'No active image of function %s%s fits region %s (%s), which '
        'offers interface %s; images of that function need %s.' % (
            name, ' version %s' % version if version else '',
            deployable.uuid, deployable.name,
            ', '.join(sorted(interfaces)) or 'none',
            ', '.join(sorted({i.interface_id or 'none' for i in images}))
            or 'nothing (there are none)'))


def for_group(session, deployable, group):
    """The catalog image a profile group puts on ``deployable``, or None
    (no image asked for, or one outside the catalog)."""
    if group.get('accel:bitstream_id'):
        image = catalog_image(session, group['accel:bitstream_id'])
        if image is not None:
            check(image, deployable)
        return image
    if group.get('accel:function_name'):
        return for_function(session, deployable,
                            group['accel:function_name'],
                            group.get('accel:function_version'))
    return None


def image_job(image):
    """What the agent needs to fetch, verify and program ``image``."""
    return {'uuid': image.uuid, 'sha256': image.sha256, 'size': image.size,
            'store': image.store, 'location': image.location,
            'hardware_id': image.hardware_id}


def loaded_id(image):
    """The id a region reports once ``image`` is loaded on it."""
    return image.hardware_id or image.uuid
