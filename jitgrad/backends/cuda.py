"""``torch.backends.cuda``'s switches, as scripts set them (nanoGPT's ``train.py`` starts with
``torch.backends.cuda.matmul.allow_tf32 = True``). jitgrad's CUDA kernels compute float32 in
float32 and have no flash or memory-efficient attention kernels, so the switches are recorded
and read back with torch's defaults but change nothing; ``is_built()`` is False, as in a CPU
build of torch."""

from __future__ import annotations

from typing import Any

__all__ = ["cudnn_sdp_enabled", "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp",
           "enable_mem_efficient_sdp", "flash_sdp_enabled", "is_built", "math_sdp_enabled",
           "matmul", "mem_efficient_sdp_enabled"]


def is_built() -> bool:
    """Whether this build has CUDA support compiled in (torch's CPU wheels: False; jitgrad's
    CUDA runs through numba-cuda, see ``jitgrad.cuda.is_available``)."""
    return False


class _Matmul:
    """``torch.backends.cuda.matmul``: precision switches of cuBLAS matrix products."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True,
                 "allow_fp16_accumulation": False, "fp32_precision": "none"}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._DEFAULTS))

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._DEFAULTS:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _Matmul()

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _switch(kind: str):
    def enabled() -> bool:
        return _SDP[kind]

    def enable(enabled: bool) -> None:
        _SDP[kind] = bool(enabled)

    enabled.__name__ = f"{kind}_sdp_enabled"
    enabled.__doc__ = f"Whether the {kind} scaled-dot-product-attention kernel is enabled."
    enable.__name__ = f"enable_{kind}_sdp"
    enable.__doc__ = (f"Enables or disables the {kind} scaled-dot-product-attention kernel "
                      "(recorded: jitgrad has one attention implementation).")
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _switch("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _switch("cudnn")
