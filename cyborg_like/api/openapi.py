"""The OpenAPI document of the API: ``openapi.yaml`` beside this module.

Read once per process and served as is at ``GET /openapi.yaml``, and as JSON
at ``GET /openapi.json``.
"""

import functools
import json
import os

import yaml

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    'openapi.yaml')


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
