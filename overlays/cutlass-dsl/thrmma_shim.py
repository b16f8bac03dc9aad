

# --- appended by the forge recipe (pins.cutlass-dsl.shim) -----------------------------------
# nvidia-cutlass-dsl 4.6.0 moved ThrMma and TiledMma out of cutlass.cute.core; callers that
# still import them from here (vllm's sm12x kernels among them) fail at import time. A PEP 562
# module __getattr__ resolves the old names lazily from cutlass.cute on first use, so importing
# this module never imports cutlass.cute early (which would be circular).

_FORGE_MOVED_TO_CUTE = ("ThrMma", "TiledMma")
_forge_previous_getattr = globals().get("__getattr__")


def __getattr__(name):
    if name in _FORGE_MOVED_TO_CUTE:
        import cutlass.cute as _cute

        value = getattr(_cute, name)
        globals()[name] = value
        return value
    if _forge_previous_getattr is not None:
        return _forge_previous_getattr(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
