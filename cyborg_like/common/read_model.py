"""The read model's wire contract, shared by the conductor and the API.

The conductor keeps a generation per resource family in the database,
bumped in the same transaction as any change to the family's tables
(``db/generations.py``), and casts each committed bump to every API process
on a fanout topic. An API process serves lists and shows of a family from
memory while its copy is at the family's generation (``api/read_model.py``;
the protocol is in docs/design.md, "The read model").

History of the fanout API (``generations_changed``):

* 1.0 - generations_changed(generations): {family: generation} after a
        commit that changed those families (since conductor RPC 1.20 also
        ``arqs``, a family whose generation only is announced)
"""

TOPIC = 'cyborg_like-read-model'
VERSION = '1.0'

DEVICES = 'devices'
# Deployables with their attributes (/v2/deployables shows them, and
# /v2/attributes lists them): one family, one generation.
DEPLOYABLES = 'deployables'
DEVICE_PROFILES = 'device_profiles'
FAMILIES = (DEVICES, DEPLOYABLES, DEVICE_PROFILES)
# ARQs and the handles they hold: no copy of their rows is kept, but their
# generation is announced, and each API process keeps the ARQ answers it
# got from the conductor while it stays (api/arq_cache.py).
ARQS = 'arqs'
GENERATION_ONLY = (ARQS,)
ANNOUNCED = FAMILIES + GENERATION_ONLY

# The tables of each family: a write to any of them bumps its generation.
TABLES = {
    'devices': DEVICES,
    'deployables': DEPLOYABLES,
    'attributes': DEPLOYABLES,
    'device_profiles': DEVICE_PROFILES,
    'extended_accelerator_requests': ARQS,
    'attach_handles': ARQS,
}
# A deleted row of these changes rows of other families (ON DELETE CASCADE
# or SET NULL in the schema): deleting a device deletes its deployables,
# their handles, and the handles' ARQs lose them.
CASCADES = {'devices': (DEPLOYABLES, ARQS), 'deployables': (ARQS,)}
