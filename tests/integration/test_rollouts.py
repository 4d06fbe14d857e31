"""A rollout carried on by another conductor when its owner is killed
(SIGKILL) in the middle, with two conductor processes over RabbitMQ and
MariaDB/PostgreSQL; no region is programmed twice.

Eight regions (four FPGAs of two regions) hold ``bs-old``; the rollout
programs ``bs-new``, which takes SLOW_SECONDS, one region at a time after
a canary. Once the canary passed, the conductor owning the rollout is
killed: the other takes the rollout over within the liveness bound and
finishes it. The programming the killed conductor was carrying is failed
by the liveness sweep (its operation's conductor stopped) and its region
begun again; every region is done, programmed successfully once.
"""

import os
import time

import pytest
import sqlalchemy as sa

from .infra import BACKENDS
from .infra import CONDUCTOR_BOUND
from .infra import LIVENESS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

SLOW_SECONDS = 1
FPGAS = 4
REGIONS = 2 * FPGAS
INVENTORY = {'devices': [
    {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC Arria 10 GX',
     'pci_address': '0000:%02x:00.0' % (0x5e + n),
     'std_board_info': {'device_id': '0x09c4', 'class': 'Fuzzy FPGA'},
     'deployables': [
         {'name': 'region%d' % r, 'bitstream_id': 'bs-old',
          'attributes': {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_INTEL'},
          'pci_functions': ['0000:%02x:00.%d' % (0x5e + n, r + 1)]}
         for r in range(2)]}
    for n in range(FPGAS)]}


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('rollouts-%s' % request.param))
    bitstreams = os.path.join(workdir, 'bitstreams')
    os.mkdir(bitstreams)
    for name, content in (('bs-old', 'GBS old\n'),
                          ('bs-new', 'SLEEP %d\n' % SLOW_SECONDS)):
        with open(os.path.join(bitstreams, name), 'w') as f:
            f.write(content)
    with running_deployment(
            request.param, workdir, conductors=2, inventory=INVENTORY,
            extra_config=LIVENESS + '[rollouts]\ninterval = 0.5\n',
            agent_config='[agent]\nbitstream_dir = %s\n' % bitstreams,
            wait_for_devices=lambda devices: len(devices) == FPGAS) as dep:
        dep.wait_host_up()
        yield dep


def _rollout(dep, uuid):
    return dep.call('GET', '/v2/rollouts/%s' % uuid, timeout=30).json()


def test_killed_owner_is_taken_over_and_no_region_changes_twice(deployment):
    dep = deployment
    rollout = dep.call('POST', '/v2/rollouts', {
        'kind': 'bitstream', 'image': 'bs-new',
        'strategy': {'canary': 1, 'waves': [3], 'max_unavailable': 1,
                     'failure_budget': 1}}, 201, timeout=30).json()
    uuid = rollout['uuid']
    owner = dep.owner('rollouts', uuid)
    # Past the canary, with a region under way.
    wait_for(lambda: _rollout(dep, uuid)['current_wave'] >= 1 and
             _rollout(dep, uuid)['targets'].get('in_progress'),
             timeout=60, message='the rollout never passed its canary')
    dep.services[owner].kill()
    killed = time.monotonic()
    wait_for(lambda: dep.owner('rollouts', uuid) not in (None, owner),
             timeout=CONDUCTOR_BOUND, interval=0.1,
             message='no conductor took the rollout over')
    print('rollout taken over %.1fs after its owner was killed'
          % (time.monotonic() - killed))
    wait_for(lambda: _rollout(dep, uuid)['state'] != 'running',
             timeout=120, message='the rollout never ended')
    done = _rollout(dep, uuid)
    dep.services[owner].start()
    # The region under way at the kill (if its programming had not ended)
    # had its operation failed by the sweep and was begun again: every
    # region is done.
    assert done['state'] == 'succeeded', done
    assert done['targets'] == {'done': REGIONS, 'total': REGIONS}, done
    with dep.engine.connect() as conn:
        per_region = conn.execute(sa.text(
            "SELECT o.target_uuid, o.state, o.detail FROM operations o "
            "JOIN rollout_targets t ON t.target_uuid = o.target_uuid "
            "JOIN rollouts r ON r.id = t.rollout_id "
            "WHERE r.uuid = :u AND o.type = 'program' "
            "ORDER BY o.created_at, o.id"), {'u': uuid}).all()
        attempts = dict(conn.execute(sa.text(
            "SELECT t.target_uuid, t.attempts FROM rollout_targets t "
            "JOIN rollouts r ON r.id = t.rollout_id WHERE r.uuid = :u"),
            {'u': uuid}).all())
    succeeded = [t for t, state, _d in per_region if state == 'succeeded']
    interrupted = [(t, d) for t, state, d in per_region
                   if state != 'succeeded']
    print('interrupted and begun again: %s' % interrupted)
    # Programmed successfully once each; at most the one under way at
    # the kill was interrupted, and only by its conductor's death.
    assert sorted(succeeded) == sorted(attempts), per_region
    assert len(interrupted) <= 1, per_region
    assert all('conductor stopped' in d for _t, d in interrupted), \
        interrupted
    assert attempts == {t: 1 + sum(1 for i, _d in interrupted if i == t)
                        for t in attempts}, attempts
