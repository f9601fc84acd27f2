"""Dense ops called on sparse tensors: torch's sparse kernels by op name, else its error.

``registry.apply`` hands a call here when an argument is a ``SparseTensor`` (once one exists:
``registry.sparse_live``). ``S @ D``, ``jitgrad.mm(S, D)``, ``S * 2``, ``S + S``, ``S.t()``,
``S.to(dtype)``, ``S.sum()`` and the zero-preserving pointwise ops run their sparse version;
any other op raises torch's ``NotImplementedError`` ("Could not run 'aten::view' with
arguments from the 'SparseCPU' backend...").
"""

from __future__ import annotations

from typing import Any

from ..ops import registry
from ..ops.registry import OpDef, Tensor
from . import _ops as sp
from ._compressed import transpose_compressed
from ._storage import CSR
from ._tensor import SparseTensor, as_sparse, backend

# pointwise ops with f(0) == 0, applied to the stored values (torch's sparse unary kernels)
ZERO_PRESERVING = ("abs", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh",
                   "sqrt", "sign", "sgn", "floor", "ceil", "trunc", "expm1", "log1p", "relu",
                   "erf", "erfinv", "frac", "deg2rad", "rad2deg", "conj")


def not_implemented(name: str, t: Any) -> NotImplementedError:
    """torch's error for an op that has no kernel for a sparse layout."""
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the '{backend(t)}' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build).")


def _sparse(x: Any) -> bool:
    return isinstance(x, SparseTensor)


def _mm(a: Any, b: Any) -> Any:
    return sp.spmm(a, b)


def _mv(a: Any, v: Any) -> Any:
    if not _sparse(a) or _sparse(v):
        return NotImplemented
    if type(a._data) is CSR and a._data.layout == "bsc":
        raise RuntimeError("torch.addmv: operation not supported for mat with SparseBsc layout")
    return sp.spmm(a, v.unsqueeze(1)).squeeze(1)


def _addmm(bias: Any, a: Any, b: Any) -> Any:
    if _sparse(bias):
        return NotImplemented
    return bias + sp.spmm(a, b)


def _sub(a: Any, b: Any) -> Any:
    if _sparse(a) and not _sparse(b):
        raise RuntimeError("sub(sparse, dense) is not supported. Use sub(dense, sparse) "
                           "instead.")
    return sp.add(a, b, alpha=-1)


def _div(a: Any, b: Any, **params: Any) -> Any:
    if not _sparse(a) or params:
        return NotImplemented
    return sp.div(a, b)


def _neg(s: Any) -> Any:
    return sp.run(sp.SCALE, s, -1, div=False)


def _to_copy(s: Any, dtype: Any) -> Any:
    return sp.run(sp.CAST, s, dtype=dtype)


def _clone(s: Any, **params: Any) -> Any:
    return sp.run(sp.CLONE, s)


def _sum(s: Any, dims: tuple, keepdim: bool, dtype: Any) -> Any:
    return sp.sparse_sum(s, None, dtype)


def _sum_dim(s: Any, dims: tuple, keepdim: bool, dtype: Any) -> Any:
    return sp.sparse_sum(s, dims, dtype, keepdim)


def _t(s: Any) -> Any:
    if type(s._data) is CSR:  # (CSR <-> CSC, BSR <-> BSC: the same indices)
        return transpose_compressed(s)
    sd, dd = s._data.sparse_dim, s._data.dense_dim
    if sd > 2 or dd:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                           f"got {sd} sparse and {dd} dense dimensions")
    return s if s.ndim < 2 else sp.transpose(s, 0, 1, t=True)


def _transpose(s: Any, dim0: int, dim1: int) -> Any:
    return sp.transpose(s, dim0, dim1)


def _permute(s: Any, dims: tuple) -> Any:
    dims = tuple(d % s.ndim for d in dims)
    if dims == tuple(range(s.ndim)):
        return s
    sd = s._data.sparse_dim if type(s._data) is not CSR else 2
    if any((d < sd) != (k < sd) for k, d in enumerate(dims)):
        raise RuntimeError(f"permute({'sparse_coo' if type(s._data) is not CSR else 'sparse'}):"
                           " transpositions between sparse and dense dimensions are not "
                           "allowed.Only transpositions within sparse and dense dimensions are "
                           "supported.")
    if s.ndim == 2:
        return sp.transpose(s, 0, 1)
    if type(s._data) is CSR or dims[sd:] != tuple(range(sd, s.ndim)):
        return NotImplemented
    order = list(range(s.ndim))  # (sparse dims only: a transposition at a time)
    for i in range(sd):
        j = order.index(dims[i])
        if j != i:
            s = sp.transpose(s, i, j)
            order[i], order[j] = order[j], order[i]
    return s


