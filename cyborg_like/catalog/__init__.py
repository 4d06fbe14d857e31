"""The bitstream and firmware catalog (issue 11).

- ``formats``: what an image declares in its own header (GBS, xclbin).
- ``store``: where image data lives (``file``; ``glance`` in glance_store).
- ``upload``: the API side of an upload, streamed into a store.
- ``metadata``: comparing what an image declares with what was given.

The API process streams data into the store and computes size and sha256;
the conductor (the only owner of the database) records them. See
docs/catalog.md.
"""
