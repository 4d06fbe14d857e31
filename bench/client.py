"""A small HTTP/JSON client (keep-alive, one connection per thread) and the
Python load generators: ARQ lifecycle cycles and list page walks."""

import http.client
import json
import threading
import time
import urllib.parse
import uuid

from bench.simagent import percentiles


class HTTPError(Exception):
    pass


class Client:
    def __init__(self, base_url, timeout=60, headers=None):
        parsed = urllib.parse.urlsplit(base_url)
        self.host, self.port = parsed.hostname, parsed.port
        self.timeout = timeout
        # Sent with every request (e.g. the identity headers Cyborg 17's
        # API gets from keystonemiddleware: bench.cyborg17.HEADERS).
        self.headers = dict(headers or {})
        self._conn = None

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON body or None, seconds)."""
        data = None
        hdrs = {'Accept': 'application/json'}
        hdrs.update(self.headers)
        if body is not None:
            data = json.dumps(body).encode()
            hdrs['Content-Type'] = 'application/json'
        hdrs.update(headers or {})
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(
                    self.host, self.port, timeout=self.timeout)
            began = time.monotonic()
            try:
                self._conn.request(method, path, body=data, headers=hdrs)
                resp = self._conn.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError):
                # The server closed a kept-alive connection: reconnect once.
                self._conn.close()
                self._conn = None
                if attempt == 2:
                    raise
                continue
            took = time.monotonic() - began
            if resp.getheader('Connection', '').lower() == 'close':
                self._conn.close()
                self._conn = None
            parsed = json.loads(raw) if raw else None
            return resp.status, parsed, took

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def walk_pages(base_url, resource, limit):
    """GET every page of /v2/<resource> following ``next``; per-page
    latencies (s) and the number of items seen."""
    client = Client(base_url)
    path = '/v2/%s?limit=%d' % (resource, limit)
    latencies, items = [], 0
    try:
        while path:
            status, body, took = client.request('GET', path)
            if status != 200:
                raise HTTPError('GET %s -> %s %s' % (path, status, body))
            latencies.append(took)
            items += len(body[resource])
            nxt = body.get('next')
            path = urllib.parse.urlsplit(nxt)._replace(
                scheme='', netloc='').geturl() if nxt else None
    finally:
        client.close()
    return latencies, items


class CycleStats:
    def __init__(self):
        self.lock = threading.Lock()
        self.cycles = 0
        self.errors = 0
        self.error_samples = []
        self.cycle_times = []
        self.bind_waits = []
        self.polls = 0
        self.steps = {'create': [], 'bind': [], 'unbind': [], 'delete': []}
        self.statuses = {}

    def error(self, text):
        with self.lock:
            self.errors += 1
            if len(self.error_samples) < 10:
                self.error_samples.append(text[:300])


def _bind_request(arq_uuid, instance, hostname, rp_uuid, standalone):
    """(method, path, body) binding an ARQ as Nova does, or standalone."""
    if standalone:
        return ('POST', '/v2/accelerator_requests/%s/schedule' % arq_uuid,
                {'instance_uuid': instance, 'hostname': hostname})
    return ('PATCH', '/v2/accelerator_requests', {arq_uuid: [
        {'op': 'add', 'path': '/hostname', 'value': hostname},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})


def arq_cycles(base_url, profile_name, targets, duration, max_cycles,
               poll_interval=0.005, bind_timeout=30.0, headers=None,
               standalone=False):
    """Create -> bind -> wait Bound -> unbind -> delete, in one thread per
    target (hostname, device_rp_uuid), for ``duration`` seconds or
    ``max_cycles`` cycles in all. Every unexpected status, BindFailed or
    timeout counts as an error (and the thread cleans up and goes on).
    ``standalone``: bind with POST .../schedule on the target's host (the
    conductor picks the deployable) instead of Nova's PATCH.
    """
    stats = CycleStats()
    stop_at = time.monotonic() + duration
    budget = [max_cycles]

    def take():
        with stats.lock:
            if budget[0] <= 0:
                return False
            budget[0] -= 1
            return True

    def expect(step, status, want, body):
        with stats.lock:
            key = '%s %s' % (step, status)
            stats.statuses[key] = stats.statuses.get(key, 0) + 1
        if status != want:
            raise HTTPError('%s answered %s (wanted %s): %s' % (
                step, status, want, json.dumps(body)[:200]))

    def worker(hostname, rp_uuid):
        client = Client(base_url, headers=headers)
        while time.monotonic() < stop_at and take():
            began = time.monotonic()
            arq_uuid = None
            timings = {}
            try:
                status, body, t = client.request(
                    'POST', '/v2/accelerator_requests',
                    {'device_profile_name': profile_name})
                expect('create', status, 201, body)
                timings['create'] = t
                arq_uuid = body['arqs'][0]['uuid']
                instance = str(uuid.uuid4())
                status, body, t = client.request(*_bind_request(
                    arq_uuid, instance, hostname, rp_uuid, standalone))
                expect('bind', status, 202, body)
                timings['bind'] = t
                # Wait as Nova does: 423 until every ARQ of the instance
                # is resolved (Bound or BindFailed).
                wait_began = time.monotonic()
                polls = 0
                while True:
                    status, body, t = client.request(
                        'GET', '/v2/accelerator_requests?instance=%s'
                        '&bind_state=resolved' % instance)
                    polls += 1
                    if status == 200:
                        state = body['arqs'][0]['state']
                        if state != 'Bound':
                            raise HTTPError('ARQ %s ended %s: %s' % (
                                arq_uuid, state,
                                body['arqs'][0].get('state_reason')))
                        break
                    expect('poll', status, 423, body)
                    if time.monotonic() - wait_began > bind_timeout:
                        raise HTTPError('ARQ %s not resolved after %ss' % (
                            arq_uuid, bind_timeout))
                    time.sleep(poll_interval)
                bind_wait = time.monotonic() - wait_began
                status, body, t = client.request(
                    'PATCH', '/v2/accelerator_requests', {arq_uuid: [
                        {'op': 'remove', 'path': '/hostname'},
                        {'op': 'remove', 'path': '/device_rp_uuid'},
                        {'op': 'remove', 'path': '/instance_uuid'}]})
                expect('unbind', status, 202, body)
                timings['unbind'] = t
                status, body, t = client.request(
                    'DELETE', '/v2/accelerator_requests/%s' % arq_uuid)
                expect('delete', status, 204, body)
                timings['delete'] = t
                arq_uuid = None
                with stats.lock:
                    stats.cycles += 1
                    stats.cycle_times.append(time.monotonic() - began)
                    stats.bind_waits.append(bind_wait)
                    stats.polls += polls
                    for step, took in timings.items():
                        stats.steps[step].append(took)
            except Exception as exc:     # noqa: BLE001 - counted
                stats.error('%s: %s' % (type(exc).__name__, exc))
                if arq_uuid:
                    try:
                        client.request('DELETE', '/v2/accelerator_requests/'
                                       '%s' % arq_uuid)
                    except Exception:    # noqa: BLE001 - best effort
                        client.close()
        client.close()

    threads = [threading.Thread(target=worker, args=target, daemon=True)
               for target in targets]
    began = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join(duration + bind_timeout + 120)
    took = time.monotonic() - began
    return {
        'threads': len(targets),
        'seconds': round(took, 2),
        'cycles': stats.cycles,
        'cycles_per_s': round(stats.cycles / took, 2),
        'errors': stats.errors,
        'error_samples': stats.error_samples,
        'cycle_ms': percentiles(stats.cycle_times),
        'bind_wait_ms': percentiles(stats.bind_waits),
        'polls_per_cycle': round(stats.polls / max(1, stats.cycles), 2),
        'step_ms': {k: percentiles(v) for k, v in stats.steps.items()},
        'statuses': stats.statuses,
    }
