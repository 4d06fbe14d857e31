"""The agent's playbook runner pieces: events reduced and batched, the
progress kept bounded at the conductor, artifacts pruned and cut."""

import os
import time

from cyborg_like.agent import playbook_artifacts
from cyborg_like.agent import playbook_events
from cyborg_like.db import driver_operations


def _event(kind, task, **data):
    return {'event': kind, 'created': '2026-11-23T07:00:00',
            'event_data': dict(data, task=task)}


def test_events_become_counts_task_and_failure():
    collector = playbook_events.Collector()
    for event in (
            _event('playbook_on_start', None),
            _event('playbook_on_task_start', 'Install'),
            _event('runner_on_ok', 'Install', res={'changed': True}),
            _event('playbook_on_task_start', 'Load'),
            _event('runner_on_failed', 'Load', ignore_errors=True,
                   res={'msg': 'ignored one'}),
            _event('runner_on_failed', 'Load', res={'msg': 'x' * 900}),
            _event('playbook_on_stats', None,
                   artifact_data={'cyborg_like': {'version_after': '2'}})):
        assert collector(event) is True     # kept in the artifacts
    batch = collector.take()
    assert batch['counts'] == {'started': 2, 'changed': 1, 'ignored': 1,
                               'failed': 1}
    assert batch['task'] == 'Load'
    assert [e['event'] for e in batch['events']] == [
        'started', 'changed', 'started', 'ignored', 'failed']
    assert collector.failed_task == {'name': 'Load', 'message': 'x' * 500}
    assert collector.stats == {'cyborg_like': {'version_after': '2'}}
    # Taken once: the next batch is empty but still names the task.
    assert collector.take() == {'events': [], 'counts': {}, 'task': 'Load'}


def test_a_batch_carries_the_latest_events_and_counts_them_all():
    collector = playbook_events.Collector()
    for number in range(50):
        collector(_event('playbook_on_task_start', 'task %d' % number))
    batch = collector.take()
    assert batch['counts'] == {'started': 50}
    assert len(batch['events']) == playbook_events.EVENTS_PER_BATCH
    assert batch['events'][-1]['task'] == 'task 49'


def test_recap_totals():
    assert playbook_events.recap({'ok': {'localhost': 3, 'other': 1},
                                  'failures': {}, 'changed': {'a': 2}}) \
        == {'ok': 4, 'failures': 0, 'changed': 2}


def test_progress_merges_and_stays_bounded():
    progress = {}
    for number in range(30):
        progress = driver_operations.merge_progress(progress, {
            'task': 'task %d' % number, 'counts': {'started': 1, 'ok': 1},
            'events': [{'event': 'started', 'task': 'task %d' % number},
                       {'event': 'ok', 'task': 'task %d' % number}]})
    assert progress['counts'] == {'started': 30, 'ok': 30}
    assert progress['task'] == 'task 29'
    assert len(progress['events']) == driver_operations.EVENTS_KEPT
    assert progress['events'][-1] == {'event': 'ok', 'task': 'task 29'}
    # A batch without a task (a sign of life) keeps the last one.
    assert driver_operations.merge_progress(progress, {})['task'] == \
        'task 29'


def _run_dir(work, name, age, size=10, events=0):
    run = work / name
    artifacts = run / 'artifacts' / 'run'
    (artifacts / 'job_events').mkdir(parents=True)
    (artifacts / 'stdout').write_bytes(b'a' * (size - 1) + b'Z')
    for number in range(events):
        (artifacts / 'job_events' / ('%d.json' % number)).write_text('{}')
    stamp = time.time() - age
    os.utime(run, (stamp, stamp))
    return run


def test_prune_keeps_the_newest_runs(tmp_path):
    runs = [_run_dir(tmp_path, 'run-%d' % n, age=100 - n) for n in range(5)]
    playbook_artifacts.prune(str(tmp_path), keep=2, max_bytes=10 ** 6)
    assert sorted(os.listdir(tmp_path)) == ['run-3', 'run-4']
    assert runs[4].exists()


def test_prune_never_removes_a_running_one(tmp_path):
    _run_dir(tmp_path, 'running', age=500)
    _run_dir(tmp_path, 'new', age=1)
    playbook_artifacts.prune(str(tmp_path), keep=1, max_bytes=10 ** 6,
                             running={'running'})
    assert sorted(os.listdir(tmp_path)) == ['new', 'running']


def test_prune_cuts_a_large_run_to_its_output_tail(tmp_path):
    run = _run_dir(tmp_path, 'big', age=1, size=400_000, events=20)
    playbook_artifacts.prune(str(tmp_path), keep=5, max_bytes=100_000)
    artifacts = run / 'artifacts' / 'run'
    assert not (artifacts / 'job_events').exists()
    stdout = (artifacts / 'stdout').read_bytes()
    assert stdout.startswith(b'[... cut ...]\n')
    assert stdout.endswith(b'Z')        # the end, where failures are
    assert playbook_artifacts.size_of(str(run)) <= 100_000


def test_prune_of_a_missing_directory_is_quiet(tmp_path):
    playbook_artifacts.prune(str(tmp_path / 'none'), keep=1, max_bytes=1)
    assert not (tmp_path / 'none').exists()
