"""Eager ops on cuda tensors: ``registry.apply`` hands every call with a cuda tensor here.

* pointwise and reduce ops run one kernel rendered from the op's own template (the same
  renderer as fused jit kernels, ``cuda_render``), compiled once per (op, dtypes, ranks,
  broadcast pattern, params) and launched for any sizes;
* movement ops (view, reshape, transpose, permute, expand, slices, squeeze, ...) stay views:
  the op's NumPy impl runs on a host *descriptor* array with the tensor's shape and strides
  over an untouched scratch buffer, and the view it returns is read off as shape, strides and
  offset into the device allocation (a reshape that needs a copy copies on the device first);
* matmul (``mm``, ``bmm``, ``mv``, ``dot``, ``addmm``) runs a tiled shared-memory kernel;
  ``cat``, ``stack``, ``copy_``, ``fill_``, ``zero_`` and the backward of ``select``/``slice``
  write into device arrays with copy kernels (``_BY_NAME``);
* composite ops without a kernel of their own run their ``decompose`` (softmax, layer_norm);
* ops no template renders have hand-written kernels in ``cuda_lines`` (prod, scans, sorting,
  scatter, tril/triu), ``cuda_compact`` (nonzero, masked_select, masked_scatter),
  ``cuda_nn`` (convolution, pooling, batch norm), ``cuda_linalg`` (svdvals) and
  ``cuda_index`` (indexing with index tensors and masks), or are
  compositions of ops with kernels in ``cuda_composite`` (losses, norms, pads, slice
  assignment), all entries of ``_BY_NAME`` (collected by ``cuda_runtime``);
* anything else raises ``NotImplementedError`` naming the op: nothing is silently run on the
  host.

Python numbers are kernel arguments in the dtype eager promotion gives them, so a new number
reuses the compiled kernel.

The op modules import their helpers from this module (``unsupported``, ``copy_into``,
``_no_grad``, ...) and ``cuda_runtime`` collects their tables into ``_BY_NAME``; loading
``cuda_runtime`` switches the dispatcher's CUDA check on (``registry.cuda_live``).
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .. import dtypes
from .._cuda_array import CudaArray, simulated
from .._ir import Eqn, Graph, Var
from ..ops import registry
from ..ops.registry import MOVEMENT, POINTWISE, REDUCE, Tensor
from ..tensor import _make
from .numba_cuda import SUPPORTED, CudaKernel, compile_source, full
from .render import NotRenderableError, npname, template_of


def mixed_devices() -> RuntimeError:
    return RuntimeError("Expected all tensors to be on the same device, but found at least "
                        "two devices, cuda:0 and cpu!")


def unsupported(op, why: str = "") -> NotImplementedError:
    extra = f" ({why})" if why else ""
    return NotImplementedError(
        f"jitgrad: the op '{op.name}' has no CUDA kernel yet{extra}; move its inputs to the "
        "host with .cpu() to run it there.")


def compute(op, args: tuple, params: dict):
    """``(result, result dtype)`` of ``op`` on ``args``, where some tensor is on cuda."""
    for a in args:
        if isinstance(a, Tensor) and type(a._data) is not CudaArray:
            raise mixed_devices()
        if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            raise unsupported(op, "a list of tensors")
    if op.name == "to_device":
        return op.impl(args[0]._data, **params), args[0]._dtype
    fn = _BY_NAME.get(op.name)
    if fn is not None:
        return fn(op, args, params)
    try:
        if op.kind in (POINTWISE, REDUCE):
            if op.broadcast:
                return _movement(op, args, params)
            return _kernel_op(op, args, params)
        if op.kind == MOVEMENT or op.view:
            return _movement(op, args, params)
        raise unsupported(op)
    except NotImplementedError:
        if op.decompose is None:
            raise
    return _decomposed(op, args, params)


def _decomposed(op, args: tuple, params: dict):
    """A composite op (softmax, layer_norm, var, ...) through its ``decompose``: primitives
    with kernels, run without recording (``apply`` records the op's own node, whose rule then
    runs on the device too)."""
    st = registry.state
    prev = st.grad_enabled
    st.grad_enabled = False
    try:
        out = op.decompose(*args, **params)
    finally:
        st.grad_enabled = prev
    if isinstance(out, (tuple, list)):
        return tuple(o._data for o in out), tuple(o._dtype for o in out)
    return out._data, out._dtype


def run_arrays(e: Eqn, arrays: list) -> list:
    """One non-kernel equation of a jit program on device arrays (the CUDA backend's step)."""
    it = iter(arrays)
    args = tuple(_make(next(it), x.dtype) if isinstance(x, Var) else x for x in e.inputs)
    if e.op.name == "detach":
        return [args[0]._data]
    out, _ = compute(e.op, args, e.params)
    return list(out) if isinstance(out, (tuple, list)) else [out]


# ---------------------------------------------------------------- single-op kernels
_EAGER: dict = {}


def _no_grad(fn):
    st = registry.state
    prev, st.grad_enabled = st.grad_enabled, False
    try:
        return fn()
    finally:
        st.grad_enabled = prev


def _standin(a: Tensor) -> Tensor:
    return _make(np.broadcast_to(np.zeros((), a._dtype.np), a._data.shape), a._dtype)


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return (type(v), v)


def _kernel_op(op, args: tuple, params: dict, out: CudaArray | None = None):
    stand = [_standin(a) if isinstance(a, Tensor) else a for a in args]
    meta = op.meta(*stand, **params)
    shape, dt = tuple(meta[0]), meta[1]
    if out is not None:
        shape = out.shape
    tensors = [a for a in args if isinstance(a, Tensor)]
    if op.kind == REDUCE:
        domain = tuple(tensors[0]._data.shape)
        sig = tuple((a._dtype, a._data.ndim) for a in tensors)
        scalar_types: dict = {}
    else:
        domain = shape
        scalar_types = _scalar_types(op, stand, params)
        sig = tuple(_pattern(a, domain) if isinstance(a, Tensor) else
                    ("s", scalar_types[i]) if i in scalar_types else ("l", type(a), a)
                    for i, a in enumerate(args))
    key = (op, sig, _freeze(params), dt)
    kern = _EAGER.get(key)
    if kern is None:
        kern = _EAGER[key] = _build(op, args, params, shape, dt, scalar_types)
    inputs = [a._data if isinstance(a, Tensor) else scalar_types[i].np.type(a)
              for i, a in enumerate(args) if isinstance(a, Tensor) or i in scalar_types]
    outs = None if out is None else [out]
    return kern.launch(inputs, domain, [shape], outs)[0], dt


_NUMBERS = (int, float, bool, complex)


def _scalar_types(op, stand: list, params: dict) -> dict:
    """For each Python number among a pointwise op's operands, the dtype it is converted to
    (eager mode's promotion): the kernel takes it as an argument of that dtype."""
    if not any(type(a) in _NUMBERS for a in stand):
        return {}
    arrays = registry._pointwise_arrays(op, tuple(stand), params)[0]
    return {i: dtypes.from_numpy_dtype(arr.dtype) for i, (a, arr) in
            enumerate(zip(stand, arrays))
            if type(a) in _NUMBERS and i not in op.nonpromoted
            and isinstance(arr, np.ndarray)}


def _pattern(a: Tensor, domain: tuple) -> tuple:
    s = a._data.shape
    pad = (1,) * (len(domain) - len(s)) + tuple(s)
    return (a._dtype, len(s), tuple(p == d for p, d in zip(pad, domain)))


def _build(op, args, params, shape, dt, scalar_types: dict) -> CudaKernel:
    in_vars, inputs, scalars = [], [], set()
    for i, a in enumerate(args):
        if isinstance(a, Tensor) or i in scalar_types:
            v = Var(a._data.shape, a._dtype) if isinstance(a, Tensor) else \
                Var((), scalar_types[i])
            if not isinstance(a, Tensor):
                scalars.add(v)
            in_vars.append(v)
            inputs.append(v)
        else:
            inputs.append(a)
    out = Var(shape, dt)
    if any(v.dtype not in SUPPORTED for v in in_vars + [out]):
        raise unsupported(op, f"dtype {', '.join(sorted({str(v.dtype) for v in in_vars}))}")
    if op.template is None:
        raise unsupported(op)
    if all(v.dtype.np.kind in "iub" for v in in_vars + [out]) and _fractional(op, params, out):
        # (the template would truncate it to the integer dtype first; the CPU does not)
        raise unsupported(op, "a fractional number in an integer kernel")
    try:
        return CudaKernel(Graph(in_vars, [out], [Eqn(op, inputs, params, [out])]),
                          scalars=frozenset(scalars))
    except NotRenderableError as e:
        raise unsupported(op, str(e)) from None


def _fractional(op, params: dict, out: Var) -> bool:
    """Whether the op's template uses a fractional number param (addcmul's ``value=0.5``)."""
    try:
        text = template_of(op, params, out.dtype.np) or ""
    except (KeyError, TypeError):
        return False
    return any(isinstance(v, float) and not v.is_integer() and f"{{p[{k}]}}" in text
               for k, v in params.items())


def copy_array(a: CudaArray) -> CudaArray:
    """A contiguous device copy of ``a`` (the ``clone`` op's kernel)."""
    dt = dtypes.from_numpy_dtype(a.dtype)
    return _kernel_op(registry.OPS["clone"], (_make(a, dt),), {})[0]


def copy_into(dst: CudaArray, src: CudaArray) -> None:
    """Writes ``src``, broadcast to ``dst``'s shape and cast to its dtype, into ``dst`` (the
    in-place ops' write: a ``to_copy`` kernel whose output is ``dst`` itself)."""
    if not isinstance(src, CudaArray):
        raise mixed_devices()
    dt = dtypes.from_numpy_dtype(dst.dtype)
    _kernel_op(registry.OPS["to_copy"], (_make(src, dtypes.from_numpy_dtype(src.dtype)),),
               {"dtype": dt}, out=dst)


def add_arrays(a: CudaArray, b) -> CudaArray:
    """``a + b`` for two device arrays of gradients (the engine sums them)."""
    if not isinstance(b, CudaArray):
        raise mixed_devices()
    ta, tb = _make(a, dtypes.from_numpy_dtype(a.dtype)), _make(b, dtypes.from_numpy_dtype(b.dtype))
    return compute(registry.OPS["add"], (ta, tb), {})[0]


# ---------------------------------------------------------------- views
def _as_view(o: np.ndarray, buf: np.ndarray, x: CudaArray) -> CudaArray | None:
    o = np.asarray(o)
    start = buf.ctypes.data
    if o.size == 0:
        return x.view(o.shape, tuple(0 for _ in o.shape), x.offset)
    p = o.ctypes.data
    if not start <= p < start + buf.nbytes or np.shares_memory(o, buf) is False:
        return None
    item = x.dtype.itemsize
    return x.view(o.shape, tuple(s // item for s in o.strides), (p - start) // item)


def _movement(op, args: tuple, params: dict):
    if any(isinstance(a, Tensor) for a in args[1:]):
        raise unsupported(op, "tensor arguments")
    meta = op.meta(*[_standin(a) if isinstance(a, Tensor) else a for a in args], **params)
    if op.n_outputs == 1 and meta[1] is not args[0]._dtype:  # (view_as_real/complex: copies)
        raise unsupported(op, "a view of another dtype")
    x = args[0]._data
    for attempt in (x, None):
        if attempt is None:
            if x.is_contiguous():
                break
            attempt = x.copy()
        desc, buf = ca.descriptor(attempt)
        out = op.impl(desc, *args[1:], **params)
        many = op.n_outputs != 1
        outs = [_as_view(o, buf, attempt) for o in (out if many else (out,))]
        if all(o is not None for o in outs):
            return (tuple(outs) if many else outs[0]), meta[1]
    raise unsupported(op, "its result is not a view of its input")


# ---------------------------------------------------------------- matmul
TILE = 16
SIM_TILE = 4

_MM = """def mm(A, B, C, m, n, k):
    sA = cuda.shared.array(({T}, {T}), {D})
    sB = cuda.shared.array(({T}, {T}), {D})
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * {T} + tx
    row = cuda.blockIdx.y * {T} + ty
    b = cuda.blockIdx.z
    acc = {D}(0)
    for t in range((k + {T} - 1) // {T}):
        kk = t * {T}
        if row < m and kk + tx < k:
            sA[ty, tx] = A[b, row, kk + tx]
        else:
            sA[ty, tx] = {D}(0)
        if col < n and kk + ty < k:
            sB[ty, tx] = B[b, kk + ty, col]
        else:
            sB[ty, tx] = {D}(0)
        cuda.syncthreads()
        for j in range({T}):
            {ACC}
        cuda.syncthreads()
    if row < m and col < n:
        C[b, row, col] = acc
"""


def matmul3(a: CudaArray, b: CudaArray) -> CudaArray:
    """``a @ b`` for (batch, m, k) and (batch, k, n) device arrays of one dtype: the tiled
    shared-memory kernel, one TILE x TILE block of threads per output tile, accumulating in
    the dtype (complex values in a complex accumulator; bool as NumPy: any of the ands)."""
    if a.dtype != b.dtype or a.dtype.kind not in "fiucb":
        raise unsupported(registry.OPS["mm"], f"dtype {a.dtype}")
    bt, m, k = a.shape
    n = b.shape[2]
    tile = SIM_TILE if simulated() else TILE
    out = ca.empty((bt, m, n), a.dtype)
    if out.size:
        acc = ("acc = acc or (sA[ty, j] and sB[j, tx])" if a.dtype == np.bool_ else
               "acc += sA[ty, j] * sB[j, tx]")
        src = _MM.format(T=tile, D=npname(a.dtype), ACC=acc)
        fn = compile_source(src, "mm")
        grid = (-(-n // tile), -(-m // tile), bt)
        fn[grid, (tile, tile)](a.dev(), b.dev(), out.dev(), m, n, k)
    return out


def _as3(x: CudaArray, shape: tuple, strides: tuple) -> CudaArray:
    return x.view(shape, strides, x.offset)


def _mm(op, args, params):
    a, b = (t._data for t in args)
    out = matmul3(_as3(a, (1,) + a.shape, (0,) + a.strides),
                  _as3(b, (1,) + b.shape, (0,) + b.strides))
    return out.reshape(out.shape[1:]), _same(op, args)


def _bmm(op, args, params):
    a, b = (t._data for t in args)
    return matmul3(a, b), _same(op, args)


def _mv(op, args, params):
    a, v = (t._data for t in args)
    out = matmul3(_as3(a, (1,) + a.shape, (0,) + a.strides),
                  _as3(v, (1, v.shape[0], 1), (0, v.strides[0], 0)))
    return out.reshape((a.shape[0],)), _same(op, args)


def _dot(op, args, params):
    a, b = (t._data for t in args)
    out = matmul3(_as3(a, (1, 1, a.shape[0]), (0, 0, a.strides[0])),
                  _as3(b, (1, b.shape[0], 1), (0, b.strides[0], 0)))
    return out.reshape(()), _same(op, args)


def _addmm(op, args, params):
    bias, a, b = args
    prod, dt = _mm(registry.OPS["mm"], (a, b), {})
    return compute(registry.OPS["add"], (bias, _make(prod, dt)), {})


def _same(op, args):
    return op.meta(*[_standin(a) for a in args])[1]


def _fill(op, args, params):
    s = args[0]
    value = 0 if op.name == "zero_" else params.get("value", args[1] if len(args) > 1 else 0)
    if isinstance(value, Tensor):
        raise unsupported(op, "a tensor value")
    return full(s._data.shape, value, s._dtype.np), s._dtype


def _into_zeros(op, args, params):
    """``select_backward`` / ``slice_backward``: zeros with the gradient written into the
    region the forward view selected."""
    g = args[0]
    out = full(params["shape"], 0, g._dtype.np)
    fwd = registry.OPS["select" if op.name == "select_backward" else "slice"]
    rest = {k: v for k, v in params.items() if k != "shape"}
    region = _movement(fwd, (_make(out, g._dtype),), rest)[0]
    copy_into(region, g._data)
    return out, g._dtype


def _cat(op, args, params):
    dim = params["dim"]
    shape, dt = op.meta(*[_standin(a) for a in args], **params)
    out = ca.empty(shape, dt.np)
    dim = dim % max(len(shape), 1)
    start = 0
    whole = _make(out, dt)
    for a in args:
        n = a._data.shape[dim] if a._data.ndim else 0
        if a._data.size == 0 and a._data.ndim == 1:  # (torch skips empty 1-d inputs)
            continue
        region = _movement(registry.OPS["slice"], (whole,),
                           {"dim": dim, "start": start, "stop": start + n, "step": 1})[0]
        copy_into(region, a._data)
        start += n
    return out, dt


def _stack(op, args, params):
    shape, dt = op.meta(*[_standin(a) for a in args], **params)
    out = ca.empty(shape, dt.np)
    whole = _make(out, dt)
    for i, a in enumerate(args):
        region = _movement(registry.OPS["select"], (whole,), {"dim": params["dim"] % len(shape),
                                                             "index": i})[0]
        copy_into(region, a._data)
    return out, dt


def _overwrite(op, args, params):
    """``copy_(s, src)`` and ``fill_tensor_(s, value)``: ``s``'s shape and dtype, written from
    the second operand (broadcast and cast)."""
    s, src = args
    out = ca.empty(s._data.shape, s._dtype.np)
    copy_into(out, src._data)
    return out, s._dtype


# ---------------------------------------------------------------- gather / scatter
def _index_source(kind: str, d: int, dim: int, mode: str = "atomic") -> str:
    """A grid-stride kernel over the iteration shape (``n0..``) that reads or scatter-adds
    along ``dim`` through an index array: ``gather``/``index_select`` read ``x`` into ``o``,
    ``scatter_add``/``index_add`` add ``src`` into ``o`` with atomics. ``mode`` of an add:
    ``"atomic"`` (one atomic add), ``"complex"`` (``o`` is the complex result viewed as floats
    with a last dim of 2: two float atomics, real and imaginary parts) or ``"or"`` (bool: a
    True element stores True, so concurrent writers store the same value: a logical or)."""
    ix = [f"i{j}" for j in range(d)]
    at_index = "idx[" + (", ".join(ix) if kind in ("gather", "scatter_add") else ix[dim]) + "]"
    moved = ", ".join(at_index if j == dim else ix[j] for j in range(d))
    here = ", ".join(ix)
    at = moved if d == 1 else f"({moved},)"  # (numba-cuda takes no 1-tuple index)
    if kind in ("gather", "index_select"):
        body = [f"o[{here}] = x[{moved}]"]
    elif mode == "complex":
        body = [f"v = src[{here}]", f"cuda.atomic.add(o, ({moved}, 0), v.real)",
                f"cuda.atomic.add(o, ({moved}, 1), v.imag)"]
    elif mode == "or":
        body = [f"if src[{here}]:", f"    o[{moved}] = True"]
    else:
        body = [f"cuda.atomic.add(o, {at}, src[{here}])"]
    args = ", ".join([f"n{j}" for j in range(d)] + ["x", "idx", "src", "o"])
    lines = [f"def {kind}({args}):",
             f"    for f in range(cuda.grid(1), {' * '.join(f'n{j}' for j in range(d))}, "
             "cuda.gridsize(1)):", "        q = f"]
    for j in range(d - 1, 0, -1):
        lines += [f"        i{j} = q % n{j}", f"        q = q // n{j}"]
    lines += ["        i0 = q"] + [f"        {b}" for b in body]
    return "\n".join(lines) + "\n"


def _add_mode(op, dt: np.dtype) -> str:
    """How ``scatter_add``/``index_add`` add into ``dt`` (see ``_index_source``)."""
    from .cuda_render import ATOMIC_DTYPES

    if dt in ATOMIC_DTYPES:
        return "atomic"
    if dt in (np.complex64, np.complex128):
        return "complex"
    if dt == np.bool_:
        return "or"
    raise unsupported(op, f"no CUDA atomic for {dt}")


def _check_bounds(index: Tensor, n: int, dim: int) -> None:
    """Counts out-of-range indices on the device (one value read back): an index kernel never
    reads or writes outside its array."""
    if index._data.size == 0:
        return
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("Expected dtype int64 for index")
    bad = registry.state
    prev, bad.grad_enabled = bad.grad_enabled, False
    try:
        i = _make(index._data, index._dtype)
        count = ((i < 0) | (i >= n)).sum().item()
    finally:
        bad.grad_enabled = prev
    if count:
        raise IndexError(f"index out of range: {count} indices along dimension {dim} are not "
                         f"in [0, {n})")


def _indexed(op, args, params):
    from .numba_cuda import launch_config

    x, index = args[0], args[1]
    src = args[2] if len(args) > 2 else None
    if isinstance(src, Tensor) and src._dtype is not x._dtype:
        raise unsupported(op, "src of another dtype")
    shape, dt = op.meta(*[_standin(a) if isinstance(a, Tensor) else a for a in args], **params)
    d = max(x._data.ndim, 1)
    dim = params["dim"] % d
    kind = op.name
    if kind in ("gather", "index_select"):
        out = ca.empty(shape, dt.np)
        space = out.shape
    else:
        mode = _add_mode(op, x._data.dtype)
        out = x._data.copy()
        space = index._data.shape if kind == "scatter_add" else src._data.shape
        if kind == "scatter_add":  # (src may be larger than index: its leading part is used)
            src = _make(src._data.view(space, src._data.strides, src._data.offset), dt)
    total = int(np.prod(space, dtype=np.int64))
    _check_bounds(index, x._data.shape[dim] if x._data.ndim else 1, dim)
    if total and x._data.ndim:
        mode = "atomic" if kind in ("gather", "index_select") else mode
        fn = compile_source(_index_source(kind, d, dim, mode), kind)
        blocks, threads = launch_config(total)
        srcdev = (src._data if src is not None else x._data).dev()
        target = out
        if mode == "complex":  # (the contiguous copy's floats: real, imaginary, ...)
            part = np.float32 if out.dtype == np.complex64 else np.float64
            target = CudaArray(out.root.view(part), out.shape + (2,))
        fn[blocks, threads](*space, x._data.dev(), index._data.dev(), srcdev, target.dev())
    elif total:
        raise unsupported(op, "a 0-d input")
    return out, dt


def _masked_fill(op, args, params):
    """``masked_fill`` (a number or a 0-d tensor value) as ``where(mask, value, x)``."""
    x, mask = args[:2]
    value = args[2] if len(args) > 2 else params["value"]
    if isinstance(value, Tensor):
        value = _make(value._data, value._dtype).to(x._dtype)
    out = _no_grad(lambda: _where(mask, value, x))
    return out._data, x._dtype


def _where(mask, value, x):
    from ..ops.elementwise import where

    out = where(mask, value, x)
    return out if out._dtype is x._dtype else out.to(x._dtype)


def _embedding(op, args, params):
    """``weight[indices]``: an ``index_select`` of the flattened indices."""
    weight, indices = args
    flat = _no_grad(lambda: indices.reshape(-1))
    rows, dt = _indexed(registry.OPS["index_select"], (weight, flat), {"dim": 0})
    return rows.reshape(tuple(indices._data.shape) + (weight._data.shape[1],)), dt


def _nll(op, args, params):
    """``nll_loss`` from ``gather``: the rule's own formula (``_nll_vjp``) runs on the device."""
    from ..ops.elementwise import where

    logp, target, weight = args
    reduction, ignore_index = params["reduction"], params["ignore_index"]

    def forward():
        batched = logp.ndim == 2
        lp = logp if batched else logp.unsqueeze(0)
        tg = target if batched else target.unsqueeze(0)
        valid = tg != ignore_index
        safe = where(valid, tg, 0)
        w = where(valid, weight.index_select(0, safe) if weight is not None else 1.0, 0.0)
        picked = -lp.gather(1, safe.unsqueeze(1))[:, 0] * w.to(logp.dtype)
        if reduction == "none":
            return picked if batched else picked[0]
        total = picked.sum()
        return total / w.sum().to(logp.dtype) if reduction == "mean" else total

    out = _no_grad(forward)
    return out._data, logp._dtype


_BY_NAME = {"mm": _mm, "bmm": _bmm, "mv": _mv, "dot": _dot, "addmm": _addmm, "zero_": _fill,
           "fill_": _fill, "select_backward": _into_zeros, "slice_backward": _into_zeros,
           "cat": _cat, "stack": _stack, "copy_": _overwrite, "fill_tensor_": _overwrite,
           "gather": _indexed, "scatter_add": _indexed, "index_select": _indexed,
           "index_add": _indexed, "masked_fill": _masked_fill,
           "masked_fill_tensor": _masked_fill, "embedding": _embedding, "nll_loss": _nll}
