"""Faults during an image upload: the conductor killed (SIGKILL) while the
API streams the data leaves no active image and nothing half-recorded; the
upload, retried once a conductor is back, makes the image active with the
retried upload's bytes."""

import hashlib
import socket
import threading

import pytest
import requests
import sqlalchemy as sa

from .infra import BACKENDS
from .infra import running_deployment
from .infra import wait_for

pytestmark = pytest.mark.integration

PIECE = b'x' * (1024 * 1024)


@pytest.fixture(scope='module', params=BACKENDS)
def deployment(request, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('catalog-faults-%s'
                                          % request.param))
    with running_deployment(request.param, workdir) as dep:
        yield dep


class HeldBody:
    """8 MB sent, then held until ``release`` (the conductor is killed
    meanwhile), then 8 MB more."""

    def __init__(self):
        self.holding = threading.Event()
        self.release = threading.Event()

    def __iter__(self):
        for _ in range(8):
            yield PIECE
        self.holding.set()
        self.release.wait(60)
        for _ in range(8):
            yield PIECE


def _row(dep, uuid):
    with dep.engine.connect() as conn:
        return conn.execute(sa.text(
            'SELECT status, sha256, size, location FROM bitstreams '
            'WHERE uuid = :u'), {'u': uuid}).mappings().first()


def test_conductor_killed_mid_upload(deployment):
    dep = deployment
    uuid = dep.call('POST', '/v2/bitstreams', {'name': 'interrupted'},
                    expected=201).json()['uuid']
    url = '%s/v2/bitstreams/%s/data' % (dep.api_url, uuid)
    body = HeldBody()
    answer = {}

    def upload():
        answer['response'] = requests.put(
            url, data=iter(body),
            headers={'Content-Type': 'application/octet-stream'},
            timeout=120)
    thread = threading.Thread(target=upload)
    thread.start()
    assert body.holding.wait(30)
    wait_for(lambda: _row(dep, uuid)['status'] == 'uploading',
             message='the upload never started')
    dep.services['conductor'].kill()
    body.release.set()
    thread.join(120)
    # The API could not record the upload: 503, and nothing is active.
    assert answer['response'].status_code == 503, answer['response'].text
    row = _row(dep, uuid)
    assert row['status'] == 'uploading'
    assert row['sha256'] is None and row['location'] is None

    dep.start('conductor')
    data = b'retried image bytes' * 1000
    resp = requests.put(url, data=data, headers={
        'Content-Type': 'application/octet-stream',
        'X-Image-Sha256': hashlib.sha256(data).hexdigest()}, timeout=60)
    assert resp.status_code == 200, resp.text
    assert resp.json()['status'] == 'active'
    assert resp.json()['size'] == len(data)
    got = requests.get(url, timeout=60)
    assert got.status_code == 200 and got.content == data
    assert _row(dep, uuid)['status'] == 'active'


def test_upload_cut_by_the_client_fails_the_image(deployment):
    """The client announces more than it sends and goes away: the image is
    not active, and a retry works."""
    dep = deployment
    uuid = dep.call('POST', '/v2/bitstreams', {'name': 'cut'},
                    expected=201).json()['uuid']
    host, port = '127.0.0.1', int(dep.api_url.rsplit(':', 1)[1])
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall((
            'PUT /v2/bitstreams/%s/data HTTP/1.1\r\nHost: %s\r\n'
            'Content-Type: application/octet-stream\r\n'
            'Content-Length: 10000000\r\nConnection: close\r\n\r\n'
            % (uuid, host)).encode() + b'y' * 100000)
    wait_for(lambda: _row(dep, uuid)['status'] == 'failed', timeout=60,
             message='the cut upload did not fail the image')
    assert _row(dep, uuid)['location'] is None
    data = b'whole image'
    resp = requests.put('%s/v2/bitstreams/%s/data' % (dep.api_url, uuid),
                        data=data, timeout=60, headers={
                            'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 200, resp.text
    assert resp.json()['sha256'] == hashlib.sha256(data).hexdigest()
