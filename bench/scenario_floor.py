"""The ``floor`` scenario: the API's own CPU per request, without RPC.

The API app as its processes build it (noauth, every middleware), in this
process, with a conductor that answers at once with empty lists: what is
left is pecan routing, hooks, policy, validation, WebOb and the
middlewares -- the fixed cost every request pays before and after its one
RPC call (docs/benchmarks.md, "What bounds each target"). Each path is
requested ``--requests`` times after a warm-up; CPU time per request
(process time, so a busy machine does not inflate it) and the top
functions by cumulative time with ``--cprofile``.
"""

import cProfile
import io
import pstats
import tempfile
import time

import webob

from bench import infra

PATHS = ('/v2/devices?limit=1', '/v2/deployables?limit=1',
         '/v2/device_profiles?limit=1', '/v2/accelerator_requests?limit=1',
         '/v2')


# Served by the API's read model (one record of each family in memory,
# no conductor call at all): the whole API side of such a read.
MODEL_PATHS = ('/v2/devices?limit=1', '/v2/deployables?limit=1',
               '/v2/device_profiles?limit=1', '/v2/devices/%s' % ('1' * 32))


class _Conductor:
    """Answers every call at once: an empty list, or an empty record."""

    def __getattr__(self, name):
        empty = [] if name.startswith('list_') else {}
        return lambda *args, **kwargs: empty


class _ModelConductor(_Conductor):
    """Conductors at RPC 1.17 with one record of each family."""

    def can_serve_read_model(self):
        return True

    def read_model_snapshot(self, context, known):
        when = '2026-11-26T00:00:00+00:00'
        device = {'uuid': '1' * 32, 'type': 'GPU', 'vendor': '0x10de',
                  'model': 'A100', 'std_board_info': '{}',
                  'vendor_board_info': '{}', 'hostname': 'h1',
                  'status': 'enabled', 'created_at': when,
                  'updated_at': None}
        deployable = {'uuid': '2' * 32, 'parent_id': None, 'root_id': None,
                      'name': 'gpu0', 'num_accelerators': 1, 'device_id': 1,
                      'attributes_list': '[{"rc": "PGPU"}]',
                      'rp_uuid': '3' * 32, 'driver_name': 'fake',
                      'bitstream_id': None, 'created_at': when,
                      'updated_at': None}
        profile = {'uuid': '4' * 32, 'name': 'p1', 'description': None,
                   'groups': [{'resources:PGPU': '1'}], 'created_at': when,
                   'updated_at': None}
        return {'generations': {'devices': 1, 'deployables': 1,
                                'device_profiles': 1},
                'families': {'devices': [device],
                             'deployables': {'deployables': [deployable],
                                             'attributes': []},
                             'device_profiles': [profile]},
                'dialect': 'sqlite'}


def _app(read_model=False):
    from cyborg_like.api import app as app_lib
    from cyborg_like.api import read_model as read_model_lib
    from cyborg_like.conf import CONF
    CONF([], project='cyborg_like', default_config_files=[])
    CONF.set_override('auth_strategy', 'noauth', group='api')
    CONF.set_override('read_model', read_model, group='api')
    app = app_lib.setup_app(
        CONF, _ModelConductor() if read_model else _Conductor())
    if read_model:
        _request(app, MODEL_PATHS[0])      # starts the model
        assert read_model_lib.wait_current(10), 'the read model is not on'
    return app


def _request(app, path, etag=None):
    headers = {'Accept': 'application/json',
               'OpenStack-API-Version': 'accelerator latest'}
    if etag:
        headers['If-None-Match'] = etag
    response = webob.Request.blank(path, headers=headers).get_response(app)
    assert response.status_int == (304 if etag else 200), (
        path, response.status)
    return response


def _measure(app, path, requests, etag=None):
    for _ in range(50):
        _request(app, path, etag)
    started = time.process_time()
    for _ in range(requests):
        _request(app, path, etag)
    return (time.process_time() - started) * 1000 / requests


def run(args):
    app = _app()
    results = {'scenario': 'floor', 'params': {
        k: v for k, v in vars(args).items() if k != 'func'}, 'paths': {},
        'workdir': tempfile.mkdtemp(prefix='bench-floor-')}
    for path in PATHS:
        cpu_ms = _measure(app, path, args.requests)
        results['paths'][path] = {'cpu_ms_per_request': round(cpu_ms, 3)}
        infra.log('%-36s %.3f ms of CPU per request', path, cpu_ms)
    model_app = _app(read_model=True)
    for path in MODEL_PATHS:
        cpu_ms = _measure(model_app, path, args.requests)
        results['paths'][path + ' (read model)'] = {
            'cpu_ms_per_request': round(cpu_ms, 3)}
        infra.log('%-36s %.3f ms of CPU per request (read model)', path,
                  cpu_ms)
    # A conditional GET of what the client has: 304 from the ETag.
    path = MODEL_PATHS[0]
    etag = _request(model_app, path).headers['ETag']
    cpu_ms = _measure(model_app, path, args.requests, etag)
    results['paths'][path + ' (read model, 304)'] = {
        'cpu_ms_per_request': round(cpu_ms, 3)}
    infra.log('%-36s %.3f ms of CPU per request (read model, 304)', path,
              cpu_ms)
    if args.cprofile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.requests):
            _request(app, PATHS[0])
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(
            'cumulative').print_stats(25)
        results['cprofile'] = out.getvalue()
        print(results['cprofile'])
    return results
