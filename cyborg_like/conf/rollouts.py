"""[rollouts]: fleet rollouts of bitstreams in waves (docs/rollouts.md)."""

from oslo_config import cfg

GROUP = 'rollouts'

opts = [
    cfg.FloatOpt('interval',
                 default=10, min=0.05,
                 help='Seconds between steps of the rollout periodic of '
                      'each conductor. A step of each rollout the '
                      'conductor owns records the operations that ended, '
                      'applies the health gate, stops the rollout on a '
                      'canary failure or a spent failure budget, begins '
                      'the next wave and starts targets within '
                      'max_unavailable. It also takes over the rollouts '
                      'of conductors silent for [conductor] '
                      'service_down_after. A rollout moves at most one '
                      'wave per step, and a target that finished waits up '
                      'to one interval before its gate is checked.'),
    cfg.IntOpt('interrupted_retries',
               default=1, min=0, max=10,
               help='How many times a target whose operation was '
                    'interrupted by the death of the conductor carrying '
                    'it (a region being programmed, a driver operation '
                    'not yet started) is begun again, in its wave, '
                    'before it counts as failed against the failure '
                    'budget. A card whose firmware flash was interrupted '
                    'is never flashed with the new image again: it may '
                    'hold half of it; it fails and stays drained for an '
                    'operator.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
