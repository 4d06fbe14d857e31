from cyborg_like.policies import base

_PATH = '/v2/attributes'

rules = [
    base.operation('cyborg:attribute:get_all', base.ADMIN,
                   'List attributes.' + base.CLOUD_INVENTORY, 'GET', _PATH),
    base.operation('cyborg:attribute:get_one', base.ADMIN,
                   'Show an attribute.' + base.CLOUD_INVENTORY, 'GET',
                   _PATH + '/{uuid}'),
    base.operation('cyborg:attribute:create', base.ADMIN,
                   'Add an attribute to a deployable.', 'POST', _PATH),
    base.operation('cyborg:attribute:delete', base.ADMIN,
                   'Delete an attribute.', 'DELETE', _PATH + '/{uuid}'),
]
