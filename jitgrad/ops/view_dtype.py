"""``Tensor.view(dtype)``: a tensor's bytes read as another dtype (sharing memory), with
torch's checks, and jitgrad's bfloat16 (held in float32 memory) viewed through the high
halves of its words."""

from __future__ import annotations

import sys

import numpy as np

from .. import dtypes
from . import registry


def view_dtype(input, dtype: dtypes.dtype):  # noqa: A002
    """``view(dtype)``: the same bytes read as ``dtype`` (sharing memory; not differentiable,
    as in torch); the last dim scales by the ratio of the element sizes."""
    from ..tensor import _new

    if registry.state.traces or input._trace is not None or input.is_cuda:
        raise NotImplementedError("view(dtype) reads a tensor's bytes: it runs on eager CPU "
                                  "tensors only (outside jit); use .to(dtype) to convert")
    if input.dtype is dtypes.bfloat16 and dtype is not dtypes.bfloat16 \
            and np.dtype(dtype.np).itemsize == 2 and sys.byteorder == "little":
        # a float32 holding a bfloat16 value has its bits in the high half (bytes 2-3 on a
        # little-endian machine; the low half is 0): viewing those halves reads and writes them
        halves = input._data[..., None].view(np.uint16)[..., 1]
        return _new(halves.view(dtype.np), dtype)
    if dtypes.bfloat16 in (input.dtype, dtype) and input.dtype is not dtype:
        raise NotImplementedError("view(dtype) to or from bfloat16: jitgrad keeps bfloat16 values "
                                  "in float32 memory, so their 2-byte form can be viewed only "
                                  "as another 2-byte dtype (int16, uint16, float16); use "
                                  ".to(dtype) to convert values")
    data = input._data
    old, new = np.dtype(input.dtype.np).itemsize, np.dtype(dtype.np).itemsize
    if old != new:
        what = (f"to view {input.dtype._scalar_name} as {dtype._scalar_name} "
                "(different element sizes)")
        if data.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if data.strides[-1] != old and data.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got "
                               f"{data.strides[-1] // old}")
        if new > old and data.shape[-1] % (new // old):
            raise RuntimeError(f"self.size(-1) must be divisible by {new // old} {what}, but "
                               f"got {data.shape[-1]}")
    return _new(data.view(dtype.np), dtype)
