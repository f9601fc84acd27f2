"""Movement primitives: reshape, permute, expand, squeeze, select/slice, cat, stack (split and
chunk: ``splitting``).

Their eager impls return NumPy views where NumPy can (``view=True`` makes the outputs share
the input's version counter, as torch's views do). Node names follow torch's decomposition.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes
from ._shape import by_keyword, normalize_dims, numel, wrap_dim
from . import registry
from .memory_formats import concatenated_layout
from .registry import LINEAR, MOVEMENT, apply, defop
from .surface import public
from .view_dtype import view_dtype


def infer_size(shape: tuple, n: int) -> tuple:
    """Resolves one ``-1`` in ``shape`` for ``n`` elements, with torch's errors."""
    shape = tuple(int(s) for s in shape)
    if numel(shape) == n and -1 not in shape and builtins.all(s >= 0 for s in shape):
        return shape  # (the common case: nothing to infer)
    inferred = False
    for i, s in enumerate(shape):  # (torch's checks, in its order)
        if s == -1:
            if inferred:
                raise RuntimeError("only one dimension can be inferred")
            inferred = True
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                               f"{list(shape)}")
    known = numel(tuple(s for s in shape if s != -1))
    if inferred:
        if known == 0 and n == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               "because the unspecified dimension size -1 can be any value "
                               "and is ambiguous")
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        shape = tuple(n // known if s == -1 else s for s in shape)
    if numel(shape) != n or builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return shape


def _view_impl(x, shape):
    try:
        return x.reshape(shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None


def _shape_meta(x, shape):
    return tuple(shape), x.dtype


def _reshape_back(g, ans, x, shape):
    return g.reshape(tuple(x.shape))


# How a whole Numba program computes these ops (the OpDef's ``program`` field).
def reshape_program(p, x, *, shape):
    """A reshape in a whole Numba program. An op with this ``program`` keeps its input's bytes
    in order (on contiguous data it is a new name for the same memory): compiled chains
    (``backends.numba_chain``) rely on it."""
    return f"np.ascontiguousarray({x}).reshape({p.shape(shape)})"


def _permute_program(p, x, *, dims):
    return f"np.transpose({x}, {tuple(dims)!r})"


def _transpose_program(p, x, *, dim0, dim1):
    return f"np.transpose({x}, {_swap(tuple(range(p.ndim)), dim0, dim1)!r})"


def _t_program(p, x):
    return f"np.transpose({x})"


def _expand_program(p, x, *, shape):
    return f"np.broadcast_to({x}, {p.shape(shape)})"


def _slice_text(p, dim, start, stop, step):
    return f"[{':, ' * dim}{p.size(start)}:{p.size(stop)}:{p.size(step)}]"


def _slice_program(p, x, *, dim, start, stop, step):
    return x + _slice_text(p, dim, start, stop, step)


def _slice_backward_program(p, g, *, shape, dim, start, stop, step):
    out = p.bind(f"np.zeros({p.shape(shape)}, {p.dtype})")
    p.line(f"{out}{_slice_text(p, dim, start, stop, step)} = {g}")
    return out


UNSAFE_VIEW = defop("unsafe_view", lambda x, shape: np.reshape(x, shape), kind=MOVEMENT,
                    meta=_shape_meta, vjp=(_reshape_back,), jvp=LINEAR, passthrough=True,
                    program=reshape_program)
# Inside a traced program ``view`` is a pure reshape (``graph_impl``): memory layout is not known
# while tracing (a transpose feeding it may be a copy or a view), so it copies when it has to;
# an eager replay of a graph on a non-contiguous input takes ``unsafe_view`` of a copy.
VIEW = defop("view", _view_impl, kind=MOVEMENT, meta=_shape_meta, view=True,
             vjp=(_reshape_back,), jvp=LINEAR, passthrough=True, graph_impl=UNSAFE_VIEW.impl,
             contiguous_fallback=UNSAFE_VIEW, saved_names={"self_sym_sizes": ("sizes", 0)},
             program=reshape_program)
# torch's reshape of a non-contiguous tensor that can still be viewed (``_reshape_alias``)
RESHAPE_ALIAS = defop("reshape_alias", _view_impl, kind=MOVEMENT, meta=_shape_meta, view=True,
                      vjp=(_reshape_back,), jvp=LINEAR, node_name="ReshapeAliasBackward0",
                      program=reshape_program)


def _permute_meta(x, dims):
    return tuple(x.shape[d] for d in dims), x.dtype


PERMUTE = defop("permute", lambda x, dims: np.transpose(x, dims), kind=MOVEMENT, index_map=True,
                meta=_permute_meta, view=True,
                vjp=(lambda g, ans, x, dims: g.permute(tuple(np.argsort(dims).tolist())),),
                jvp=LINEAR, saved_names={"dims": ("param", "dims")},
                program=_permute_program)
TRANSPOSE = defop(
    "transpose", lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1), kind=MOVEMENT, view=True,
    index_map=True, meta=lambda x, dim0, dim1: (_swap(tuple(x.shape), dim0, dim1), x.dtype),
    vjp=(lambda g, ans, x, dim0, dim1: g.transpose(dim0, dim1),), jvp=LINEAR,
    saved_names={"dim0": ("param", "dim0"), "dim1": ("param", "dim1")},
    program=_transpose_program)
T = defop("t", lambda x: x.T, kind=MOVEMENT, index_map=True, view=True,
          meta=lambda x: (tuple(x.shape)[::-1], x.dtype), vjp=(lambda g, ans, x: g.t(),),
          jvp=LINEAR,
          program=_t_program)


def _swap(shape: tuple, a: int, b: int) -> tuple:
    s = list(shape)
    s[a], s[b] = s[b], s[a]
    return tuple(s)


EXPAND = defop("expand", lambda x, shape: np.broadcast_to(x, shape), kind=MOVEMENT, view=True,
               broadcast=True,
               meta=_shape_meta, vjp=(lambda g, ans, x, shape: g,), jvp=LINEAR, passthrough=True,
               saved_names={"self_sym_sizes": ("sizes", 0)},
               program=_expand_program)
SQUEEZE = defop("squeeze", lambda x, shape: np.reshape(x, shape), kind=MOVEMENT, view=True,
                index_map=True, meta=_shape_meta, vjp=(_reshape_back,),
                node_name="SqueezeBackward0", jvp=LINEAR,
                program=reshape_program)
SQUEEZE_DIM = defop("squeeze_dim", lambda x, shape: np.reshape(x, shape), kind=MOVEMENT,
                    index_map=True, view=True, meta=_shape_meta, vjp=(_reshape_back,),
                    node_name="SqueezeBackward1", jvp=LINEAR,
                    program=reshape_program)
SQUEEZE_DIMS = defop("squeeze_dims", lambda x, shape: np.reshape(x, shape), kind=MOVEMENT,
                     index_map=True, view=True, meta=_shape_meta, vjp=(_reshape_back,),
                     node_name="SqueezeBackward2", jvp=LINEAR,
                     program=reshape_program)
# in-place ``squeeze_(dim)`` on a fresh result (matmul's 1-D @ 2-D case): not a view
SQUEEZE_DIM_ = defop("squeeze_dim_", lambda x, shape: np.reshape(x, shape), kind=MOVEMENT,
                     index_map=True, meta=_shape_meta, vjp=(_reshape_back,), jvp=LINEAR,
                     node_name="SqueezeBackward4",
                     program=reshape_program)
UNSQUEEZE = defop("unsqueeze", lambda x, shape: np.reshape(x, shape), kind=MOVEMENT, view=True,
                  index_map=True, meta=_shape_meta, vjp=(_reshape_back,), jvp=LINEAR,
                  program=reshape_program)


def _select_impl(x, dim, index):
    return x[(slice(None),) * dim + (index, Ellipsis)]  # Ellipsis: a 0-d result stays a view


def _select_meta(x, dim, index):
    shape = tuple(x.shape)
    return shape[:dim] + shape[dim + 1:], x.dtype


def _slice_impl(x, dim, start, stop, step):
    return x[(slice(None),) * dim + (slice(start, stop, step),)]


def _slice_meta(x, dim, start, stop, step):
    shape = list(x.shape)
    shape[dim] = len(range(start, stop, step))
    return tuple(shape), x.dtype


def _select_backward_impl(g, shape, dim, index):
    out = np.zeros(shape, dtype=g.dtype)
    out[(slice(None),) * dim + (index,)] = g
    return out


def _slice_backward_impl(g, shape, dim, start, stop, step):
    out = np.zeros(shape, dtype=g.dtype)
    out[(slice(None),) * dim + (slice(start, stop, step),)] = g
    return out


SELECT = defop("select", _select_impl, kind=MOVEMENT, index_map=True, meta=_select_meta, view=True,
               vjp=(lambda g, ans, x, dim, index: apply(
                   SELECT_BACKWARD, g, shape=tuple(x.shape), dim=dim, index=index),), jvp=LINEAR,
                   saved_names={"dim": ("param", "dim"), "index": ("param", "index"),
                                "self_sym_sizes": ("sizes", 0)})
SLICE = defop("slice", _slice_impl, kind=MOVEMENT, index_map=True, meta=_slice_meta, view=True,
              vjp=(lambda g, ans, x, dim, start, stop, step: apply(
                  SLICE_BACKWARD, g, shape=tuple(x.shape), dim=dim, start=start, stop=stop,
                  step=step),), jvp=LINEAR,
              program=_slice_program)
SELECT_BACKWARD = defop(
    "select_backward", _select_backward_impl, kind=MOVEMENT,
    meta=lambda g, shape, dim, index: (shape, g.dtype),
    vjp=(lambda g, ans, x, shape, dim, index: apply(SELECT, g, dim=dim, index=index),), jvp=LINEAR)
SLICE_BACKWARD = defop(
    "slice_backward", _slice_backward_impl, kind=MOVEMENT,
    meta=lambda g, shape, dim, start, stop, step: (shape, g.dtype),
    vjp=(lambda g, ans, x, shape, dim, start, stop, step: apply(
        SLICE, g, dim=dim, start=start, stop=stop, step=step),), jvp=LINEAR,
    program=_slice_backward_program)


# As torch: a 1-D empty tensor (shape (0,), a legacy "empty" tensor) joins any cat: it is left
# out of the shape checks and the result, and only its dtype takes part.
_EMPTY_1D = (0,)


def _cat_meta(*xs, dim):
    if not xs:
        raise ValueError("jitgrad.cat(): expected a non-empty list of Tensors")
    shapes = [tuple(x.shape) for x in xs]
    kept = [s for s in shapes if s != _EMPTY_1D]
    ref = next((s for s in kept if s), None)
    if ref is None and kept:
        _raise_cat_mismatch(shapes, ref, dim)
    if ref is None:
        return _EMPTY_1D, dtypes.result_type(*xs)
    n, head, tail = len(ref), ref[:dim], ref[dim + 1:]
    if not builtins.all(len(s) == n and s[:dim] == head and s[dim + 1:] == tail for s in kept):
        _raise_cat_mismatch(shapes, ref, dim)
    shape = list(ref)
    shape[dim] = builtins.sum(s[dim] for s in kept)
    return tuple(shape), dtypes.result_type(*xs)


def _raise_cat_mismatch(shapes: list, ref: tuple | None, dim: int) -> None:
    """torch's error for the first tensor ``cat`` refuses (one of ``shapes`` is refused)."""
    for i, s in enumerate(shapes):
        if not s:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if s == _EMPTY_1D:
            continue
        if len(s) != len(ref):
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)}")
        for d in range(len(ref)):
            if d != dim and s[d] != ref[d]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{ref[d]} but got size {s[d]} for tensor number {i} in the list.")


