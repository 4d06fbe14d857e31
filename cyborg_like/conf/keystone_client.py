"""keystoneauth options of a group naming another OpenStack service.

A group gets the usual options of a service talking to another (as in
Nova's [placement]): ``auth_type`` and its plugin's options (``password``:
``auth_url``, ``username``, ``password``, ``project_name``, domains),
session options (TLS, ``timeout``) and adapter options (``region_name``,
``valid_interfaces``, ``endpoint_override``).
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg


def register(conf, group, defaults):
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group,
                                             include_deprecated=False)
    for name, value in defaults.items():
        conf.set_default(name, value, group=group)


def list_opts(defaults):
    """The options as the sample shows them, with ``defaults`` applied."""
    ks_opts = copy.deepcopy(
        ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options('password')
        + ks_loading.get_session_conf_options()
        + ks_loading.get_adapter_conf_options(include_deprecated=False))
    cfg.set_defaults([o for o in ks_opts if o.dest in defaults], **{
        k: v for k, v in defaults.items()})
    return ks_opts
