"""Options: documented, and the committed sample is what the code says."""

import os
import subprocess
import sys

from keystoneauth1 import loading as ks_loading

from cyborg_like.conf import opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
GENERATOR_CONF = os.path.join(
    ROOT, 'etc', 'cyborg_like', 'cyborg_like-config-generator.conf')
SAMPLE = os.path.join(ROOT, 'etc', 'cyborg_like', 'cyborg_like.conf.sample')


def test_every_option_has_help():
    # keystoneauth's options ([nova], [placement]) carry its own help.
    ksa = {o.dest for o in ks_loading.get_auth_plugin_conf_options(
        'password')}
    for group, options in opts.list_opts():
        for opt in options:
            if opt.dest in ksa:
                assert opt.help, (group, opt.name)
                continue
            assert opt.help and len(opt.help) > 20, (group, opt.name)


def test_committed_sample_is_current(tmp_path):
    generated = tmp_path / 'sample.conf'
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator',
         '--config-file', GENERATOR_CONF, '--output-file', str(generated)],
        check=True, cwd=ROOT)
    with open(SAMPLE) as f:
        committed = f.read()
    assert generated.read_text() == committed, (
        'etc/cyborg_like/cyborg_like.conf.sample is stale: run '
        '"tox -e genconfig" (or tools/genconfig.sh) and commit the result')


def test_noauth_is_refused_beyond_loopback():
    import pytest
    from cyborg_like.api import server
    from cyborg_like.conf import CONF
    CONF.set_override('auth_strategy', 'noauth', group='api')
    try:
        for address in ('127.0.0.1', '::1', 'localhost'):
            CONF.set_override('host_ip', address, group='api')
            server.check_exposure(CONF)
        CONF.set_override('host_ip', '0.0.0.0', group='api')
        with pytest.raises(SystemExit, match='Refusing'):
            server.check_exposure(CONF)
        CONF.set_override('allow_noauth_on_public_address', True,
                          group='api')
        server.check_exposure(CONF)
        CONF.set_override('auth_strategy', 'keystone', group='api')
        CONF.set_override('allow_noauth_on_public_address', False,
                          group='api')
        server.check_exposure(CONF)
    finally:
        for name in ('auth_strategy', 'host_ip',
                     'allow_noauth_on_public_address'):
            CONF.clear_override(name, group='api')
