"""/: which API versions this service speaks (openstacksdk starts here)."""

import pecan
from pecan import rest

from cyborg_like.api.controllers import v2


class RootController(rest.RestController):
    v2 = v2.V2Controller()

    @pecan.expose('json')
    def get(self):
        version = dict(v2.version_document(), id='v2')
        return {
            'name': 'OpenStack Cyborg API',
            'description': 'cyborg_like manages the lifecycle of hardware '
                           'accelerators such as GPUs and FPGAs; it serves '
                           'the OpenStack Cyborg v2 API.',
            'versions': [version],
            'default_version': version,
        }
