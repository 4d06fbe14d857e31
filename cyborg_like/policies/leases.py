from cyborg_like.policies import base

_PATH = '/v2/leases'

rules = [
    base.operation(
        'cyborg:lease:create', base.PROJECT_MEMBER_OR_ADMIN,
        'Lease devices for a window, one-off or recurring (ours): the '
        "caller's project is the lessee. The devices are the operator's "
        '(the lessor); a lease only guarantees them in its windows.',
        'POST', _PATH),
    base.operation(
        'cyborg:lease:get', base.PROJECT_READER_OR_ADMIN,
        "List and show leases: a project's readers see its own, the "
        'lessor (cloud admin; all_projects_api) every lease of the '
        "cloud's devices.", 'GET', _PATH),
    base.operation(
        'cyborg:lease:give_back', base.PROJECT_MEMBER_OR_ADMIN,
        "End a lease early, by its lessee (a member of the lease's "
        "project): its windows are cancelled and the project's requests "
        'bound to the devices in a window begun are unbound.',
        'POST', _PATH + '/{lease_uuid}/give_back'),
    base.operation(
        'cyborg:lease:revoke', base.ADMIN,
        "Revoke a lease, by the lessor (the devices' owner: the cloud "
        "operator): as a give-back, the lessee's requests bound to the "
        'devices in a window begun are unbound at once.',
        'DELETE', _PATH + '/{lease_uuid}'),
]
