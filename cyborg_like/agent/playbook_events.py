"""What a playbook run tells while it runs: ansible-runner's events
reduced to task start/ok/changed/failed, collected between two progress
reports, and what the run found at its end."""

import threading

# ansible-runner event -> our kind (runner_on_ok becomes ``changed`` when
# its task changed something).
KINDS = {
    'playbook_on_task_start': 'started',
    'runner_on_ok': 'ok',
    'runner_on_failed': 'failed',
    'runner_on_skipped': 'skipped',
    'runner_on_unreachable': 'unreachable',
}
# One report carries at most this many events; the counts keep the rest.
EVENTS_PER_BATCH = 20
MESSAGE_CHARS = 500


class Collector:
    """Fed by ansible-runner's event handler (its own thread); drained by
    the progress reporter."""

    def __init__(self):
        self._lock = threading.Lock()
        self._events = []
        self._counts = {}
        self.task = None             # the latest task started
        self.failed_task = None      # {name, message} of the last failure
        self.stats = {}              # the playbook's set_stats data

    def __call__(self, event):
        """ansible-runner's ``event_handler``; True keeps the event in
        the artifacts."""
        kind = KINDS.get(event.get('event'))
        data = event.get('event_data') or {}
        if event.get('event') == 'playbook_on_stats':
            with self._lock:
                self.stats = data.get('artifact_data') or {}
            return True
        if kind is None:
            return True
        result = data.get('res') or {}
        if kind == 'ok' and result.get('changed'):
            kind = 'changed'
        if kind == 'failed' and data.get('ignore_errors'):
            kind = 'ignored'
        task = data.get('task') or ''
        compact = {'event': kind, 'task': task,
                   'time': event.get('created')}
        if kind in ('failed', 'unreachable'):
            compact['message'] = _message(result)
        with self._lock:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._events.append(compact)
            del self._events[:-EVENTS_PER_BATCH]
            if kind == 'started':
                self.task = task
            if kind in ('failed', 'unreachable'):
                self.failed_task = {'name': task,
                                    'message': compact['message']}
        return True

    def take(self):
        """The batch since the last call (possibly empty)."""
        with self._lock:
            batch = {'events': self._events, 'counts': self._counts,
                     'task': self.task}
            self._events, self._counts = [], {}
            return batch


def _message(result):
    text = result.get('msg') or result.get('stderr') or \
        result.get('reason') or ''
    return str(text)[:MESSAGE_CHARS]


def recap(stats):
    """ansible-runner's per-host stats as totals per kind."""
    return {kind: sum((hosts or {}).values())
            for kind, hosts in (stats or {}).items()
            if isinstance(hosts, dict)}
