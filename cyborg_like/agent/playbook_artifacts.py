"""Keeping the private data directories of playbook runs bounded: the
latest N runs, each cut to a size."""

import os
import shutil

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def size_of(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def prune(work_dir, keep, max_bytes, running=()):
    """Delete all but the ``keep`` newest run directories (never one in
    ``running``), and cut the kept ones to ``max_bytes``."""
    try:
        runs = [os.path.join(work_dir, n) for n in os.listdir(work_dir)]
    except FileNotFoundError:
        return
    runs = sorted((r for r in runs if os.path.isdir(r)),
                  key=os.path.getmtime, reverse=True)
    for old in runs[keep:]:
        if os.path.basename(old) not in running:
            shutil.rmtree(old, ignore_errors=True)
    for run in runs[:keep]:
        if size_of(run) > max_bytes:
            _cut(run, max_bytes)


def _cut(run, max_bytes):
    """Per-event files go first (the events reached the conductor), then
    the output keeps its end, where the failure is."""
    artifacts = os.path.join(run, 'artifacts')
    for root, dirs, _files in os.walk(artifacts):
        for name in list(dirs):
            if name == 'job_events':
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                dirs.remove(name)
    for root, _dirs, files in os.walk(artifacts):
        for name in files:
            if name == 'stdout':
                _keep_tail(os.path.join(root, name), max_bytes // 2)
    LOG.info('Cut the artifacts of %s to stay under %d bytes', run,
             max_bytes)


def _keep_tail(path, max_bytes):
    if os.path.getsize(path) <= max_bytes:
        return
    with open(path, 'rb') as f:
        f.seek(-max_bytes, os.SEEK_END)
        tail = f.read()
    with open(path, 'wb') as f:
        f.write(b'[... cut ...]\n' + tail)
