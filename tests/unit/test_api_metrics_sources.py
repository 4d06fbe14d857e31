"""The API's /metrics serves the series of other sources after its own
(the all-in-one's conductor: cmd/all_in_one.py)."""

from cyborg_like.api import metrics

FLEET = (b'# HELP cyborg_like_fleet_exporter 1 when this conductor exports.\n'
         b'# TYPE cyborg_like_fleet_exporter gauge\n'
         b'cyborg_like_fleet_exporter 1.0\n')


def _scrape(middleware, method='GET'):
    out = {}
    body = b''.join(middleware(
        {'PATH_INFO': '/metrics', 'REQUEST_METHOD': method},
        lambda status, headers: out.update(status=status,
                                           headers=dict(headers))))
    return out, body


def test_sources_follow_the_api_series():
    scraped = []

    def fleet():
        scraped.append(1)
        return FLEET
    out, body = _scrape(metrics.Middleware(None, [fleet]))
    assert out['status'] == '200 OK'
    assert int(out['headers']['Content-Length']) == len(body)
    assert body.startswith(b'# HELP cyborg_like_api_')
    assert body.endswith(FLEET)
    assert b'cyborg_like_api_requests_in_flight ' in body
    assert scraped == [1]


def test_no_source_serves_the_api_series_only():
    out, body = _scrape(metrics.Middleware(None))
    assert out['status'] == '200 OK'
    assert b'cyborg_like_api_requests_in_flight ' in body
    assert b'fleet_exporter' not in body


def test_head_has_the_length_and_no_body():
    out, body = _scrape(metrics.Middleware(None, [lambda: FLEET]), 'HEAD')
    assert body == b''
    assert int(out['headers']['Content-Length']) > len(FLEET)
