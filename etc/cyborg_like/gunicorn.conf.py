# gunicorn settings for serving the API with several worker processes
# instead of cyborg-like-api's built-in threaded server:
#
#   CYBORG_LIKE_CONFIG_FILES=/etc/cyborg_like/cyborg_like.conf \
#       gunicorn -c /usr/local/share/cyborg_like/gunicorn.conf.py
#
# The WSGI entry point reads its config files from CYBORG_LIKE_CONFIG_FILES
# (comma separated), /etc/cyborg_like/cyborg_like.conf when unset. The
# address here replaces [api] host_ip and port, which only the built-in
# server reads.
wsgi_app = 'cyborg_like.api.wsgi:application'
bind = '127.0.0.1:6666'
workers = 2
# Requests wait on the conductor for up to [api] conductor_timeout (30 s).
timeout = 60
# The API writes its own access log line per request (method, path,
# status, time, request id, project).
accesslog = None

# Metrics (GET /metrics, docs/metrics.md): with several workers each one
# counts its own requests. Set PROMETHEUS_MULTIPROC_DIR in gunicorn's
# environment to an empty directory all workers can write, emptied before
# each start, e.g. in a systemd unit:
#
#   Environment=PROMETHEUS_MULTIPROC_DIR=/run/cyborg_like/metrics
#   RuntimeDirectory=cyborg_like/metrics
#   ExecStartPre=/bin/sh -c 'rm -f /run/cyborg_like/metrics/*.db'
#
# and any worker answers /metrics with the sum of all of them. This hook
# drops the in-flight count of a worker that exited.


def child_exit(server, worker):
    from cyborg_like.api import metrics
    metrics.child_exit(server, worker)
