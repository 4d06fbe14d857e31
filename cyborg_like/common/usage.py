"""What usage accounting may be grouped by (the API validates it, the CLI
offers it, the conductor groups by it): each dimension and its key in the
answer."""

DIMENSIONS = {'project': 'project_id', 'instance': 'instance_uuid',
              'resource_class': 'resource_class', 'model': 'model',
              'host': 'hostname'}
DEFAULT_GROUP_BY = ('project',)
