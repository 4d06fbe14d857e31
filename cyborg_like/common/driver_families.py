"""Vendor driver families the agent can install with playbooks/, and the
devices each one drives (by PCI vendor id as drivers report it). Their
parameters are in driver_vars (the playbooks' contract)."""

import uuid

from cyborg_like.common import driver_vars

FAMILIES = {
    driver_vars.NVIDIA: ('0x10de',),    # GPUs: the NVIDIA driver (NVML)
    driver_vars.OPAE: ('0x8086',),      # Intel FPGAs: OPAE, DFL drivers
    driver_vars.XRT: ('0x10ee',),       # Xilinx FPGAs: XRT
}
assert set(FAMILIES) == set(driver_vars.FAMILIES)

INSTALL, UPGRADE = driver_vars.INSTALL, driver_vars.UPGRADE
REMOVE, VERIFY = driver_vars.REMOVE, driver_vars.VERIFY
ACTIONS = driver_vars.ACTIONS

# Operation types, as shown in /v2/operations.
OPERATION_PREFIX = 'driver_'
OPERATION_TYPES = tuple(OPERATION_PREFIX + a for a in ACTIONS)

# Host records have no uuid of their own; a driver operation's
# ``target_uuid`` is this stable one derived from the hostname.
_HOST_NAMESPACE = uuid.UUID('0b7c6f7e-5a3c-4f0e-9d59-8f4f0c1c2a11')


def host_uuid(hostname):
    return str(uuid.uuid5(_HOST_NAMESPACE, hostname))


def is_driver_operation(operation_type):
    return operation_type in OPERATION_TYPES


def vendors(family):
    return FAMILIES[family]
