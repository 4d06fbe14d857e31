"""[notifications]: which notifications the conductor sends
(docs/notifications.md)."""

from oslo_config import cfg

GROUP = 'notifications'

UNVERSIONED, VERSIONED, BOTH = 'unversioned', 'versioned', 'both'

opts = [
    cfg.StrOpt('notification_format',
               default=UNVERSIONED,
               choices=[(UNVERSIONED, 'Only the unversioned notifications '
                         'of earlier releases (accelerator.*), on the '
                         'topics of [oslo_messaging_notifications].'),
                        (VERSIONED, 'Only the versioned notifications, '
                         'one event type per lifecycle change, each '
                         'payload with a schema version, on '
                         'versioned_notifications_topics.'),
                        (BOTH, 'Both.')],
               help='Which notifications are sent (as Nova\'s option of '
                    'the same name). Nothing is sent at all unless '
                    '[oslo_messaging_notifications] driver is set.'),
    cfg.ListOpt('versioned_notifications_topics',
                default=['versioned_notifications'],
                help='The topics the versioned notifications are sent '
                     'on.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
