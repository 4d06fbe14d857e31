from cyborg_like.policies import base

rules = [
    base.operation(
        'cyborg:usage:get', base.PROJECT_READER_OR_ADMIN,
        'Show usage accounting (ours): device-seconds held over a period, '
        'per project, instance, resource class, model and host, counted '
        'from the bind and unbind times the conductor records. A '
        "project's readers read their project's usage (another project "
        'named: 403); the cloud admin any project\'s, and every '
        "project's when none is named.",
        'GET', '/v2/usage'),
]
