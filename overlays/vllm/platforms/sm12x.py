"""Gates for the sm12x (GB10 / DGX Spark) code paths of the DeepSeek-V4 layer.

Every overlay in this folder checks `is_sm12x()` before it changes behaviour, so the same
image still serves unchanged on other GPUs.
"""

import functools


@functools.cache
def compute_capability():
    """The (major, minor) compute capability of device 0, or None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(0)


def is_sm12x():
    """True on Blackwell consumer/edge parts (sm120, sm121: GB10)."""
    capability = compute_capability()
    return capability is not None and capability[0] == 12
