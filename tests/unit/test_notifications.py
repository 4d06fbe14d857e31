"""The versioned notifications as declared (conductor/notifications.py)
and as documented (docs/notifications.md), and which are sent for each
[notifications] notification_format."""

import json
import pathlib
import re
import types

import pytest

from cyborg_like.conductor import notifications

DOCS = pathlib.Path(__file__).parents[2] / 'docs' / 'notifications.md'


def documented():
    """{event type: (priority, payload)} of the samples in the docs."""
    found = {}
    for block in re.findall(r'```json\n(.*?)\n```', DOCS.read_text(),
                            re.S):
        sample = json.loads(block)
        if 'event_type' in sample:
            assert sample['event_type'] not in found, sample['event_type']
            found[sample['event_type']] = (sample['priority'],
                                           sample['payload'])
    return found


def test_every_event_type_has_a_sample_and_no_sample_is_undeclared():
    assert set(documented()) == set(notifications.EVENTS)


@pytest.mark.parametrize('event_type', sorted(notifications.EVENTS))
def test_each_sample_is_its_payload_as_declared(event_type):
    priority, payload = documented()[event_type]
    declared, declared_priority = notifications.EVENTS[event_type]
    assert priority == declared_priority.upper()
    data = payload['cyborg_like_object.data']
    assert list(data) == list(declared.fields)
    assert payload == notifications.message(event_type, data)
    assert (payload['cyborg_like_object.name'],
            payload['cyborg_like_object.version']) == (
        declared.name, declared.version)


def test_a_payload_with_a_field_missing_or_extra_is_refused():
    fields = dict.fromkeys(notifications.LEASE_WINDOW.fields, 'x')
    notifications.message(notifications.WINDOW_OPEN, fields)
    with pytest.raises(ValueError):
        notifications.message(notifications.WINDOW_OPEN,
                              dict(fields, extra=1))
    fields.pop('ends_at')
    with pytest.raises(ValueError):
        notifications.message(notifications.WINDOW_OPEN, fields)


class _Recorder:
    """Stands for oslo.messaging's Notifier: records what is sent."""

    def __init__(self, sent, topics=None):
        self.sent, self.topics = sent, topics

    def _send(self, priority, context, event_type, payload):
        self.sent.append((self.topics, priority, event_type, payload))

    def info(self, *args):
        self._send('info', *args)

    def warn(self, *args):
        self._send('warn', *args)

    def error(self, *args):
        self._send('error', *args)


def _notifier(form):
    sent = []
    conf = types.SimpleNamespace(notifications=types.SimpleNamespace(
        notification_format=form,
        versioned_notifications_topics=['versioned_notifications']))
    return notifications.Notifier(
        conf, 'accelerator.conductor.h1',
        lambda conf, publisher_id, topics=None: _Recorder(sent, topics)), \
        sent


WINDOW = {'lease_uuid': 'l1', 'project_id': 'p1',
          'starts_at': '2026-12-01T08:00:00+00:00',
          'ends_at': '2026-12-01T18:00:00+00:00'}


@pytest.mark.parametrize('form, expected', [
    ('unversioned', [(None, 'accelerator.lease.ending')]),
    ('versioned', [(['versioned_notifications'], 'lease.window.open')]),
    ('both', [(None, 'accelerator.lease.ending'),
              (['versioned_notifications'], 'lease.window.open')]),
])
def test_the_format_chooses_what_is_sent_and_on_which_topics(form,
                                                             expected):
    notifier, sent = _notifier(form)
    notifier.info({}, 'accelerator.lease.ending', {'lease_uuid': 'l1'})
    notifier.emit({}, notifications.WINDOW_OPEN, WINDOW)
    assert [(topics, event) for topics, _p, event, _payload in sent] == \
        expected


def test_a_payload_is_read_only_when_versioned_ones_are_sent():
    read = []

    def fields():
        read.append(1)
        return WINDOW
    notifier, sent = _notifier('unversioned')
    notifier.emit({}, notifications.WINDOW_CLOSE, fields)
    notifications.emit(None, {}, notifications.WINDOW_CLOSE, fields)
    assert (read, sent) == ([], [])
    notifier, sent = _notifier('versioned')
    notifier.emit({}, notifications.WINDOW_CLOSE, fields)
    assert read == [1]
    [(_topics, priority, event, payload)] = sent
    assert (priority, event, payload['cyborg_like_object.data']) == (
        'info', 'lease.window.close', WINDOW)


def test_a_send_that_fails_is_logged_not_raised(caplog):
    notifier, _sent = _notifier('versioned')

    def broken(*args):
        raise RuntimeError('broker gone')
    notifier._versioned.info = broken
    notifier.emit({}, notifications.WINDOW_OPEN, WINDOW)
    assert 'Could not send notification lease.window.open' in caplog.text
