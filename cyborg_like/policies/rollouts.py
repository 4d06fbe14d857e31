from cyborg_like.policies import base

_PATH = '/v2/rollouts'

rules = [
    base.operation(
        'cyborg:rollout:create', base.ADMIN,
        'Roll a bitstream out to a fleet of FPGA regions, firmware to '
        'FPGA cards, or a driver version to hosts, in waves, after a '
        'canary, within bounds on '
        'unavailability, with a health gate and automatic rollback (ours); '
        'or, with dry_run, show the waves only.',
        'POST', _PATH),
    base.operation(
        'cyborg:rollout:get', base.ADMIN,
        'List and show rollouts, with their targets by state, and page '
        'through their targets.', 'GET', _PATH),
    base.operation(
        'cyborg:rollout:pause', base.ADMIN,
        'Pause a running rollout: nothing more starts; what runs ends.',
        'POST', _PATH + '/{rollout_uuid}/pause'),
    base.operation(
        'cyborg:rollout:resume', base.ADMIN,
        'Resume a paused rollout.', 'POST', _PATH + '/{rollout_uuid}/resume'),
    base.operation(
        'cyborg:rollout:abort', base.ADMIN,
        'Abort a rollout (running, paused or rolling back): nothing more '
        'starts and nothing is put back.',
        'POST', _PATH + '/{rollout_uuid}/abort'),
    base.operation(
        'cyborg:rollout:rollback', base.ADMIN,
        'Roll back a finished rollout: every target it changed gets its '
        'last-known-good image again, in waves.',
        'POST', _PATH + '/{rollout_uuid}/rollback'),
]
