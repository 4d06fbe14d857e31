"""Where agents fetch catalog images from (conductor side).

The store may offer a URL of its own (Glance); otherwise agents fetch from
the catalog API, ``GET /v2/bitstreams/<uuid>/data``, at
``[catalog] download_endpoint`` (default: ``[api] public_endpoint``, else
the API's own address).
"""

import threading

from cyborg_like.catalog import store as store_lib

_stores = {}
_lock = threading.Lock()


def _store(conf, name):
    with _lock:
        if name not in _stores:
            _stores[name] = store_lib.load(conf, name)
        return _stores[name]


def endpoint(conf):
    base = conf.catalog.download_endpoint or conf.api.public_endpoint or \
        'http://%s:%d' % (_host(conf.api.host_ip), conf.api.port)
    return base.rstrip('/')


def _host(address):
    if address in ('0.0.0.0', '::'):
        return '127.0.0.1'
    return '[%s]' % address if ':' in address else address


def with_url(conf, job):
    """``job`` with its image's download URL filled in (when it has one).
    """
    image = job.get('image')
    if image:
        url = _store(conf, image['store']).download_url(image['location'])
        image['url'] = url or '%s/v2/bitstreams/%s/data' % (
            endpoint(conf), image['uuid'])
    return job
