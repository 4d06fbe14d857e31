"""The WSGI application of the API: pecan plus its middleware."""

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import request_id
import pecan

from cyborg_like.api import hooks
from cyborg_like.api.controllers import root
from cyborg_like.conductor import rpcapi

LOG = logging.getLogger(__name__)

# Version discovery and the API description are public, as in Cyborg:
# clients read them before they have a token.
PUBLIC_PATHS = ('/', '/openapi.yaml', '/openapi.json')


class PublicPaths:
    """Sends requests for PUBLIC_PATHS around authentication."""

    def __init__(self, authenticated, public):
        self.authenticated = authenticated
        self.public = public

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '') or '/'
        app = self.public if path in PUBLIC_PATHS else self.authenticated
        return app(environ, start_response)


def setup_app(conf, conductor_api=None):
    """Build the API; ``rpc.init`` must have been called already."""
    conductor_api = conductor_api or rpcapi.ConductorAPI(
        timeout=conf.api.conductor_timeout)
    app = pecan.make_app(
        root.RootController(),
        hooks=[hooks.ContextHook(conf.api.auth_strategy),
               hooks.ServiceHook(conductor_api, conf.api),
               hooks.MicroversionHook(),
               hooks.EmptyBodyHook(),
               hooks.ErrorHook()],
        force_canonical=False,
        guess_content_type_from_ext=False,
        logging=False,
        debug=False,
    )
    if conf.api.auth_strategy == 'keystone':
        app = PublicPaths(
            auth_token.AuthProtocol(app, {'oslo_config_config': conf}), app)
    else:
        LOG.warning('API authentication is off ([api] auth_strategy = '
                    'noauth): every caller is an admin.')
    return request_id.RequestId(app)
