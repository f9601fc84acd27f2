"""Matrix products: mm, bmm, mv, dot, addmm (BLAS through NumPy; kernel boundaries in the JIT)."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ._shape import numel
from .autocast_policy import LOWER, autocast_policy
from .dtype_rules import refuse_dtypes
from .movement import SQUEEZE_DIM_, UNSAFE_VIEW, reshape
from .registry import AUTOCAST_LOWER, BILINEAR, OPAQUE, apply, defop
from .surface import public


def _same_dtype(a, b, what="m1 and m2") -> dtypes.dtype:
    if a.dtype is not b.dtype:
        x, y = (dtypes.CPP_NAMES[d.name] for d in (a.dtype, b.dtype))
        raise RuntimeError(f"expected {what} to have the same dtype, but got: {x} != {y}")
    return a.dtype


def _mm_meta(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) != 2 or len(sb) != 2:
        which = "self" if len(sa) != 2 else "mat2"
        raise RuntimeError(f"{which} must be a matrix")
    if sa[1] != sb[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")
    return (sa[0], sb[1]), _same_dtype(a, b)


def _bmm_meta(a, b):
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else
                           "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype._scalar_name} but found "
                           f"{b.dtype._scalar_name}")
    return (a.shape[0], a.shape[1], b.shape[2]), a.dtype


def _mv_meta(a, v):
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got 1, "
                           f"{a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec "
            f"({v.shape[0]})")
    if a.dtype is not v.dtype:  # (torch's mv is an addmv into a result of the vector's dtype)
        mat, vec = a.dtype._scalar_name, v.dtype._scalar_name
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {vec}, {mat}, "
                           f"and {vec}")
    return (a.shape[0],), a.dtype


def _dot_meta(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{a.dtype._scalar_name} and {b.dtype._scalar_name}")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] "
            f"to have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
            "respectively")
    return (), a.dtype


def _mH(x):  # noqa: N802 - torch's name
    return x.transpose(-2, -1).conj()


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.float16:  # NumPy has no half BLAS and sums in half; torch sums in float
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    return np.matmul(a, b)


MM = defop("mm", _matmul, kind=OPAQUE, meta=_mm_meta, save=(0, 1), autocast=AUTOCAST_LOWER,
           check_operands=refuse_dtypes(bool="addmm_impl_cpu_"),
           vjp=(lambda g, ans, a, b: g.mm(_mH(b)), lambda g, ans, a, b: _mH(a).mm(g)),
           jvp=BILINEAR, save_if={0: (1,), 1: (0,)},
           saved_names={"self": ("input", 0), "mat2": ("input", 1),
                        "self_sym_sizes": ("sizes", 0), "mat2_sym_sizes": ("sizes", 1)})
BMM = defop("bmm", _matmul, kind=OPAQUE, meta=_bmm_meta, save=(0, 1), autocast=AUTOCAST_LOWER,
            check_operands=refuse_dtypes(bool="bmm"),
            vjp=(lambda g, ans, a, b: g.bmm(_mH(b)), lambda g, ans, a, b: _mH(a).bmm(g)),
            jvp=BILINEAR, save_if={0: (1,), 1: (0,)},
            saved_names={"self": ("input", 0), "mat2": ("input", 1)})
MV = defop("mv", np.matmul, kind=OPAQUE, meta=_mv_meta, save=(0, 1),
           check_operands=refuse_dtypes(bool="addmv_impl_cpu"),
           vjp=(lambda g, ans, a, v: g.unsqueeze(1) * v.conj(),
                lambda g, ans, a, v: _mH(a).mv(g)), jvp=BILINEAR, save_if={0: (1,), 1: (0,)},
                saved_names={"self": ("input", 0), "vec": ("input", 1)})
DOT = defop("dot", lambda a, b: np.asarray(np.dot(a, b)), kind=OPAQUE, meta=_dot_meta,
            save=(0, 1), check_operands=refuse_dtypes(bool="dot"),
            vjp=(lambda g, ans, a, b: g * b.conj(), lambda g, ans, a, b: g * a.conj()),
            jvp=BILINEAR, save_if={0: (1,), 1: (0,)},
            saved_names={"self": ("input", 0), "tensor": ("input", 1)})


def _addmm_meta(bias, a, b):
    # (torch checks the dtypes first: nn.Linear on a double input says "mat1 and mat2 ...")
    for what, x in (("self", bias), ("mat1", a)):
        if x.dtype is not b.dtype:
            raise RuntimeError(f"{what} and mat2 must have the same dtype, but got "
                               f"{x.dtype._scalar_name} and {b.dtype._scalar_name}")
    shape, dt = _mm_meta(a, b)
    from .registry import broadcast_shapes

    broadcast_shapes(tuple(bias.shape), shape)
    return shape, dt


def _addmm_jvp(tangents, ans, bias, a, b):
    tbias, ta, tb = tangents
    out = tbias
    for term in (ta.mm(b) if ta is not None else None, a.mm(tb) if tb is not None else None):
        if term is not None:
            out = term if out is None else out + term
    return out


def _addmm(bias: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.float16:  # (torch adds the bias in float too, and rounds once)
        return (bias.astype(np.float32) + np.matmul(a.astype(np.float32),
                                                    b.astype(np.float32))).astype(np.float16)
    return bias + _matmul(a, b)


ADDMM = defop("addmm", _addmm, kind=OPAQUE,
              meta=_addmm_meta, save=(1, 2), autocast=AUTOCAST_LOWER,
              check_operands=refuse_dtypes(bool="addmm_impl_cpu_"),
              vjp=(lambda g, ans, bias, a, b: g, lambda g, ans, bias, a, b: g.mm(_mH(b)),
                   lambda g, ans, bias, a, b: _mH(a).mm(g)),
              jvp=_addmm_jvp, save_if={1: (2,), 2: (1,)},
              saved_names={"mat1": ("input", 1), "mat2": ("input", 2), "alpha": ("const", 1),
                           "beta": ("const", 1), "mat1_sym_sizes": ("sizes", 1),
                           "mat2_sym_sizes": ("sizes", 2)})


@public("mm", method=True)
def mm(input, mat2):  # noqa: A002
    """Matrix product of two 2-D tensors."""
    return apply(MM, input, mat2)


@public("bmm", method=True)
def bmm(input, mat2):  # noqa: A002
    """Batched matrix product of two 3-D tensors."""
    return apply(BMM, input, mat2)


@public("mv", method=True)
def mv(input, vec):  # noqa: A002
    return apply(MV, input, vec)


@public("dot", method=True)
def dot(input, tensor):  # noqa: A002
    """Inner product of two 1-D tensors."""
    return apply(DOT, input, tensor)


@public("outer", method=True)
def outer(input, vec2):  # noqa: A002
    """Outer product of two 1-D tensors."""
    return input.reshape(input.shape[0], 1) * vec2  # (torch's graph: a view, then a mul)


@public("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``."""
    if beta == 1 and alpha == 1:
        return apply(ADDMM, input, mat1, mat2)
    from .surface24_math import _addmm_method

    return _addmm_method(input, mat1, mat2, beta=beta, alpha=alpha)


