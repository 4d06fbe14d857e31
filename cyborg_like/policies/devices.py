from cyborg_like.policies import base

_PATH = '/v2/devices'

rules = [
    base.operation('cyborg:device:get_all', base.ADMIN,
                   'List accelerator devices.' + base.CLOUD_INVENTORY,
                   'GET', _PATH),
    base.operation('cyborg:device:get_one', base.ADMIN,
                   'Show a device, and its health.' + base.CLOUD_INVENTORY,
                   'GET', _PATH + '/{uuid}'),
    base.operation('cyborg:device:disable', base.ADMIN,
                   'Take a device out of service.', 'POST',
                   _PATH + '/{uuid}/disable'),
    base.operation('cyborg:device:enable', base.ADMIN,
                   'Put a device back in service.', 'POST',
                   _PATH + '/{uuid}/enable'),
    base.operation('cyborg:device:firmware', base.ADMIN,
                   'Flash a device\'s firmware with a catalog image (the '
                   'device is drained meanwhile; ours, Cyborg has no such '
                   'API).', 'POST', _PATH + '/{uuid}/firmware'),
    base.operation('cyborg:device:mig_layout', base.ADMIN,
                   'Cut a GPU into the MIG devices of a layout (the GPU is '
                   'drained meanwhile; ours, Cyborg has no such API).',
                   'POST', _PATH + '/{uuid}/mig_layout'),
    base.operation('cyborg:host:get_all', base.ADMIN,
                   'List compute hosts and whether they are up (Cyborg has '
                   'no such API).' + base.CLOUD_INVENTORY, 'GET',
                   '/v2/hosts'),
]
