"""Vendor driver lifecycle on a host (``/v2/hosts/{hostname}/
driver_operations``): install, upgrade, remove or verify a driver family
as an operation, followed like programming."""


from cyborg_like.cli import common
from cyborg_like.cli import waiting

FAMILIES = ('nvidia', 'opae', 'xrt')


class _DriverOperation(waiting.FailAfterOutput, common.ShowOne):
    action = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hostname', metavar='<hostname>')
        parser.add_argument('family', choices=FAMILIES,
                            help='The driver family')
        # Not --version: the shell's own option (it prints cyborg-like's).
        parser.add_argument('--driver-version', metavar='<version>',
                            help='The driver version (a trailing * takes '
                                 'the newest matching one)')
        parser.add_argument(
            '--parameter', metavar='<key=value>', action='append',
            default=[], type=common.key_value,
            help="One of the family's parameters (package, deb_path, "
                 'apt_repository, expected_devices, ...; see '
                 'docs/drivers-lifecycle.md); repeatable')
        parser.add_argument(
            '--wait-for-release', type=int, metavar='<seconds>',
            help='If accelerator requests are bound to the devices this '
                 'changes, wait up to <seconds> for their release instead '
                 'of being refused')
        parser.add_argument(
            '--force', action='store_true',
            help='Go ahead over bound accelerator requests (admin only; '
                 'recorded on the operation)')
        parser.add_argument(
            '--operation-timeout', type=int, metavar='<seconds>',
            help="Stop the playbook after <seconds> (default: the agent's "
                 '[agent] playbook_timeout)')
        return waiting.add_wait(parser, 'the operation')

    def take_action(self, args):
        body = {'action': self.action, 'family': args.family,
                'parameters': typed(dict(args.parameter))}
        for key, value in (('version', args.driver_version),
                           ('wait_for_release', args.wait_for_release),
                           ('timeout', args.operation_timeout)):
            if value is not None:
                body[key] = value
        if args.force:
            body['force'] = True
        operation = self.api.post(
            '/hosts/%s/driver_operations' % args.hostname, body)
        return common.one(self.operation_result(operation, args))


def typed(parameters):
    """Numbers and booleans as JSON types; the API's schema checks them."""
    typed = {}
    for key, value in parameters.items():
        if value.isdigit():
            typed[key] = int(value)
        elif value in ('true', 'false'):
            typed[key] = value == 'true'
        else:
            typed[key] = value
    return typed


class InstallHostDriver(_DriverOperation):
    """Install a driver family on a host; its devices are drained while
    the playbook runs and discovered again after."""
    action = 'install'


class UpgradeHostDriver(_DriverOperation):
    """Upgrade a driver family on a host to a version."""
    action = 'upgrade'


class RemoveHostDriver(_DriverOperation):
    """Remove a driver family from a host."""
    action = 'remove'


class VerifyHostDriver(_DriverOperation):
    """Verify a driver family on a host (and return its devices to
    service after a failed operation once it passes)."""
    action = 'verify'
