"""The one HTTP client every command uses: a keystoneauth session, the
accelerator endpoint and the microversion header.

The session comes from osc-lib (``OS_*`` variables, ``clouds.yaml``,
``--os-cloud``; ``--os-auth-type none --os-endpoint URL`` for a noauth
service). The endpoint is the catalog's ``accelerator`` service (or the
override); the service root and its ``/v2`` are both accepted as endpoint.
Errors come back as :class:`ApiError`, whose text is one line: the HTTP
status, the API's stable ``error_code`` and its message.
"""

import json

from keystoneauth1 import exceptions as ksa_exc
from osc_lib import exceptions as osc_exc

SERVICE_TYPE = 'accelerator'
# Without --os-accelerator-api-version: the newest the service speaks.
LATEST = 'latest'
TIMEOUT = 60


class ApiError(osc_exc.CommandError):
    """The API refused a request; str() is the one line users see."""

    def __init__(self, status, code, message, request_id=None):
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        text = 'HTTP %s %s: %s' % (status, code, message)
        if request_id:
            text += ' (request %s)' % request_id
        super().__init__(text)


def microversion(version):
    """The value of the header for ``version`` ('2.3', 'latest', '2')."""
    version = (version or LATEST).strip()
    if version == LATEST or '.' not in version:
        # A bare major ("2", as clouds.yaml gives the API version) means
        # the newest microversion of that major version.
        return LATEST
    return version


def _fault(resp):
    """(code, message) from an error answer, whichever format it has."""
    try:
        body = resp.json()
    except ValueError:
        return 'accel.error', (resp.text.strip() or resp.reason or
                               'no message').splitlines()[0]
    if isinstance(body, dict) and 'error_message' in body:
        # Ours (Cyborg's): the fault is JSON text inside the body.
        try:
            fault = json.loads(body['error_message'])
            return (fault.get('error_code') or 'accel.error',
                    fault.get('faultstring') or body['error_message'])
        except (TypeError, ValueError):
            return 'accel.error', str(body['error_message'])
    if isinstance(body, dict) and isinstance(body.get('error'), dict):
        # keystonemiddleware's 401 and other OpenStack services' format.
        error = body['error']
        return (error.get('title') or 'error'), error.get('message') or ''
    return 'accel.error', json.dumps(body)


class Client:
    """Requests to the accelerator API through one keystoneauth session."""

    def __init__(self, session, endpoint, api_version=None,
                 timeout=TIMEOUT):
        if not endpoint:
            raise osc_exc.CommandError(
                'No accelerator endpoint: give --os-endpoint (with '
                '--os-auth-type none) or use a cloud whose catalog has the '
                '"%s" service' % SERVICE_TYPE)
        self.session = session
        self.root = _v2_root(endpoint)
        self.api_version = microversion(api_version)
        self.timeout = timeout

    def url(self, path):
        return path if '://' in path else self.root + path

    def request(self, method, path, **kwargs):
        headers = kwargs.pop('headers', {})
        headers.setdefault('OpenStack-API-Version',
                           '%s %s' % (SERVICE_TYPE, self.api_version))
        headers.setdefault('Accept', 'application/json')
        try:
            resp = self.session.request(
                self.url(path), method, headers=headers, raise_exc=False,
                timeout=self.timeout, **kwargs)
        except ksa_exc.ConnectFailure as exc:
            raise osc_exc.CommandError(
                'Cannot reach the accelerator API at %s: %s'
                % (self.root, _first_line(exc))) from exc
        except ksa_exc.ClientException as exc:
            raise osc_exc.CommandError(_first_line(exc)) from exc
        if resp.status_code >= 400:
            code, message = _fault(resp)
            raise ApiError(resp.status_code, code, message,
                           resp.headers.get('x-openstack-request-id'))
        return resp

    def get(self, path, params=None):
        return self.request('GET', path, params=params).json()

    def post(self, path, body=None):
        resp = self.request('POST', path, json=body)
        return resp.json() if resp.content else None

    def patch(self, path, body):
        resp = self.request('PATCH', path, json=body)
        return resp.json() if resp.content else None

    def put(self, path, body):
        resp = self.request('PUT', path, json=body)
        return resp.json() if resp.content else None

    def delete(self, path, params=None):
        self.request('DELETE', path, params=params)

    def list(self, path, key, params=None, all_pages=True):
        """The items under ``key``; every page, following ``next``, unless
        ``all_pages`` is false (the caller asked for one page)."""
        params = {k: v for k, v in (params or {}).items() if v is not None}
        body = self.get(path, params)
        items = list(body[key])
        while all_pages and body.get('next'):
            # ``next`` carries the query already, marker included.
            body = self.get(body['next'])
            items.extend(body[key])
        return items


def _v2_root(endpoint):
    root = endpoint.rstrip('/')
    return root if root.endswith('/v2') else root + '/v2'


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