def _cat_impl(*xs, dim):
    dt = np.result_type(*xs)
    kept = [x.astype(dt, copy=False) for x in xs if x.shape != _EMPTY_1D]
    if not kept:
        return np.zeros(_EMPTY_1D, dt)
    return concatenated_layout(np.concatenate(kept, axis=dim), kept)


def _cat_vjp(g, ans, *xs, dim):
    grads, offset = [], 0
    for x in xs:
        if tuple(x.shape) == _EMPTY_1D:  # (left out of the result: a zero-length gradient)
            grads.append(g.reshape(-1).narrow(0, 0, 0))
            continue
        n = x.shape[dim]
        grads.append(g.narrow(dim, offset, n))
        offset += n
    return grads


CAT = defop("cat", _cat_impl, kind=MOVEMENT, meta=_cat_meta, vjp=_cat_vjp, jvp=LINEAR)


def _stack_meta(*xs, dim):
    if not xs:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tuple(xs[0].shape)
    for i, x in enumerate(xs):
        if tuple(x.shape) != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(xs[0].shape)} at "
                f"entry 0 and {list(x.shape)} at entry {i}")
    shape = list(xs[0].shape)
    shape.insert(dim, len(xs))
    return tuple(shape), dtypes.result_type(*xs)


def _stack_impl(*xs, dim):
    dt = np.result_type(*xs)
    return concatenated_layout(np.stack([x.astype(dt, copy=False) for x in xs], axis=dim), xs)


