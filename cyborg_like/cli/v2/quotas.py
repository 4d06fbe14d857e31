"""Quotas: a project's accelerator limits and usage by resource class
(``/v2/quotas/{project_id}``). Limits come from the service's
``[quota] default_limits``, which a project's own limits override, or from
Keystone unified limits. An admin sets a project's own limits with
``quota set`` (merged into those it has) and removes them with ``quota
unset``; with Keystone unified limits both are refused (409): limits are
then set in Keystone."""

from osc_lib import exceptions as osc_exc

from cyborg_like.cli import common


class ShowQuota(common.ShowOne):
    """Show a project's accelerator limits and usage."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'project', metavar='<project-id>', nargs='?',
            help="The project (default: the project you are authenticated "
                 "in)")
        return parser

    def take_action(self, args):
        project = args.project or self._own_project()
        quota = self.api.get('/quotas/%s' % project)['quota']
        return common.one(quota)

    def _own_project(self):
        project = self.api.session.get_project_id()
        if not project:
            raise osc_exc.CommandError(
                'Give a project id: without Keystone there is no '
                'project of your own')
        return project


def _limit(text):
    """An argparse type: ``RC=N`` as (resource class, int N)."""
    resource, value = common.key_value(text)
    try:
        return resource, int(value)
    except ValueError:
        raise osc_exc.CommandError(
            'Expected RESOURCE_CLASS=N (N an integer, -1 for unlimited), '
            'not %r' % text) from None


class SetQuota(common.ShowOne):
    """Set a project's own accelerator limits (admin); shows its quota."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>')
        parser.add_argument(
            '--limit', metavar='<resource-class=n>', action='append',
            required=True, type=_limit, dest='limits',
            help='The most accelerators of a resource class the project '
                 'may hold, e.g. FPGA=2; -1 for unlimited; repeatable. '
                 'Classes not given keep their limits.')
        return parser

    def take_action(self, args):
        quota = self.api.put('/quotas/%s' % args.project,
                             {'limits': dict(args.limits)})['quota']
        return common.one(quota)


class UnsetQuota(common.Command):
    """Remove a project's own accelerator limits (admin): the service's
    defaults apply again."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>')
        return parser

    def take_action(self, args):
        self.api.delete('/quotas/%s' % args.project)
