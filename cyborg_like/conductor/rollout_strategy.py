"""A rollout's strategy: the defaults and the wave sizes counted for a
number of targets (docs/rollouts.md). Pure rules, no SQL: db/rollouts.py
is handed ``resolve`` to number the waves it inserts."""

from cyborg_like.db import rollout_kinds

DEFAULT_STRATEGY = {
    'canary': 1, 'waves': ['100%'], 'max_unavailable': 1,
    'max_unavailable_per_host': 1, 'gate_seconds': 0, 'failure_budget': 0,
    'workloads': rollout_kinds.SKIP, 'wait_timeout': 600,
}


def size(value, total):
    """A count, or ``"N%"`` of ``total`` (rounded up, at least 1)."""
    if isinstance(value, str) and value.endswith('%'):
        percent = float(value[:-1])
        return max(1, -(-int(total * percent) // 100)) if percent else 0
    return int(value)


def resolve(strategy, total):
    """The strategy with its defaults and sizes counted for ``total``
    targets: ``canary`` and ``wave_sizes`` (the last repeats)."""
    strategy = dict(DEFAULT_STRATEGY, **strategy)
    sizes = [max(1, size(w, total)) for w in strategy['waves']]
    resolved = dict(strategy, canary=min(total, size(strategy['canary'],
                                                      total)),
                    wave_sizes=sizes,
                    max_unavailable=max(1, size(strategy['max_unavailable'],
                                                total)))
    resolved['waves_total'] = waves_total(resolved, total)
    return resolved


def waves_total(strategy, total):
    """How many waves after the canary ``total`` targets make."""
    left, waves = total - strategy['canary'], 0
    sizes = strategy['wave_sizes']
    for wave_size in sizes[:-1]:
        if left <= 0:
            return waves
        left -= wave_size
        waves += 1
    return waves + max(0, -(-left // sizes[-1]))
