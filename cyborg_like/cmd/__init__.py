"""Console scripts.

Importing oslo.messaging imports oslo.service, whose default (eventlet)
backend imports eventlet, which warns on import that it is deprecated --
on every command, though cyborg_like runs on threads and never uses
eventlet. oslo.service's threading backend would avoid the import but needs
cotyledon, which nothing else here wants; so the warning is silenced here,
before any console script (or the WSGI entry point, which imports
cyborg_like.cmd.common) imports oslo.messaging. Only this one warning:
eventlet's other warnings and every other library's still show.
"""

import warnings

# eventlet's warning class is defined in eventlet itself, which must not be
# imported to name it: match the message instead.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
