"""The image catalog's records: metadata, upload state, where data is.

The data itself is in a store the API writes (catalog/store.py); this
module only records what an upload produced, and refuses to forget an image
something still names.
"""

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.catalog import metadata
from cyborg_like.common import exception
from cyborg_like.common import listing
from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import models

BS = models.Bitstream
MACHINE = states.BITSTREAM

# Metadata a client gives at creation (and the header may declare).
METADATA = metadata.KEYS


def create(values, project_id=None, user_id=None):
    """A new queued image; ``values``: name, description, METADATA and
    an optional ``sha256`` the upload must match."""
    row = BS(uuid=uuidutils.generate_uuid(), name=values['name'],
             description=values.get('description'),
             expected_sha256=values.get('sha256'), status=MACHINE.start,
             project_id=project_id, user_id=user_id,
             **{k: values.get(k) for k in METADATA})
    for key in METADATA:
        setattr(row, key, metadata.normalized(key, getattr(row, key)))
    with api.writer() as session:
        session.add(row)
        session.flush()
        return to_dict(row)


def get(uuid):
    with api.reader() as session:
        return to_dict(_get(session, uuid))


def list_bitstreams(filters, limit, marker=None, sort_key='created_at',
                    sort_dir='asc'):
    query = sa.select(BS)
    for name in listing.BITSTREAM_FILTERS:
        if filters.get(name) is not None:
            # Stored normalized (dashed lower-case ids): so is the filter.
            value = metadata.normalized(name, filters[name])
            query = query.where(getattr(BS, name) == value)
    with api.reader() as session:
        query = api.paginate(session, query, BS, limit, marker, sort_key,
                             sort_dir)
        return [to_dict(row) for row in session.scalars(query)]


def begin_upload(uuid):
    """Start an upload (superseding one under way); returns the image and
    the id the upload's end must name."""
    upload_id = uuidutils.generate_uuid()
    with api.writer() as session:
        row = _get(session, uuid, for_update=True)
        _require(row, states.UPLOAD)
        row.status = MACHINE.target(states.UPLOAD)
        row.status_reason = None
        row.upload_id = upload_id
        session.flush()
        return to_dict(row), upload_id


def finish_upload(uuid, upload_id, size, sha256, store, location,
                  declared=None):
    """uploading -> active with what the upload produced.

    ``declared``: what the image's header declares; it fills metadata the
    client left out and must not contradict what it gave. A mismatch
    fails the image (and raises); BitstreamBadState when the upload was
    superseded or the image deleted meanwhile.
    """
    try:
        with api.writer() as session:
            row = _uploading(session, uuid, upload_id)
            _check_digest(row, sha256)
            merged = metadata.merge(to_dict(row), declared)
            merged['kind'] = merged['kind'] or 'bitstream'
            for key in METADATA:
                setattr(row, key, merged.get(key))
            row.size, row.sha256 = size, sha256
            row.store, row.location = store, location
            row.status = MACHINE.target(states.ACTIVATE)
            return to_dict(row)
    except exception.Invalid as error:
        # Rolled back above; the failure is recorded on its own.
        fail_upload(uuid, upload_id, error.message)
        raise


def fail_upload(uuid, upload_id, reason):
    """uploading -> failed, when ``upload_id`` is still the upload."""
    with api.writer() as session:
        try:
            row = _uploading(session, uuid, upload_id)
        except exception.CyborgLikeException:
            return False
        _fail(row, reason)
        return True


def delete(uuid):
    """Forget the image; returns its store and location (the API removes
    the data). Refused while a region holds it or a profile names it."""
    with api.writer() as session:
        row = _get(session, uuid, for_update=True)
        where = _uses(session, row)
        if where:
            raise exception.BitstreamInUse(uuid=uuid, where='; '.join(where))
        found = {'store': row.store, 'location': row.location}
        session.delete(row)
        return found


def _uses(session, row):
    uses = []
    ids = [i for i in (row.uuid, row.hardware_id) if i]
    holders = session.scalars(
        sa.select(models.Deployable.uuid)
        .where(models.Deployable.bitstream_id.in_(ids))).all()
    if holders:
        uses.append('region(s) %s hold it' % ', '.join(sorted(holders)))
    profiles = _profiles_naming(session, row.uuid)
    if profiles:
        uses.append('device profile(s) %s name it (and their accelerator '
                    'requests)' % ', '.join(sorted(profiles)))
    return uses


def _profiles_naming(session, uuid):
    # The LIKE finds the few candidates in SQL; the groups then say
    # whether the uuid is really their accel:bitstream_id.
    from cyborg_like.db import device_profiles
    candidates = session.scalars(sa.select(models.DeviceProfile).where(
        models.DeviceProfile.profile_json.contains(uuid))).all()
    return [p.name for p in candidates
            if any(g.get('accel:bitstream_id') == uuid
                   for g in device_profiles.groups_of(p))]


def _check_digest(row, sha256):
    if row.expected_sha256 and row.expected_sha256 != sha256:
        raise exception.ImageDigestMismatch(
            expected=row.expected_sha256, actual=sha256)


def _require(row, event):
    if not MACHINE.allows(row.status, event):
        raise exception.BitstreamBadState(
            uuid=row.uuid, status=row.status,
            expected=', '.join(MACHINE.sources(event)))


def _uploading(session, uuid, upload_id):
    row = _get(session, uuid, for_update=True)
    if row.upload_id != upload_id or row.status != states.UPLOADING:
        raise exception.BitstreamBadState(
            uuid=uuid, status='%s (another upload took over)' % row.status
            if row.status == states.UPLOADING else row.status,
            expected=states.UPLOADING)
    return row


def _fail(row, reason):
    row.status = MACHINE.target(states.FAIL)
    row.status_reason = reason


def _get(session, uuid, for_update=False):
    query = sa.select(BS).where(BS.uuid == uuid)
    if for_update:
        query = query.with_for_update()
    row = session.scalars(query).first()
    if row is None:
        raise exception.BitstreamNotFound(uuid=uuid)
    return row


def to_dict(row):
    return {
        'uuid': row.uuid,
        'name': row.name,
        'description': row.description,
        'kind': row.kind,
        'vendor': row.vendor,
        'board': row.board,
        'interface_id': row.interface_id,
        'hardware_id': row.hardware_id,
        'function_name': row.function_name,
        'function_version': row.function_version,
        'status': row.status,
        'status_reason': row.status_reason,
        'size': row.size,
        'sha256': row.sha256,
        'expected_sha256': row.expected_sha256,
        'store': row.store,
        'location': row.location,
        'project_id': row.project_id,
        'user_id': row.user_id,
        'created_at': api.isotime(row.created_at),
        'updated_at': api.isotime(row.updated_at),
    }
