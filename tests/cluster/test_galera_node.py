"""A Galera node SIGKILLed under load, then rejoined (IST).

Both conductors write through HAProxy, which sends every connection to
one node (tools/cluster/galera-cluster.sh). ``writer``: that node is
killed, mid-transaction: the proxy cuts its connections and sends new ones
to a backup node; a COMMIT whose connection was cut is read back from the
change log through the proxy (db/api.py ``writer``), so a write the
cluster carried out is answered as done, never 503. ``backup``: a node
nobody writes through is killed: the others' commits stall until the
cluster has installed its new view (evs.suspect_timeout).
"""

import pytest

from .cluster import GALERA_PORTS
from .faults import check_rows
from .faults import cloud
from .faults import report
from .faults import under_load


@pytest.mark.parametrize('case', ['writer', 'backup'])
def test_galera_node_killed_and_back(healed, workdir, case):
    writer = healed.galera_writer()
    victim = writer if case == 'writer' else writer % 3 + 1
    with cloud(healed, workdir) as dep:
        load, drained, figures = under_load(
            dep, lambda: healed.galera('kill', victim),
            lambda: healed.galera('revive', victim),
            GALERA_PORTS[victim])
        changes = check_rows(dep, load, drained, figures)
        figures['writer_after'] = healed.galera_writer()
        figures['commits_read_back'] = [
            line.split(' WARNING ')[-1][:120]
            for name in dep.conductor_names
            for line in dep.services[name].read_log().splitlines()
            if 'connection at COMMIT' in line]
        report('galera node %d killed (%s)' % (victim, case), figures,
               changes)
        assert 'Synced' in healed.galera_state(victim)
        if case == 'writer':
            assert figures['writer_after'] != victim
