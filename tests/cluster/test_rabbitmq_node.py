"""A RabbitMQ node lost under load, then back.

``first``: node 1, the first of transport_url, SIGKILLed: every process
connected to it first, so all fail over to the other nodes (kombu
round-robin); its quorum queues elect a leader among the two left; started
again, the node rejoins on its own. ``leader``: the node that leads the
conductors' RPC queue now (after earlier faults, maybe not node 1)
SIGKILLed. ``partition``: node 1 cut off the other two (its Erlang
distribution dropped by iptables; its AMQP port still open): it notices
within net_ticktime, pause_minority pauses it (its clients' connections
closed, so they fail over), and it resumes once healed. ``conductor``:
the first conductor SIGKILLed at the same moment as node 1; the other
conductor fails the binds it left (service_down_after) and serves alone.
"""

import json
import urllib.parse

import pytest

from harness.infra import wait_for

from .cluster import RABBIT_PORTS
from .faults import check_rows
from .faults import cloud
from .faults import report
from .faults import under_load

CONDUCTOR_QUEUE = 'cyborg_like-conductor'


def _connections(clusters, node):
    return len(clusters.rabbit(
        'ctl', node, 'list_connections', 'name', '--silent').splitlines())


def _leader(clusters, dep):
    """The node leading the conductors' RPC queue."""
    vhost = urllib.parse.urlparse(dep.transport_url).path.lstrip('/')
    queues = json.loads(clusters.rabbit(
        'ctl', 1, 'list_queues', '-p', vhost, 'name', 'type', 'leader',
        '--formatter', 'json', '--silent'))
    [queue] = [q for q in queues if q['name'] == CONDUCTOR_QUEUE]
    assert queue['type'] == 'quorum', queue
    return int(queue['leader'].split('@')[0][2:])


def _back(clusters):
    wait_for(lambda: clusters.rabbit_running() == {1, 2, 3},
             timeout=60, message='a RabbitMQ node did not rejoin')


@pytest.mark.parametrize('case', ['first', 'leader', 'partition',
                                  'conductor'])
def test_rabbitmq_node_lost_and_back(healed, workdir, case):
    with cloud(healed, workdir) as dep:
        node = _leader(healed, dep) if case == 'leader' else 1
        at_kill = {'node': node,
                   'connections_on_node': _connections(healed, node)}
        killed = ('conductor',) if case == 'conductor' else ()
        if case == 'partition':
            def fault():
                healed.rabbit('partition', node)
                return at_kill

            def back():
                healed.rabbit('heal')
                _back(healed)
        else:
            def fault():
                for name in killed:
                    dep.services[name].kill()
                healed.rabbit('kill', node)
                return at_kill

            def back():
                healed.rabbit('revive', node)
        # Healed once pause_minority paused the cut node (its AMQP port
        # closed), or revived once the killed one is gone.
        load, drained, figures = under_load(dep, fault, back,
                                            RABBIT_PORTS[node])
        changes = check_rows(dep, load, drained, figures, killed=killed)
        report('rabbitmq node %d lost (%s)' % (node, case), figures,
               changes)
        _back(healed)
