from cyborg_like.policies import base

_PATH = '/v2/device_profiles'

rules = [
    base.operation('cyborg:device_profile:get_all',
                   base.PROJECT_READER_OR_SERVICE,
                   'List device profiles.', 'GET', _PATH),
    base.operation('cyborg:device_profile:get_one',
                   base.PROJECT_READER_OR_SERVICE,
                   'Show a device profile.', 'GET', _PATH + '/{uuid}'),
    base.operation('cyborg:device_profile:create', base.ADMIN,
                   'Create a device profile.', 'POST', _PATH),
    base.operation('cyborg:device_profile:delete', base.ADMIN,
                   'Delete device profiles.', 'DELETE', _PATH + '/{uuid}'),
]
