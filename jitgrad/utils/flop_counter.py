"""``torch.utils.flop_counter``: ``FlopCounterMode`` counts the FLOPs of matrix products and
convolutions (forward and backward), per module, with torch's formulas.

torch counts in a ``TorchDispatchMode``; jitgrad has none, so the counter is an op observer
(``ops/op_observers.py``): while it is active, the impls of the counted ops are wrapped, and each
call adds its formula's count to every module that ``ModuleTracker`` says is running. The
counted ops and the keys they count under (``aten.mm`` ... below, as torch's ``OpOverloadPacket``
keys print):

* ``mm``, ``addmm``, ``bmm``: ``aten.mm``, ``aten.addmm``, ``aten.bmm`` (``matmul``, ``linear``,
  ``baddbmm`` and attention decompose into them, as in torch; jitgrad's ``baddbmm`` is a ``bmm``
  plus an add, so its forward counts under ``aten.bmm``, not ``aten.baddbmm``);
* convolutions and transposed convolutions: ``aten.convolution``, and in a backward pass
  ``aten.convolution_backward`` (its gradient-of-input and gradient-of-weight parts, each
  computed by its own jitgrad op, add up to torch's count);
* ``scaled_dot_product_attention`` runs torch's math path (matmuls and a softmax), so it counts
  as its ``aten.bmm`` calls, what torch counts under ``sdpa_kernel(SDPBackend.MATH)`` (torch's
  fused CPU kernel is not counted by torch at all; its CUDA kernels count 5 matmuls backward,
  jitgrad's backward runs 4).

Ops inside a ``jitgrad.jit``-compiled program are not seen (run it with
``JITGRAD_DISABLE_JIT=1`` to count it).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable
from functools import wraps
from math import prod
from typing import Any

from ..autograd import engine
from ..autograd.node import as_tensor
from ..ops.aten_namespace import ATEN, OpOverloadPacket
from ..ops.op_observers import observe_ops
from ..tensor import Tensor
from ._pytree import tree_map
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]


class _Aten:
    """``aten``: the keys of the ops the counter knows (``aten.mm``, ``aten.convolution`` ...),
    ``jitgrad.ops.aten``'s packets (one object per name, as ``torch.ops.aten.mm``)."""

    def __init__(self, names: tuple) -> None:
        for name in names:
            setattr(self, name, ATEN.key(name))


aten = _Aten(("mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward"))


def get_shape(i: Any) -> Any:
    """A tensor's shape (anything else as it is)."""
    if isinstance(i, Tensor):
        return i.shape
    return i


flop_registry: dict[Any, Any] = {}


def shape_wrapper(f: Callable) -> Callable:
    """``f`` called with shapes in place of the tensors (and ``out_shape`` for ``out_val``)."""
    @wraps(f)
    def nf(*args: Any, out_val: Any = None, **kwargs: Any) -> Any:
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)

    return nf


def register_flop_formula(targets: Any, get_raw: bool = False) -> Callable[[Callable], Callable]:
    """Registers the decorated function as the FLOP formula of ``targets``.

    Args:
        targets: a key of ``aten`` (``aten.mm``), or a list of them.
        get_raw: call the formula with the tensors themselves, not their shapes.

    Returns:
        The decorator (it returns the formula, shape-wrapped unless ``get_raw``).
    """
    def register_fun(flop_formula: Callable) -> Callable:
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)

        def register(target: Any) -> None:
            if not isinstance(target, OpOverloadPacket):
                raise ValueError(
                    f"register_flop_formula(targets): expected each target to be "
                    f"OpOverloadPacket (i.e. torch.ops.mylib.foo), JitFunction, "
                    f"or HigherOrderOperator, got {target} which is of type {type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = flop_formula

        for target in targets if isinstance(targets, (list, tuple)) else (targets,):
            register(target)
        return flop_formula

    return register_fun


@register_flop_formula(aten.mm)
def mm_flop(a_shape: Any, b_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape: Any, a_shape: Any, b_shape: Any, out_shape: Any = None,
               **kwargs: Any) -> int:
    """Count flops for addmm."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape: Any, b_shape: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape: Any, a_shape: Any, b_shape: Any, out_shape: Any = None,
                 **kwargs: Any) -> int:
    """Count flops for the baddbmm operation."""
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape: list[int], w_shape: list[int], out_shape: list[int],
                    transposed: bool = False) -> int:
    """Count flops for convolution (multiplications only; the bias is ignored).

    Args:
        x_shape: the input shape before convolution.
        w_shape: the filter shape.
        out_shape: the output shape after convolution.
        transposed: is the convolution transposed.

    Returns:
        The number of flops.
    """
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula(aten.convolution)
def conv_flop(x_shape: Any, w_shape: Any, _bias: Any, _stride: Any, _padding: Any,
              _dilation: Any, transposed: bool, *args: Any, out_shape: Any = None,
              **kwargs: Any) -> int:
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


def _t(shape: Any) -> list:
    return [shape[1], shape[0]] + list(shape[2:])


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape: Any, x_shape: Any, w_shape: Any, _bias: Any,
                       _stride: Any, _padding: Any, _dilation: Any, transposed: bool,
                       _output_padding: Any, _groups: Any, output_mask: Any, out_shape: Any,
                       **kwargs: Any) -> int:
    """Count flops for the backward of a convolution (``output_mask``: which of the gradients
    of input, weight and bias it computes; ``out_shape``: their shapes)."""
    flop_count = 0
    if output_mask[0]:
        grad_input_shape = get_shape(out_shape[0])
        flop_count += conv_flop_count(grad_out_shape, w_shape, grad_input_shape, not transposed)
    if output_mask[1]:
        grad_weight_shape = get_shape(out_shape[1])
        if transposed:
            flop_count += conv_flop_count(_t(grad_out_shape), _t(x_shape),
                                          _t(grad_weight_shape), transposed=False)
        else:
            flop_count += conv_flop_count(_t(x_shape), _t(grad_out_shape),
                                          _t(grad_weight_shape), transposed=False)
    return flop_count


def sdpa_flop_count(query_shape: Any, key_shape: Any, value_shape: Any) -> int:
    """Count flops for self-attention (grouped-query attention included)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    return (bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
            + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v)))


