from cyborg_like.policies import base

_PATH = '/v2/accelerator_requests'

rules = [
    base.operation('cyborg:arq:get_all', base.PROJECT_READER_OR_SERVICE,
                   'List accelerator requests of the project.', 'GET',
                   _PATH),
    base.operation('cyborg:arq:get_one', base.PROJECT_READER_OR_SERVICE,
                   'Show an accelerator request.', 'GET',
                   _PATH + '/{arq_uuid}'),
    base.operation('cyborg:arq:create', base.PROJECT_MEMBER_OR_SERVICE,
                   'Create accelerator requests from a device profile.',
                   'POST', _PATH),
    base.operation(
        'cyborg:arq:update', base.SERVICE_OR_ADMIN,
        'Bind or unbind accelerator requests. Default: Nova (service) or '
        'cloud admin. Cyborg (2026.1) lets project members bind too '
        '(project_member_or_service); here a member could otherwise bind '
        "a request to a host and device of their choosing, or unbind one "
        'a running instance holds, freeing its device while the VM still '
        'uses it.', 'PATCH', _PATH),
    base.operation(
        'cyborg:arq:bind_project_id', base.ADMIN,
        'Name the owning project in a bind (project_id, microversion '
        '2.1 and later). Cyborg checks only the microversion; the '
        'default here is cloud admin, as a project must not hand its '
        'requests (and their quota usage) to another.', 'PATCH', _PATH),
    base.operation(
        'cyborg:arq:schedule', base.PROJECT_MEMBER_OR_SERVICE,
        'Bind an accelerator request without Nova, the conductor picking '
        'the deployable (ours; Cyborg has no such operation). Default: a '
        'member of the project that owns the request (the conductor finds '
        "only the caller's project's requests), a service such as Ironic, "
        'or cloud admin -- as for creating requests. Unlike a Nova bind '
        '(cyborg:arq:update), the caller names no device: the conductor '
        'applies every rule of the profile, and a host only narrows the '
        'choice; a failure says that nothing matched, not why each host '
        'or device did not.', 'POST', _PATH + '/{arq_uuid}/schedule'),
    base.operation(
        'cyborg:arq:delete', base.PROJECT_MEMBER_OR_SERVICE,
        'Delete accelerator requests that hold no device (Initial, '
        'Unbound, BindFailed); deleting one that is Bound or BindStarted '
        'also needs cyborg:arq:delete_bound.', 'DELETE', _PATH),
    base.operation(
        'cyborg:arq:delete_bound', base.SERVICE_OR_ADMIN,
        'Delete accelerator requests that are Bound or BindStarted: a '
        'device an instance holds or is being given. Default: Nova '
        '(service) or cloud admin; Cyborg has no such rule '
        '(cyborg:arq:delete alone decides). A delete naming any such '
        'request the caller may not delete deletes nothing (403).',
        'DELETE', _PATH),
]
