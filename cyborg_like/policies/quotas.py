from cyborg_like.policies import base

rules = [
    base.operation('cyborg:quota:get', base.PROJECT_READER_OR_ADMIN,
                   "Show a project's accelerator limits and usage.", 'GET',
                   '/v2/quotas/{project_id}'),
]
