"""cyborg-like-conductor: the RPC server that owns the database."""

import sys

from cyborg_like.cmd import common
from cyborg_like.common import service
from cyborg_like.conductor import service as conductor_service


def main():
    common.prepare(sys.argv[1:])
    service.run([conductor_service.ConductorService()])
