"""Quotas: a project's accelerator limits and usage by resource class
(``/v2/quotas/{project_id}``). Limits come from the service's
``[quota] default_limits`` or Keystone unified limits, so there is no
"quota set": the API has no route to change them."""

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
                'Give a project id: without Keystone there is no project '
                'of your own')
        return project
