"""One renderer from a kernel's body (a small Graph) to loop source, shared by the backends.

A kernel runs one loop nest over its iteration domain ``D`` (``(1,)`` for a 0-d domain). The
rendered function takes the domain's sizes, then one array per input (reshaped by the caller to
``len(D)`` dims; a dim of size 1 where ``D``'s is not is broadcast and indexed with 0), then one
array per full-size output, then one accumulator array per partial reduction, then the
partial arrays of its chunked reductions (``Partial``). Full reductions are returned. Sizes
are arguments, so the source depends only on ranks, dtypes and which dims broadcast: a new
batch size reuses the compiled kernel.

Each equation becomes one scalar statement from its op's template (``OpDef.template``), with
the eager engine's promotion casts (``_interpret.cast_plan``) and a cast to its result dtype,
so a kernel computes what the interpreter computes, op by op, in the same dtypes. Literals are
typed constants (``np.float32(0.5)``), so float32 code stays float32. Reductions accumulate
float16/float32 sums and products in float64 and integer ones in int64.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from .._ir import Eqn, Graph, Var
from ..jit.passes.fuse import domain_of, is_reduction
from ..ops.registry import POINTWISE
from .._interpret import cast_plan
from .kernel_lib import HUGEPAGE_MIN_BYTES, NAMES

_CALL = re.compile(r"(?<![\w.])(" + "|".join(NAMES) + r")\(")
_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d*(?:e[+-]?\d+)?|\d+(?:e[+-]?\d+)?)(?![\w.])")
_BRACES = re.compile(r"(\{[^}]*\})")


# Float32 values summed into a float64 accumulator would make the loop vectorize at the float64
# width (half the lanes, for every op of the kernel: W1's forward at 1e5 elements 177 -> 140 us,
# at 1e7 19 -> 15 ms). Such sums add float32 partial sums over blocks of this many elements of
# the innermost loop, each block's sum then added in float64.
BLOCK = 1024

# A reduction over dim 0 that keeps another dim (a bias gradient's column sums) runs the rows in
# chunks of this many, each chunk into its own row of a partial array, the partials then added
# in order: the chunks run in parallel (a prange over rows would race on the sums), float32 sums
# stay float32 within a chunk (W3's layer-norm backward kernel 2.7 -> 0.68 ms), and the result
# depends on the sizes only, not on the thread count.
CHUNK_ROWS = 128


class NotRenderableError(Exception):
    """An equation the renderer has no scalar code for (the backend leaves it unfused)."""


# The dtypes a rendered kernel computes in (the CPU and CUDA backends alike).
KERNEL_DTYPES = frozenset({dtypes.bool, dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32,
                           dtypes.int64, dtypes.float32, dtypes.float64})


class _AnyName(dict):
    def __missing__(self, v: Var) -> str:
        return "x"


_TEXTS: dict = {}  # rendered expressions by equation shape and operand names


def pointwise_text(e: Eqn) -> str:
    """``e``'s rendered expression, every input named ``x`` (what it calls, not what it reads)."""
    return _pointwise_text(e, _AnyName())


def _pointwise_text(e: Eqn, names: dict) -> str:
    """``_pointwise(e, names)``, shared by equations of the same shape (op, parameters, operand
    dtypes and ranks, literals) and operand names: the passes ask each equation several times
    (is it fusible, cheap to recompute), and a program that repeats a pattern renders it once."""
    try:
        key = (e.op, tuple(e.params.items()),
               tuple((v.dtype, len(v.shape), names[v]) if isinstance(v, Var) else (type(v), v)
                     for v in e.inputs), tuple(v.dtype for v in e.outputs))
        hash(key)
    except TypeError:  # an unhashable parameter
        return _pointwise(e, names)
    text = _TEXTS.get(key)
    if text is None:
        if len(_TEXTS) > 8192:
            _TEXTS.clear()
        try:
            text = _pointwise(e, names)
        except NotRenderableError as err:
            text = err
        _TEXTS[key] = text
    if isinstance(text, NotRenderableError):
        raise text
    return text


