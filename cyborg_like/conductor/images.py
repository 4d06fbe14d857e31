"""Where agents fetch catalog images from (conductor side).

The store may offer a URL of its own (Glance); otherwise agents fetch from
the catalog API, ``GET /v2/bitstreams/<uuid>/data``, at
``[catalog] download_endpoint`` (default: ``[api] public_endpoint``, else
the API's own address).
"""

def endpoint(conf):
    base = conf.catalog.download_endpoint or conf.api.public_endpoint or \
        'http://%s:%d' % (_host(conf.api.host_ip), conf.api.port)
    return base.rstrip('/')


def _host(address):
    if address in ('0.0.0.0', '::'):
        return '127.0.0.1'
    return '[%s]' % address if ':' in address else address


def with_url(stores, job):
    """``job`` with its image's download URL filled in (when it has one);
    ``stores``: a catalog ``store.Stores``.
    """
    image = job.get('image')
    if image:
        url = stores.get(image['store']).download_url(image['location'])
        image['url'] = url or '%s/v2/bitstreams/%s/data' % (
            endpoint(stores.conf), image['uuid'])
    return job