def sdpa_flop(query_shape: Any, key_shape: Any, value_shape: Any, *args: Any,
              out_shape: Any = None, **kwargs: Any) -> int:
    """Count flops for self-attention."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape: Any, query_shape: Any, key_shape: Any,
                             value_shape: Any) -> int:
    """Count flops for the backward of a fused self-attention kernel (which recomputes the
    scores: 5 matmuls)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a "
                             f"multiple of key/value heads ({h_kv})")
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError(
            "sdpa_backward_flop_count: grad_out/value/key/query shapes are incompatible")
    bh = b * h_q
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k)) + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
            + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v)) + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
            + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))


def sdpa_backward_flop(grad_out_shape: Any, query_shape: Any, key_shape: Any, value_shape: Any,
                       *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def normalize_tuple(x: Any) -> tuple:
    """``x`` as a tuple (a non-tuple as a 1-tuple)."""
    return x if isinstance(x, tuple) else (x,)


suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number: int) -> str:
    """The suffix (K, M, B, T) of ``number``'s order of magnitude (1001M, not 1.001B)."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number: int, suffix: str) -> str:
    """``number`` in units of ``suffix``, with three decimals."""
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffixes[index]


def convert_to_percent_str(num: int, denom: int) -> str:
    """``num / denom`` as a percentage with two decimals ("0%" when ``denom`` is 0)."""
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


# ---------------------------------------------------------------- the observed ops
# jitgrad op name -> ``(args, params, out, in_backward) -> (key, args, out)``: the arguments of
# torch's op (arrays for its tensors) that the formula of ``key`` takes


def _mm(args: tuple, p: dict, out: Any, bw: bool) -> tuple:
    return aten.mm, args[:2], out


def _addmm(args: tuple, p: dict, out: Any, bw: bool) -> tuple:
    return aten.addmm, args[:3], out


def _bmm(args: tuple, p: dict, out: Any, bw: bool) -> tuple:
    return aten.bmm, args[:2], out


def _conv_args(x: Any, w: Any, p: dict, transposed: bool) -> tuple:
    return (x, w, None, p["stride"], p["padding"], p["dilation"], transposed, None, p["groups"])


def _conv_bw(grad_out: Any, x: Any, w: Any, grad_input: Any, grad_weight: Any,
             transposed: bool, p: dict) -> tuple:
    """``aten.convolution_backward``'s arguments and outputs for one of its two parts (the
    other masked off: jitgrad computes each part with its own op)."""
    mask = [grad_input is not None, grad_weight is not None, False]
    args = (grad_out, x, w, None, p["stride"], p["padding"], p["dilation"], transposed, None,
            p["groups"], mask)
    return aten.convolution_backward, args, (grad_input, grad_weight, None)


def _conv(args: tuple, p: dict, out: Any, bw: bool) -> tuple:
    x, w = args[0], args[1]
    if bw:  # the input-gradient part of a transposed convolution's backward
        return _conv_bw(x, out, w, out, None, True, p)
    return aten.convolution, _conv_args(x, w, p, False), out


def _conv_input(args: tuple, p: dict, out: Any, bw: bool) -> tuple:
    g, w = args[0], args[1]
    if not bw:  # a transposed convolution's forward
        return aten.convolution, _conv_args(g, w, p, True), out
    return _conv_bw(g, out, w, out, None, False, p)


def _conv_weight(args: tuple, p: dict, out: Any, bw: bool) -> tuple:
    x, g = args[0], args[1]  # (a transposed convolution's: x is its grad_out, g its input)
    return _conv_bw(g, x, out, None, out, False, p)


# (a transposed convolution, ``conv_transpose``, computes what the input-gradient op does, with
# a bias added: counted alike)
_BUILDERS = {"mm": _mm, "addmm": _addmm, "bmm": _bmm, "convolution": _conv,
             "convolution_backward_input": _conv_input, "conv_transpose": _conv_input,
             "convolution_backward_weight": _conv_weight}


def _as_tensors(value: Any) -> Any:
    """Arrays (in tuples and lists too) as tensors (what the formulas are given)."""
    if isinstance(value, (tuple, list)):
        return type(value)(_as_tensors(v) for v in value)
    if hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(value, Tensor):
        return as_tensor(value)
    return value


def _table(rows: list, headers: list) -> str:
    """``tabulate.tabulate(rows, headers, colalign=("left", "right", "right"))`` (its "simple"
    format: cells stripped, a column of numbers printed with ``format(x, "g")``)."""
    cols = [[str(r[i]).strip() for r in rows] for i in range(len(headers))]
    for c, col in enumerate(cols):
        try:
            floats = [float(v) for v in col]
        except ValueError:
            continue
        try:
            cols[c] = [str(int(v)) for v in col]
        except ValueError:
            cols[c] = [format(f, "g") for f in floats]
    aligns = ["left", "right", "right"]
    widths = [max([len(h) + 2] + [len(v) for v in col]) for h, col in zip(headers, cols)]

    def line(cells: list) -> str:
        return "  ".join(v.ljust(w) if a == "left" else v.rjust(w)
                         for v, w, a in zip(cells, widths, aligns))

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line([col[r] for col in cols]) for r in range(len(rows))]
    return "\n".join(out)


class FlopCounterMode:
    """A context manager that counts the FLOPs of the ops run inside it, forward and backward.

    Counts are kept per module (by fully qualified name, under the outermost module's class
    name) and in ``"Global"``; on exit, with ``display``, the table (``get_table``) is printed.

    Args:
        mods: not needed (torch deprecated it): modules are tracked as they run.
        depth: the deepest module level the table shows.
        display: print the table on exit.
        custom_mapping: ``{key: formula}`` replacing or adding formulas (see
            ``register_flop_formula``; a formula with ``_get_raw`` set gets the tensors).

    Example::

        with FlopCounterMode(display=False) as counter:
            model(x).sum().backward()
        counter.get_total_flops()
    """

    def __init__(self, mods: Any = None, depth: int = 2, display: bool = True,
                 custom_mapping: dict[Any, Any] | None = None) -> None:
        self.flop_counts: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode: Callable[[], None] | None = None
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.flop_registry = {
            **flop_registry,
            **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
               for k, v in custom_mapping.items()}}
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        """The FLOPs counted (all modules and none)."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """The flop counts as ``{module name: {op key: FLOPs}}`` (``"Global"``: all)."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as torch's table: each module down to ``depth`` (default: the mode's)
        with its ops, FLOPs and share of the total."""
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        header = ["Module", "FLOP", "% Total"]
        values = []
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name: str, depth: int) -> list:
            nonlocal is_global_subsumed
            total_flops = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total_flops >= global_flops
            padding = " " * depth
            rows = [[padding + mod_name, convert_num_with_suffix(total_flops, global_suffix),
                     convert_to_percent_str(total_flops, global_flops)]]
            for k, v in self.flop_counts[mod_name].items():
                rows.append([padding + " - " + str(k), convert_num_with_suffix(v, global_suffix),
                             convert_to_percent_str(v, global_flops)])
            return rows

        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        if "Global" in self.flop_counts and not is_global_subsumed:
            for value in values:
                value[0] = " " + value[0]
            values = process_mod("Global", 0) + values
        if len(values) == 0:
            values = [["Global", "0", "0%"]]
        return _table(values, header)

    def __enter__(self) -> FlopCounterMode:
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = observe_ops(self._wrap)
        return self

    def __exit__(self, *args: Any) -> bool:
        if self.mode is None:
            raise AssertionError(
                "Internal error: FlopCounter.__exit__ called but mode is None")
        self.mode()
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _wrap(self, op: Any, impl: Callable) -> Callable:
        build = _BUILDERS.get(op.name)
        if build is None:
            return impl

        def counted(*args: Any, **params: Any) -> Any:
            out = impl(*args, **params)
            key, fargs, fout = build(args, params, out, engine.current_graph_task_id() != -1)
            if key in self.flop_registry:
                self._count_flops(key, _as_tensors(fout), _as_tensors(fargs), {})
            return out

        counted.__wrapped__ = impl
        return counted

    def _count_flops(self, func_packet: Any, out: Any, args: tuple, kwargs: dict) -> Any:
        if func_packet in self.flop_registry:
            flop_count = self.flop_registry[func_packet](*args, **kwargs, out_val=out)
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += flop_count
        return out