def renderable(e: Eqn, supported: frozenset = KERNEL_DTYPES) -> bool:
    """Whether ``e`` can go in a rendered kernel: a pointwise op whose template renders, a
    templated reduction or a broadcast, on ``supported`` dtypes. (A backend may refuse more:
    CUDA needs an atomic for each reduction.)"""
    op = e.op
    if op.kind == POINTWISE:
        if op.template is None:
            return False
    elif not (is_reduction(e) or op.broadcast):
        return False
    if any(v.dtype not in supported for v in e.in_vars() + e.outputs):
        return False
    if is_reduction(e) or op.broadcast:
        return True
    try:
        pointwise_text(e)
    except NotRenderableError:
        return False
    return True


@dataclass
class Reduction:
    """How the caller prepares and finishes one partial reduction's accumulator."""

    var: Var
    keep_shape: tuple  # the accumulator's shape: the domain with reduced dims set to 1
    acc_dtype: np.dtype
    identity: object
    final: str  # a NumPy expression of ``acc`` (and the reduced count ``n``)
    count: int
    full: bool  # a full reduction: the kernel returns it as a scalar


@dataclass
class Partial:
    """A partial array a chunked reduction adds into (see ``CHUNK_ROWS``): one row per chunk of
    rows, the caller's to allocate, set to ``identity``. An argument rather than an allocation
    in the kernel: ``np.full`` costs Numba a quarter of a second to compile in each process."""

    dtype: np.dtype
    identity: object
    reduced: tuple  # the dims (of 1..d-1) the reduction removes: 1 in the array's shape

    def shape(self, domain: tuple) -> tuple:
        return ((int(domain[0]) + CHUNK_ROWS - 1) // CHUNK_ROWS,
                *(1 if j in self.reduced else int(domain[j]) for j in range(1, len(domain))))

    def shape_text(self, d: int) -> str:
        """The shape as source, from the kernel's size arguments ``n0``, ``n1``..."""
        rest = ", ".join("1" if j in self.reduced else f"n{j}" for j in range(1, d))
        return f"((n0 + {CHUNK_ROWS - 1}) // {CHUNK_ROWS}, {rest})"


@dataclass
class KernelSource:
    """A rendered kernel: its source and what its caller must pass and unpack."""

    name: str
    source: str
    domain: tuple
    inputs: list  # Vars, in argument order
    outputs: list  # full-size output Vars, in argument order
    reductions: list = field(default_factory=list)  # partial reductions, in argument order
    returned: list = field(default_factory=list)  # full reductions, in return order
    n_ops: int = 0
    parallel: bool = False  # the outermost loop is a ``prange``
    into: dict = field(default_factory=dict)  # output Var -> the input Var it is stored into
    partials: list = field(default_factory=list)  # chunked reductions' arrays, argument order


def npname(dt: np.dtype) -> str:
    return "np.bool_" if dt == np.bool_ else f"np.{np.dtype(dt).name}"


