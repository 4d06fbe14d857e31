"""Short human forms of wire dicts, for log lines (never a dict repr)."""

_PCI_KEYS = ('domain', 'bus', 'device', 'function')


def _pci(info):
    if set(_PCI_KEYS) <= set(info):
        return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info
    return ' '.join('%s=%s' % item for item in sorted(info.items()))


def controlpath(cpid):
    """``{'cpid_type': 'PCI', 'cpid_info': {...}}`` ->
    ``'PCI 0000:5e:00.0'``."""
    return '%s %s' % (cpid.get('cpid_type', '?'),
                      _pci(cpid.get('cpid_info') or {}))


def attach_handle(handle):
    """``{'attach_type': 'PCI', 'attach_info': {...}, 'uuid': U}`` ->
    ``'PCI 0000:5e:00.1 (U)'``."""
    if not handle:
        return 'none'
    text = '%s %s' % (handle.get('attach_type', '?'),
                      _pci(handle.get('attach_info') or {}))
    return '%s (%s)' % (text, handle['uuid']) if handle.get('uuid') else text


def counts(summary):
    """``{'added': 2, 'removed': 0}`` -> ``'2 added, 0 removed'``."""
    return ', '.join('%s %s' % (value, key.replace('_', ' '))
                     for key, value in summary.items())


def mapping(values):
    """``{'bmc': '2.0', 'pr': ['a', 'b']}`` -> ``'bmc 2.0, pr a/b'``."""
    if not isinstance(values, dict):
        return str(values)

    def text(value):
        if isinstance(value, (list, tuple)):
            return '/'.join(str(v) for v in value)
        return str(value)
    return ', '.join('%s %s' % (key, text(value)) for key, value
                     in sorted(values.items())) or 'none'
