"""What a driver operation may ask of the playbooks in playbooks/.

The JSON schema of the per-family parameters the API accepts for a
driver operation, the Ansible variables they become, and the keys of the
report the playbooks leave in ansible-runner's stats. It lives in common/
because the API validates with it and the agent maps it to extra vars.
"""

import copy

NVIDIA, OPAE, XRT = 'nvidia', 'opae', 'xrt'
FAMILIES = (NVIDIA, OPAE, XRT)

INSTALL, UPGRADE, REMOVE, VERIFY = 'install', 'upgrade', 'remove', 'verify'
ACTIONS = (INSTALL, UPGRADE, REMOVE, VERIFY)

# The report every entry playbook leaves with set_stats (per_host: false),
# read from the playbook_on_stats event's artifact_data (ansible-runner's
# Runner.stats), under this key.
STATS_KEY = 'cyborg_like'
STATS_FIELDS = (
    'family',           # the driver family
    'action',           # as asked: install, upgrade, remove or verify
    'version_before',   # package version before the run; None if absent
    'version_after',    # package version after the run; None if absent
    'devices_seen',     # devices the vendor tool (or NVML) lists; verify
                        # only, None for install and remove
    'reboot_required',  # the change takes effect only after a reboot
)

# A Debian package version (epoch:upstream-revision); a trailing "*"
# picks the newest one starting with the rest from an apt repository.
VERSION = {'type': 'string', 'minLength': 1, 'maxLength': 64,
           'pattern': r'^[0-9][A-Za-z0-9.+:~-]*\*?\Z'}
PACKAGE = {'type': 'string', 'maxLength': 64,
           'pattern': r'^[a-z0-9][a-z0-9+.-]+\Z'}
# A .deb already on the host (the agent never copies files to it).
DEB_PATH = {'type': 'string', 'maxLength': 255,
            'pattern': r'^/[A-Za-z0-9._+/-]+\.deb\Z'}
# One line of sources.list, e.g. "deb [signed-by=/usr/share/keyrings/x.gpg]
# https://example.invalid/repo bookworm main".
# Printable ASCII, not \S: Python's \S refuses separators such as \x1d
# that ECMA-262's (the OpenAPI document's) takes; the options between
# brackets too (printable ASCII but "]"), which keeps NUL out, which the
# API refuses in any string.
APT_REPOSITORY = {'type': 'string', 'maxLength': 512,
                  'pattern': r'^deb (\[[ -\\^-~]*\] )?[a-z+]+:[!-~]+'
                             r'( [!-~]+)+\Z'}

_COMMON = {
    'version': VERSION,
    'package': PACKAGE,
    'deb_path': DEB_PATH,
    'apt_repository': APT_REPOSITORY,
    'expected_devices': {'type': 'integer', 'minimum': 0, 'maximum': 64},
}

_NVIDIA = {
    # The vGPU host driver (nvidia-vgpu-manager): installed with the
    # driver, at the same version, when true.
    'vgpu_manager': {'type': 'boolean'},
    'vgpu_manager_package': PACKAGE,
    'vgpu_manager_deb_path': DEB_PATH,
}

_EXTRA = {NVIDIA: _NVIDIA, OPAE: {}, XRT: {}}

# Whether the family's change may need a reboot to take effect (kernel
# modules in use cannot always be swapped in place); the playbooks report
# when it does (reboot_required) and never reboot by themselves.
REBOOT_MAY_BE_NEEDED = {NVIDIA: True, OPAE: True, XRT: True}


def schema(family, action):
    """The JSON schema of the parameters of ``action`` on ``family``."""
    if family not in FAMILIES:
        raise ValueError('unknown driver family %r' % family)
    if action not in ACTIONS:
        raise ValueError('unknown driver action %r' % action)
    props = copy.deepcopy(_COMMON)
    props.update(copy.deepcopy(_EXTRA[family]))
    body = {'type': 'object', 'properties': props,
            'additionalProperties': False}
    if action in (INSTALL, UPGRADE):
        body['required'] = ['version']
        # A package comes from one place: a local .deb or apt.
        body['not'] = {'required': ['deb_path', 'apt_repository']}
    else:
        # remove and verify act on what is installed: no source to name.
        for key in ('deb_path', 'apt_repository', 'vgpu_manager_deb_path'):
            props.pop(key, None)
        if action == REMOVE:
            # remove purges the vGPU manager whenever it is there.
            for key in ('version', 'expected_devices', 'vgpu_manager'):
                props.pop(key, None)
    return body


def extravars(family, action, params):
    """Ansible extra vars for a validated ``params`` of ``schema()``.

    Role variables carry the role's name as prefix (ansible-lint's
    var-naming rule): {"version": "1.2"} on nvidia is nvidia_version.
    """
    schema(family, action)      # rejects unknown families and actions
    out = {'driver_family': family, 'driver_action': action}
    for key, value in params.items():
        out['%s_%s' % (family, key)] = value
    return out