def literal(value, dt: np.dtype) -> str:
    """Source of a constant of NumPy dtype ``dt``."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return "True" if bool(value) else "False"
    if dt.kind in "iu":
        return f"{npname(dt)}({int(value)})"
    value = float(value)
    text = "np.nan" if math.isnan(value) else ("np.inf" if value == math.inf else
                                               "-np.inf" if value == -math.inf else repr(value))
    return f"{npname(dt)}({text})"


def template_of(op, params: dict, work: np.dtype) -> str | None:
    t = op.template
    return t(params, work) if callable(t) else t


def _typed_numbers(template: str, work: np.dtype) -> str:
    # bare numbers in a float template become constants of the working dtype (outside {...})
    if work.kind != "f":
        return template
    parts = _BRACES.split(template)
    return "".join(p if p.startswith("{") else _NUMBER.sub(lambda m: literal(
        float(m.group(1)), work), p) for p in parts)


class _Params(dict):
    def __init__(self, params: dict, work: np.dtype) -> None:
        super().__init__(params)
        self.work = work

    def __getitem__(self, key):
        v = super().__getitem__(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return v
        return literal(v, self.work)


def _identity(init: str, dt: np.dtype):
    if init in ("-inf", "inf"):
        if dt.kind == "f":
            return -np.inf if init == "-inf" else np.inf
        if dt == np.bool_:
            return init == "inf"
        info = np.iinfo(dt)
        return info.min if init == "-inf" else info.max
    return dt.type(float(init)) if dt.kind == "f" else dt.type(int(init))


def _acc_dtype(op, out_dtype: np.dtype) -> np.dtype:
    if not op.template.widen:
        return out_dtype
    if out_dtype.kind == "f":
        return np.dtype(np.float64)
    if out_dtype.kind in "iub":
        return np.dtype(np.int64)
    return out_dtype


def render_kernel(body: Graph, name: str, parallel: bool = False,
                  into: dict | None = None) -> KernelSource:
    """The loop source of one kernel body (a fused group), as a module-level function.

    With ``parallel`` the outermost loop is a ``prange`` (Numba's parallel loop), when that is
    race-free: every reduction either keeps dim 0 or is a full sum (a reduction variable
    Numba's parfors understand); otherwise the kernel stays serial. ``into`` maps outputs to
    inputs of the domain's shape whose arrays they are stored into, element by element after
    the element's loads (``backends.in_place``): no output array of their own.
    """
    into = into or {}
    dom = domain_of(body.eqns[0])
    domain = dom if dom else (1,)
    d = len(domain)
    idx = [f"i{j}" for j in range(d)]
    names: dict[Var, str] = {}
    hoisted: list[str] = []
    loads: list[str] = []
    for k, v in enumerate(body.invars):
        arg = f"a{k}"
        shape = (1,) * (d - len(v.shape)) + tuple(v.shape)
        ix = [idx[j] if shape[j] == domain[j] else "0" for j in range(d)]
        names[v] = f"x{k}"
        line = f"x{k} = {arg}[{', '.join(ix)}]"
        (hoisted if all(i == "0" for i in ix) else loads).append(line)
    outputs = [v for v in body.outvars if not _is_reduced(body, v) and v not in into]
    out_slot = {v: f"o{k}" for k, v in enumerate(outputs)}
    out_slot.update((v, f"a{body.invars.index(u)}") for v, u in into.items())
    stmts: list[str] = []
    reductions: list[Reduction] = []
    returned: list[Reduction] = []
    level_init: dict[int, list[str]] = {j: [] for j in range(d + 1)}
    level_flush: dict[int, list[str]] = {j: [] for j in range(d + 1)}
    block_init: list[str] = []
    block_flush: list[str] = []
    partials: list[Partial] = []
    chunk_merge: list[tuple[list[int], str]] = []
    tmp = 0
    typed_names = {names[v]: v.dtype.np for v in body.invars}
    for e in body.eqns:
        out = e.outputs[0]
        if is_reduction(e):
            red = _reduction(e, domain)
            src = names[e.inputs[0]]
            acc_t = npname(red.acc_dtype)
            update, additive = e.op.template.combine, e.op.template.additive
            dims = [j + d - len(dom) for j in e.params["dims"]] if dom else [0]
            k = d
            while k > 0 and (k - 1) in dims:
                k -= 1
            if k == 0 and not additive:
                parallel = False  # a full max/min: no reduction variable Numba parallelizes
            acc = f"acc{len(reductions) + len(returned)}"
            combine = _CALL.sub(r"_jg_\1(", update.format(f"{acc_t}({src})", acc=acc))
            chunk = k > 0 and 0 in dims
            r = f"r{len(reductions)}"
            ix = ", ".join("0" if j in dims else idx[j] for j in range(d))
            target = r
            if chunk:  # into this chunk's row of a partial array (see CHUNK_ROWS)
                src_dtype = e.inputs[0].dtype.np
                part_dtype = src_dtype if k == d and additive and src_dtype == np.float32 \
                    else red.acc_dtype
                target, ix_r, ix = f"p{len(partials)}", ix, "ch" + ix[1:]
                if part_dtype != red.acc_dtype:
                    combine = _CALL.sub(r"_jg_\1(", update.format(src, acc=acc))
                partials.append(Partial(np.dtype(part_dtype),
                                        np.dtype(part_dtype).type(red.identity), tuple(dims)))
                kept = [j for j in range(1, d) if j not in dims]
                merge = _CALL.sub(r"_jg_\1(", update.format(
                    f"{acc_t}({target}[{ix}])", acc=f"{r}[{ix_r}]"))
                chunk_merge.append((kept, f"{r}[{ix_r}] = {merge}"))
            if k == d:  # the innermost dim is kept: update the accumulator array in place
                stmts.append(f"{acc} = {target}[{ix}]")
                stmts.append(f"{target}[{ix}] = {combine}")
                reductions.append(red)
            else:
                level_init[k].append(f"{acc} = {literal(red.identity, red.acc_dtype)}")
                src_dtype = e.inputs[0].dtype.np
                if additive and red.acc_dtype != src_dtype \
                        and src_dtype == np.float32:
                    # a float32 sum: partial sums in float32 over blocks of the innermost
                    # loop, each added to the float64 accumulator (see BLOCK)
                    part = f"q{len(block_init)}"
                    block_init.append(f"{part} = {npname(src_dtype)}(0.0)")
                    stmts.append(f"{part} = {part} + {src}")
                    block_flush.append(f"{acc} = {acc} + {acc_t}({part})")
                else:
                    stmts.append(f"{acc} = {combine}")
                if k == 0:
                    red.full = True
                    returned.append(red)
                else:
                    outer = _CALL.sub(r"_jg_\1(", update.format(acc, acc=f"{target}[{ix}]"))
                    level_flush[k].append(f"{target}[{ix}] = {outer}")
                    reductions.append(red)
            continue
        if e.op.broadcast:  # expand: the same element, read with the broadcast index
            names[out] = names[e.inputs[0]]
            if out in out_slot:
                stmts.append(f"{out_slot[out]}[{', '.join(idx)}] = {names[out]}")
            continue
        expr = _pointwise_text(e, names)
        var = f"t{tmp}"
        tmp += 1
        if not _keeps_dtype(expr, out.dtype.np, typed_names):
            expr = f"{npname(out.dtype.np)}({expr})"
        stmts.append(f"{var} = {expr}")
        typed_names[var] = out.dtype.np
        names[out] = var
        if out in out_slot:
            stmts.append(f"{out_slot[out]}[{', '.join(idx)}] = {var}")
    stmts = _hoist_constants(stmts, hoisted)
    args = [f"n{j}" for j in range(d)] + [f"a{k}" for k in range(len(body.invars))] + \
        [out_slot[v] for v in outputs] + [f"r{k}" for k in range(len(reductions))] + \
        [f"p{k}" for k in range(len(partials))]
    lines = [f"def {name}({', '.join(args)}):"]
    lines += [f"    {h}" for h in hoisted]
    # fresh outputs of 4 MiB or more get huge pages before their first write (see kernel_lib);
    # only a kernel over large values has the calls (each costs compile time; a value within
    # 4x of the threshold keeps them, so nearby sizes share the source)
    lines += [f"    _jg_hugepages({out_slot[v]})" for v in outputs
              if _nbytes(v) >= HUGEPAGE_MIN_BYTES // 4]
    chunked = bool(partials)
    for j in range(d):  # loop j's accumulators start before it and are flushed after it
        ind = "    " * (j + 1 + (chunked and j > 0))
        lines += [ind + s for s in level_init[j]]
        loop = "prange" if parallel and j == 0 else "range"
        if j == 0 and chunked:
            lines.append(f"{ind}nc = (n0 + {CHUNK_ROWS - 1}) // {CHUNK_ROWS}")
            lines.append(f"{ind}for ch in {loop}(nc):")
            lines.append(f"{ind}    for i0 in range(ch * {CHUNK_ROWS}, "
                         f"min(n0, ch * {CHUNK_ROWS} + {CHUNK_ROWS})):")
            continue
        if j == d - 1 and block_init:
            # the innermost loop in blocks: an index Numba knows is not negative (uint64), so
            # the loop still vectorizes at the float32 width
            lines.append(f"{ind}for b{j} in {loop}((n{j} + {BLOCK - 1}) // {BLOCK}):")
            lines.append(f"{ind}    s{j} = b{j} * {BLOCK}")
            lines += [f"{ind}    {s}" for s in block_init]
            lines.append(f"{ind}    for j{j} in range(min({BLOCK}, n{j} - s{j})):")
            lines.append(f"{ind}        i{j} = np.uint64(s{j} + j{j})")
            ind += "    "
        else:
            lines.append(f"{ind}for i{j} in {loop}(n{j}):")
    inner = "    " * (d + 1 + bool(block_init) + chunked)
    lines += [inner + s for s in level_init[d] + loads + stmts]
    if block_init:
        lines += ["    " * (d + 1 + chunked) + s for s in block_flush]
    for j in range(d - 1, -1, -1):
        lines += ["    " * (j + 1 + (chunked and j > 0)) + s for s in level_flush[j]]
    if chunked:  # the chunks' partials, added in chunk order
        lines.append("    for ch in range(nc):")
        for kept, merge in chunk_merge:
            for depth, j in enumerate(kept):
                lines.append("    " * (depth + 2) + f"for i{j} in range(n{j}):")
            lines.append("    " * (len(kept) + 2) + merge)
    if returned:
        accs = [f"acc{k}" for k, s in enumerate(_accs(body)) if s in {r.var for r in returned}]
        lines.append(f"    return ({', '.join(accs)},)")
    else:
        lines.append("    return ()")
    return KernelSource(name, "\n".join(lines) + "\n", domain, list(body.invars), outputs,
                        reductions, returned, len(body.eqns), parallel, dict(into), partials)


# Numba types each call and cast of a kernel's body (its compile time grows with them, W6),
# so the body casts a result to its dtype only where the expression might not have it, and
# reads its constants from names bound before the loop.
_TYPED_LITERAL = re.compile(r"np\.(u?int\d+|float\d+)\((-?np\.(?:nan|inf)|[-+0-9.e]+)\)")
_NAME = re.compile(r"\b[a-z]\d+\b")
_SAME_TYPE_CALL = re.compile(r"\b_jg_(?!isfinite|isinf)\w+\(")  # helpers keep their type
_ARITHMETIC = re.compile(r"^[\s()+\-*/,]*$")


def _keeps_dtype(expr: str, dt: np.dtype, typed_names: dict) -> bool:
    """Whether Numba types ``expr`` as ``dt`` already: float arithmetic, conditionals and
    float helpers over names and constants of that one dtype (int arithmetic widens)."""
    if dt.kind != "f":
        return False
    rest = _TYPED_LITERAL.sub(lambda m: " " if m.group(1) == dt.name else "?", expr)
    if any(typed_names.get(n) != dt for n in _NAME.findall(rest)):
        return False
    rest = _SAME_TYPE_CALL.sub(" ", _NAME.sub(" ", rest))
    if " if " in rest:
        rest = re.sub(r"\b(if|else)\b|[<>]=?|[=!]=", " ", rest)
    return bool(_ARITHMETIC.match(rest))


def _hoist_constants(stmts: list[str], hoisted: list[str]) -> list[str]:
    """The loop body with each typed constant read from a name bound before the loop."""
    bound: dict[str, str] = {}

    def name(m: re.Match) -> str:
        text = m.group(0)
        if text not in bound:
            bound[text] = f"c{len(bound)}"
            hoisted.append(f"{bound[text]} = {text}")
        return bound[text]
    return [_TYPED_LITERAL.sub(name, s) for s in stmts]


def _nbytes(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.np.itemsize


def _accs(body: Graph) -> list[Var]:
    return [e.outputs[0] for e in body.eqns if is_reduction(e)]


def _is_reduced(body: Graph, v: Var) -> bool:
    return any(is_reduction(e) and e.outputs[0] is v for e in body.eqns)


def _reduction(e, domain: tuple) -> Reduction:
    out = e.outputs[0]
    dom = tuple(e.inputs[0].shape)
    d = len(domain)
    dims = [j + d - len(dom) for j in e.params["dims"]] if dom else [0]
    keep = tuple(1 if j in dims else domain[j] for j in range(d))
    acc = _acc_dtype(e.op, out.dtype.np)
    count = int(np.prod([domain[j] for j in dims], dtype=np.int64)) if dom else 1
    return Reduction(out, keep, acc, _identity(e.op.template.identity, acc),
                     e.op.template.final, count, False)


def _pointwise(e, names: dict) -> str:
    plan = cast_plan(e)
    args = []
    work = None
    for i, p in enumerate(plan):
        promoted = i not in e.op.nonpromoted
        if p[0] == "l":
            if p[1] is None:
                raise NotRenderableError(f"{e.op.name}: a None operand")
            a = np.asarray(p[1])
            args.append(literal(a.item(), a.dtype))
            if promoted and work is None:
                work = a.dtype
        else:
            v, cast = p[1], p[2]
            if cast is None:
                args.append(names[v])
                if promoted and work is None:
                    work = v.dtype.np
            else:
                args.append(f"{npname(np.dtype(cast))}({names[v]})")
                if promoted and work is None:
                    work = np.dtype(cast)
    work = np.dtype(work if work is not None else e.outputs[0].dtype.np)
    template = template_of(e.op, e.params, work)
    if template is None:
        raise NotRenderableError(f"{e.op.name}: no kernel template for {work}")
    text = _typed_numbers(template, work).format(*args, p=_Params(e.params, work))
    return _CALL.sub(r"_jg_\1(", text)