STACK = defop("stack", _stack_impl, kind=MOVEMENT,
    meta=_stack_meta, vjp=lambda g, ans, *xs, dim: [g.select(dim, i) for i in range(len(xs))],
    jvp=LINEAR)


# ---------------------------------------------------------------- public functions


def _sizes(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


@public("reshape", method=True)
def reshape(input, *sizes, shape=None):  # noqa: A002
    """Returns a tensor with ``shape`` and the same data: a view when possible, else a copy."""
    shape = infer_size(_sizes(by_keyword("reshape", sizes, shape)), input.numel())
    if registry.sparse_live and (registry.sparse_any((input,)) or (
            type(input) is registry.Tensor and not hasattr(input._data, "flags"))):
        # (a sparse tensor, or a gradient on a sparse storage; a tracer has no data to ask)
        raise RuntimeError("reshape is not implemented for sparse tensors")
    if input._trace is not None or input.is_contiguous():
        return apply(VIEW, input, shape=shape)
    if _viewable(input, shape):
        return apply(RESHAPE_ALIAS, input, shape=shape)
    return apply(UNSAFE_VIEW, apply(_clone_op(), input), shape=shape)


def _viewable(input, shape) -> bool:
    data = input._data
    if type(data) is not np.ndarray:  # a cuda array: ask NumPy about its layout
        from .._cuda_array import descriptor

        data = descriptor(data)[0]
    try:
        np.reshape(data, shape, copy=False)
        return True
    except ValueError:
        return False


def _clone_op():
    from .elementwise import CLONE

    return CLONE


@public("view", method=True)
def view(input, *shape, size=None, dtype=None):  # noqa: A002
    """A view with a new shape; raises if the data cannot be viewed that way (see reshape)."""
    shape = by_keyword("view", by_keyword("view", shape, size), dtype)
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        return view_dtype(input, shape[0])
    return apply(VIEW, input, shape=infer_size(_sizes(shape), input.numel()))


@public("flatten", method=True)
def flatten(input, start_dim: int = 0, end_dim: int = -1):  # noqa: A002
    """Flattens dims ``start_dim..end_dim`` into one."""
    s, e = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if input.ndim == 0:
        return reshape(input, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = tuple(input.shape)
    return reshape(input, shape[:s] + (numel(shape[s:e + 1]),) + shape[e + 1:])


@public("permute", method=True)
def permute(input, *order, dims=None):  # noqa: A002
    dims = _sizes(by_keyword("permute", order, dims))
    if len(dims) != input.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {input.ndim} is "
            f"not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply(PERMUTE, input, dims=dims)


@public("transpose", method=True)
def transpose(input, dim0: int, dim1: int):  # noqa: A002
    n = input.ndim
    dim0, dim1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n == 0:
        return apply(VIEW, input, shape=())
    return apply(TRANSPOSE, input, dim0=dim0, dim1=dim1)


@public("t", method=True)
def t(input):  # noqa: A002
    if input.ndim > 2 and not (registry.sparse_live and registry.sparse_any((input,))):
        # (a sparse tensor's t() has its own check: jitgrad/sparse/_dispatch.py)
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return apply(T, input)


@public("expand", method=True)
def expand(input, *sizes, size=None):  # noqa: A002
    sizes = _sizes(by_keyword("expand", sizes, size))
    if len(sizes) < input.ndim:
        raise RuntimeError(
            f"expand(jitgrad.{input.dtype._legacy}{{{list(input.shape)}}}, size={list(sizes)}): "
            "the number of sizes provided "
            f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor "
            f"({input.ndim})")
    lead = len(sizes) - input.ndim
    shape = []
    for i, s in enumerate(sizes):
        have = input.shape[i - lead] if i >= lead else 1
        if s == -1:
            if i < lead:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            s = have
        elif have != 1 and have != s:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(input.shape)}")
        shape.append(s)
    shape = tuple(shape)
    if shape == tuple(input.shape) and input._trace is None:
        return apply(EXPAND, input, shape=shape)
    return apply(EXPAND, input, shape=shape)


@public("squeeze", method=True)
def squeeze(input, dim=None):  # noqa: A002
    shape = tuple(input.shape)
    if dim is None:
        return apply(SQUEEZE, input, shape=tuple(s for s in shape if s != 1))
    dims = normalize_dims(dim, input.ndim)
    new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    return apply(SQUEEZE_DIM if isinstance(dim, int) else SQUEEZE_DIMS, input, shape=new)


@public("unsqueeze", method=True)
def unsqueeze(input, dim: int):  # noqa: A002
    d = wrap_dim(dim, input.ndim + 1)
    shape = tuple(input.shape)
    return apply(UNSQUEEZE, input, shape=shape[:d] + (1,) + shape[d:])


@public("select", method=True)
def select(input, dim: int, index: int):  # noqa: A002
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
            f"dimension {d}")
    return apply(SELECT, input, dim=d, index=index % n)


