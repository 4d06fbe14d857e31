"""The python-openstackclient plugin: ``openstack accel-like ...``.

A namespace of its own (API name ``accel_like``, command group
``openstack.accel_like.v2``, option ``--os-accel-like-api-version``), so it
loads beside python-cyborgclient, whose ``openstack accelerator`` commands
and ``--os-accelerator-api-version`` option stay its own. ``cyborg-like``
uses ``make_client`` too.
"""

import re

from osc_lib import exceptions as osc_exc
from osc_lib import utils

from cyborg_like.cli import client

API_NAME = 'accel_like'
API_VERSION_OPTION = 'os_accel_like_api_version'
# OSC makes the command group from the major version: keep it numeric.
# "2" asks the service for its newest microversion.
DEFAULT_API_VERSION = '2'
API_VERSIONS = ('2',)
COMMAND_PREFIX = 'accel-like'
_VERSION = re.compile(r'^2(\.[0-9]+)?\Z')


def check_api_version(version):
    """Accept 2 or 2.N (the microversion); True skips OSC's own check."""
    if not _VERSION.match(str(version)):
        raise osc_exc.CommandError(
            'Invalid accel-like API version %r: give 2 (newest) or 2.N'
            % version)
    return True


def make_client(instance):
    """Our client from OSC's (or cyborg-like's) ClientManager."""
    endpoint = instance.get_endpoint_for_service_type(
        client.SERVICE_TYPE, region_name=instance.region_name,
        interface=instance.interface)
    return client.Client(instance.session, endpoint,
                         instance._api_version.get(API_NAME))


def build_option_parser(parser):
    parser.add_argument(
        '--os-accel-like-api-version',
        metavar='<accel-like-api-version>',
        default=utils.env('OS_ACCEL_LIKE_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='Accelerator API microversion for the accel-like commands: '
             '2.N, or 2 for the newest the service speaks (default: %s; '
             'env: OS_ACCEL_LIKE_API_VERSION)' % DEFAULT_API_VERSION)
    return parser
