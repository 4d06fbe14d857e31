"""JSON schemas of host requests (ours): the operators' labels."""

from cyborg_like.api import validation

# A label's key: letters and digits, with . _ / - inside, as Kubernetes
# spells label keys (without the length of its prefix part).
LABEL_KEY = {'type': 'string',
             'pattern': r'^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?\Z'}
LABEL_VALUE = validation.text(255)


def labels(removable=False):
    """A labels object; ``removable``: a null value removes the label."""
    value = {'oneOf': [LABEL_VALUE, {'type': 'null'}]} if removable \
        else LABEL_VALUE
    return {'type': 'object', 'minProperties': 1, 'maxProperties': 64,
            'propertyNames': LABEL_KEY, 'additionalProperties': value}


HOSTNAME = {'type': 'string', 'pattern': r'^[A-Za-z0-9._-]{1,255}\Z'}

# GET /v2/hosts: pages in hostname order; the marker is the last hostname
# of the previous page.
LIST_QUERY = {
    'type': 'object',
    'properties': {
        'limit': {'type': 'string', 'pattern': r'^[1-9][0-9]{0,8}\Z'},
        'marker': HOSTNAME,
    },
    'additionalProperties': False,
}

# PATCH /v2/hosts/{hostname}: labels merged into the host's; null removes.
PATCH = {
    'type': 'object',
    'properties': {'labels': labels(removable=True)},
    'required': ['labels'],
    'additionalProperties': False,
}
