"""Fleet rollouts (``/v2/rollouts``, docs/rollouts.md): roll a bitstream
out to FPGA regions (or firmware to FPGA cards, or a driver version to
hosts) in waves after a canary, watch it, pause, resume, abort or roll it
back."""

from osc_lib import exceptions as osc_exc

from cyborg_like.cli import common
from cyborg_like.cli.v2 import host_drivers
from cyborg_like.common import states

PATH = '/rollouts'
COLUMNS = ('uuid', 'name', 'kind', 'image', 'state', 'current_wave', 'waves',
           'targets', 'reason')
LONG_COLUMNS = COLUMNS + ('selector', 'strategy', 'conductor_uuid',
                          'created_at', 'finished_at')
TARGET_COLUMNS = ('id', 'wave', 'hostname', 'target_uuid', 'state',
                  'attempts', 'last_known_good', 'applied', 'reason')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')


def _size(text):
    """A count, or a percentage ("10%") as the API takes it."""
    return text if text.endswith('%') else int(text)


_UNSET = object()


def _version_or_none(text):
    """A version, or "none": hosts without the family."""
    return None if text == 'none' else text


class CreateRollout(common.ShowOne):
    """Roll a bitstream out to FPGA regions (or, with --kind firmware,
    firmware to FPGA cards; with --kind driver --driver <family>
    --driver-version <v>, a driver version to hosts): a canary first,
    then waves, never more than --max-unavailable targets (and per host)
    changing at once; a canary failure or more failures than
    --failure-budget rolls the changed targets back."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('image', metavar='<image>', nargs='?',
                            help='A catalog image uuid, or a bitstream id '
                                 "the agents' bitstream_dir holds (not for "
                                 '--kind driver)')
        parser.add_argument('--kind', choices=('bitstream', 'firmware',
                                               'driver'),
                            default='bitstream',
                            help='bitstream (regions; default), firmware '
                                 '(cards) or driver (hosts)')
        parser.add_argument('--driver', metavar='<family>',
                            help='--kind driver: nvidia, opae or xrt')
        # Not --version: the command line's own (cliff) shows the
        # client's version wherever it is.
        parser.add_argument('--driver-version', metavar='<version>',
                            help='--kind driver: the version applied')
        parser.add_argument(
            '--parameter', metavar='<key=value>', action='append',
            default=[], type=common.key_value,
            help="--kind driver: one of the family's parameters for each "
                 "host's install or upgrade (package, apt_repository, "
                 'vgpu_manager, ...; docs/drivers-lifecycle.md); '
                 'repeatable')
        parser.add_argument(
            '--operation-timeout', type=int, metavar='<seconds>',
            help="--kind driver: stop each host's playbook after "
                 "<seconds> (default: the agent's [agent] "
                 'playbook_timeout)')
        parser.add_argument('--device-type', metavar='<GPU|FPGA|...>',
                            help='--kind driver: only hosts with a device '
                                 'of this type')
        parser.add_argument('--current-version', metavar='<version|none>',
                            type=_version_or_none, default=_UNSET,
                            help='--kind driver: only hosts at this version '
                                 'of the family ("none": without it)')
        parser.add_argument('--name', metavar='<name>')
        parser.add_argument('--host', action='append', dest='hostnames',
                            metavar='<hostname>',
                            help='Only regions of this host (repeat)')
        parser.add_argument('--aggregate', action='append',
                            dest='aggregates', metavar='<uuid>',
                            help='Only targets on a host in this Placement '
                                 'aggregate (repeat: in any of them)')
        parser.add_argument('--label', action='append', default=[],
                            type=common.key_value, metavar='<key=value>',
                            help='Only targets on a host with this label '
                                 '(host set --label; repeat: with all of '
                                 'them)')
        parser.add_argument('--vendor', metavar='<0x8086>')
        parser.add_argument('--model', metavar='<model>')
        parser.add_argument('--region', action='append',
                            dest='deployable_names', metavar='<name>',
                            help='Only regions of this name (repeat)')
        parser.add_argument('--current-image', metavar='<id>',
                            help='Only regions holding this image now')
        parser.add_argument('--canary', type=_size, metavar='<n|n%>',
                            help='Regions changed first, alone (default 1)')
        parser.add_argument('--wave', action='append', type=_size,
                            dest='waves', metavar='<n|n%>',
                            help='Size of the next wave (repeat; the last '
                                 'repeats; default: 100%%)')
        parser.add_argument('--max-unavailable', type=_size,
                            metavar='<n|n%>', help='Default 1')
        parser.add_argument('--max-unavailable-per-host', type=int,
                            metavar='<n>', help='Default 1')
        parser.add_argument('--gate-seconds', type=int, metavar='<seconds>',
                            help='How long a changed region must stay '
                                 'healthy (default 0)')
        parser.add_argument('--failure-budget', type=int, metavar='<n>',
                            help='Failures tolerated after the canary '
                                 '(default 0)')
        parser.add_argument('--workloads',
                            choices=('skip', 'wait', 'include'),
                            help='Targets a workload holds: skip them '
                                 '(default), wait for them, or (driver '
                                 'rollouts only) include them')
        parser.add_argument('--wait-timeout', type=int, metavar='<seconds>')
        parser.add_argument('--dry-run', action='store_true',
                            help='Show the waves; change nothing')
        return parser

    def take_action(self, args):
        selector = {k: getattr(args, k) for k in (
            'hostnames', 'aggregates', 'vendor', 'model',
            'deployable_names',
            'current_image', 'device_type') if getattr(args, k) is not None}
        if args.current_version is not _UNSET:
            selector['current_version'] = args.current_version
        if args.label:
            selector['labels'] = dict(args.label)
        strategy = {k: getattr(args, k) for k in (
            'canary', 'waves', 'max_unavailable', 'max_unavailable_per_host',
            'gate_seconds', 'failure_budget', 'workloads', 'wait_timeout')
            if getattr(args, k) is not None}
        body = {'kind': args.kind, 'selector': selector,
                'strategy': strategy}
        if args.kind == 'driver':
            if args.image or not (args.driver and args.driver_version):
                raise osc_exc.CommandError(
                    '--kind driver takes --driver and --driver-version, '
                    'no image.')
            body.update(driver=args.driver, version=args.driver_version)
            if args.parameter:
                body['parameters'] = host_drivers.typed(dict(args.parameter))
            if args.operation_timeout is not None:
                body['timeout'] = args.operation_timeout
        elif (args.image is None or args.driver or args.driver_version
              or args.parameter or args.operation_timeout is not None):
            raise osc_exc.CommandError(
                '--kind %s takes an image (and no --driver, '
                '--driver-version, --parameter, --operation-timeout).'
                % args.kind)
        else:
            body['image'] = args.image
        if args.name:
            body['name'] = args.name
        if args.dry_run:
            body['dry_run'] = True
        return common.one(self.api.post(PATH, body))


class ListRollout(common.Lister):
    """List rollouts, with their targets counted by state."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', choices=states.ROLLOUT.states)
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(state=args.state)
        found = self.api.list(PATH, 'rollouts', params, all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowRollout(common.ShowOne):
    """Show a rollout: its state, wave, targets by state and why it
    stopped."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The rollout')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('%s/%s' % (PATH, args.uuid)))


class ListRolloutTarget(common.Lister):
    """List a rollout's targets in wave order (wave 0 is the canary)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The rollout')
        parser.add_argument('--state', choices=states.ROLLOUT_TARGET.states)
        parser.add_argument('--wave', type=int, metavar='<n>')
        parser.add_argument('--host', metavar='<hostname>')
        return parser

    def take_action(self, args):
        params = {'state': args.state, 'hostname': args.host,
                  'wave': None if args.wave is None else str(args.wave)}
        found = self.api.list('%s/%s/targets' % (PATH, args.uuid),
                              'targets', params)
        return common.rows(found, TARGET_COLUMNS)


class PauseRollout(ShowRollout):
    """Pause a running rollout: nothing more starts."""

    action = 'pause'

    def take_action(self, args):
        return common.one(self.api.post('%s/%s/%s' % (
            PATH, args.uuid, self.action)))


class ResumeRollout(PauseRollout):
    """Resume a paused rollout."""

    action = 'resume'


class AbortRollout(PauseRollout):
    """Abort a rollout: nothing more starts and nothing is put back."""

    action = 'abort'


class RollbackRollout(PauseRollout):
    """Put every region a finished rollout changed back to its
    last-known-good image, in waves."""

    action = 'rollback'
