from cyborg_like.policies import base

_PATH = '/v2/leases'

rules = [
    base.operation(
        'cyborg:lease:create', base.PROJECT_MEMBER_OR_ADMIN,
        'Lease devices for a window, one-off or recurring (ours): the '
        "caller's project is the lessee. The devices are the operator's "
        '(the lessor); a lease only guarantees them in its windows. It '
        "takes only devices no other project's workload (bound requests, "
        'leases) holds in its windows, unless cyborg:lease:preempt lets '
        'the caller preempt, and no more than [leases] '
        'project_max_devices and project_max_device_hours allow.',
        'POST', _PATH),
    base.operation(
        'cyborg:lease:preempt', base.ADMIN,
        "Create a lease of devices that another project's workload holds "
        "(its accelerator requests bound to them). The holders are told "
        '[leases] notice_seconds before a window starts; at the start '
        'plus [leases] grace_seconds a request bound by standalone '
        'scheduling is unbound, and for an instance Nova bound, Nova is '
        'asked with the [nova] service credentials as [leases] '
        'preemption_action says: shelve_offload (the instance is '
        'shelved, then offloaded: shut down, it leaves its host, Nova '
        'deletes its requests; its owner unshelves it later) or notify '
        '(the instance keeps running with the device until Nova releases '
        'it; the lease waits). The lessee gets a device only once it is '
        'released; nothing is unbound behind Nova\'s back. Without this '
        'rule a lease takes only devices no other project\'s workload '
        'holds (409 otherwise). Default: the cloud admin, for preemption '
        "is the operator's decision. Checked with cyborg:lease:create, "
        'never alone.',
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
