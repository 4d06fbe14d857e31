"""Driver operations: changing a host's vendor drivers is the cloud
admin's, as is cancelling it and forcing it over bound workloads."""

from cyborg_like.policies import base

_HOST = '/v2/hosts/{hostname}'

rules = [
    base.operation('cyborg:host:get_one', base.ADMIN,
                   'Show a compute host: up or down, installed driver '
                   'versions, drained devices.' + base.CLOUD_INVENTORY,
                   'GET', _HOST),
    base.operation('cyborg:host:update', base.ADMIN,
                   "Set or remove a compute host's labels (free-form; "
                   'rollouts select hosts by them).', 'PATCH', _HOST),
    base.operation('cyborg:host:driver_operation:create', base.ADMIN,
                   'Install, upgrade, remove or verify a driver family on '
                   "a host (runs the family's playbook there and drains "
                   'its devices meanwhile).', 'POST',
                   _HOST + '/driver_operations'),
    base.operation('cyborg:host:driver_operation:force', base.ADMIN,
                   'Run a driver operation although accelerator requests '
                   'are bound to the devices it drives (their workloads '
                   'may break); recorded on the operation.', 'POST',
                   _HOST + '/driver_operations'),
    base.operation('cyborg:operation:cancel', base.ADMIN,
                   'Cancel a driver operation (its playbook is stopped; '
                   'devices it drained stay drained if it had started).',
                   'POST', '/v2/operations/{uuid}/cancel'),
]
