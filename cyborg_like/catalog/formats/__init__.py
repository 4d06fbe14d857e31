"""What an image declares about itself, read from its header.

``inspect(head)`` asks every registered parser in turn; the first one that
recognises the image answers. A parser is a callable ``parse(head: bytes)
-> dict | None``: None when the bytes are not its format, a dict of what
the header declares when they are, ``exception.InvalidImage`` when they are
its format but malformed (a truncated or inconsistent header).

Keys a parser may return (all optional, strings):

- ``kind``: ``'bitstream'`` (partial reconfiguration of a region) or
  ``'firmware'`` (a full image for the card: FIM, shell, BMC);
- ``vendor``, ``board``: PCI ids as ``0x`` + 4 lower-case hex digits;
- ``interface_id``: what the image needs of the region (Intel: the PR
  interface id, Xilinx: the shell's interface uuid), a dashed lower-case
  UUID;
- ``function_name``, ``function_version``;
- ``hardware_id``: the id the hardware reports once the image is loaded
  (a GBS's AFU id, an xclbin's uuid), a dashed lower-case UUID.

Parsers register at import of their module (``register(name, parse)``);
the modules named in ``PARSERS`` are imported on first use.
"""

import importlib

from cyborg_like.common import exception

#: How much of the image the API hands to ``inspect`` (headers are small).
HEAD_SIZE = 1024 * 1024

#: Parser modules of this package, imported by ``inspect`` on first use.
PARSERS = ('gbs', 'xclbin')

KEYS = frozenset(('kind', 'vendor', 'board', 'interface_id',
                  'function_name', 'function_version', 'hardware_id'))
KINDS = ('bitstream', 'firmware')

_registry = {}
_loaded = False


def register(name, parse):
    """Add ``parse`` under ``name`` (a parser module calls this)."""
    _registry[name] = parse


def registered():
    _load()
    return dict(_registry)


def inspect(head):
    """The metadata ``head`` (the first up to HEAD_SIZE bytes of an image)
    declares; None for an image without a header we know."""
    for name, parse in registered().items():
        declared = parse(head)
        if declared is None:
            continue
        unknown = set(declared) - KEYS
        if unknown:
            raise ValueError('parser %s returned unknown keys %s'
                             % (name, sorted(unknown)))
        if declared.get('kind') not in (None,) + KINDS:
            raise exception.InvalidImage(
                reason='the %s header declares kind %r' % (
                    name, declared['kind']))
        return {k: v for k, v in declared.items() if v is not None}
    return None


def _load():
    global _loaded
    if _loaded:
        return
    for module in PARSERS:
        try:
            importlib.import_module(__name__ + '.' + module)
        except ModuleNotFoundError as error:
            # Only a parser module that is absent is skipped (not yet
            # written); an import error inside one is a bug and raises.
            if error.name != __name__ + '.' + module:
                raise
    _loaded = True