def slice_dim(input, dim: int, start, stop, step: int = 1):  # noqa: A002
    if step <= 0:
        raise ValueError("step must be greater than zero")
    d = wrap_dim(dim, input.ndim)
    start, stop, step = slice(start, stop, step).indices(input.shape[d])
    stop = builtins.max(stop, start)
    return apply(SLICE, input, dim=d, start=start, stop=stop, step=step)


@public("narrow", method=True)
def narrow(input, dim: int, start: int, length: int):  # noqa: A002
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return apply(SLICE, input, dim=d, start=start, stop=start + length, step=1)


def cat(tensors, dim: int = 0):
    """Concatenates ``tensors`` along ``dim``."""
    if isinstance(tensors, registry.Tensor):
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    tensors = list(tensors)
    arrays = _plain_arrays(tensors)
    if arrays is not None:  # (a shape mismatch: the general path's error)
        try:
            out = np.concatenate(arrays, axis=wrap_dim(dim, arrays[0].ndim))
        except ValueError:
            pass
        else:
            return registry.make(concatenated_layout(out, arrays), tensors[0]._dtype)
    for i, x in enumerate(tensors):  # (torch's checks, in its order)
        if not isinstance(x, registry.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(x).__name__}")
    for i, x in enumerate(tensors):
        if x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    # (1-D empty tensors are skipped, as torch's legacy rule; all of them: nothing to wrap)
    ref = next((x for x in tensors if tuple(x.shape) != _EMPTY_1D), None)
    d = wrap_dim(dim, ref.ndim) if ref is not None else 0
    return apply(CAT, *tensors, dim=d)


