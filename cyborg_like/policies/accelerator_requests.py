from cyborg_like.policies import base

_PATH = '/v2/accelerator_requests'

rules = [
    base.operation('cyborg:arq:get_all', base.PROJECT_READER_OR_SERVICE,
                   'List accelerator requests of the project.', 'GET',
                   _PATH),
    base.operation('cyborg:arq:get_one', base.PROJECT_READER_OR_SERVICE,
                   'Show an accelerator request.', 'GET',
                   _PATH + '/{arq_uuid}'),
    base.operation('cyborg:arq:create', base.PROJECT_MEMBER_OR_SERVICE,
                   'Create accelerator requests from a device profile.',
                   'POST', _PATH),
    base.operation('cyborg:arq:update', base.PROJECT_MEMBER_OR_SERVICE,
                   'Bind or unbind accelerator requests.', 'PATCH', _PATH),
    base.operation('cyborg:arq:delete', base.PROJECT_MEMBER_OR_SERVICE,
                   'Delete accelerator requests.', 'DELETE', _PATH),
]
