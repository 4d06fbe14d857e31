"""ETags on the answers the read model gave, and conditional GETs answered
304 before the handler runs (docs/design.md, "The read model").

An answer from a copy is a function of the generation it was read at and
of what shapes the body (path and query, microversion, public URL) alone,
so its ETag is known before the handler runs when the current copy is
known. Which policy rule guards each such read is the policy defaults'
(policies/: the rule documented for GET on the path), the rule the
handler itself authorizes (tests/unit/test_read_model_sources.py).
"""

import hashlib
import re

from pecan import hooks
import webob.exc

from cyborg_like.api import hooks as hooks_lib
from cyborg_like.api import policy
from cyborg_like.api.read_model import refresher
from cyborg_like.common import read_model as contract
from cyborg_like import policies

# The collections the copies answer: (path, family, its attributes' copy,
# whether the handlers check their rule with the cloud scope).
SERVED = (
    ('/v2/devices', contract.DEVICES, False, True),
    ('/v2/deployables', contract.DEPLOYABLES, False, True),
    ('/v2/attributes', contract.DEPLOYABLES, True, True),
    ('/v2/device_profiles', contract.DEVICE_PROFILES, False, False))


def _rules_by_operation():
    """{(method, path): the policy rule documented for it}."""
    return {(operation['method'], operation['path']): rule.name
            for rule in policies.list_rules()
            for operation in getattr(rule, 'operations', ())}


def _known_ahead():
    """[(path pattern, family, attributes, policy rule, cloud)] for the
    list and the show of every collection served."""
    rules = _rules_by_operation()
    known = []
    for path, family, attributes, cloud in SERVED:
        for template, pattern in ((path, ''), (path + '/{uuid}', '/[^/]+')):
            rule = rules.get(('GET', template))
            if rule is None:
                raise LookupError('No policy rule documents GET %s'
                                  % template)
            known.append((re.compile(re.escape(path) + pattern + r'/?\Z'),
                          family, attributes, rule, cloud))
    return known


# The reads the copies answer whose ETag is known before the handler runs:
# path -> (family, its attributes' copy, the handler's policy rule, and
# whether the rule is checked with the cloud scope, as the handler does).
_KNOWN_AHEAD = _known_ahead()


class ETagHook(hooks.PecanHook):
    """An ETag on every answer the read model gave (from the generation it
    was read at and what shapes the body: path and query, microversion,
    public URL); If-None-Match with it answers 304 without a body.

    The answer is a function of those alone, so a conditional GET whose
    ETag is the one the current copy would give is answered 304 before the
    handler runs (after the handler's policy check): no query, view or
    JSON is made for it."""

    def before(self, state):
        request = state.request
        if request.method != 'GET' or \
                'HTTP_IF_NONE_MATCH' not in request.environ:
            return
        known = next((k for k in _KNOWN_AHEAD if k[0].match(request.path)),
                     None)
        model = getattr(getattr(request, 'conductor_api', None), 'model',
                        None)
        if known is None or not isinstance(model, refresher.ReadModel):
            return
        _pattern, name, attributes, rule, cloud = known
        family = model.family(name, attributes=attributes)
        if family is None:
            return
        policy.authorize(rule, request.context, policy.CLOUD if cloud
                         else None)
        etag = _etag(request, '%s:%d' % ('attributes' if attributes
                                          else name, family.generation))
        if etag in request.if_none_match:
            raise webob.exc.HTTPNotModified(headers={'ETag': '"%s"' % etag})

    def after(self, state):
        request, response = state.request, state.response
        served = getattr(getattr(request, 'context', None),
                         'read_generation', None)
        if served is None or request.method != 'GET' or \
                response.status_int != 200:
            return
        etag = _etag(request, served)
        response.headers['ETag'] = '"%s"' % etag
        if etag in request.if_none_match:
            response.status = 304
            response.body = b''
            response.content_type = None


def _etag(request, served):
    shape = '%s|%s|%s|%s' % (
        served, getattr(request, 'version', ''),
        hooks_lib.public_url(request), request.path_qs)
    return hashlib.sha1(shape.encode()).hexdigest()[:32]
