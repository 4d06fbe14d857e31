"""The real services under test, and the tools that load them.

Every run makes its own RabbitMQ vhost and MariaDB (or PostgreSQL) database
with unique names and removes them at the end, like the integration tests.
The services are the console scripts of the virtualenv (or gunicorn serving
``cyborg_like.api.wsgi:application``), each an OS process logging to a file
under the run's work directory.
"""

import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import sqlalchemy as sa

from harness import HarnessError
from harness import cloud
from harness import infra as harness_infra
from harness import process
from harness.infra import fresh_database  # noqa: F401
from harness.infra import free_port  # noqa: F401
from harness.infra import rabbitmq_vhost  # noqa: F401
from harness.process import Service
from harness.process import children  # noqa: F401

BIN = cloud.BIN
ROOT = process.ROOT

START_TIMEOUT = 60.0


class BenchError(HarnessError):
    pass


def log(message, *args):
    stamp = time.strftime('%H:%M:%S')
    sys.stderr.write('[bench %s] %s\n' % (stamp, message % args if args
                                          else message))
    sys.stderr.flush()


def run(argv, timeout=120, check=True):
    return harness_infra.run(argv, timeout, check)


def wait_for(predicate, timeout, message, interval=0.2):
    return harness_infra.wait_for(predicate, timeout, message, interval)


# --- Tools ------------------------------------------------------------------