@public("matmul", method=True)
@autocast_policy(LOWER)
def matmul(input, other):  # noqa: A002
    """Matrix product with torch.matmul's rules for 1-D, 2-D and batched operands.

    Decomposes exactly as torch's ``_matmul_impl`` does (dot, mv, mm, folding the batch into
    the rows of one mm/mv, or expand + bmm), so the recorded nodes match torch's.
    """
    a, b = input, other
    da, db = a.ndim, b.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        out = mm(a.unsqueeze(0), b)
        return apply(SQUEEZE_DIM_, out, shape=tuple(out.shape[1:]))
    if da == 2 and db == 2:
        return mm(a, b)
    # A batch-1 3-D operand that requires grad, against a batched 3-D one, is squeezed (torch).
    if da == 3 and db == 3 and (a.shape[0] == 1) != (b.shape[0] == 1):
        if a.shape[0] == 1 and a.requires_grad:
            return matmul(a.squeeze(0), b)
        if b.shape[0] == 1 and b.requires_grad:
            return matmul(a, b.squeeze(0))
    if _should_fold(a, b):
        transpose = db > da
        t1 = b.transpose(-2, -1) if transpose else a
        t2 = (a.t() if da == 2 else a) if transpose else b
        lead = tuple(t1.shape[:-1])
        folded = reshape(t1, (numel(lead), t1.shape[-1]))
        if t2.ndim == 2:
            out = apply(UNSAFE_VIEW, folded.mm(t2), shape=lead + (t2.shape[1],))
            return out.transpose(-2, -1).contiguous() if transpose else out
        return apply(UNSAFE_VIEW, folded.mv(t2), shape=lead)
    from .registry import broadcast_shapes

    n = a.shape[-2] if da > 1 else 1
    m1 = a.shape[-1]
    m2 = b.shape[-2] if db > 1 else b.shape[0]
    p = b.shape[-1] if db > 1 else 1
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    nb = numel(batch)
    a3 = reshape(a.expand(batch + (n, m1)), (nb, n, m1))
    b3 = reshape(b.expand(batch + ((m2, p) if db > 1 else (m2,))), (nb, m2, p))
    shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    return apply(UNSAFE_VIEW, bmm(a3, b3), shape=shape)


def _should_fold(a, b) -> bool:
    # torch's should_fold: fold the larger operand's batch into matrix rows (one mm/mv) when
    # the smaller operand needs a gradient, or when that is free (a view, no copy).
    larger_first = a.ndim >= b.ndim
    dim_t1, dim_t2 = (a.ndim, b.ndim) if larger_first else (b.ndim, a.ndim)
    if not (dim_t1 >= 3 and dim_t2 <= 2):
        return False
    if (b if larger_first else a).requires_grad:
        return True
    if a.ndim == 2:
        return False
    if a._trace is not None or b._trace is not None:
        return larger_first  # traced values are contiguous: ``a`` folds as a view, ``b.mT`` not
    t1 = a._data if larger_first else np.swapaxes(b._data, -1, -2)
    if t1.size == 0:
        return True
    shape, strides = t1.shape, t1.strides
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(dim_t1 - 2))


# ---------------------------------------------------------------- forward-mode (JVP) rules
