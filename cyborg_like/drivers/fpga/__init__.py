"""FPGA drivers: Intel PAC cards (DFL, OPAE's fpgaconf) and Xilinx Alveo
cards (XRT's xbmgmt).

``driver.FPGADriver`` holds what both share: discovery into Cyborg's model,
the programming sequence (checksum, vendor tool, read-back), health and
erase-on-release. ``intel`` and ``xilinx`` know their card's sysfs layout and
their tool's command line.
"""
