from oslo_config import cfg

GROUP = 'pci_driver'

opts = [
    cfg.MultiStrOpt(
        'passthrough_whitelist',
        default=[],
        help='PCI devices the generic "pci" driver offers for passthrough. '
             'Each value is a JSON object (or a JSON list of objects) like '
             'Nova\'s [pci] device_spec: "vendor_id" and "product_id" '
             '(hex, required) select the physical function; optional '
             '"class_id" (hex prefix of the PCI class, e.g. "0200" for '
             'Ethernet) and "address" (a glob on the PCI address, e.g. '
             '"0000:3b:00.*") narrow the match. "device_type" (required: '
             'GPU, FPGA, AICHIP, QAT, NIC or SSD) is the device type '
             'reported; "resource_class" (default PCI_DEVICE) and "traits" '
             '(a list of CUSTOM_* names) describe the deployable in '
             'Placement. A matching device with SR-IOV virtual functions '
             'enabled (sriov_numvfs > 0) offers each VF as an attach '
             'handle; without VFs the function itself is the handle. List '
             'the physical function: virtual functions are never devices '
             'of their own. Example: {"vendor_id": "8086", "product_id": '
             '"1572", "device_type": "NIC", "resource_class": '
             '"SRIOV_NET_VF", "traits": ["CUSTOM_INTEL_X710"]}'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