def _plain_arrays(tensors: list, stacked: bool = False) -> list | None:
    """The NumPy arrays of ``tensors`` when ``cat``/``stack`` of them is plain NumPy: eager CPU
    tensors of one dtype that no autograd, trace, mode or forward AD takes part in (a batch of
    data, collated); None otherwise (the general path: its checks, records and errors)."""
    st = registry.state
    if not tensors or st.traces or st.inference or st.autocast or registry.fw_hook is not None \
            or registry.torch_function_live or dtypes.limited_live:
        return None
    Tensor = registry.Tensor  # noqa: N806
    dt = tensors[0]._dtype if type(tensors[0]) is Tensor else None
    arrays = []
    for x in tensors:
        if type(x) is not Tensor or x._dtype is not dt or x._requires_grad or \
                x._grad_fn is not None or x._trace is not None or (
                    x._base is not None and x.requires_grad):
            return None
        data = x._data
        if type(data) is not np.ndarray or not stacked and (
                not data.ndim or data.shape == _EMPTY_1D):  # (cat's legacy rules)
            return None
        arrays.append(data)
    return arrays


concat = concatenate = cat
public(("cat", "concat", "concatenate"))(concatenate)


@public("stack")
def stack(tensors, dim: int = 0):
    """Stacks equally shaped ``tensors`` along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = wrap_dim(dim, tensors[0].ndim + 1)
    arrays = _plain_arrays(tensors, stacked=True)
    if arrays is not None:  # (a shape mismatch: the general path's error)
        try:
            out = np.stack(arrays, axis=d)
        except ValueError:
            pass
        else:
            return registry.make(concatenated_layout(out, arrays), tensors[0]._dtype)
    return apply(STACK, *tensors, dim=d)
