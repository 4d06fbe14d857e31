"""What each method of the conductor RPC client (rpcapi.ConductorAPI)
does, declared once: a read, a write (and which copied families it
changes), or a local question that sends nothing.

The client settles only writes (a read is not worth waiting out a
conductor restart for); the API's read model serves the families a write
of its process changed from the conductor until its copy caught up
(read-your-writes), and lets every call but a read forget the ARQ answers
it kept. A method that is none of the three is a defect
(tests/unit/test_read_model_sources.py).
"""

from cyborg_like.common import read_model as contract

DEVICES = contract.DEVICES
DEPLOYABLES = contract.DEPLOYABLES
PROFILES = contract.DEVICE_PROFILES

# The calls that write nothing; every other call may write.
READS = frozenset((
    'get_arq', 'get_attribute', 'get_availability', 'get_bitstream',
    'get_deployable', 'get_device', 'get_device_health',
    'get_device_profile', 'get_host', 'get_lease', 'get_operation',
    'get_quota', 'get_reply', 'get_rollout', 'get_usage', 'list_arqs',
    'list_attributes', 'list_bitstreams', 'list_changes', 'list_deployables',
    'list_device_profiles', 'list_devices', 'list_hosts', 'list_leases',
    'list_operations', 'list_rollout_targets', 'list_rollouts',
    'read_model_snapshot'))

# The calls that may write, by the copied families (common/read_model.py)
# a call from an API process changes. () where it changes none of them,
# or where only agents make it (their changes reach the copies by the
# conductor's announcements). Any of them may change an ARQ.
WRITES = {
    'set_device_status': (DEVICES,),
    'program_deployable': (DEPLOYABLES,),
    'flash_device_firmware': (DEVICES, DEPLOYABLES),
    'apply_mig_layout': (DEVICES, DEPLOYABLES),
    'start_driver_operation': (DEVICES, DEPLOYABLES),
    'create_attribute': (DEPLOYABLES,),
    'delete_attribute': (DEPLOYABLES,),
    'create_device_profile': (PROFILES,),
    'delete_device_profiles': (PROFILES,),
    # ARQs.
    'create_arqs': (), 'bind_arqs': (), 'unbind_arqs': (),
    'delete_arqs': (), 'schedule_arq': (),
    # Operations, rollouts, leases, quotas, hosts, bitstreams.
    'cancel_operation': (), 'create_rollout': (), 'rollout_action': (),
    'create_lease': (), 'end_lease': (), 'set_quota': (),
    'delete_quota': (), 'set_host_labels': (), 'create_bitstream': (),
    'begin_bitstream_upload': (), 'finish_bitstream_upload': (),
    'fail_bitstream_upload': (), 'delete_bitstream': (),
    # Agents only.
    'report_inventory': (), 'heartbeat': (), 'handle_released': (),
    'report_driver_progress': (), 'finish_driver_operation': (),
}

# Methods of the client that send nothing: what the conductors can be
# asked (the version cap), and the stop of a service's waits.
LOCAL = frozenset((
    'can_confirm_releases', 'can_keep_arq_answers', 'can_serve_read_model',
    'abandon_calls', 'resume_calls'))
