"""CADF audit events of the API's changes (docs/audit.md).

keystonemiddleware's audit middleware, placed right after auth_token so the
initiator is the authenticated user, with the audit map shipped as
etc/cyborg_like/api_audit_map.conf. It sends an ``audit.http.request``
event (outcome pending) before the request is handled and an
``audit.http.response`` event (success or failure, with the status code)
after, as oslo.messaging notifications.

What this adds to the library's events:

- the target's id is the resource changed, as in Keystone's own CADF
  notifications (the library's is the service's catalog id): the id the
  path names, else the one a handler noted, else the one a create
  answered; several (a bulk PATCH of ARQs) go in a ``target_ids``
  attachment;
- a handler that knows more than the path says (a PATCH of ARQs is a bind
  or an unbind) tells it with :func:`note`;
- the target's type comes from the path when the service catalog has no
  entry for the service;
- events are sent with a bounded retry ([audit] notification_retry).
"""

import configparser
import os
import sys
import urllib.parse

from keystonemiddleware import audit as ksm_audit
from oslo_log import log as logging
from pycadf import attachment
from pycadf import cadftaxonomy as taxonomy

LOG = logging.getLogger(__name__)

MAP_FILE = 'api_audit_map.conf'
# A source tree (or editable install) has etc/ beside the package; an
# installed package has the map in its data files.
_CANDIDATES = (
    os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), 'etc', 'cyborg_like', MAP_FILE),
    os.path.join(sys.prefix, 'share', 'cyborg_like', MAP_FILE),
)
SERVICE_TYPE_URI = 'service/accelerator'
# What a handler noted of its change, in the request's environ.
NOTE = 'cyborg_like.audit'
# keystonemiddleware keeps the request's event here until its response.
EVENT = 'cadf_event'
IDS_ATTACHMENT = 'target_ids'


def enabled(conf):
    """[audit] enabled, or when unset: whether callers are authenticated."""
    if conf.audit.enabled is None:
        return conf.api.auth_strategy == 'keystone'
    return conf.audit.enabled


def map_file(conf):
    """[audit] audit_map_file, else the shipped map."""
    if conf.audit.audit_map_file:
        return conf.audit.audit_map_file
    for candidate in _CANDIDATES:
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError('no %s among %s: set [audit] audit_map_file'
                            % (MAP_FILE, ', '.join(_CANDIDATES)))


def wrap(app, conf):
    """``app`` behind the audit middleware when auditing is enabled."""
    if not enabled(conf):
        return app
    return AuditMiddleware(app, conf)


def note(request, action=None, target_ids=None):
    """Tell the audit event of ``request`` (when audited) what its handler
    knows better than the path: the CADF ``action``, the ids changed."""
    request.environ[NOTE] = {'action': action,
                             'target_ids': list(target_ids or ())}


def path_keywords(path):
    """The [path_keywords] of the audit map at ``path``."""
    parser = configparser.ConfigParser()
    with open(path) as f:
        parser.read_file(f)
    return dict(parser.items('path_keywords')) \
        if parser.has_section('path_keywords') else {}


def path_id(keywords, path):
    """The last id ``path`` names (the segment after a keyword that takes
    one: /v2/rollouts/<id>/pause), or None."""
    found, previous = None, None
    for segment in filter(None, path.split('/')):
        if keywords.get(previous, 'None') != 'None' and \
                segment not in keywords:
            found = urllib.parse.unquote(segment)
        previous = segment
    return found


def type_uri(keywords, path):
    """The target type of ``path`` by the map's rule (keywords as they are,
    an id as its keyword's value), below the accelerator service."""
    parts, previous = [SERVICE_TYPE_URI], None
    for segment in filter(None, path.split('/')):
        if segment in keywords:
            parts.append(segment)
        elif keywords.get(previous, 'None') != 'None':
            parts.append(keywords[previous])
        previous = segment
    return '/'.join(parts)


def _created_ids(request, response):
    """The uuids a successful POST to a collection answered with."""
    if request.method != 'POST' or response is None or \
            response.status_int >= 300 or \
            response.content_type != 'application/json':
        return []
    body = response.json
    if not isinstance(body, dict):
        return []
    if isinstance(body.get('uuid'), str):
        return [body['uuid']]
    # POST /v2/accelerator_requests answers {"arqs": [...]}.
    return [item['uuid'] for item in body.get('arqs') or ()
            if isinstance(item, dict) and 'uuid' in item]


def _set_target_ids(event, ids):
    if len(ids) == 1:
        event.target.id = ids[0]
    elif ids:
        event.add_attachment(attachment.Attachment(
            typeURI='mime:application/json', content=list(ids),
            name=IDS_ATTACHMENT))


class AuditMiddleware(ksm_audit.AuditMiddleware):
    """keystonemiddleware's, configured from our options; see the module's
    docstring for what it adds."""

    def __init__(self, app, conf):
        path = map_file(conf)
        super().__init__(app, oslo_config_config=conf)
        # Set as the library's __init__ sets them from its paste options:
        # given as options, each would be logged as "not known to
        # keystonemiddleware" at every start.
        self._cadf_audit = ksm_audit.OpenStackAuditApi(path, LOG)
        self._ignore_req_list = [
            method.upper().strip() for method in conf.audit.ignore_req_list]
        self._keywords = path_keywords(path)
        self._bound_retry(conf.audit.notification_retry)
        _say_where_events_go(conf)

    def _bound_retry(self, retry):
        # The library's notifier retries as [oslo_messaging_notifications]
        # retry says (forever by default), in the request's thread.
        notifier = getattr(self._notifier, '_notifier', None)
        if notifier is not None:
            self._notifier._notifier = notifier.prepare(retry=retry)

    def _create_event(self, req):
        event = super()._create_event(req)
        if event.target.typeURI == taxonomy.UNKNOWN:
            # No catalog entry for this service: the path still says what
            # the target is.
            event.target.typeURI = type_uri(self._keywords, req.path)
        found = path_id(self._keywords, req.path_info)
        if found:
            event.target.id = found
        return event

    def _process_response(self, request, response=None):
        try:
            self._complete(request, response)
        except Exception:
            # As the library does: an audit fault never fails the request.
            LOG.exception('Could not complete the audit event of %s %s',
                          request.method, request.path)
        super()._process_response(request, response)

    def _complete(self, request, response):
        event = request.environ.get(EVENT)
        if event is None:
            return
        noted = request.environ.get(NOTE) or {}
        if noted.get('action'):
            event.action = noted['action']
        ids = noted.get('target_ids')
        if not ids and not path_id(self._keywords, request.path_info):
            ids = _created_ids(request, response)
        _set_target_ids(event, ids or ())


def _say_where_events_go(conf):
    drivers = conf.audit_middleware_notifications.driver or \
        conf.oslo_messaging_notifications.driver
    if not drivers:
        LOG.info('CADF audit of API changes is on, but no notification '
                 'driver is set ([oslo_messaging_notifications] driver): '
                 'the events go nowhere.')
