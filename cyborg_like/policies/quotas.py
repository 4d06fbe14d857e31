from cyborg_like.policies import base

rules = [
    base.operation('cyborg:quota:get', base.PROJECT_READER_OR_ADMIN,
                   "Show a project's accelerator limits and usage.", 'GET',
                   '/v2/quotas/{project_id}'),
    base.operation('cyborg:quota:update', base.ADMIN,
                   "Set a project's own accelerator limits (merged into "
                   'those it has; they override [quota] default_limits). '
                   'Not with [quota] driver = unified_limits: limits are '
                   "then set in Keystone (409). Default: cloud admin.",
                   'PUT', '/v2/quotas/{project_id}'),
    base.operation('cyborg:quota:delete', base.ADMIN,
                   "Remove a project's own accelerator limits: [quota] "
                   'default_limits apply again. Not with [quota] driver = '
                   'unified_limits (409). Default: cloud admin.',
                   'DELETE', '/v2/quotas/{project_id}'),
]
