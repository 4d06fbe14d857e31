from cyborg_like.policies import base

_PATH = '/v2/attributes'

rules = [
    base.operation('cyborg:attribute:get_all', base.PROJECT_MANAGER_OR_ADMIN,
                   'List attributes.', 'GET', _PATH),
    base.operation('cyborg:attribute:get_one', base.PROJECT_MANAGER_OR_ADMIN,
                   'Show an attribute.', 'GET', _PATH + '/{uuid}'),
    base.operation('cyborg:attribute:create', base.ADMIN,
                   'Add an attribute to a deployable.', 'POST', _PATH),
    base.operation('cyborg:attribute:delete', base.ADMIN,
                   'Delete an attribute.', 'DELETE', _PATH + '/{uuid}'),
]
