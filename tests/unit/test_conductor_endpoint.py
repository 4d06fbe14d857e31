"""The conductor's RPC client and endpoint agree on every method."""

import inspect

import pytest

from cyborg_like.common import context
from cyborg_like.conductor import binding
from cyborg_like.conductor import manager
from cyborg_like.conductor import rpcapi

TOPIC = 'recording-conductor'


class RecordingConductor:
    """A real RPC endpoint with the conductor's version that records each
    call it is sent, by method name, with its arguments."""

    target = manager.ConductorManager.target

    def __init__(self):
        self.calls = {}

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)

        def record(ctxt, **kwargs):
            self.calls[name] = kwargs
        return record


@pytest.fixture
def recording(serve):
    endpoint = RecordingConductor()
    serve(endpoint, topic=TOPIC, server='rec')
    return endpoint, rpcapi.ConductorAPI(timeout=5, topic=TOPIC)


def _call_every_method(client):
    """Call each RPC method of the client, every argument None; which calls
    succeed past the send does not matter (None answers)."""
    ctxt = context.get_admin_context()
    for name, method in inspect.getmembers(client, inspect.ismethod):
        params = list(inspect.signature(method).parameters)
        if name.startswith('_') or params[:1] != ['context']:
            continue        # not an RPC call (can_confirm_releases)
        try:
            method(ctxt, *[None] * (len(params) - 1))
        except (TypeError, AttributeError):
            pass            # the client read the None answer


def test_the_client_and_the_endpoint_agree(recording):
    endpoint, client = recording
    _call_every_method(client)
    exposed = {name for name, member in vars(manager.ConductorManager).items()
               if inspect.isfunction(member) and not name.startswith('_')}
    # Every endpoint method is reached through the client, and nothing
    # else (start, stop) is public on the endpoint.
    assert set(endpoint.calls) == exposed, exposed ^ set(endpoint.calls)
    # Each arrived with arguments the conductor's method takes, at a
    # version its target accepts (the dispatcher refuses newer ones).
    for name, kwargs in endpoint.calls.items():
        signature = inspect.signature(getattr(manager.ConductorManager,
                                              name))
        signature.bind(None, None, **kwargs)


def test_a_region_holding_the_bitstream_is_not_programmed_again():
    same = binding._same_bitstream
    uuid = '9346116d-a52d-5ca8-b06a-a89a2a2f4a1f'
    assert same(uuid, uuid.upper())
    assert same(uuid.replace('-', ''), uuid)
    assert same('bs-crypto-1', 'bs-crypto-1')
    assert not same('bs-crypto-1', 'bs-crypto-2')
    assert not same(uuid, None)
    assert not same(None, None)
