"""``cyborg-like``: the operator CLI of cyborg_like.

osc-lib's shell (keystoneauth sessions from ``OS_*`` variables and
``clouds.yaml``, ``--os-cloud``, ``-f``/``-c`` of cliff) with the commands
of the ``openstack.accel_like.v2`` entry point group, named without their
``accel-like`` prefix. ``--os-endpoint URL`` alone (no auth URL, no cloud)
means ``--os-auth-type none``: a service running with
``[api] auth_strategy = noauth``.
"""

import sys

from cliff import commandmanager
from osc_lib.api import auth
from osc_lib import clientmanager
from osc_lib import shell as osc_shell
from osc_lib import utils

from cyborg_like.cli import client
from cyborg_like.cli import plugin

COMMAND_GROUP = 'openstack.%s.v2' % plugin.API_NAME
DESCRIPTION = ('Operate a cyborg_like accelerator service: hosts, devices '
               '(health, firmware, MIG layouts), deployables and '
               'programming, '
               'operations, the image catalog, device profiles, '
               'accelerator requests, attributes, quotas.')


class CommandManager(commandmanager.CommandManager):
    """The plugin's commands, under their names without the prefix."""

    def load_commands(self, namespace):
        super().load_commands(namespace)
        prefix = plugin.COMMAND_PREFIX + ' '
        for name in [n for n in self.commands if n.startswith(prefix)]:
            self.commands[name[len(prefix):]] = self.commands.pop(name)


class ClientManager(clientmanager.ClientManager):
    """osc-lib's, plus the accelerator client the commands use."""

    _accel_like = None

    @property
    def accel_like(self):
        if self._accel_like is None:
            self._accel_like = plugin.make_client(self)
        return self._accel_like


class Shell(osc_shell.OpenStackShell):

    def __init__(self):
        super().__init__(
            description=DESCRIPTION, version=_version(),
            command_manager=CommandManager(COMMAND_GROUP),
            deferred_help=True)

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        parser = auth.build_auth_plugins_option_parser(parser)
        parser.add_argument(
            '--os-accelerator-api-version',
            metavar='<accelerator-api-version>',
            default=utils.env('OS_ACCELERATOR_API_VERSION',
                              default=client.LATEST),
            help='Accelerator API microversion to request: X.Y, or '
                 '"latest" (default), the newest the service speaks '
                 '(env: OS_ACCELERATOR_API_VERSION)')
        return parser

    def _final_defaults(self):
        super()._final_defaults()
        options = self.options
        # As openstackclient: an endpoint and a token is admin_token.
        if options.endpoint and options.token:
            self._auth_type = 'admin_token'
        elif (options.endpoint and not options.auth_url
              and not options.cloud):
            self._auth_type = 'none'
        else:
            self._auth_type = 'password'
        if not options.auth_type and self._auth_type != 'password':
            # Given on the command line, it also wins over the cloud that
            # openstack.config makes of OS_* variables (OS_ENDPOINT alone
            # would otherwise be a "password" cloud).
            options.auth_type = self._auth_type

    def _load_plugins(self):
        version = self.options.os_accelerator_api_version
        self.api_version = {plugin.API_NAME: version}

    def initialize_app(self, argv):
        super().initialize_app(argv)
        self.client_manager = ClientManager(
            cli_options=self.cloud, api_version=self.api_version,
            pw_func=osc_shell.prompt_for_password)


def _version():
    from importlib import metadata
    try:
        return metadata.version('cyborg_like')
    except metadata.PackageNotFoundError:
        return 'unknown'


def main(argv=None):
    return Shell().run(sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
