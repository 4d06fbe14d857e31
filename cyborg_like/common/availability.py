"""What the availability feed may be grouped by (the API validates it, the
conductor groups by it)."""

# ``aggregate``: the Placement aggregates of the host's compute node (a
# host in several counts in each; null: in none).
DIMENSIONS = ('resource_class', 'vendor', 'model', 'host', 'traits',
              'function', 'aggregate')
DEFAULT_GROUP_BY = ('resource_class', 'vendor', 'model', 'host')
