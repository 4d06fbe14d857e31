"""With Keystone in front, version discovery (and /metrics) stays public
and the rest
needs a token (no Keystone is contacted to refuse a missing token)."""

import webob

from tests.functional import cloud as cloud_module


def test_only_discovery_is_public_under_keystone():
    cloud = cloud_module.Cloud(overrides={
        ('api', 'auth_strategy'): 'keystone',
        ('keystone_authtoken', 'www_authenticate_uri'):
            'http://127.0.0.1:1/identity'}).start()
    try:
        def status(path):
            return webob.Request.blank(path).get_response(cloud.app)

        assert status('/').status_int == 200
        assert status('/openapi.json').status_int == 200
        # Request counts by route template only (test_metrics.py).
        assert status('/metrics').status_int == 200
        refused = status('/v2/devices')
        assert refused.status_int == 401
        assert 'identity' in refused.headers['WWW-Authenticate']
        assert status('/v2').status_int == 401
        # Cyborg's unversioned aliases of /v2 paths are not public either.
        assert status('/devices').status_int == 401
        assert status('/accelerator_requests').status_int == 401
    finally:
        cloud.stop()
