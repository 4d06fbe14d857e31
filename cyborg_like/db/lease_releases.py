"""Taking a leased device back from the ARQs holding it (docs/leases.md):
unbinding them, or, for those Nova bound to an instance, marking them
(``release_asked_at``) for the conductor to ask Nova; and withdrawing
notices and asks that a window no longer needs. Which ARQ is taken back
which way, the conductor's rules say (``rules.by_binder``,
conductor/lease_rules.py).
"""

import sqlalchemy as sa

from cyborg_like.common import states
from cyborg_like.db import api
from cyborg_like.db import arqs
from cyborg_like.db import lease_windows
from cyborg_like.db import models

WINDOW, LDEV = models.LeaseWindow, models.LeaseDevice
DEP, ARQ, HANDLE = models.Deployable, models.ExtARQ, models.AttachHandle


def unbind_lessee(session, by_project, reason, now, rules):
    """Unbind the ARQs of each project holding a handle of its devices;
    those Nova bound are marked for Nova to release instead
    (``rules.by_binder``). Returns (release jobs, [(arq uuid, instance
    uuid, scheduled)] unbound, [(arq uuid, instance uuid)] newly to ask
    Nova about)."""
    pairs = [(p, d) for p, ids in by_project.items() for d in ids]
    if not pairs:
        return [], [], []
    rows = session.execute(
        sa.select(ARQ, DEP.device_id)
        .join(HANDLE, HANDLE.id == ARQ.attach_handle_id)
        .join(DEP, DEP.id == HANDLE.deployable_id)
        .where(DEP.device_id.in_({d for _, d in pairs}),
               ARQ.project_id.in_({p for p, _ in pairs}),
               ARQ.state.in_(states.HOLDING))
        .order_by(ARQ.id).with_for_update(of=ARQ)).all()
    wanted = set(pairs)
    ours, nova_bound = rules.by_binder(
        [arq for arq, device_id in rows
         if (arq.project_id, device_id) in wanted])
    unbound = [(arq.uuid, arq.instance_uuid, arq.scheduled) for arq in ours]
    asked = [(arq.uuid, arq.instance_uuid)
             for arq in ask_release(session, nova_bound, now)]
    return arqs.unbind_rows(session, ours, reason), unbound, asked


def ask_release(session, held, now):
    """Mark these Nova-bound ARQs as to be released by Nova; those this
    call marked (another conductor may have marked some first): each is
    announced once."""
    marked = []
    for arq in held:
        if session.execute(
                sa.update(ARQ).where(ARQ.id == arq.id,
                                     ARQ.release_asked_at.is_(None))
                .values(release_asked_at=now)
                .execution_options(synchronize_session=False)
        ).rowcount == 1:
            marked.append(arq)
    return marked


def awaiting_nova():
    """[(arq uuid, instance uuid)] of the Nova-bound ARQs whose device a
    lease needs back and that still hold it: the conductor asks Nova
    again, as ``[leases] preemption_action`` says, until Nova released
    them (an unbind or a delete by Nova clears the mark)."""
    with api.reader() as session:
        return [tuple(row) for row in session.execute(
            sa.select(ARQ.uuid, ARQ.instance_uuid)
            .where(ARQ.release_asked_at.is_not(None),
                   ARQ.state.in_(states.HOLDING),
                   ARQ.instance_uuid.is_not(None))
            .order_by(ARQ.id))]


def withdraw_notices(session, lease_id, starts=None):
    """The windows of this lease will not come (or, ``starts`` given,
    those starting then are over): the notices given to other projects'
    ARQs on its devices are withdrawn, and so is the ask to Nova to
    release those Nova bound (a guest is not shelved for a window that
    no longer needs its device)."""
    handles = (sa.select(HANDLE.id)
               .join(DEP, DEP.id == HANDLE.deployable_id)
               .join(LDEV, LDEV.device_id == DEP.device_id)
               .where(LDEV.lease_id == lease_id))
    if starts is None:
        starts = sa.select(WINDOW.starts_at).where(
            WINDOW.lease_id == lease_id,
            WINDOW.state.in_(lease_windows.LIVE_WINDOWS))
    session.execute(
        sa.update(ARQ).where(ARQ.attach_handle_id.in_(handles),
                             ARQ.lease_starts_at.in_(starts))
        .values(lease_starts_at=None, release_asked_at=None)
        .execution_options(synchronize_session=False))