def _pow(s: Any, exponent: Any) -> Any:
    if isinstance(exponent, Tensor) or not exponent > 0:
        return NotImplemented
    return sp.map_values(s, lambda v: v ** exponent)


def _unary(name: str) -> Any:
    def handler(s: Any, **params: Any) -> Any:
        if params or not _sparse(s):
            return NotImplemented
        f = getattr(Tensor, name)
        return sp.map_values(s, f)

    return handler


def _select(s: Any, dim: int, index: int) -> Any:
    return sp.select(s, dim, index)


def _index_select(s: Any, index: Any, dim: int) -> Any:
    if not _sparse(s) or _sparse(index):
        return NotImplemented
    return sp.index_select(s, dim, index)


def _cat(*tensors: Any, dim: int) -> Any:
    if not all(_sparse(t) for t in tensors):
        return NotImplemented
    return sp.cat(tensors, dim)


HANDLERS: dict = {
    "mm": _mm, "mv": _mv, "addmm": _addmm, "add": sp.add, "sub": _sub, "mul": sp.mul,
    "add_alpha": sp.add, "sub_alpha": lambda a, b, alpha: _sub(a, b * alpha),
    "div": _div, "neg": _neg, "to_copy": _to_copy, "clone": _clone, "sum": _sum,
    "sum_dim": _sum_dim, "t": _t, "transpose": _transpose, "permute": _permute,
    "pow_scalar": _pow, "detach": lambda s: s.detach(), "select": _select, "cat": _cat,
    "index_select": _index_select,
}
HANDLERS.update({name: _unary(name) for name in ZERO_PRESERVING})


def dispatch(op: OpDef, args: tuple, params: dict) -> Any:
    """Runs dense op ``op`` on arguments of which one is sparse (``registry.apply``'s hook)."""
    if registry.state.traces:
        raise NotImplementedError("jitgrad.jit cannot trace sparse tensors: call the sparse ops "
                                  "outside the compiled function")
    handler = HANDLERS.get(op.name)
    out = NotImplemented if handler is None else handler(*args, **params)
    if out is NotImplemented:
        first = next(a for a in _flat(args) if _sparse(a))
        raise not_implemented(op.name, first)
    return out


def any_sparse(args: tuple) -> bool:
    """Whether an argument (or a tensor in a list argument) is a sparse tensor."""
    for a in args:
        if isinstance(a, SparseTensor):
            return True
        if type(a) is list or type(a) is tuple:
            for b in a:
                if isinstance(b, SparseTensor):
                    return True
    return False


def _flat(args: tuple):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


# in-place methods with a sparse version: the out-of-place op's result written into ``self``
INPLACE = {"add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div", "neg_": "neg",
           "pow_": "pow", **{f"{n}_": n for n in ZERO_PRESERVING if n != "conj"}}
# methods ending in ``_`` that are no in-place math (SparseTensor's own, or any layout's)
KEEP = {"requires_grad_", "detach_", "share_memory_", "coalesce_", "apply_", "map_"}


def _inplace(name: str) -> Any:
    base = INPLACE.get(name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if base is None:
            raise not_implemented(name, self)
        if self._grad_fn is None and self._requires_grad and registry.state.grad_enabled:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        out = getattr(SparseTensor, base)(self, *args, **kwargs)
        if out._dtype is not self._dtype:
            raise RuntimeError(f"result type {out._dtype._scalar_name} can't be cast to the "
                               f"desired output type {self._dtype._scalar_name}")
        self._data = out._data
        self._vc[0] += 1
        if out._grad_fn is not None:
            self._grad_fn, self._output_nr = out._grad_fn, out._output_nr
        return self

    method.__name__ = method.__qualname__ = name
    return method


def _zero_(self: Any) -> Any:
    """Removes every entry (``nnz`` becomes 0)."""
    self._data = sp.empty_like_pattern(self._data)
    self._vc[0] += 1
    return self


def install() -> None:
    """Routes dense ops on sparse arguments here (from the first sparse tensor made on), and
    gives SparseTensor its in-place methods (the sparse ones, or torch's error)."""
    for name in dir(Tensor):
        if name.endswith("_") and not name.startswith("_") and name not in KEEP \
                and name not in SparseTensor.__dict__ and callable(getattr(Tensor, name)):
            setattr(SparseTensor, name, _inplace(name))
    SparseTensor.zero_ = _zero_
    registry.sparse_any = any_sparse
    registry.sparse_apply = dispatch
    registry.sparse_wrap = as_sparse
