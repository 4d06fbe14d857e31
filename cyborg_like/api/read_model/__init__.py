"""The read model: devices, deployables, attributes and device profiles
served from memory in each API process (docs/design.md, "The read model").

Four pieces, each readable alone:
* ``copy``: one family's rows, answering a list or show exactly as the
  conductor's query would (the database's collation included), or not;
* ``refresher``: the copies of a process, kept current by a thread (a
  snapshot call, announcements, read-your-writes);
* ``proxy``: the conductor client the handlers use, serving the copied
  families' reads from the copies (reads and writes as
  conductor/rpc_calls.py classifies them);
* ``etag``: ETags on those answers, and conditional GETs answered 304
  before the handler runs.

What the rest of the service uses is named here.
"""

from cyborg_like.api.read_model import etag
from cyborg_like.api.read_model import proxy
from cyborg_like.api.read_model import refresher

ETagHook = etag.ETagHook
ModelledConductorAPI = proxy.ModelledConductorAPI
ReadModel = refresher.ReadModel
stop_all = refresher.stop_all
wait_current = refresher.wait_current
wait_for = refresher.wait_for
wrap = proxy.wrap
