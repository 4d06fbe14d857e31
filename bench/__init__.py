"""Benchmarks of cyborg_like on real services.

``.venv/bin/python -m bench <scenario> [options]`` starts the conductor and
the API as OS processes over a fresh RabbitMQ vhost and a fresh MariaDB (or
PostgreSQL) database, loads them with simulated agents (``bench.simagent``,
speaking the conductor's RPC API) and real HTTP load generators (wrk for
GET/POST throughput, Python threads for the ARQ lifecycle), prints what it
measured and writes it as JSON. Scenarios: ``api``, ``heartbeats``. See
docs/benchmarks.md for results and how to read them.
"""
