"""cyborg-like-agent: discovery, heartbeats and hardware work on a host."""

import sys

from cyborg_like.agent import service as agent_service
from cyborg_like.cmd import common
from cyborg_like.common import service


DESCRIPTION = ('The agent of one compute host: discovers its accelerators, '
               'reports them and their health, programs FPGAs.')

OPTIONS = (
    (None, 'transport_url'), (None, 'host'), (None, 'state_path'),
    ('agent', 'enabled_drivers'), ('agent', 'bitstream_dir'),
    ('agent', 'discovery_interval'), ('agent', 'heartbeat_interval'),
)


def main():
    conf = common.prepare(sys.argv[1:], description=DESCRIPTION,
                          options=OPTIONS)
    service.run([agent_service.AgentService(conf)])
