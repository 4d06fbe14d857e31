"""The NVIDIA GPU driver (entry point ``nvidia_gpu``); see driver.py."""

from cyborg_like.drivers.nvidia_gpu.driver import NvidiaGPUDriver

__all__ = ['NvidiaGPUDriver']
