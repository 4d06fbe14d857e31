from cyborg_like.policies import base

_PATH = '/v2/devices'

rules = [
    base.operation('cyborg:device:get_all', base.PROJECT_MANAGER_OR_ADMIN,
                   'List accelerator devices.', 'GET', _PATH),
    base.operation('cyborg:device:get_one', base.PROJECT_MANAGER_OR_ADMIN,
                   'Show a device, and its health.', 'GET',
                   _PATH + '/{uuid}'),
    base.operation('cyborg:device:disable', base.ADMIN,
                   'Take a device out of service.', 'POST',
                   _PATH + '/{uuid}/disable'),
    base.operation('cyborg:device:enable', base.ADMIN,
                   'Put a device back in service.', 'POST',
                   _PATH + '/{uuid}/enable'),
    base.operation('cyborg:host:get_all', base.ADMIN,
                   'List compute hosts and whether they are up.', 'GET',
                   '/v2/hosts'),
]
