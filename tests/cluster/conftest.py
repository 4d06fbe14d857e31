"""Fixtures of the cluster tests: the two clusters of tools/cluster/,
started once per session (tools/run-cluster-tests.sh runs this suite)."""

import os
import shutil
import tempfile

import pytest

from .cluster import Clusters


@pytest.fixture(scope='session')
def clusters():
    """Three RabbitMQ nodes and three Galera nodes, started for the
    session and stopped (nothing left) at its end. Each test gets them
    with every node up. With CLUSTER_LOGS set, the nodes' logs are
    copied there before the stop (CI keeps them for a failed run)."""
    base = tempfile.mkdtemp(prefix='cyborg-like-cluster-')
    found = Clusters(base)
    try:
        found.start()
        yield found
    finally:
        if os.environ.get('CLUSTER_LOGS'):
            _keep_logs(base, os.environ['CLUSTER_LOGS'])
        try:
            found.stop()
        finally:
            shutil.rmtree(base, ignore_errors=True)


def _keep_logs(base, dest):
    # The nodes' data (mnesia, the InnoDB files) is large and says little;
    # sockets cannot be copied.
    try:
        shutil.copytree(base, dest, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(
                            'mnesia', 'ib*', 'aria_log*', 'mysql', '*.ibd',
                            'galera.cache', 'sys', 'performance_schema',
                            '*.sock'))
    except shutil.Error as exc:
        print('some cluster files were not kept: %s' % exc)


@pytest.fixture
def healed(clusters):
    """The clusters with every node up, before and after the test."""
    clusters.heal()
    yield clusters
    clusters.heal()


@pytest.fixture
def workdir(tmp_path):
    path = str(tmp_path)
    os.makedirs(path, exist_ok=True)
    return path
