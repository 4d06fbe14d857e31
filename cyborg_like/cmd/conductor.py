"""cyborg-like-conductor: the RPC server that owns the database."""

import sys

from cyborg_like.cmd import common
from cyborg_like.common import service
from cyborg_like.conductor import service as conductor_service


DESCRIPTION = ('The conductor: serves the API and the agents over RPC and '
               'alone reads and writes the database.')

OPTIONS = (
    (None, 'transport_url'), (None, 'host'), ('database', 'connection'),
    ('conductor', 'workers'), ('conductor', 'host_down_after'),
    ('placement', 'auth_type'), ('nova', 'auth_type'),
)


def main():
    from cyborg_like.db import api  # noqa: F401  registers [database]
    conf = common.prepare(sys.argv[1:], description=DESCRIPTION,
                          options=OPTIONS)
    common.require_database(conf, 'cyborg-like-conductor')
    service.run([conductor_service.ConductorService(conf)])
