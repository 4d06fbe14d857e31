"""The fixtures of ``compare``, one description for both sides.

``spec()`` describes hosts, devices (one deployable each, with its attach
handles and attributes), device profiles and unbound ARQs. From it:

- ``our_inventory(spec)``: per host, the inventory our agent reports to the
  conductor (``report_inventory``; bench.compare_agent sends it);
  profiles and ARQs go through our API;
- ``cyborg_rows(spec)``: the rows of Cyborg 17's tables (devices,
  controlpath_ids, deployables, attributes, attach_handles, device_profiles,
  extended_accelerator_requests), written straight into its database after
  ``cyborg-dbsync upgrade`` (no Cyborg agent runs).

Deployables get the same resource-provider uuid on both sides (ours: uuid5
of host, control path and name, as our conductor computes it), so the ARQ
cycles bind to the same ``device_rp_uuid``.

Host 0 always holds the FPGA the ARQ cycles bind to: one device, one
deployable with ``FPGA_HANDLES`` (16) accelerators and 16 PCI attach handles
(virtual functions). The large case adds ``devices`` GPUs, 8 per host, one
deployable and one PCI handle each.
"""

import datetime
import json
import uuid

FPGA_HANDLES = 16
GPUS_PER_HOST = 8
HOST_FORMAT = 'bench-host-%05d'
CYCLE_PROFILE = 'bench-fpga'
FPGA_TRAIT = 'CUSTOM_FPGA_BENCH'
GPU_TRAIT = 'CUSTOM_GPU_BENCH'
_NS = uuid.UUID('7d3c7a52-3d7e-4c39-9c0b-6f5bd1a0c0de')


def _uuid(*parts):
    return str(uuid.uuid5(_NS, '|'.join(str(p) for p in parts)))


def _pci(bus, device, function=0):
    return {'domain': '0000', 'bus': '%02x' % bus,
            'device': '%02x' % device, 'function': '%x' % function}


