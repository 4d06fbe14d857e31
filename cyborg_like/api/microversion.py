"""API microversions: ``OpenStack-API-Version: accelerator X.Y``.

The range is Cyborg 17's, so clients negotiate with us as with Cyborg:

* 2.0 - initial version
* 2.1 - project_id in the bind patch of accelerator requests
* 2.2 - device profiles shown by name as well as by uuid
* 2.3 - devices carry their status
"""

import functools

import pecan
import webob.exc

SERVICE_TYPE = 'accelerator'
HEADER = 'OpenStack-API-Version'
MIN_HEADER = 'OpenStack-API-Minimum-Version'
MAX_HEADER = 'OpenStack-API-Maximum-Version'


@functools.total_ordering
class Version:
    def __init__(self, major, minor):
        self.major, self.minor = major, minor

    @classmethod
    def parse(cls, text):
        try:
            major, minor = text.strip().split('.')
            if not (major.isdigit() and minor.isdigit()):
                raise ValueError(text)
            return cls(int(major), int(minor))
        except ValueError:
            raise webob.exc.HTTPBadRequest(
                detail='Invalid value %r for the %s header; expected '
                       '"%s X.Y".' % (text, HEADER, SERVICE_TYPE))

    def __eq__(self, other):
        return (self.major, self.minor) == (other.major, other.minor)

    def __lt__(self, other):
        return (self.major, self.minor) < (other.major, other.minor)

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)


MIN_VERSION = Version(2, 0)
MAX_VERSION = Version(2, 3)

PROJECT_ID_IN_BIND = Version(2, 1)
DEVICE_PROFILE_BY_NAME = Version(2, 2)
DEVICE_STATUS = Version(2, 3)


def requested(headers):
    """The version a request asks for; the minimum when it names none."""
    text = None
    raw = headers.get(HEADER)
    if raw is not None:
        for part in raw.split(','):
            words = part.split()
            if len(words) == 2 and words[0].lower() == SERVICE_TYPE:
                text = words[1]
            elif len(words) == 1:
                # A bare version: older clients send it, Cyborg accepts it.
                text = words[0]
    if text is None:
        return MIN_VERSION
    if text.lower() == 'latest':
        return MAX_VERSION
    version = Version.parse(text)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise webob.exc.HTTPNotAcceptable(
            detail='Version %s was requested but is not supported by this '
                   'service. The supported version range is: [%s, %s].'
                   % (version, MIN_VERSION, MAX_VERSION),
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
