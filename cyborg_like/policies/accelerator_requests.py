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
        'cloud admin. Cyborg names project members too '
        '(project_member_or_service) but then requires Nova\'s service '
        'token in code for every bind and unbind; here a member could '
        'otherwise bind a request to a host and device of their '
        'choosing. A cloud admin may bind, and unbind requests that hold '
        'no device, without it; unbinding a Bound one also needs '
        'cyborg:arq:unbind_bound (docs/compatibility.md).', 'PATCH', _PATH),
    base.operation(
        'cyborg:arq:bind_project_id', base.ADMIN,
        'Name the owning project in a bind (project_id, microversion '
        '2.1 and later). Default: cloud admin, as Cyborg 17 checks in '
        'code: a project must not hand its requests (and their quota '
        'usage) to another.', 'PATCH', _PATH),
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
        'cyborg:arq:delete_bound', base.SERVICE,
        'Delete accelerator requests that are Bound or BindStarted: a '
        'device an instance holds or is being given. Default: Nova only '
        '(the service role, its own token or its X-Service-Token), a '
        'cloud admin too needs the service token, as in Cyborg (which '
        'checks it in code): an admin who deletes a bound request '
        "behind Nova's back leaves a guest holding a device the service "
        'then hands out again. A delete naming any such request the '
        'caller may not delete deletes nothing (403, "requires a '
        'service token"). See docs/compatibility.md.',
        'DELETE', _PATH),
    base.operation(
        'cyborg:arq:unbind_bound', base.SERVICE,
        'Unbind accelerator requests that are Bound or BindStarted '
        '(besides cyborg:arq:update). Default: Nova only, a cloud admin '
        'too needs the service token, as in Cyborg, for the reason of '
        'cyborg:arq:delete_bound; an admin may still unbind requests '
        'that hold no device (BindFailed). An unbind naming any such '
        'request unbinds nothing (403, "requires a service token").',
        'PATCH', _PATH),
]
