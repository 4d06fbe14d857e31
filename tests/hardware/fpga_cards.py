"""What the FPGA driver tests ask of a testbed with one card."""


def only_region(driver):
    """The one region of the one card the driver finds."""
    [device] = driver.discover()
    [region] = device.deployables
    return region
