"""A database with one host, one FPGA region of two attach handles and a
profile asking for one FPGA: enough to drive the ARQ state machine at the
DB layer (db/arqs.py) directly, on SQLite or a real MariaDB/PostgreSQL.

The devices come from the real fake driver and the real inventory
reconcile, as an agent's report would bring them.
"""

import contextlib
import datetime
import os

import sqlalchemy as sa
import yaml

from cyborg_like.common import exception
from cyborg_like.common import states
from cyborg_like.conf import CONF
from cyborg_like.db import api as db_api
from cyborg_like.db import arqs
from cyborg_like.db import device_profiles
from cyborg_like.db import inventory
from cyborg_like.db import migration
from cyborg_like.db import models
from cyborg_like.drivers import fake

HOST = 'race-1.example.org'
PROFILE = 'fpga-one'
INVENTORY = {'devices': [
    {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC N3000',
     'pci_address': '0000:5e:00.0',
     'deployables': [
         {'name': 'region0', 'attributes': {'rc': 'FPGA'},
          'pci_functions': ['0000:5e:00.1', '0000:5e:00.2']}]},
]}
# Bindings in these tests never wait on a heartbeat.
HOST_DOWN_AFTER = 10 ** 6

# What a step of a binding may meet when something else moved the ARQ.
EXPECTED = (exception.ARQBadState, exception.BindingSuperseded,
            exception.BindFailed)


class World:
    """Set up with ``start(db_url, workdir)``; ``stop()`` undoes it."""

    # An agent from before release confirmations (see test_releases.py).
    agent_version = '1.0'

    def start(self, db_url, workdir):
        path = os.path.join(workdir, 'inventory.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(INVENTORY, f)
        CONF.set_override('connection', db_url, group='database')
        CONF.set_override('inventory_file', path, group='fake_driver')
        db_api.dispose()
        migration.upgrade()
        found = fake.FakeDriver(CONF).discover()
        inventory.reconcile(HOST, [d.to_dict() for d in found], 'h0')
        with db_api.writer() as session:
            session.execute(sa.update(models.Host).values(
                last_heartbeat=datetime.datetime.utcnow(),
                agent_version=self.agent_version))
            self.rp_uuid = session.scalar(sa.select(models.Deployable.rp_uuid))
        device_profiles.create(PROFILE, [{'resources:FPGA': '1'}], None)
        return self

    @classmethod
    @contextlib.contextmanager
    def on_sqlite(cls, workdir):
        """A world of this class on a SQLite file in ``workdir``, stopped
        at the end."""
        world = cls().start('sqlite:///%s/db.sqlite' % workdir, str(workdir))
        try:
            yield world
        finally:
            world.stop()

    def stop(self):
        db_api.dispose()
        CONF.clear_override('connection', group='database')
        CONF.clear_override('inventory_file', group='fake_driver')

    def new_arq(self):
        return arqs.create(PROFILE, 'p1')[0]['uuid']

    def fields(self, instance):
        return {'hostname': HOST, 'device_rp_uuid': self.rp_uuid,
                'instance_uuid': instance}

    def bind(self, uuid, instance):
        """One whole binding as the conductor runs it (agent call aside);
        returns its outcome: the final event applied, or the error met."""
        try:
            attempt = arqs.start_bind({uuid: self.fields(instance)})[uuid]
        except EXPECTED as error:
            return type(error).__name__
        return self.finish(uuid, attempt)

    def finish(self, uuid, attempt):
        try:
            arqs.allocate(uuid, attempt, HOST_DOWN_AFTER)
        except exception.BindFailed as error:
            arqs.fail_bind(uuid, attempt, str(error))
            return states.FAIL
        except EXPECTED as error:
            return type(error).__name__
        return states.FINISH if arqs.finish_bind(uuid, attempt) else \
            'superseded at finish'

    def set_state(self, uuid, state):
        with db_api.writer() as session:
            session.execute(sa.update(models.ExtARQ)
                            .where(models.ExtARQ.uuid == uuid)
                            .values(state=state))

    def rows(self):
        """(ARQ rows, attach handle rows) as plain tuples."""
        with db_api.reader() as session:
            arq_rows = session.execute(sa.select(
                models.ExtARQ.uuid, models.ExtARQ.state,
                models.ExtARQ.attach_handle_id, models.ExtARQ.bind_attempt,
                models.ExtARQ.instance_uuid)).all()
            handles = session.execute(sa.select(
                models.AttachHandle.id, models.AttachHandle.in_use)).all()
        return arq_rows, handles

    def check_invariants(self):
        """No handle in use without exactly one ARQ holding it, and only
        ARQs binding or bound hold one."""
        arq_rows, handles = self.rows()
        in_use = sorted(h.id for h in handles if h.in_use)
        held = sorted(a.attach_handle_id for a in arq_rows
                      if a.attach_handle_id is not None)
        assert in_use == held, (in_use, arq_rows)
        for arq in arq_rows:
            if arq.attach_handle_id is not None:
                assert arq.state in states.HOLDING, arq
            if arq.state == states.BOUND:
                assert arq.attach_handle_id is not None, arq
