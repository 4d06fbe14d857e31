"""etc/cyborg_like/cyborg_like.conf.example works with the edits README.md
lists (RabbitMQ vhost, database name, state_path, host; the port, so as not
to clash), read from where oslo.config looks without --config-file."""

import configparser
import os
import shutil
import subprocess
import uuid

import pytest
import requests

from harness.process import Service

from .infra import BIN
from .infra import free_port
from .infra import fresh_database
from .infra import rabbitmq_vhost
from .infra import wait_for

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, 'etc', 'cyborg_like', 'cyborg_like.conf.example')


def _edited(transport_url, db_url, state_path, host, port):
    config = configparser.ConfigParser(interpolation=None)
    config.read(EXAMPLE)
    # The edits README.md lists, and nothing else.
    config['DEFAULT']['transport_url'] = transport_url
    config['DEFAULT']['host'] = host
    config['DEFAULT']['state_path'] = state_path
    config['database']['connection'] = db_url
    config['api']['port'] = str(port)
    return config


def test_example_config_runs_the_three_services(tmp_path):
    home = tmp_path / 'home'
    (home / '.cyborg_like').mkdir(parents=True)
    host = 'example-%s' % uuid.uuid4().hex[:8]
    port = free_port()
    env = {'HOME': str(home)}
    with rabbitmq_vhost() as transport_url, \
            fresh_database('mariadb') as db_url:
        config = _edited(transport_url, db_url, str(tmp_path / 'state'),
                         host, port)
        with open(home / '.cyborg_like' / 'cyborg_like.conf', 'w') as f:
            config.write(f)
        done = subprocess.run([os.path.join(BIN, 'cyborg-like-dbsync'),
                               'upgrade'], capture_output=True, text=True,
                              timeout=120, cwd=str(home),
                              env=dict(os.environ, **env))
        assert done.returncode == 0, done.stderr
        services = [
            Service('conductor', [os.path.join(BIN, 'cyborg-like-conductor')],
                    str(tmp_path / 'conductor.log'),
                    'Conductor on %s listening' % host, env=env),
            Service('agent', [os.path.join(BIN, 'cyborg-like-agent')],
                    str(tmp_path / 'agent.log'),
                    'Agent on %s started' % host, env=env),
            Service('api', [os.path.join(BIN, 'cyborg-like-api')],
                    str(tmp_path / 'api.log'), 'API listening on', env=env),
        ]
        try:
            for service in services:
                service.start()
            url = 'http://127.0.0.1:%d/v2/devices' % port
            devices = wait_for(
                lambda: requests.get(url, timeout=5).json()['devices'],
                message='No devices at %s' % url)
            assert sorted((d['hostname'], d['type']) for d in devices) == \
                [(host, 'FPGA'), (host, 'GPU')]
        finally:
            for service in reversed(services):
                service.stop()
        logs = {s.name: s.read_log() for s in services}
    for name, text in logs.items():
        assert 'Traceback' not in text, (name, text)
    assert '"GET /v2/devices" status: 200' in logs['api']
    shutil.rmtree(home)
