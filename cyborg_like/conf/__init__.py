"""Configuration options of cyborg_like, declared in one place.

Each module in this package holds the options of one group. ``CONF`` is the
process-wide ``ConfigOpts``; the database options are deliberately *not* here:
only the conductor registers them (see ``cyborg_like.db.api``), so the API and
the agent have no database settings at all.
"""

from oslo_config import cfg

from cyborg_like.conf import opts

CONF = cfg.CONF


def register_opts(conf):
    for module in opts.MODULES:
        module.register_opts(conf)


register_opts(CONF)
