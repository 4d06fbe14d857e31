"""The WSGI application of the API: pecan plus its middleware."""

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import request_id
import pecan

from cyborg_like.api import hooks
from cyborg_like.api.controllers import root
from cyborg_like.conductor import rpcapi

LOG = logging.getLogger(__name__)


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
        app = auth_token.AuthProtocol(app, {'oslo_config_config': conf})
    else:
        LOG.warning('API authentication is off ([api] auth_strategy = '
                    'noauth): every caller is an admin.')
    return request_id.RequestId(app)
