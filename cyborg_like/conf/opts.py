"""Entry point for oslo-config-generator (namespace ``cyborg_like``).

The libraries' own options (oslo.messaging, oslo.db, oslo.log,
keystonemiddleware) come from their namespaces; see
etc/cyborg_like/cyborg_like-config-generator.conf.
"""

from cyborg_like.conf import agent
from cyborg_like.conf import api
from cyborg_like.conf import conductor
from cyborg_like.conf import default
from cyborg_like.conf import fake_driver
from cyborg_like.conf import intel_fpga
from cyborg_like.conf import nova
from cyborg_like.conf import nvidia_gpu
from cyborg_like.conf import pci_driver
from cyborg_like.conf import placement
from cyborg_like.conf import quota
from cyborg_like.conf import upgrade_levels
from cyborg_like.conf import xilinx_fpga

MODULES = (default, api, conductor, agent, fake_driver, nvidia_gpu,
           pci_driver, intel_fpga, xilinx_fpga,
           upgrade_levels, nova, placement, quota)


def list_opts():
    merged = {}
    for module in MODULES:
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return sorted(merged.items())
