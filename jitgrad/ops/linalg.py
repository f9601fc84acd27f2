"""Matrix products: mm, bmm, mv, dot, addmm (BLAS through NumPy; kernel boundaries in the JIT)."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .registry import OPAQUE, apply, defop


def _same_dtype(a, b, what="m1 and m2") -> dtypes.dtype:
    if a.dtype is not b.dtype:
        x, y = (d._legacy.replace("Tensor", "").replace("Double", "double").replace(
            "Float", "float") for d in (a.dtype, b.dtype))
        raise RuntimeError(f"expected {what} to have the same dtype, but got: {x} != {y}")
    return a.dtype


def _mm_meta(a, b):
    if a.ndim != 2 or b.ndim != 2:
        which = "self" if a.ndim != 2 else "mat2"
        raise RuntimeError(f"{which} must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})")
    return (a.shape[0], b.shape[1]), _same_dtype(a, b)


def _bmm_meta(a, b):
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else
                           "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    return (a.shape[0], a.shape[1], b.shape[2]), _same_dtype(a, b)


def _mv_meta(a, v):
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got 1, "
                           f"{a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec "
            f"({v.shape[0]})")
    return (a.shape[0],), _same_dtype(a, v)


def _dot_meta(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] "
            f"to have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
            "respectively")
    return (), _same_dtype(a, b, "both vectors")


def _mH(x):  # noqa: N802 - torch's name
    return x.transpose(-2, -1).conj()


MM = defop("mm", np.matmul, kind=OPAQUE, meta=_mm_meta, save=(0, 1),
           vjp=(lambda g, ans, a, b: g.mm(_mH(b)), lambda g, ans, a, b: _mH(a).mm(g)))
BMM = defop("bmm", np.matmul, kind=OPAQUE, meta=_bmm_meta, save=(0, 1),
            vjp=(lambda g, ans, a, b: g.bmm(_mH(b)), lambda g, ans, a, b: _mH(a).bmm(g)))
MV = defop("mv", np.matmul, kind=OPAQUE, meta=_mv_meta, save=(0, 1),
           vjp=(lambda g, ans, a, v: g.unsqueeze(1) * v.conj(),
                lambda g, ans, a, v: _mH(a).mv(g)))
DOT = defop("dot", lambda a, b: np.asarray(np.dot(a, b)), kind=OPAQUE, meta=_dot_meta,
            save=(0, 1),
            vjp=(lambda g, ans, a, b: g * b.conj(), lambda g, ans, a, b: g * a.conj()))


def _addmm_meta(bias, a, b):
    shape, dt = _mm_meta(a, b)
    from .registry import broadcast_shapes

    broadcast_shapes(tuple(bias.shape), shape)
    return shape, _same_dtype(bias, a, "self and mat1") if bias.dtype is not dt else dt


ADDMM = defop("addmm", lambda bias, a, b: bias + a @ b, kind=OPAQUE, meta=_addmm_meta,
              save=(1, 2),
              vjp=(lambda g, ans, bias, a, b: g, lambda g, ans, bias, a, b: g.mm(_mH(b)),
                   lambda g, ans, bias, a, b: _mH(a).mm(g)))


def mm(input, mat2):  # noqa: A002
    """Matrix product of two 2-D tensors."""
    return apply(MM, input, mat2)


def bmm(input, mat2):  # noqa: A002
    """Batched matrix product of two 3-D tensors."""
    return apply(BMM, input, mat2)


def mv(input, vec):  # noqa: A002
    return apply(MV, input, vec)


def dot(input, tensor):  # noqa: A002
    """Inner product of two 1-D tensors."""
    return apply(DOT, input, tensor)


def outer(input, vec2):  # noqa: A002
    """Outer product of two 1-D tensors."""
    return input.unsqueeze(1) * vec2


def addmm(input, mat1, mat2):  # noqa: A002
    return apply(ADDMM, input, mat1, mat2)


def matmul(input, other):  # noqa: A002
    """Matrix product with torch.matmul's rules for 1-D, 2-D and batched operands."""
    a, b = input, other
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and "
            f"{b.ndim}D")
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    if a.ndim == 2 and b.ndim == 1:
        return mv(a, b)
    if a.ndim == 1 and b.ndim == 2:
        return mm(a.unsqueeze(0), b).squeeze(0)
    if a.ndim == 2 and b.ndim == 2:
        return mm(a, b)
    if b.ndim <= 2 and a.ndim >= 3:
        # Fold the batch into rows: one mm, as torch does (UnsafeViewBackward0 on top).
        lead = tuple(a.shape[:-1])
        flat = a.reshape(-1, a.shape[-1])
        out = mm(flat, b.unsqueeze(1) if b.ndim == 1 else b)
        return out.reshape(lead + (() if b.ndim == 1 else (b.shape[-1],)))
    # General batched case: broadcast batch dims, then bmm.
    from .registry import broadcast_shapes

    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    batch = broadcast_shapes(tuple(a2.shape[:-2]), tuple(b2.shape[:-2]))
    n = 1
    for s in batch:
        n *= s
    a3 = a2.expand(batch + tuple(a2.shape[-2:])).reshape(n, a2.shape[-2], a2.shape[-1])
    b3 = b2.expand(batch + tuple(b2.shape[-2:])).reshape(n, b2.shape[-2], b2.shape[-1])
    out = bmm(a3, b3).reshape(batch + (a2.shape[-2], b2.shape[-1]))
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return out
