"""Pecan's argument specs, computed once per controller method.

Pecan's routing asks ``pecan.util.getargspec`` about the controllers it
walks -- 13 times for ``GET /v2/devices`` -- and each call inspects the
function again (``inspect`` builds a signature and a named tuple). A
method's arguments never change while the process runs, so the answers
are cached here, by function: about a third of the API's own CPU per
request (docs/benchmarks.md, "floor"). Importing this module installs the
cache where pecan looks the function up.
"""

import functools
import types

from pecan import core
from pecan import decorators
from pecan import rest
from pecan import routing
from pecan import util

_uncached = util.getargspec


@functools.lru_cache(maxsize=4096)
def _cached(function, bound):
    # A bound method's spec is its function's, whatever it is bound to.
    return _uncached(function.__get__(object()) if bound else function)


def getargspec(method):
    if isinstance(method, types.MethodType):
        return _cached(method.__func__, True)
    if isinstance(method, types.FunctionType):
        return _cached(method, False)
    return _uncached(method)


for _module in (util, core, decorators, rest, routing):
    _module.getargspec = getargspec
