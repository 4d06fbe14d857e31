"""[audit]: CADF audit events of the API's changes, sent by
keystonemiddleware's audit middleware (docs/audit.md)."""

from oslo_config import cfg

GROUP = 'audit'

opts = [
    cfg.BoolOpt('enabled',
                help='Whether the API sends a CADF audit event '
                     '(audit.http.request and audit.http.response, '
                     'oslo.messaging notifications) for every request it '
                     'audits. Unset: on with [api] auth_strategy = '
                     'keystone, off with noauth (the all-in-one), where '
                     'no caller is authenticated. The events go where '
                     '[audit_middleware_notifications] says, else where '
                     '[oslo_messaging_notifications] says: nowhere unless '
                     'a driver (messagingv2) is set there.'),
    cfg.StrOpt('audit_map_file',
               help='The audit map (keystonemiddleware\'s format) that '
                    'names the CADF target type and action of each API '
                    'path. Unset: the api_audit_map.conf shipped with the '
                    'package (etc/cyborg_like/ of a source tree, '
                    'share/cyborg_like/ of an installed one).'),
    cfg.ListOpt('ignore_req_list',
                default=['GET', 'HEAD', 'OPTIONS'],
                help='HTTP methods not audited. By default only the '
                     'methods that change something (POST, PUT, PATCH, '
                     'DELETE) are; an empty list audits reads too.'),
    cfg.IntOpt('notification_retry',
               default=1, min=0,
               help='How many times an audit event is sent again while '
                    'the message broker cannot be reached, before it is '
                    'dropped (and logged). The event is sent in the '
                    'request\'s thread: an unbounded retry would hold '
                    'every change request of a broker outage instead of '
                    'answering it.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