def spec(devices=0, profiles=1, arqs=0):
    """Host 0 with the 16-handle FPGA, plus ``devices`` GPUs (8 per host,
    hosts 1..), ``profiles`` device profiles (the first is the FPGA one the
    ARQs and cycles use) and ``arqs`` unbound ARQs on it."""
    fpga_pf = _pci(0x5e, 0)
    items = [{
        'host': HOST_FORMAT % 0, 'type': 'FPGA', 'vendor': '0x8086',
        'model': 'Bench PAC N3000',
        'std_board_info': {'device_id': '0x0b30', 'class': '0x120000'},
        'vendor_board_info': {'serial': 'bench-fpga-0'},
        'controlpath_id': {'cpid_type': 'PCI', 'cpid_info': fpga_pf},
        'deployable': {
            'name': 'fpga0', 'num_accelerators': FPGA_HANDLES,
            'driver_name': 'fake',
            'attributes': {'rc': 'FPGA', 'trait0': FPGA_TRAIT},
            'attach_handles': [
                {'attach_type': 'PCI',
                 'attach_info': _pci(0x5e, 1 + i // 8, i % 8)}
                for i in range(FPGA_HANDLES)]},
    }]
    for i in range(devices):
        host = HOST_FORMAT % (1 + i // GPUS_PER_HOST)
        cp = _pci(1 + (i % GPUS_PER_HOST) // 32, (i % GPUS_PER_HOST) % 32)
        items.append({
            'host': host, 'type': 'GPU', 'vendor': '0x10de',
            'model': 'Bench T4',
            'std_board_info': {'device_id': '0x1eb8', 'class': '0x030200'},
            'vendor_board_info': {'serial': 'bench-%06d' % i},
            'controlpath_id': {'cpid_type': 'PCI', 'cpid_info': cp},
            'deployable': {
                'name': 'gpu0', 'num_accelerators': 1, 'driver_name': 'fake',
                'attributes': {'rc': 'PGPU', 'trait0': GPU_TRAIT},
                'attach_handles': [{'attach_type': 'PCI',
                                    'attach_info': dict(cp)}]},
        })
    profs = [{'name': CYCLE_PROFILE,
              'groups': [{'resources:FPGA': '1',
                          'trait:%s' % FPGA_TRAIT: 'required'}],
              'description': 'the FPGA of the ARQ cycles'}]
    for i in range(profiles - 1):
        profs.append({'name': 'bench-filler-%04d' % i,
                      'groups': [{'resources:PGPU': '1',
                                  'trait:%s' % GPU_TRAIT: 'required'}],
                      'description': 'filler for list benchmarks'})
    hosts = sorted({d['host'] for d in items})
    return {'hosts': hosts, 'devices': items, 'profiles': profs,
            'arqs': arqs}


def rp_uuid(device):
    from cyborg_like.common import inventory
    return inventory.deployable_rp_uuid(
        device['host'], device['controlpath_id'], device['deployable']['name'])


def cycle_target(fixture):
    """(hostname, device_rp_uuid) the ARQ cycles bind to: the FPGA."""
    fpga = fixture['devices'][0]
    return fpga['host'], rp_uuid(fpga)


def our_inventory(fixture):
    """{host: [device, ...]} as our agent reports it (sorted by control
    path, as the agent sends it)."""
    from cyborg_like.common import inventory
    out = {h: [] for h in fixture['hosts']}
    for d in fixture['devices']:
        dep = d['deployable']
        out[d['host']].append({
            'type': d['type'], 'vendor': d['vendor'], 'model': d['model'],
            'std_board_info': d['std_board_info'],
            'vendor_board_info': d['vendor_board_info'],
            'controlpath_id': d['controlpath_id'],
            'deployables': [{
                'name': dep['name'],
                'num_accelerators': dep['num_accelerators'],
                'driver_name': dep['driver_name'], 'bitstream_id': None,
                'attributes': dict(dep['attributes']),
                'attach_handles': [dict(h, attach_info=dict(h['attach_info']))
                                   for h in dep['attach_handles']]}]})
    for host in out:
        out[host].sort(key=lambda d: inventory.canonical(d['controlpath_id']))
    return out


def cyborg_rows(fixture, project_id, now=None):
    """{table: [row, ...]} for Cyborg 17's schema, in foreign-key order."""
    now = now or datetime.datetime.utcnow().replace(microsecond=0)
    rows = {t: [] for t in ('devices', 'controlpath_ids', 'deployables',
                            'attributes', 'attach_handles', 'device_profiles',
                            'extended_accelerator_requests')}
    ts = {'created_at': now, 'updated_at': None}
    handle_id = attr_id = 0
    for n, d in enumerate(fixture['devices'], start=1):
        dep = d['deployable']
        rows['devices'].append(dict(
            ts, id=n, uuid=_uuid('device', n), type=d['type'],
            vendor=d['vendor'], model=d['model'],
            std_board_info=json.dumps(d['std_board_info']),
            vendor_board_info=json.dumps(d['vendor_board_info']),
            hostname=d['host'], status='enabled', device_state=None))
        rows['controlpath_ids'].append(dict(
            ts, id=n, uuid=_uuid('cpid', n), device_id=n,
            cpid_type=d['controlpath_id']['cpid_type'],
            cpid_info=json.dumps(d['controlpath_id']['cpid_info'])))
        rows['deployables'].append(dict(
            ts, id=n, uuid=_uuid('deployable', n), parent_id=None,
            root_id=None, name=dep['name'],
            num_accelerators=dep['num_accelerators'], device_id=n,
            rp_uuid=rp_uuid(d), driver_name=dep['driver_name'],
            bitstream_id=None))
        for key, value in sorted(dep['attributes'].items()):
            attr_id += 1
            rows['attributes'].append(dict(
                ts, id=attr_id, uuid=_uuid('attribute', attr_id),
                deployable_id=n, key=key, value=value))
        for h in dep['attach_handles']:
            handle_id += 1
            rows['attach_handles'].append(dict(
                ts, id=handle_id, uuid=_uuid('handle', handle_id),
                deployable_id=n, cpid_id=n, in_use=False,
                attach_type=h['attach_type'],
                attach_info=json.dumps(h['attach_info'])))
    for n, p in enumerate(fixture['profiles'], start=1):
        rows['device_profiles'].append(dict(
            ts, id=n, uuid=_uuid('profile', n), name=p['name'],
            profile_json=json.dumps({'groups': p['groups']}),
            description=p['description']))
    for n in range(1, fixture['arqs'] + 1):
        rows['extended_accelerator_requests'].append(dict(
            ts, id=n, uuid=_uuid('arq', n), project_id=project_id,
            state='Initial', device_profile_id=1, device_profile_group_id=0,
            hostname=None, device_rp_uuid=None, instance_uuid=None,
            attach_handle_id=None, substate='Initial', deployable_id=None))
    return rows


def counts(fixture):
    """What both sides should hold once loaded (the comparable tables)."""
    devs = fixture['devices']
    return {
        'hosts': len(fixture['hosts']),
        'devices': len(devs),
        'deployables': len(devs),
        'attach_handles': sum(len(d['deployable']['attach_handles'])
                              for d in devs),
        'attributes': sum(len(d['deployable']['attributes']) for d in devs),
        'device_profiles': len(fixture['profiles']),
        'extended_accelerator_requests': fixture['arqs'],
    }


def our_counts(inventory, profiles, arqs):
    """``counts`` computed from what we send to our side."""
    devs = [d for host in inventory.values() for d in host]
    deps = [dep for d in devs for dep in d['deployables']]
    return {
        'hosts': len(inventory), 'devices': len(devs),
        'deployables': len(deps),
        'attach_handles': sum(len(x['attach_handles']) for x in deps),
        'attributes': sum(len(x['attributes']) for x in deps),
        'device_profiles': profiles,
        'extended_accelerator_requests': arqs,
    }


def cyborg_counts(rows):
    return {
        'hosts': len({r['hostname'] for r in rows['devices']}),
        'devices': len(rows['devices']),
        'deployables': len(rows['deployables']),
        'attach_handles': len(rows['attach_handles']),
        'attributes': len(rows['attributes']),
        'device_profiles': len(rows['device_profiles']),
        'extended_accelerator_requests': len(
            rows['extended_accelerator_requests']),
    }
