"""Accelerator requests (ARQs): made from a device profile, bound to an
instance on a host, unbound, deleted (``/v2/accelerator_requests``).

Binding and unbinding are accepted at once and finished by the conductor:
``--wait`` follows the ARQ until it is Bound or BindFailed (Unbound)."""

from osc_lib import exceptions as osc_exc

from cyborg_like.cli import common
from cyborg_like.cli import waiting
from cyborg_like.common import states

COLUMNS = ('uuid', 'state', 'device_profile_name', 'device_profile_group_id',
           'hostname', 'instance_uuid', 'attach_handle_type')
LONG_COLUMNS = COLUMNS + ('device_rp_uuid', 'project_id',
                          'attach_handle_uuid', 'attach_handle_info',
                          'device_health', 'state_reason',
                          'lease_ends_at', 'lease_starts_at', 'created_at',
                          'updated_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'state')
PATH = '/accelerator_requests'


class ListARQ(common.Lister):
    """List accelerator requests."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--instance', metavar='<uuid>',
                            help='Only the ARQs bound to this instance')
        parser.add_argument(
            '--resolved', action='store_true',
            help='Only ARQs whose binding ended (Bound or BindFailed)')
        parser.add_argument(
            '--device-health', choices=('healthy', 'unhealthy', 'unknown'),
            help='Only ARQs holding a device in this health: unhealthy '
                 'lists the instances whose device failed')
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(instance=args.instance,
                      bind_state='resolved' if args.resolved else None,
                      device_health=args.device_health)
        found = self.api.list(PATH, 'arqs', params, all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowARQ(common.ShowOne):
    """Show an accelerator request."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The ARQ')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('%s/%s' % (PATH, args.uuid)))


class CreateARQ(common.Lister):
    """Create the accelerator requests of a device profile: one per
    accelerator of each group (or of the one group given)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<profile-name>')
        parser.add_argument('--group-id', type=int, metavar='<index>',
                            help='Only this group of the profile (from 0)')
        return parser

    def take_action(self, args):
        body = {'device_profile_name': args.profile}
        if args.group_id is not None:
            body['device_profile_group_id'] = args.group_id
        created = self.api.post(PATH, body)['arqs']
        return common.rows(created, COLUMNS)


class _Binding(waiting.FailAfterOutput, common.ShowOne):
    """PATCH an ARQ with ``patch_ops(args)``, then show it (followed until
    its state is one of ``done`` with --wait)."""

    done = ()

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The ARQ')
        return parser

    def failed(self, arq):
        return None

    def take_action(self, args):
        self.api.patch('%s/%s' % (PATH, args.uuid), self.patch_ops(args))
        if args.wait:
            arq = waiting.follow_arq(self.api, args.uuid, self.done,
                                     args.timeout)
            self.failure = self.failed(arq)
        else:
            arq = self.api.get('%s/%s' % (PATH, args.uuid))
        return common.one(arq)


class BindARQ(_Binding):
    """Bind an accelerator request to an instance on a host (as Nova does);
    the conductor finishes it in the background."""

    done = (states.BOUND, states.BIND_FAILED)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--hostname', required=True,
                            metavar='<hostname>')
        parser.add_argument('--device-rp-uuid', required=True,
                            metavar='<uuid>',
                            help='The resource provider of the deployable')
        parser.add_argument('--instance-uuid', required=True,
                            metavar='<uuid>')
        parser.add_argument('--project-id', metavar='<project>',
                            help='Hand the ARQ to this project '
                                 '(administrators; microversion 2.1+)')
        return waiting.add_wait(parser, 'the binding (Bound or BindFailed)')

    def patch_ops(self, args):
        ops = [{'op': 'add', 'path': '/hostname', 'value': args.hostname},
               {'op': 'add', 'path': '/device_rp_uuid',
                'value': args.device_rp_uuid},
               {'op': 'add', 'path': '/instance_uuid',
                'value': args.instance_uuid}]
        if args.project_id:
            ops.append({'op': 'add', 'path': '/project_id',
                        'value': args.project_id})
        return ops

    def failed(self, arq):
        return _bind_failure(arq)


def _bind_failure(arq):
    if arq['state'] == states.BIND_FAILED:
        return 'ARQ %s: binding failed: %s' % (
            arq['uuid'], arq.get('state_reason') or 'no reason given')
    return None


class ScheduleARQ(waiting.FailAfterOutput, common.ShowOne):
    """Bind an accelerator request without Nova: the conductor picks the
    deployable (on --hostname if given) for the consumer --instance-uuid
    (any UUID: an instance, an Ironic node's instance, a job)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The ARQ')
        parser.add_argument('--instance-uuid', required=True,
                            metavar='<uuid>', help='The consumer')
        parser.add_argument('--hostname', metavar='<hostname>',
                            help='Only a deployable of this host')
        strategy = parser.add_mutually_exclusive_group()
        strategy.add_argument(
            '--pack', dest='strategy', action='store_const', const='pack',
            help='Prefer hosts and devices already in use (the default)')
        strategy.add_argument(
            '--spread', dest='strategy', action='store_const',
            const='spread', help='Prefer the least used hosts and devices')
        parser.add_argument('--numa-node', type=int, metavar='<node>',
                            help='Only devices on this NUMA node')
        return waiting.add_wait(parser, 'the binding (Bound or BindFailed)')

    def take_action(self, args):
        body = {'instance_uuid': args.instance_uuid}
        if args.hostname:
            body['hostname'] = args.hostname
        preferences = {}
        if args.strategy:
            preferences['strategy'] = args.strategy
        if args.numa_node is not None:
            preferences['numa_node'] = args.numa_node
        if preferences:
            body['preferences'] = preferences
        arq = self.api.post('%s/%s/schedule' % (PATH, args.uuid), body)
        if args.wait:
            arq = waiting.follow_arq(self.api, args.uuid, BindARQ.done,
                                     args.timeout)
            self.failure = _bind_failure(arq)
        return common.one(arq)


class UnbindARQ(_Binding):
    """Unbind an accelerator request (its device is released); one never
    bound, or unbound already, is left as it is."""

    # Every state an unbind leaves an ARQ in (Unbound, or Initial if it
    # never was bound).
    done = tuple(s for s in states.ARQ.states
                 if not states.ARQ.allows(s, states.UNBIND))

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        return waiting.add_wait(parser, 'the unbinding')

    def patch_ops(self, args):
        return [{'op': 'remove', 'path': '/hostname'},
                {'op': 'remove', 'path': '/device_rp_uuid'},
                {'op': 'remove', 'path': '/instance_uuid'}]


class DeleteARQ(common.Command):
    """Delete accelerator requests, by uuid or every one of an instance
    (bound ones are released first)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuids', metavar='<uuid>', nargs='*',
                            help='The ARQs (all or none are deleted)')
        parser.add_argument('--instance', metavar='<uuid>',
                            help='Every ARQ of this instance instead')
        return parser

    def take_action(self, args):
        if bool(args.uuids) == bool(args.instance):
            raise osc_exc.CommandError(
                'Give ARQ uuids or --instance, not both nor neither')
        if args.instance:
            self.api.delete(PATH, {'instance': args.instance})
        else:
            self.api.delete(PATH, {'arqs': ','.join(args.uuids)})
