"""Every public method of the conductor's endpoint is callable over RPC."""

import inspect

from cyborg_like.conductor import manager
from cyborg_like.conductor import rpcapi


def test_the_endpoint_exposes_only_what_the_rpc_api_calls():
    exposed = {name for name, member in vars(manager.ConductorManager).items()
               if inspect.isfunction(member) and not name.startswith('_')}
    with open(rpcapi.__file__) as f:
        client = f.read()
    called = {name for name in exposed
              if "'%s'" % name in client}
    # Nothing like start/stop may be reachable by a remote caller.
    assert exposed == called, exposed - called
