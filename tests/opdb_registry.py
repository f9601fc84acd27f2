"""opdb records for the ops that the other lists reach only through other ops (in-place
writes, ``addmm``, ``reciprocal``, ``bitwise_xor``, ``clone(memory_format=)``,
``scatter(reduce="multiply")``): with them every ``OpDef`` has a record
(``tests/test_registry.py``)."""

from __future__ import annotations

import numpy as np
from opdb import OpInfo, _arr, _away, _idx, _many, _s, _unary

import jitgrad


def _set_row(x, v):
    out = x.copy()
    out[1] = v
    return out


def _on_copy(f, x, *args):
    """``x.clone().<method>(*args)``: an in-place op on a non-leaf copy of the input."""
    return f(x.clone(), *args)


def _scatter_multiply_ref(x, dim, index, src, reduce):
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    src = src if np.isscalar(src) else src[tuple(slice(0, n) for n in index.shape)]
    np.multiply.at(out, tuple(grids), src)
    return out


def _slice_assign(f, x, v):
    """``b = x.clone(); b[1:2] = v``, returned through a clone (torch calls the node
    ``torch::autograd::CopySlices``, jitgrad ``CopySlices``: docs/pytorch-users.md)."""
    b = x.clone()
    f(b, slice(1, 2), v)
    return b.clone()


def _clone_contiguous(f, x):
    if f is jitgrad.clone:
        return f(x, memory_format=jitgrad.contiguous_format)
    import torch

    return f(x, memory_format=torch.contiguous_format)


def _clone_channels_last(f, x):
    if f is jitgrad.clone:
        return f(x, memory_format=jitgrad.channels_last)
    import torch

    return f(x, memory_format=torch.channels_last)


def registry_records() -> list[OpInfo]:
    """Records for the ops the other lists reach only through other ops: in-place writes,
    ``addmm``, ``reciprocal``, ``bitwise_xor``, ``clone(memory_format=)``."""
    addmm_samples = _many(_s(_arr(3, 5), _arr(3, 4), _arr(4, 5), name="full"),
                          _s(_arr(5), _arr(3, 4), _arr(4, 5), name="bias_row"))
    ints = _many(_s(_idx(1, 2, 3, 12), _idx(3, 1, 0, 10), name="int"))
    return [
        OpInfo("addmm", "addmm", addmm_samples, lambda b, x, y: b + x @ y),
        OpInfo("reciprocal", "reciprocal", _unary(_away), lambda x: 1 / x),
        OpInfo("bitwise_xor", "bitwise_xor", ints, np.bitwise_xor, differentiable=False),
        OpInfo("clone_contiguous", "clone", _unary(), lambda x: x.copy(),
               call=_clone_contiguous),
        OpInfo("clone_channels_last", "clone", _many(_s(_arr(2, 3, 4, 5), name="nchw")),
               lambda x: x.copy(), call=_clone_channels_last),
        OpInfo("zero_", "Tensor.zero_", _unary(), np.zeros_like, call=_on_copy,
               gradgrad=False),
        OpInfo("fill_", "Tensor.fill_", _many(_s(_arr(3, 4), 2.5)),
               lambda x, v: np.full_like(x, v), call=_on_copy, gradgrad=False),
        OpInfo("fill_tensor_", "Tensor.fill_", _many(_s(_arr(3, 4), _arr())),
               lambda x, v: np.full_like(x, v), call=_on_copy, gradgrad=False),
        OpInfo("copy_", "Tensor.copy_", _many(_s(_arr(3, 4), _arr(4))),
               lambda x, v: np.broadcast_to(v, x.shape).copy(),
               call=lambda f, x, v: _on_copy(f, x, v).clone(), gradgrad=False),
        OpInfo("scatter_multiply", "scatter",
               _many(_s(_arr(3, 4), 0, _idx([2, 0, 1, 2]), _arr(1, 4), reduce="multiply",
                        name="src"),
                     _s(_arr(3, 4), 1, _idx([0], [3], [0]), 1.5, reduce="multiply",
                        name="value")),
               _scatter_multiply_ref, differentiable=False),
        OpInfo("copy_slices", "Tensor.__setitem__", _many(_s(_arr(3, 4), _arr(1, 4))),
               _set_row, call=_slice_assign, gradgrad=False),
    ]
