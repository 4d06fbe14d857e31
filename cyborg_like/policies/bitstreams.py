"""The image catalog (ours, not Cyborg's): cloud admins manage it; agents
(the service role) download image data to program it."""

from cyborg_like.policies import base

_PATH = '/v2/bitstreams'
_WHY = (' The catalog holds what gets programmed into shared hardware: '
        'cloud admins only by default.')

rules = [
    base.operation('cyborg:bitstream:create', base.ADMIN,
                   'Create an image record (metadata).' + _WHY, 'POST',
                   _PATH),
    base.operation('cyborg:bitstream:upload', base.ADMIN,
                   'Upload the data of an image.' + _WHY, 'PUT',
                   _PATH + '/{uuid}/data'),
    base.operation('cyborg:bitstream:get_all', base.ADMIN,
                   'List images.' + _WHY, 'GET', _PATH),
    base.operation('cyborg:bitstream:get_one', base.ADMIN,
                   'Show an image.' + _WHY, 'GET', _PATH + '/{uuid}'),
    base.operation('cyborg:bitstream:download', base.SERVICE_OR_ADMIN,
                   'Download the data of an image. Agents do, to program '
                   'it, with a token holding the service role.', 'GET',
                   _PATH + '/{uuid}/data'),
    base.operation('cyborg:bitstream:delete', base.ADMIN,
                   'Delete an image (refused while a region holds it or a '
                   'device profile names it).' + _WHY, 'DELETE',
                   _PATH + '/{uuid}'),
]
