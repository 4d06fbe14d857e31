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
    with every node up."""
    base = tempfile.mkdtemp(prefix='cyborg-like-cluster-')
    found = Clusters(base)
    try:
        found.start()
        yield found
    finally:
        try:
            found.stop()
        finally:
            shutil.rmtree(base, ignore_errors=True)


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
