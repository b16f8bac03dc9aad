"""DeepSeek-V4 attention helpers for sm12x, routed to DeepGEMM's native sm120 kernels."""

from vllm.platforms.sm12x import is_sm12x


def fmax_binding():
    """The fused max kernel of the installed DeepGEMM."""
    import deep_gemm

    return deep_gemm.fmax


def use_native_kernels():
    """Whether the sm12x kernels apply on this device."""
    return is_sm12x()
