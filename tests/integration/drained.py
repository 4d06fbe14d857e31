"""Waiting until nothing sent to a deployment's conductor can still be
carried out (docs/metrics.md "Drained"), which the cut tests wait for
before they look for late writes, instead of watching for a while.

Three signals, read in this order, each once the one before holds: the
API's calls in flight (``cyborg_like_api_rpc_calls_in_flight``: none is
still being published), the conductors' queue on the broker (empty: every
message published was taken; a message taken is acknowledged right before
it is served), and the conductor's calls in progress
(``cyborg_like_rpc_calls_in_progress``: every call taken has ended,
carried out or dropped). Each is read twice in a row at 0, so that a call
between its acknowledgement and its start is not missed.
"""

import urllib.parse

from prometheus_client import parser
import requests

from harness.infra import run

from .infra import free_port
from .infra import wait_for

CONDUCTOR_QUEUE = 'cyborg_like-conductor'


def conductor_metrics_config():
    """The conductor's configuration text for a port of its own, and the
    URL of its metrics."""
    port = free_port()
    return ('[metrics]\nconductor_listen_port = %d\n' % port,
            'http://127.0.0.1:%d/metrics' % port)


def wait_drained(dep, conductor_metrics_url, timeout):
    """Wait (up to ``timeout`` seconds for each signal) until nothing sent
    to ``dep``'s conductor can still be carried out."""
    for what, count in (
            ('API calls in flight', lambda: series(
                dep.api_url + '/metrics',
                'cyborg_like_api_rpc_calls_in_flight')),
            ('messages in the conductors\' queue', lambda: _queued(dep)),
            ('conductor calls in progress', lambda: series(
                conductor_metrics_url,
                'cyborg_like_rpc_calls_in_progress'))):
        _zero_twice(what, count, timeout)


def _zero_twice(what, count, timeout):
    seen = []

    def zero_twice():
        seen.append(count())
        return seen[-2:] == [0, 0]
    wait_for(zero_twice, timeout=timeout, interval=0.2,
             message=lambda: '%s never 0 (last: %s)' % (what, seen[-3:]))


def series(url, name):
    """The sum of the samples of gauge or counter ``name`` (without
    _total) at ``url``, which must serve it: a name misspelt would read 0
    for ever."""
    text = requests.get(url, timeout=10).text
    [family] = [family
                for family in parser.text_string_to_metric_families(text)
                if family.name == name] or [None]
    assert family is not None, '%s does not serve %s' % (url, name)
    # A counter's family also has its _created samples.
    return sum(sample.value for sample in family.samples
               if sample.name in (name, name + '_total'))


def _queued(dep):
    vhost = urllib.parse.urlparse(dep.transport_url).path.lstrip('/')
    out = run(['rabbitmqctl', '-q', 'list_queues', '-p', vhost,
               '--no-table-headers', 'name', 'messages'], timeout=60).stdout
    # The topic's queue, each conductor's own and its fanout queue.
    return sum(int(fields[1]) for fields in map(str.split, out.splitlines())
               if fields and fields[0].startswith(CONDUCTOR_QUEUE))
