"""The API's /metrics with several worker processes (gunicorn, uWSGI):
each worker records its own requests in PROMETHEUS_MULTIPROC_DIR and any
one answers with the sum of all of them."""

import os
import subprocess
import sys
import textwrap

# A worker: the metrics middleware around an app answering 200, asked
# ``count`` times for a device.
WORKER = textwrap.dedent('''
    import sys
    from cyborg_like.api import metrics

    def app(environ, start_response):
        start_response('200 OK', [('Content-Length', '0')])
        return [b'']

    served = metrics.Middleware(app)
    for _ in range(int(sys.argv[1])):
        served({'PATH_INFO': '/v2/devices/' + '1' * 32,
                'REQUEST_METHOD': 'GET'}, lambda *args: None)
''')

# Another worker answering GET /metrics.
SCRAPE = textwrap.dedent('''
    import sys
    from cyborg_like.api import metrics

    out = {}
    body = metrics.Middleware(None)(
        {'PATH_INFO': '/metrics', 'REQUEST_METHOD': 'GET'},
        lambda status, headers: out.update(status=status))
    sys.stdout.write(out['status'] + '\\n' + b''.join(body).decode())
''')


def _python(code, directory, *args):
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=directory)
    return subprocess.run([sys.executable, '-c', code, *args], env=env,
                          capture_output=True, text=True, check=True,
                          timeout=120).stdout


def test_any_worker_answers_with_the_sum_of_all(tmp_path):
    directory = str(tmp_path)
    _python(WORKER, directory, '3')
    _python(WORKER, directory, '4')
    status, *lines = _python(SCRAPE, directory).splitlines()
    assert status == '200 OK'
    count = [line for line in lines if line.startswith(
        'cyborg_like_api_request_duration_seconds_count{')]
    assert count == ['cyborg_like_api_request_duration_seconds_count{'
                     'method="GET",route="/v2/devices/{uuid}",status="200"} '
                     '7.0']
    # Two workers' files, plus the gauge of requests in flight (now 0).
    assert len(os.listdir(directory)) >= 2
    in_flight = [line for line in lines if line.startswith(
        'cyborg_like_api_requests_in_flight ')]
    assert in_flight == ['cyborg_like_api_requests_in_flight 0.0']
