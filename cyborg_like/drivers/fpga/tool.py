"""Finding and running a vendor's command-line tool.

Programming goes through the vendor's own tool (OPAE's fpgaconf, XRT's
xbmgmt) rather than the kernel interfaces directly: the tools check the
bitstream against the card and know each generation's quirks. Their
failures become DriverError carrying the tool's own message, which is what
an operator can act on.
"""

import os
import shutil
import subprocess

from oslo_log import log as logging

from cyborg_like.common import exception

LOG = logging.getLogger(__name__)


def locate(driver, name, configured, option):
    """The tool's path: ``configured`` if set, else ``name`` on PATH."""
    if configured:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return configured
        raise exception.DriverError(
            driver=driver,
            reason='%s = %s is not an executable file' % (option, configured))
    found = shutil.which(name)
    if found is None:
        raise exception.DriverError(
            driver=driver,
            reason='%s was not found on PATH; install it or set %s'
                   % (name, option))
    return found


def run(driver, argv, timeout):
    """Run ``argv``; return its stdout, or raise DriverError.

    stdin is closed so a tool that asks for confirmation fails instead of
    hanging the agent.
    """
    LOG.info('Running %s', ' '.join(argv))
    try:
        result = subprocess.run(argv, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, timeout=timeout,
                                check=False)
    except subprocess.TimeoutExpired:
        raise exception.DriverError(
            driver=driver, reason='%s did not finish within %d s'
                                  % (os.path.basename(argv[0]), timeout))
    except OSError as e:
        raise exception.DriverError(
            driver=driver, reason='could not run %s: %s' % (argv[0], e))
    if result.returncode != 0:
        LOG.error('%s exited with status %d: %s', argv[0],
                  result.returncode, result.stderr.strip())
        raise exception.DriverError(
            driver=driver,
            reason=(result.stderr.strip() or result.stdout.strip()
                    or 'exit status %d' % result.returncode))
    return result.stdout
