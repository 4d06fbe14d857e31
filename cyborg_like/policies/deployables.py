from cyborg_like.policies import base

_PATH = '/v2/deployables'

rules = [
    base.operation('cyborg:deployable:get_all', base.ADMIN,
                   'List deployables.' + base.CLOUD_INVENTORY, 'GET',
                   _PATH),
    base.operation('cyborg:deployable:get_one', base.ADMIN,
                   'Show a deployable.' + base.CLOUD_INVENTORY, 'GET',
                   _PATH + '/{uuid}'),
    base.operation('cyborg:deployable:program', base.ADMIN,
                   'Program a deployable with a bitstream.', 'PATCH',
                   _PATH + '/{uuid}/program'),
    base.operation('cyborg:operation:get', base.ADMIN,
                   'Show or list operations (programming).', 'GET',
                   '/v2/operations'),
]
