"""A GPU is handed out whole or in parts, never both (db/partitions.py),
on the Nova bind path, through the real conductor and agent (fake
driver) of tests/functional/cloud.py. Races of whole and part binds on
real databases, two conductors: tests/integration/test_arq_races.py."""

import json

import pytest
import sqlalchemy as sa

from cyborg_like.common import context
from cyborg_like.common import states
from cyborg_like.db import api as db_api
from cyborg_like.db import models
from tests.functional import cloud as cloud_module
from tests.functional.test_firmware import finished
from tests.functional.test_mig_layout import LATEST
from tests.functional.test_mig_layout import apply
from tests.functional.test_mig_layout import gpu

ADMIN = context.get_admin_context()
PF = '0000:af:00.0'
VFS = ['0000:af:00.4', '0000:af:00.5']


def _instance(n):
    return '20000000-0000-0000-0000-%012d' % n


def _deployables(cloud, device_uuid):
    """{name: deployable} of one device."""
    [device] = [d for d in cloud.list_devices() if d['uuid'] == device_uuid]
    return {d['name']: d for d in cloud.conductor_api.list_deployables(
        ADMIN, {}, 100, None, 'created_at', 'asc')
        if d['device_id'] == device['id']}


def _rc(cloud, deployable):
    status, shown = cloud.call('GET', '/v2/deployables/%s'
                               % deployable['uuid'], headers=LATEST)
    assert status == 200, shown
    pairs = json.loads(shown['attributes_list'])
    return next(v for pair in pairs for k, v in pair.items() if k == 'rc')


def _bind(cloud, resource_class, deployable, n):
    """An ARQ of ``resource_class`` bound to ``deployable``; its state
    once resolved."""
    api = cloud.conductor_api
    name = 'one-%s' % resource_class.lower()
    if not api.list_device_profiles(ADMIN, [name], 10, None, 'created_at',
                                    'asc'):
        api.create_device_profile(
            ADMIN, name, [{'resources:%s' % resource_class: '1'}], None)
    [arq] = api.create_arqs(ADMIN, name, None)
    api.bind_arqs(ADMIN, {arq['uuid']: {
        'hostname': cloud_module.HOST,
        'device_rp_uuid': deployable['rp_uuid'],
        'instance_uuid': _instance(n), 'project_id': None}})

    def resolved():
        found = api.get_arq(ADMIN, arq['uuid'])
        return found if found['state'] in states.RESOLVED else None
    return cloud.wait_for(resolved, timeout=30)


def _held(deployable_id):
    """The handles of a deployable in use or waiting for a release."""
    with db_api.reader() as session:
        return session.scalars(sa.select(models.AttachHandle.uuid).where(
            models.AttachHandle.deployable_id == deployable_id,
            sa.or_(models.AttachHandle.in_use == sa.true(),
                   models.AttachHandle.release_pending == sa.true()))).all()


@pytest.fixture
def sriov_cloud(tmp_path):
    """The A100 offered whole (its PF) and, at the same time, as two
    virtual functions: what an inventory may say while a vGPU type is
    being enabled, or a report lags the hardware."""
    inventory = cloud_module.inventory_copy(tmp_path)

    def with_vfs(devices):
        [a100] = [d for d in devices if d['model'] == 'A100']
        a100.pop('mig_profiles')
        a100['deployables'] += [
            {'name': 'vf%d' % n, 'pci_functions': [address],
             'attributes': {'rc': 'CUSTOM_VGPU_A100_4C',
                            'trait0': 'CUSTOM_GPU_NVIDIA_A100'}}
            for n, address in enumerate(VFS)]
    cloud_module.rewrite_inventory(inventory, with_vfs)
    cloud = cloud_module.Cloud(str(inventory)).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def test_the_whole_excludes_its_parts_and_the_reverse(sriov_cloud):
    cloud = sriov_cloud
    a100 = gpu(cloud)
    found = _deployables(cloud, a100['uuid'])
    whole, vf0, vf1 = found['gpu0'], found['vf0'], found['vf1']
    # The parts name their whole as parent (and root), as Cyborg shows.
    assert (whole['parent_id'], whole['root_id']) == (None, None)
    assert {(vf['parent_id'], vf['root_id']) for vf in (vf0, vf1)} == {
        (whole['id'], whole['id'])}

    bound_whole = _bind(cloud, 'PGPU', whole, 1)
    assert bound_whole['state'] == states.BOUND, bound_whole
    refused = _bind(cloud, 'CUSTOM_VGPU_A100_4C', vf0, 2)
    assert refused['state'] == states.BIND_FAILED
    assert 'bound whole (deployable %s)' % whole['uuid'] in \
        refused['state_reason']

    assert _held(whole['id'])
    cloud.conductor_api.unbind_arqs(ADMIN, [bound_whole['uuid']])
    # The whole's handle is free once its agent confirmed the release
    # (the unbind answers before; CI run 32 bound the part in between).
    cloud.wait_for(lambda: not _held(whole['id']), timeout=30)
    assert _bind(cloud, 'CUSTOM_VGPU_A100_4C', vf0, 3)['state'] == \
        states.BOUND
    # Parts bind beside each other.
    assert _bind(cloud, 'CUSTOM_VGPU_A100_4C', vf1, 4)['state'] == \
        states.BOUND
    refused = _bind(cloud, 'PGPU', whole, 5)
    assert refused['state'] == states.BIND_FAILED
    assert 'bound in parts' in refused['state_reason']


def test_a_partitioned_gpu_is_not_bound_whole(cloud):
    # What was seen: after a MIG layout the whole GPU offers 0, yet a
    # direct bind of it succeeded beside a bound MIG slice.
    a100 = gpu(cloud)
    status, started = apply(cloud, a100['uuid'], ['3g.40gb', '4g.40gb'],
                            headers=LATEST)
    assert status == 202, started
    assert finished(cloud, started['operation']['uuid'])['state'] == \
        'succeeded'
    found = cloud.wait_for(lambda: (lambda d: d if len(d) == 3 else None)(
        _deployables(cloud, a100['uuid'])))
    whole = found['gpu0']
    slices = [d for name, d in sorted(found.items()) if name != 'gpu0']
    assert {d['parent_id'] for d in slices} == {whole['id']}
    assert whole['num_accelerators'] == 0
    assert _bind(cloud, _rc(cloud, slices[0]), slices[0], 1)['state'] == \
        states.BOUND

    refused = _bind(cloud, 'PGPU', whole, 2)
    assert refused['state'] == states.BIND_FAILED
    assert 'offers no accelerators' in refused['state_reason']


def test_fpga_regions_have_no_whole_and_bind_side_by_side(cloud):
    [fpga] = [d for d in cloud.list_devices() if d['type'] == 'FPGA']
    found = _deployables(cloud, fpga['uuid'])
    assert {d['parent_id'] for d in found.values()} == {None}
    for n, name in enumerate(sorted(found)):
        assert _bind(cloud, 'FPGA', found[name], n)['state'] == \
            states.BOUND
