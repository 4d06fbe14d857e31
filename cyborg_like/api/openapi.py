"""The OpenAPI document of the API: ``openapi.yaml`` beside this module.

Read once per process and served as is at ``GET /openapi.yaml``, and as JSON
at ``GET /openapi.json``. The methods it declares for each path are also
what the API answers in ``Allow`` (see ``allowed_methods``).
"""

import functools
import json
import os
import re

import yaml

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    'openapi.yaml')
HTTP_METHODS = ('get', 'put', 'post', 'delete', 'options', 'head', 'patch',
                'trace')


@functools.cache
def yaml_text():
    """The document as written, bytes."""
    with open(PATH, 'rb') as f:
        return f.read()


@functools.cache
def document():
    """The document, parsed. Do not modify it: it is shared."""
    return yaml.safe_load(yaml_text())


@functools.cache
def json_text():
    """The document as JSON, bytes."""
    return json.dumps(document()).encode()


@functools.cache
def _path_table():
    """(regex of a documented path, its methods upper-cased), literal
    paths first so /v2/device_profiles is never taken for a parameter."""
    table = []
    for template, item in document()['paths'].items():
        methods = tuple(sorted(m.upper() for m in item if m in HTTP_METHODS))
        parts = re.split(r'(\{[^}/]+\})', template)
        regex = ''.join('[^/]+' if part.startswith('{') else re.escape(part)
                        for part in parts)
        table.append(('{' in template, re.compile(regex + r'\Z'), methods))
    table.sort(key=lambda row: row[0])
    return [(regex, methods) for _, regex, methods in table]


def allowed_methods(path):
    """The methods the document declares for ``path`` (a concrete path,
    e.g. /v2/devices/<uuid>), or None when it documents no such path."""
    if path != '/':
        path = path.rstrip('/')
    for regex, methods in _path_table():
        if regex.match(path):
            return methods
    return None
