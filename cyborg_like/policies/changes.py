from cyborg_like.policies import base

rules = [
    base.operation(
        'cyborg:change:get', base.PROJECT_READER_OR_ADMIN,
        'List the change log (ours): one record per committed write of an '
        'API request, with its request id, the caller, the method, the '
        'tables written and its target. A project\'s readers see the '
        'changes its users made; the cloud admin (all_projects_api) every '
        'change. A client answered 503 for a write finds here, by request '
        'id, whether it was carried out.',
        'GET', '/v2/changes'),
]
