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


def test_a_region_holding_the_bitstream_is_not_programmed_again():
    same = manager._same_bitstream
    uuid = '9346116d-a52d-5ca8-b06a-a89a2a2f4a1f'
    assert same(uuid, uuid.upper())
    assert same(uuid.replace('-', ''), uuid)
    assert same('bs-crypto-1', 'bs-crypto-1')
    assert not same('bs-crypto-1', 'bs-crypto-2')
    assert not same(uuid, None)
    assert not same(None, None)
