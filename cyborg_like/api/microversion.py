"""API microversions: ``OpenStack-API-Version: accelerator X.Y``.

Up to 2.3 the range is Cyborg 17's, so clients negotiate with us as with
Cyborg; later versions are ours (a client capped at Cyborg's 2.3 sees
none of them):

* 2.0 - initial version
* 2.1 - project_id in the bind patch of accelerator requests
* 2.2 - device profiles shown by name as well as by uuid
* 2.3 - devices carry their status
* 2.4 - (ours) devices carry ``drained`` and ``drain_reasons`` (every
        cause draining them: driver operation, firmware, MIG layout,
        health), and a drained device's health says ``service_state``
        drained
"""

import functools

import microversion_parse
import pecan
import webob.exc

from cyborg_like.api import validation

SERVICE_TYPE = 'accelerator'
HEADER = 'OpenStack-API-Version'
MIN_HEADER = 'OpenStack-API-Minimum-Version'
MAX_HEADER = 'OpenStack-API-Maximum-Version'


@functools.total_ordering
class Version:
    """X.Y, ordered. Not microversion_parse's tuple: "%s" % version must
    print it, as it does in messages."""

    def __init__(self, major, minor):
        self.major, self.minor = major, minor

    def __eq__(self, other):
        return (self.major, self.minor) == (other.major, other.minor)

    def __lt__(self, other):
        return (self.major, self.minor) < (other.major, other.minor)

    def __hash__(self):
        return hash((self.major, self.minor))

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)


MIN_VERSION = Version(2, 0)
MAX_VERSION = Version(2, 4)

PROJECT_ID_IN_BIND = Version(2, 1)
DEVICE_PROFILE_BY_NAME = Version(2, 2)
DEVICE_STATUS = Version(2, 3)
DEVICE_DRAIN = Version(2, 4)


def _bare_version(raw):
    """The last bare "X.Y" of the header: older clients send it without
    the service type, and Cyborg accepts it."""
    words = [part.split() for part in raw.split(',')]
    bare = [w[0] for w in words if len(w) == 1]
    return bare[-1] if bare else None


def _asked_for(headers):
    """The version text the request names for us, or None."""
    raw = headers.get(HEADER)
    if raw is None:
        return None
    text = microversion_parse.get_version({HEADER: raw}, SERVICE_TYPE)
    return text if text is not None else _bare_version(raw)


def _parse(text):
    try:
        parsed = microversion_parse.parse_version_string(text)
    except TypeError:
        raise webob.exc.HTTPBadRequest(
            detail='Invalid value %s for the %s header; expected '
                   '"%s X.Y" or "%s latest".' % (
                       validation.excerpt(text), HEADER, SERVICE_TYPE,
                       SERVICE_TYPE))
    return Version(parsed.major, parsed.minor)


def requested(headers):
    """The version a request asks for; the minimum when it names none."""
    text = _asked_for(headers)
    if text is None:
        return MIN_VERSION
    if text.lower() == 'latest':
        return MAX_VERSION
    version = _parse(text)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise webob.exc.HTTPNotAcceptable(
            detail='Version %s was requested but is not supported by this '
                   'service. The supported version range is: [%s, %s].'
                   % (validation.excerpt(str(version))[1:-1], MIN_VERSION,
                      MAX_VERSION),
            headers=range_headers())
    return version


def range_headers():
    return {MIN_HEADER: str(MIN_VERSION), MAX_HEADER: str(MAX_VERSION),
            'Vary': HEADER}


def require(version):
    """406 unless the request asked for ``version`` or newer."""
    if pecan.request.version < version:
        raise webob.exc.HTTPNotAcceptable(
            detail='Request not acceptable. The minimal required API '
                   'version should be %s.' % version)
