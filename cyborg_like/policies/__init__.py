"""Every API policy rule, declared in code (one module per noun)."""

from cyborg_like.policies import accelerator_requests
from cyborg_like.policies import attributes
from cyborg_like.policies import availability
from cyborg_like.policies import base
from cyborg_like.policies import bitstreams
from cyborg_like.policies import changes
from cyborg_like.policies import deployables
from cyborg_like.policies import device_profiles
from cyborg_like.policies import devices
from cyborg_like.policies import driver_operations
from cyborg_like.policies import leases
from cyborg_like.policies import quotas
from cyborg_like.policies import rollouts
from cyborg_like.policies import usage


def list_rules():
    return (base.rules + devices.rules + deployables.rules +
            device_profiles.rules + accelerator_requests.rules +
            attributes.rules + quotas.rules + bitstreams.rules +
            driver_operations.rules + availability.rules + leases.rules +
            rollouts.rules + changes.rules + usage.rules)
