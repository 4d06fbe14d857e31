"""Processes a stopped playbook run leaves behind, and their removal.

ansible-runner stops a cancelled or timed-out run by killing the process
group of ``ansible-playbook``. Ansible's worker processes detach into
sessions of their own (so that a Ctrl-C reaches only the main process),
and the task they are running (an ``apt-get``, a ``modprobe``, a vendor
installer) lives in that session: without this module it runs to its end
after the operation was reported cancelled, changing the host behind the
operator's back.

A worker is recognised by its command line, which names the run's private
data directory (the inventory and extra variables ansible-runner writes
there). Every process of a worker's session goes, never one of the
agent's own session.
"""

import os
import signal

PROC = '/proc'


def sessions_of_run(data_dir):
    """The sessions of the processes whose command line names
    ``data_dir`` (the agent's own session excluded)."""
    own = os.getsid(0)
    marker = os.fsencode(os.path.abspath(data_dir)) + b'/'
    found = set()
    for pid in _pids():
        cmdline = _read(pid, 'cmdline')
        if cmdline is None or marker not in cmdline:
            continue
        try:
            sid = os.getsid(pid)
        except (ProcessLookupError, PermissionError):
            continue
        if sid != own:
            found.add(sid)
    return found


def kill_sessions(sids):
    """SIGKILL every process of the sessions ``sids``; their pids."""
    killed = []
    for pid in _pids():
        try:
            if os.getsid(pid) not in sids:
                continue
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pid)
    return killed


def reap(data_dir):
    """Kill what is left of the run in ``data_dir``; the pids killed."""
    sids = sessions_of_run(data_dir)
    return kill_sessions(sids) if sids else []


def _pids():
    for name in os.listdir(PROC):
        if name.isdigit():
            yield int(name)


def _read(pid, what):
    try:
        with open(os.path.join(PROC, str(pid), what), 'rb') as f:
            return f.read()
    except OSError:
        return None