def ensure_wrk():
    """wrk from Debian; installed with apt-get when missing."""
    path = shutil.which('wrk')
    if path:
        return path
    log('wrk is missing; installing it with apt-get (Debian package wrk)')
    proc = subprocess.run(['apt-get', 'install', '-y', 'wrk'],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        subprocess.run(['apt-get', 'update'], capture_output=True,
                       timeout=600)
        run(['apt-get', 'install', '-y', 'wrk'], timeout=600)
    path = shutil.which('wrk')
    if not path:
        raise BenchError('wrk could not be installed')
    return path


def ensure_python_tool(module, requirement):
    """A tool in the virtualenv (gunicorn, py-spy), installed with pip
    within constraints.txt when missing."""
    try:
        __import__(module)
        return
    except ImportError:
        pass
    log('%s is missing; installing %s with pip', module, requirement)
    run([sys.executable, '-m', 'pip', 'install', '--quiet', '-c',
         os.path.join(ROOT, 'constraints.txt'), requirement], timeout=600)


def machine_facts():
    facts = {'nproc': os.cpu_count(), 'python': platform.python_version(),
             'kernel': platform.release()}
    try:
        with open('/proc/meminfo') as f:
            total = int(f.readline().split()[1])
        facts['memory_gib'] = round(total / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    facts['cpu'] = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    for name, argv in (('wrk', ['wrk', '--version']),
                       ('rabbitmq', ['rabbitmqctl', '-q', 'version']),
                       ('mariadb', ['mariadb', '--version']),
                       ('postgresql', ['psql', '--version'])):
        try:
            out = subprocess.run(argv, capture_output=True, text=True,
                                 timeout=30)
            text = (out.stdout or out.stderr).strip().splitlines()
            facts[name] = text[0] if text else '?'
        except (OSError, subprocess.TimeoutExpired):
            facts[name] = 'missing'
    from importlib import metadata
    for dist in ('oslo.messaging', 'oslo.db', 'SQLAlchemy', 'pecan',
                 'cheroot', 'PyMySQL', 'kombu', 'gunicorn'):
        try:
            facts[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            facts[dist] = 'missing'
    import cyborg_like
    facts['cyborg_like'] = os.path.dirname(os.path.dirname(
        cyborg_like.__file__))
    stamp = os.path.join(ROOT, 'COMMIT')
    if os.path.exists(stamp):
        # A tree exported with git archive: its commit, unmodified.
        with open(stamp) as f:
            text = f.read().strip()
        facts['commit'] = text[:12] + text[40:]
        facts['product_tree'] = 'exported commit'
    else:
        try:
            facts['commit'] = run(['git', '-C', ROOT, 'rev-parse',
                                   '--short=12', 'HEAD']).stdout.strip()
            dirty = run(['git', '-C', ROOT, 'status', '--porcelain',
                         '--untracked-files=no', 'cyborg_like']
                        ).stdout.strip()
            facts['product_tree'] = ('uncommitted changes' if dirty
                                     else 'clean')
        except (HarnessError, OSError):
            # Not a git checkout (a copy, an unmarked export): no commit.
            facts['commit'] = 'unknown'
    return facts


def rss_mb(pid):
    """(VmRSS, VmHWM) of a process in MB (10^6 bytes)."""
    values = {}
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith(('VmRSS:', 'VmHWM:')):
                    key, kb = line.split()[:2]
                    values[key[:-1]] = int(kb) * 1024 / 1e6
    except OSError:
        return None, None
    return values.get('VmRSS'), values.get('VmHWM')


def cpu_seconds(pid):
    """User+system CPU seconds a process has used so far."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf('SC_CLK_TCK')
    return (int(fields[11]) + int(fields[12])) / ticks


class Deployment(cloud.Cloud):
    """Conductor and API (built-in server or gunicorn) on one vhost and one
    database; the simulated agents are started by the scenarios."""

    def __init__(self, workdir, transport_url, db_url, backend,
                 flush_interval=1.0, host_down_after=60, api_threads=16,
                 gunicorn_workers=0, gunicorn_threads=8, conductor_workers=8,
                 debug=False, db_options=(), api_env=None,
                 metrics_port=0, fleet_cache_seconds=15, conductors=1):
        self.backend = backend
        # The simulated agents, stopped before the services.
        self.services_extra = []
        super().__init__(
            workdir, transport_url, db_url, host='bench-conductor',
            config={
                'DEFAULT': {'debug': debug},
                'api': {'conductor_timeout': 30, 'threads': api_threads},
                'conductor': {'host_down_after': host_down_after,
                              'heartbeat_flush_interval': flush_interval,
                              'workers': conductor_workers,
                              'agent_timeout': 30},
                'agent': {'report_timeout': 120},
                'metrics': {'conductor_listen_port': metrics_port,
                            'fleet_cache_seconds': fleet_cache_seconds}},
            service_config={'conductor': '[database]\n%s\n' % '\n'.join(
                db_options)} if db_options else None,
            agent=False, api_env=api_env, gunicorn_workers=gunicorn_workers,
            gunicorn_threads=gunicorn_threads, conductors=conductors)
        if gunicorn_workers:
            ensure_python_tool('gunicorn', 'gunicorn')

    def switch_api(self, gunicorn_workers):
        """Serve the API the other way (same port, conductor kept)."""
        if gunicorn_workers:
            ensure_python_tool('gunicorn', 'gunicorn')
        self.services['api'].stop()
        self.gunicorn_workers = gunicorn_workers
        self.services['api'] = self._api_service()
        self._start_api()

    def dbsync(self):
        super().dbsync('upgrade')

    def start(self):
        for name in self.conductor_names:
            self.services[name].start(START_TIMEOUT)
        self._start_api()

    def pin_conductors(self):
        """Each conductor process on a CPU of its own (the n-th on CPU n
        modulo the CPUs there are); {service: cpu}."""
        cpus = sorted(os.sched_getaffinity(0))
        pinned = {}
        for n, name in enumerate(self.conductor_names):
            cpu = cpus[n % len(cpus)]
            for pid in self.services[name].pids():
                # Every thread: a thread's CPU mask is its own, and those
                # started later inherit their starter's.
                for tid in os.listdir('/proc/%d/task' % pid):
                    os.sched_setaffinity(int(tid), {cpu})
            pinned[name] = cpu
        return pinned

    def _start_api(self):
        self.services['api'].start(START_TIMEOUT)
        # gunicorn: wait until every worker has built the app (and answers).
        wait_for(lambda: _http_ok(self.api_url + '/v2'), 60,
                 'The API never answered GET /v2')
        if self.gunicorn_workers:
            wait_for(lambda: self.services['api'].read_log().count(
                'Booting worker') >= self.gunicorn_workers, 60,
                'gunicorn workers did not start')
            # Each worker builds the app on its first import; give every
            # one a few requests before measuring.
            for _ in range(4 * self.gunicorn_workers):
                _http_ok(self.api_url + '/v2/devices?limit=1')
        # Started, before any load (a few one-item requests at most).
        self.api_rss_at_start = self.api_memory()

    def close(self):
        for svc in reversed(self.services_extra):
            svc.stop()
        super().close()

    def scalar(self, sql, **params):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(sql), params).scalar()

    def api_memory(self):
        """RSS of the API: the process, or gunicorn master + workers."""
        pids = self.services['api'].pids()
        per = [rss_mb(p) for p in pids]
        return {'pids': pids,
                'rss_mb': [round(r or 0, 1) for r, _ in per],
                'peak_rss_mb': [round(h or 0, 1) for _, h in per],
                'total_rss_mb': round(sum(r or 0 for r, _ in per), 1)}

    def cpu(self):
        """CPU seconds so far of our services, the broker, the database.
        (The broker and the database serve other users of this machine
        too.)"""
        used = {name: round(sum(cpu_seconds(p) or 0 for p in svc.pids()), 2)
                for name, svc in self.services.items()}
        used.update(infra_cpu())
        return used


def _http_ok(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200


@contextlib.contextmanager
def deployment(args, **kwargs):
    """A running conductor + API on a fresh vhost and database."""
    workdir = args.workdir or tempfile.mkdtemp(prefix='cyborg_like_bench_')
    os.makedirs(workdir, exist_ok=True)
    log('work directory (logs, config): %s', workdir)
    with rabbitmq_vhost() as transport_url, \
            fresh_database(args.backend) as db_url:
        kwargs.setdefault('db_options', getattr(args, 'db_option', None)
                          or ())
        kwargs.setdefault('api_env', dict(
            item.split('=', 1) for item in getattr(args, 'api_env', None)
            or ()))
        dep = Deployment(workdir, transport_url, db_url, args.backend,
                         **kwargs)
        try:
            dep.dbsync()
            dep.start()
            yield dep
        except BaseException:
            dep.print_logs()
            raise
        finally:
            dep.close()


def pids_named(*names):
    """Pids of processes by command name (the broker, the database)."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/comm' % entry) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in names:
            found.setdefault(comm, []).append(int(entry))
    return found


def infra_cpu():
    """CPU seconds used so far by RabbitMQ and MariaDB/PostgreSQL."""
    found = pids_named('beam.smp', 'mariadbd', 'mysqld', 'postgres')
    return {'rabbitmq': sum(cpu_seconds(p) or 0
                            for p in found.get('beam.smp', [])),
            'database': sum(cpu_seconds(p) or 0
                            for name in ('mariadbd', 'mysqld', 'postgres')
                            for p in found.get(name, []))}


def loadavg():
    try:
        with open('/proc/loadavg') as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def busy_cores_counter():
    """(busy jiffies of the whole machine, time): machine-wide CPU use."""
    with open('/proc/stat') as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, time.monotonic()


def busy_cores_since(counter):
    jiffies, began = counter
    now_jiffies, now = busy_cores_counter()
    return round((now_jiffies - jiffies) / os.sysconf('SC_CLK_TCK')
                 / (now - began), 2)


# --- wrk ---------------------------------------------------------------------

_UNITS = {'us': 1e-3, 'ms': 1.0, 's': 1000.0, 'm': 60000.0}


def _ms(text):
    m = re.match(r'([\d.]+)(us|ms|s|m)$', text)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def wrk(url, duration, connections, threads=2, script=None, timeout=30):
    """Run wrk; return requests/s, latency percentiles (ms) and errors."""
    argv = [ensure_wrk(), '-t%d' % min(threads, connections),
            '-c%d' % connections, '-d%ds' % duration, '--latency',
            '--timeout', '%ds' % timeout]
    if script:
        argv += ['-s', script]
    argv.append(url)
    counter = busy_cores_counter()
    out = run(argv, timeout=duration + timeout + 60).stdout
    result = {'url': url, 'duration_s': duration, 'connections': connections,
              'command': ' '.join(['wrk'] + argv[1:]),
              'non_2xx': 0, 'socket_errors': 0}
    m = re.search(r'Requests/sec:\s+([\d.]+)', out)
    result['rps'] = float(m.group(1)) if m else 0.0
    m = re.search(r'(\d+) requests in', out)
    result['requests'] = int(m.group(1)) if m else 0
    for pct in ('50', '75', '90', '99'):
        m = re.search(r'^\s+%s%%\s+(\S+)' % pct, out, re.M)
        result['p%s_ms' % pct] = _ms(m.group(1)) if m else None
    m = re.search(r'Non-2xx or 3xx responses: (\d+)', out)
    if m:
        result['non_2xx'] = int(m.group(1))
    m = re.search(r'Socket errors: connect (\d+), read (\d+), write (\d+), '
                  r'timeout (\d+)', out)
    if m:
        result['socket_errors'] = sum(int(g) for g in m.groups())
    result['machine_busy_cores'] = busy_cores_since(counter)
    result['load_average_after'] = loadavg()
    m = re.search(r'Transfer/sec:\s+(\S+)', out)
    result['transfer_per_s'] = m.group(1) if m else None
    return result


# --- Simulated agents -------------------------------------------------------

def simagent(dep, name, timeout=600, **options):
    """Start ``python -m bench.simagent`` against ``dep``; returns the
    Service (ready once its inventory is in) and its result file."""
    result_file = os.path.join(dep.workdir, '%s.json' % name)
    argv = [sys.executable, '-m', 'bench.simagent', '--config-file',
            dep.config_file, '--result-file', result_file]
    for key, value in options.items():
        flag = '--' + key.replace('_', '-')
        if value is True:
            argv.append(flag)
        elif value is not None and value is not False:
            argv += [flag, str(value)]
    svc = Service(name, argv, os.path.join(dep.workdir, '%s.log' % name),
                  'SIMAGENT READY')
    dep.services_extra.append(svc)
    svc.start(timeout=timeout)
    return svc, result_file


def simagent_ready_info(svc):
    import json
    for line in svc.read_log().splitlines():
        if line.startswith('SIMAGENT READY '):
            return json.loads(line[len('SIMAGENT READY '):])
    return {}


def simagent_result(svc, result_file, timeout=120):
    """Wait for a simulated agent with a duration to end; its JSON."""
    import json
    if svc.proc is not None:
        try:
            svc.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            svc.stop()
    svc.stop()
    try:
        with open(result_file) as f:
            return json.load(f)
    except (OSError, ValueError):
        raise BenchError('%s left no result:\n%s' % (svc.name, svc.tail()))


def count_log_errors(svc, offset=0):
    text = svc.read_log(offset)
    return {'error_lines': len(re.findall(r' (ERROR|CRITICAL) ', text)),
            'tracebacks': text.count('Traceback (most recent call last)')}
