"""cyborg-like-all-in-one: API, conductor and agent in one process.

With no config file it needs nothing else: SQLite in [DEFAULT] state_path,
in-process messaging, no authentication, http://127.0.0.1:6666.
"""

import os
import sys

from cyborg_like.cmd import common
from cyborg_like.common import service

EMBEDDED_DEFAULTS = (
    (None, 'transport_url', 'inproc:/'),
    ('api', 'auth_strategy', 'noauth'),
    # One host's fleet: a snapshot per scrape costs nothing, and readings
    # show on /metrics within a heartbeat of arriving.
    ('metrics', 'fleet_cache_seconds', 2),
)


OPTIONS = (
    ('api', 'host_ip'), ('api', 'port'), (None, 'state_path'),
    ('database', 'connection'), (None, 'transport_url'),
    ('api', 'auth_strategy'), ('fake_driver', 'inventory_file'),
    ('agent', 'enabled_drivers'),
)


def _prepare_database(conf):
    from cyborg_like.db import migration
    if not conf.database.connection:
        os.makedirs(conf.state_path, exist_ok=True)
        conf.set_default('connection', 'sqlite:///%s' % os.path.join(
            conf.state_path, 'cyborg_like.sqlite'), group='database')
    migration.upgrade()


def build_services(conf):
    from cyborg_like.agent import service as agent_service
    from cyborg_like.api import app
    from cyborg_like.api import server
    from cyborg_like.conductor import service as conductor_service
    server.check_exposure(conf)
    _prepare_database(conf)
    conductor = conductor_service.ConductorService(conf)
    return [conductor, agent_service.AgentService(conf),
            server.APIServer(app.setup_app(
                conf, metrics_sources=_fleet_metrics(conf, conductor)),
                conf.api.host_ip, conf.api.port, conf.api.threads,
                loopback_only=server.noauth_must_stay_local(conf))]


def _fleet_metrics(conf, conductor):
    """The conductor's series (fleet and process) for the API's /metrics,
    so that one port shows everything. Only without authentication: the
    API serves /metrics to anyone, and the fleet series name projects and
    instances (device_holder); with Keystone they stay on [metrics]
    conductor_listen_port, as in a split deployment."""
    if conf.api.auth_strategy != 'noauth':
        return ()
    return (conductor.metrics.text,)


def main():
    from cyborg_like.db import api as db_api  # noqa: F401  [database]
    conf = common.prepare(
        sys.argv[1:], defaults=EMBEDDED_DEFAULTS,
        description='API, conductor and agent in one process (SQLite, '
                    'in-process messaging, no authentication by default).',
        options=OPTIONS)
    conductor, agent, api = build_services(conf)
    # The conductor stops before the agent: its unfinished bindings and
    # programming still need the agent to answer.
    service.run([conductor, agent, api], stop_order=[api, conductor, agent])
