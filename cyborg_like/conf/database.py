"""[database]: how long the conductor waits on the database's socket.

oslo.db owns the rest of the group. Only the conductor (and dbsync)
register these, with oslo.db's (see ``cyborg_like.db.api``): the API and
the agent have no database settings at all.
"""

from oslo_config import cfg

GROUP = 'database'

opts = [
    cfg.IntOpt('io_timeout',
               default=60,
               min=0,
               help='Seconds one read or write on a MySQL/MariaDB '
                    'connection may block before the connection is '
                    'dropped (PyMySQL read_timeout and write_timeout); 0 '
                    'waits for ever. Without it a database that vanishes '
                    'silently (a partition, a dead host) holds every '
                    'conductor thread that touches it for ever, and the '
                    'pooled connections stay dead after the network is '
                    'back. Keep it above the longest statement (dbsync '
                    'migrations included). For PostgreSQL it sets '
                    'libpq tcp_user_timeout and TCP keepalives so that a '
                    'peer that stops acknowledging is detected after '
                    'about this long; libpq has no read timeout, so a '
                    'peer whose TCP stack still acknowledges but never '
                    'answers is not bounded. A value given in '
                    '[database] connection or connection_parameters '
                    'wins.'),
    cfg.IntOpt('connect_timeout',
               default=10,
               min=1,
               help='Seconds opening a database connection (TCP and the '
                    'handshake) may take: PyMySQL and libpq '
                    'connect_timeout. A value given in [database] '
                    'connection or connection_parameters wins.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
