"""Entry point for oslo-config-generator (namespace ``cyborg_like``).

The libraries' own options (oslo.messaging, oslo.db, oslo.log,
keystonemiddleware) come from their namespaces; see
etc/cyborg_like/cyborg_like-config-generator.conf.
"""

from cyborg_like.conf import agent
from cyborg_like.conf import api
from cyborg_like.conf import audit
from cyborg_like.conf import catalog
from cyborg_like.conf import conductor
from cyborg_like.conf import database
from cyborg_like.conf import default
from cyborg_like.conf import fake_driver
from cyborg_like.conf import glance
from cyborg_like.conf import health
from cyborg_like.conf import intel_fpga
from cyborg_like.conf import leases
from cyborg_like.conf import metrics
from cyborg_like.conf import notifications
from cyborg_like.conf import nova
from cyborg_like.conf import nvidia_gpu
from cyborg_like.conf import pci_driver
from cyborg_like.conf import placement
from cyborg_like.conf import quota
from cyborg_like.conf import rollouts
from cyborg_like.conf import upgrade_levels
from cyborg_like.conf import xilinx_fpga

MODULES = (default, api, conductor, agent, fake_driver, nvidia_gpu,
           pci_driver, intel_fpga, xilinx_fpga,
           upgrade_levels, nova, placement, quota, catalog, glance,
           health, metrics, leases, rollouts, audit, notifications)


def list_opts():
    merged = {}
    # database: registered by the conductor only (cyborg_like.db.api).
    for module in MODULES + (database,):
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return sorted(merged.items())


def set_lib_defaults(conf=None):
    """Our defaults for library options (the oslo.config.opts.defaults
    entry point, so the generated sample shows them too)."""
    from oslo_config import cfg
    from oslo_db import options as db_options
    # The conductor runs up to [DEFAULT] executor_thread_pool_size RPC
    # handlers at once, each in a transaction. With oslo.db's 5 pooled
    # connections every transaction beyond the fifth opened a connection
    # and closed it after use (with PyMySQL >= 1.2 each new one also builds
    # a TLS context): about 40% of the conductor's CPU per list request
    # under 8 concurrent clients (docs/benchmarks.md). Keep up to 30 open;
    # max_overflow still bounds the rest.
    cfg.set_defaults(db_options.database_opts, max_pool_size=30)
    db_options.set_defaults(conf or cfg.CONF, max_pool_size=30)
