"""Running cyborg_like clouds as real processes, for tests and benchmarks.

One harness for the integration tests (tests/integration), the client
tests (tests/clients) and the benchmarks (bench/): vhosts and databases
made and removed per run (``infra``), console scripts run as OS processes
with their logs in files (``process``), and the configuration and
processes of one cloud (``cloud``).

It is a package of its own, beside ``tests`` and ``bench`` rather than in
either, because both use it and neither is the other's library: the
benchmarks are not tests and must not need pytest, and the tests must not
depend on the benchmarks. It never imports pytest; a failure is a
:class:`HarnessError` carrying the message and the log tail.
"""

from harness.infra import HarnessError  # noqa: F401
