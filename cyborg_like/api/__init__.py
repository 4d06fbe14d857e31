"""The REST API process: pecan controllers over the conductor's RPC API.

pecan's JSON renderer imports SQLAlchemy whenever it is installed, only to
render SQLAlchemy result objects, which the API never has; when that import
fails it uses stand-ins. The API process has no database, and SQLAlchemy
was 12 MB of its RSS (docs/benchmarks.md), so pecan is loaded here, before
any controller, with that one import failing. Nothing is left behind in
``sys.modules``: a library that imports SQLAlchemy later gets the real one.
"""

import importlib
import sys


def _load_pecan_without_sqlalchemy():
    if 'pecan' in sys.modules or 'sqlalchemy' in sys.modules:
        return      # a process with a database (the all-in-one, tests)
    sys.modules['sqlalchemy'] = None    # import sqlalchemy -> ImportError
    try:
        importlib.import_module('pecan')
    finally:
        if sys.modules.get('sqlalchemy', False) is None:
            del sys.modules['sqlalchemy']


_load_pecan_without_sqlalchemy()
