"""Norms: ``linalg_vector_norm`` (one primitive, torch's ``LinalgVectorNormBackward0``) and the
functions built on it: ``Tensor.norm``/``jitgrad.norm``, ``linalg.vector_norm``,
``linalg.matrix_norm`` and ``linalg.norm``.

The VJP is torch's ``norm_backward``: ``g * x / ||x||`` for p = 2 (zero where the norm is zero),
``g * sgn(x) |x|^(p-1) / ||x||^(p-1)`` for other p, the gradient shared evenly among the
elements of largest (smallest) magnitude for p = +-inf, and zero for p = 0.
"""

from __future__ import annotations

import math

import numpy as np

from .autocast_policy import FP32, autocast_policy
from .. import dtypes
from ._shape import normalize_dims, numel, reduced_shape, reduction_dims, wrap_dim
from .reduce import expand_reduced
from . import registry
from .registry import OPAQUE, apply, defop
from .surface import public
from .memory_formats import row_major

INF = math.inf


def _compute_dtype(x_dtype: dtypes.dtype, dtype: dtypes.dtype | None) -> dtypes.dtype:
    return dtype if dtype is not None else x_dtype


@row_major
def _vector_norm_impl(x, ord, dims, keepdim, dtype=None):  # noqa: A002
    work = _compute_dtype(dtypes.from_numpy_dtype(x.dtype), dtype)
    a = np.abs(x.astype(work.np, copy=False))
    real = a.dtype
    if ord == INF:
        out = np.amax(a, axis=dims, keepdims=keepdim)
    elif ord == -INF:
        out = np.amin(a, axis=dims, keepdims=keepdim)
    elif ord == 0:
        out = np.sum(a != 0, axis=dims, keepdims=keepdim)
    elif ord == 1:
        out = np.sum(a, axis=dims, keepdims=keepdim)
    elif ord == 2:
        out = np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
    else:
        out = np.sum(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)
    return np.asarray(out, dtype=real)


def _vector_norm_meta(x, ord, dims, keepdim, dtype=None):  # noqa: A002
    d = x.dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {d._scalar_name}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("linalg.vector_norm: dtype should be floating point or complex, but "
                           f"got {dtype._scalar_name}")
    if dtype is not None and dtype.is_complex != d.is_complex:
        kind = "complex" if d.is_complex else "real"
        raise RuntimeError(f"linalg.vector_norm: dtype should be {kind} for {kind} inputs, but "
                           f"got {dtype._scalar_name}")
    if dtype is not None and dtypes.promote_types(d, dtype) is not dtype:
        raise RuntimeError("linalg.vector_norm: the dtype of the input "
                           f"({d._scalar_name}) should be "
                           "convertible without narrowing to the specified dtype "
                           f"({dtype._scalar_name})")
    shape = tuple(x.shape)
    if ord < 0 or ord == INF:
        if numel(shape) == 0 and x.ndim:
            if any(shape[i] == 0 for i in dims) or not dims:
                raise RuntimeError(
                    f"linalg.vector_norm cannot compute the {_ord_text(ord)} norm on an empty "
                    "tensor because the operation does not have an identity")
    return reduced_shape(shape, dims, keepdim), _compute_dtype(d, dtype).to_real()


def _ord_text(ord) -> str:  # noqa: A002
    if ord in (INF, -INF):
        return "inf" if ord > 0 else "-inf"
    return f"{ord:g}"


def _vector_norm_vjp(g, ans, x, ord, dims, keepdim, dtype=None):  # noqa: A002
    from .elementwise import where

    if ord == 0:
        return None  # (torch's norm_backward gives no gradient for the 0-"norm", a count)
    shape = tuple(x.shape)
    g = expand_reduced(g, shape, dims, keepdim)
    norm = expand_reduced(ans, shape, dims, keepdim)
    if ord == 0:
        return None  # (torch's norm_backward gives no gradient for the 0-"norm", a count)
    if ord == 1:
        return g * x.sgn()
    if ord in (INF, -INF):
        a = x.abs()
        mask = (a == norm) | a.isnan()
        count = mask.sum(dim=dims, keepdim=True) if dims else mask.to(g.dtype)
        return x.sgn() * ((g / count) * mask)
    if ord == 2:
        return g * where(norm == 0, 0, x / where(norm == 0, 1, norm))
    a = x.abs()
    if ord < 1:
        scaled = x.sgn() * where(x == 0, 0, where(x == 0, 1, a) ** (ord - 1))
        return scaled * g * norm ** (1 - ord)
    safe = where(norm == 0, 1, norm)
    if ord < 2:
        out = x.sgn() * a ** (ord - 1) * g / safe ** (ord - 1)
    else:
        out = x * a ** (ord - 2) * g / safe ** (ord - 1)
    return where(norm == 0, 0, out)


