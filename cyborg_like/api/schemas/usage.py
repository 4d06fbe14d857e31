"""The query of GET /v2/usage."""

from cyborg_like.common.usage import DIMENSIONS

# ISO 8601, to the second or below; UTC unless an offset is given.
TIME = {'type': 'string', 'maxLength': 40,
        'pattern': r'^[0-9]{4}-[0-9]{2}-[0-9]{2}'
                   r'(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?'
                   r'(Z|[+-][0-9]{2}:[0-9]{2})?)?\Z'}

QUERY = {
    'type': 'object',
    'properties': {
        'project_id': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                       'pattern': r'^[^\x00,]+\Z'},
        'start': TIME,
        'end': TIME,
        'group_by': {
            'type': 'string',
            'pattern': r'^(%s)(,(%s)){0,%d}\Z' % (
                '|'.join(DIMENSIONS), '|'.join(DIMENSIONS),
                len(DIMENSIONS) - 1)},
    },
    'additionalProperties': False,
}


def group_by(text):
    """The dimensions asked for, in the order given, each once."""
    if not text:
        return None
    return list(dict.fromkeys(text.split(',')))
