"""Operations: long work on a host (programming) that clients poll."""

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg_like.common import exception
from cyborg_like.db import api
from cyborg_like.db import models

PENDING, RUNNING, SUCCEEDED, FAILED = ('pending', 'running', 'succeeded',
                                       'failed')
UNFINISHED = (PENDING, RUNNING)
OP = models.Operation


def add(session, type_, target_uuid, project_id):
    """Within the caller's transaction: a new pending operation."""
    operation = OP(uuid=uuidutils.generate_uuid(), type=type_,
                   target_uuid=target_uuid, state=PENDING,
                   project_id=project_id)
    session.add(operation)
    session.flush()
    return operation


def unfinished_for(session, target_uuid):
    return session.scalars(sa.select(OP).where(
        OP.target_uuid == target_uuid, OP.state.in_(UNFINISHED))).first()


def set_state(uuid, state, detail=None):
    with api.writer() as session:
        session.execute(sa.update(OP).where(OP.uuid == uuid)
                        .values(state=state, detail=detail))


def get(uuid, project_id=None):
    with api.reader() as session:
        query = sa.select(OP).where(OP.uuid == uuid)
        if project_id is not None:
            query = query.where(OP.project_id == project_id)
        operation = session.scalars(query).first()
        if operation is None:
            raise exception.NotFound('Operation %s could not be found.'
                                     % uuid)
        return to_dict(operation)


def list_operations(filters, limit, marker=None, sort_key='created_at',
                    sort_dir='asc', project_id=None):
    query = sa.select(OP)
    for name in ('target_uuid', 'state', 'type'):
        if filters.get(name):
            query = query.where(getattr(OP, name) == filters[name])
    if project_id is not None:
        query = query.where(OP.project_id == project_id)
    with api.reader() as session:
        query = api.paginate(session, query, OP, limit, marker, sort_key,
                             sort_dir)
        return [to_dict(o) for o in session.scalars(query)]


def to_dict(operation):
    return {
        'uuid': operation.uuid,
        'type': operation.type,
        'target_uuid': operation.target_uuid,
        'state': operation.state,
        'detail': operation.detail,
        'project_id': operation.project_id,
        'created_at': api.isotime(operation.created_at),
        'updated_at': api.isotime(operation.updated_at),
    }