def _vector_norm_jvp(tangents, ans, x, ord, dims, keepdim, dtype=None):  # noqa: A002
    from .creation import ones

    w = _vector_norm_vjp(ones(tuple(ans.shape), dtype=ans.dtype, device=ans.device), ans, x, ord,
                         dims, keepdim, dtype)
    if w is None:  # the 0-"norm" is locally constant
        return ans * 0
    t = tangents[0] * w.conj()
    if t.dtype.is_complex:
        t = t.real
    return t.sum(dim=dims, keepdim=keepdim) if dims else t


LINALG_VECTOR_NORM = defop(
    "linalg_vector_norm", _vector_norm_impl, kind=OPAQUE, meta=_vector_norm_meta, save=(0,),
    save_output=True, vjp=(_vector_norm_vjp,), jvp=_vector_norm_jvp,
    saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                 "ord": ("param", "ord"), "self": ("input", 0), "result": ("output", 0)})


# ---------------------------------------------------------------- singular values


def _svdvals_meta(x):
    if x.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError("linalg.svd: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype._scalar_name}")
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        raise NotImplementedError('"linalg_svd_cpu" not implemented for '
                                  f"'{x.dtype._scalar_name}'")
    shape = tuple(x.shape)
    return shape[:-2] + (min(shape[-2:]),), x.dtype.to_real()


def _svd_backward_impl(g, x):
    # d(sum g_i s_i)/dA = U diag(g) V^H (the reduced SVD)
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    return np.asarray((u * g[..., None, :].astype(u.dtype)) @ vh, dtype=x.dtype)


def _svd_jvp_impl(t, x):
    # ds_i = Re(u_i^H dA v_i)
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    d = np.einsum("...ji,...jk,...ik->...i", u.conj(), t, vh)
    return np.asarray(d.real, dtype=np.dtype(x.dtype).type(0).real.dtype)


def _no_second_derivative(*args, **params):
    raise RuntimeError("jitgrad does not implement forward-mode AD of linalg.svdvals' backward "
                       "(its second derivative in forward mode)")


def _svdvals_backward_vjp(h, ans, g, x):
    """The second derivative: ``U diag(g) V^H``'s VJP, through ``linalg_svd`` and its VJP
    (composed of ops, so that higher derivatives follow too)."""
    from .linalg2 import _mh
    from .linalg_decomp import LINALG_SVD, _svd_vjp

    u, s, vh = apply(LINALG_SVD, x, full_matrices=False)
    hv = h.to(u.dtype) @ _mh(vh)  # h V
    d = (_mh(u) @ hv).diagonal(0, -2, -1)
    g_g = d.real if d.dtype.is_complex else d
    gc = g.to(u.dtype)
    g_u = hv * gc.unsqueeze(-2)  # h V diag(g)
    g_vh = gc.unsqueeze(-1) * (_mh(u) @ h.to(u.dtype))  # diag(g) U^H h
    return g_g, _svd_vjp((g_u, None, g_vh), (u, s, vh), x, False)[0]


SVDVALS_BACKWARD = defop(
    "svdvals_backward", _svd_backward_impl, kind=OPAQUE, save=(0, 1),
    meta=lambda g, x: (tuple(x.shape), x.dtype),
    vjp=_svdvals_backward_vjp, jvp=_no_second_derivative)
SVDVALS_JVP = defop("svdvals_jvp", _svd_jvp_impl, kind=OPAQUE, differentiable=False,
                    meta=lambda t, x: _svdvals_meta(x))
LINALG_SVDVALS = defop(
    "linalg_svdvals", lambda x: np.linalg.svd(x, compute_uv=False), kind=OPAQUE,
    meta=_svdvals_meta, node_name="LinalgSvdBackward0", save=(0,),
    vjp=(lambda g, ans, x: apply(SVDVALS_BACKWARD, g, x),),
    jvp=lambda tangents, ans, x: apply(SVDVALS_JVP, tangents[0], x))


@autocast_policy(FP32)
def svdvals(A, *, driver=None):  # noqa: N803
    """The singular values of (a batch of) matrices ``A``, in descending order. Its gradient
    is ``U diag(g) V^H`` (its second derivative through ``linalg_svd``'s)."""
    return apply(LINALG_SVDVALS, A)


# ---------------------------------------------------------------- public functions


