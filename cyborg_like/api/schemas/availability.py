"""The query of the availability feed."""

from cyborg_like.common.availability import DEFAULT_GROUP_BY
from cyborg_like.common.availability import DIMENSIONS

QUERY = {
    'type': 'object',
    'properties': {
        'group_by': {
            'type': 'string',
            'pattern': r'^(%s)(,(%s)){0,%d}\Z' % (
                '|'.join(DIMENSIONS), '|'.join(DIMENSIONS),
                len(DIMENSIONS) - 1)},
        'since': {'type': 'string', 'pattern': r'^(0|[1-9][0-9]{0,17})\Z'},
        # The feed at a future time, leases counted (ISO 8601, UTC unless
        # an offset is given).
        'at': {'type': 'string', 'maxLength': 40,
               'pattern': r'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}'
                          r'(:[0-9]{2}(\.[0-9]{1,6})?)?'
                          r'(Z|[+-][0-9]{2}:[0-9]{2})?\Z'},
    },
    'additionalProperties': False,
}


def group_by(text):
    """The dimensions asked for, in the order given, each once."""
    if not text:
        return list(DEFAULT_GROUP_BY)
    return list(dict.fromkeys(text.split(',')))
