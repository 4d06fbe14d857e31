"""cyborg-like-agent: discovery, heartbeats and hardware work on a host."""

import sys

from cyborg_like.agent import service as agent_service
from cyborg_like.cmd import common
from cyborg_like.common import service


def main():
    common.prepare(sys.argv[1:])
    service.run([agent_service.AgentService()])