def _check_ord_number(ord) -> float:  # noqa: A002
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    return float(ord)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements when None)."""
    p = _check_ord_number(ord)
    dims = reduction_dims(dim, x.ndim) if x.ndim else ()
    if not x.ndim and dim is not None:  # (a 0-d tensor: dims -1 and 0 only, each once)
        normalize_dims(dim, 0)
    return apply(LINALG_VECTOR_NORM, x, ord=p, dims=dims, keepdim=bool(keepdim), dtype=dtype)


def _matrix_dims(A, dim) -> tuple[int, int]:  # noqa: N803
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        n = len(dim) if isinstance(dim, (tuple, list)) else 1
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {n}")
    d0, d1 = wrap_dim(dim[0], A.ndim), wrap_dim(dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *,  # noqa: A002,N803
                dtype=None):
    """The matrix norm of ``A`` over the two dims ``dim``: ``'fro'`` (Frobenius), or the
    induced norms ``1``, ``-1`` (max/min column sum) and ``inf``, ``-inf`` (max/min row sum)."""
    # torch's order: the order, the matrix, its dtype (no half for the SVD's orders), the dims
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if not isinstance(ord, str) and ord not in (1, -1, 2, -2, INF, -INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {_order(ord)} not supported.")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {A.dtype._scalar_name}")
    if ord in ("nuc", 2, -2) and A.dtype in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError("linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{A.dtype._scalar_name}")
    d0, d1 = _matrix_dims(A, dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    if ord == "nuc":
        return _svd_norm(A, d0, d1, keepdim, dtype, "sum")
    if ord in (2, -2):
        return _svd_norm(A, d0, d1, keepdim, dtype, "amax" if ord == 2 else "amin")
    if dtype is not None:
        A = A.to(dtype)
    # ord = +-1: max/min over columns of the column sums; +-inf: over rows of the row sums
    sum_dim, max_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = vector_norm(A, 1, dim=sum_dim, keepdim=keepdim)  # (torch's node: one vector norm)
    if not keepdim and sum_dim < max_dim:
        max_dim -= 1
    return sums.amax(dim=max_dim, keepdim=keepdim) if ord > 0 else \
        sums.amin(dim=max_dim, keepdim=keepdim)


def _svd_norm(A, d0, d1, keepdim, dtype, reduce):  # noqa: N803
    """The nuclear (``sum``) or spectral (``amax``/``amin``) norm over dims (d0, d1)."""
    if dtype is not None:
        A = A.to(dtype)  # noqa: N806
    if (d0, d1) != (A.ndim - 2, A.ndim - 1):
        A = A.movedim((d0, d1), (-2, -1))  # noqa: N806
    s = svdvals(A)
    if not keepdim:
        return getattr(s, reduce)(dim=-1)
    out = getattr(s, reduce)(dim=-1, keepdim=True).unsqueeze(-1)
    return out.movedim((-2, -1), (d0, d1))  # (torch's nodes: ..., Unsqueeze, Permute)


def _order(ord) -> str:  # noqa: A002
    return "inf" if ord == INF else "-inf" if ord == -INF else f"{ord:g}"


def linalg_norm(A, ord=None, dim=None, keepdim: bool = False, *,  # noqa: A002,N803
                dtype=None):
    """``linalg.norm``: a vector norm (1-D input, an int ``dim``, or ``ord=None``) or a matrix
    norm (2-D input with ``ord`` given, a string ``ord``, or a 2-tuple ``dim``)."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {len(dims)}")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    if A.ndim == 1 and not isinstance(ord, str):  # (a string: matrix_norm refuses 1-D)
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


@public("norm", method=True)
def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None):  # noqa: A002
    """``torch.norm``/``Tensor.norm``: the vector ``p``-norm over ``dim`` (all elements by
    default; ``'fro'`` is the 2-norm); ``'nuc'`` is the nuclear matrix norm."""
    if isinstance(dim, int):
        dim = (dim,)
    if registry.sparse_live and registry.sparse_any((input,)):
        return _sparse_norm(input, p, dim, keepdim, dtype)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc":
            return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                               dtype=dtype)
        raise RuntimeError(f"norm(): unsupported p {p!r}")
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def _sparse_norm(input, p, dim, keepdim: bool, dtype):  # noqa: A002
    """A sparse tensor's norm: a full reduction over its (coalesced) stored values, as torch's
    ``norm_sparse`` (which has no derivative: the result records none)."""
    from .creation import tensor

    if dim is not None and sorted(d % input.ndim for d in dim) != list(range(input.ndim)):
        raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' must "
                           "either be empty or contain all dimensions of the input")
    if p == "fro" and dtype is not None:
        raise ValueError("dtype argument is not supported in frobenius norm")
    storage = input._data
    values = storage.coalesce().values if hasattr(storage, "coalesce") else storage.values
    out = vector_norm(tensor(values, dtype=input.dtype), 2 if p in ("fro", None) else p,
                      dtype=dtype)
    return out.reshape((1,) * input.ndim) if keepdim else out
