"""Image data is streamed, never held whole: a 200 MB upload and download
through the real API and conductor processes (over RabbitMQ and MariaDB)
raise neither process's resident memory by more than a few MB.

Each process's RSS is sampled from /proc every 20 ms while the data flows;
the growth over the RSS just before is printed and bounded.
"""

import hashlib
import os
import time

import pytest
import requests

from .infra import running_deployment
from .sampling import Sampling

pytestmark = pytest.mark.integration

SIZE = 200 * 1024 ** 2
CHUNK = os.urandom(1024 ** 2)
# "A few MB": allocator noise, a chunk or two in flight, the request.
MAX_GROWTH = 16 * 1024 ** 2


class ImageBody:
    """SIZE bytes, read in pieces (requests sends Content-Length)."""

    def __init__(self):
        self.sent = 0
        self.sha256 = hashlib.sha256()

    def __len__(self):
        return SIZE

    def read(self, n=-1):
        n = min(SIZE - self.sent, len(CHUNK) if n < 0 else n, len(CHUNK))
        piece = CHUNK[:n]
        self.sent += n
        self.sha256.update(piece)
        return piece


def rss(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    raise AssertionError('no VmRSS for %d' % pid)


class PeakRSS(Sampling):
    def __init__(self, pids):
        super().__init__()
        self.pids = pids
        self.start = {name: rss(pid) for name, pid in pids.items()}
        self.peak = dict(self.start)

    def sample(self):
        for name, pid in self.pids.items():
            self.peak[name] = max(self.peak[name], rss(pid))

    def growth(self):
        return {n: self.peak[n] - self.start[n] for n in self.pids}


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('catalog-streaming'))
    with running_deployment('mariadb', workdir,
                            extra_config='[api]\nconductor_timeout = 30\n'
                            ) as dep:
        yield dep


def _pids(dep):
    return {name: dep.services[name].proc.pid
            for name in ('api', 'conductor')}


def test_200_mb_upload_and_download_stream(deployment):
    dep = deployment
    image = dep.call('POST', '/v2/bitstreams', {'name': 'big'},
                     expected=201).json()
    # Warm both processes up (first request, first RPC) before measuring.
    dep.call('GET', '/v2/bitstreams/%s' % image['uuid'])
    body = ImageBody()
    with PeakRSS(_pids(dep)) as upload:
        started = time.monotonic()
        resp = requests.put(
            '%s/v2/bitstreams/%s/data' % (dep.api_url, image['uuid']),
            data=body, headers={'Content-Type': 'application/octet-stream'},
            timeout=300)
        upload_seconds = time.monotonic() - started
    assert resp.status_code == 200, resp.text
    assert resp.json()['size'] == SIZE
    assert resp.json()['sha256'] == body.sha256.hexdigest()

    digest = hashlib.sha256()
    with PeakRSS(_pids(dep)) as download:
        with requests.get('%s/v2/bitstreams/%s/data' % (
                dep.api_url, image['uuid']), stream=True,
                timeout=300) as resp:
            assert resp.status_code == 200
            assert resp.headers['Content-Length'] == str(SIZE)
            for piece in resp.iter_content(1024 ** 2):
                digest.update(piece)
    assert digest.hexdigest() == body.sha256.hexdigest()

    print('\n200 MB upload in %.1fs; RSS growth upload %s, download %s' % (
        upload_seconds,
        {n: '%.1f MB' % (g / 1e6) for n, g in upload.growth().items()},
        {n: '%.1f MB' % (g / 1e6) for n, g in download.growth().items()}))
    for name, growth in list(upload.growth().items()) + \
            list(download.growth().items()):
        assert growth < MAX_GROWTH, (name, growth)
