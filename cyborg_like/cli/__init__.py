"""The ``cyborg-like`` operator CLI (cliff/osc-lib), also loaded by
python-openstackclient as ``openstack accel-like ...`` (plugin.py).

Commands live in v2/, one module per resource, and are declared once, as
entry points of the ``openstack.accel_like.v2`` group named
``accel-like_<noun>_<verb>``: OSC shows them under ``accel-like``, and
``cyborg-like`` (shell.py) loads the same group without the prefix.
"""
