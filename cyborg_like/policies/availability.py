from cyborg_like.policies import base

rules = [
    base.operation(
        'cyborg:availability:get', base.SERVICE_OR_ADMIN,
        'Read the availability feed: free, used and reserved accelerators '
        'by resource class, model, traits and host (ours). Orchestrators '
        'read it with a service account; open it to readers with e.g. '
        '"role:reader" where capacity is no secret.',
        'GET', '/v2/availability'),
]
