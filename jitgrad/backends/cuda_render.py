"""A kernel body (a small Graph) rendered as a CUDA kernel, from the same op templates.

The CPU renderer (``render.py``) writes a loop nest; this one writes one grid-stride loop over
the flat iteration domain ``D``: every thread starts at its global index and steps by the
grid's size, splitting the flat index into the domain's indices with ``%`` and ``//`` (the
sizes are arguments, so the source depends only on ranks, dtypes and which dims broadcast).
Inputs are read, and pointwise equations computed, exactly as ``render.py`` does (its
``_pointwise`` gives each equation's statement, with the interpreter's casts).

Reductions:

* a full reduction keeps a per-thread accumulator over the loop, then the block combines its
  threads' accumulators in shared memory (a tree), and thread 0 adds the block's value to the
  result with one atomic (``add``, ``max`` or ``min``);
* a partial reduction updates its accumulator array with an atomic per element.

Accumulators start at the op's identity and a small second kernel applies the op's ``final``
(``mean``'s division) and the cast to the result dtype. A reduction without an atomic (``prod``)
is not renderable: eager mode raises and the jit leaves it outside kernels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .._ir import Eqn, Graph, Var
from ..jit.passes.fuse import domain_of, is_reduction
from .cuda_lib import COMPLEX_NAMES
from .render import (_CALL, NotRenderableError, _acc_dtype, _identity, _pointwise, literal,
                     npname, template_of)

ATOMIC_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32,
                                       np.uint64)}
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)

# The templates that compute on complex numbers what NumPy does (tests/test_cuda_dtypes.py
# sweeps every op whose template is one of them on complex values): complex arithmetic,
# equality, ``where``, ``real``/``imag``/``conj``/``abs``, and the math functions, whose calls
# a complex equation renames to ``cuda_lib``'s ``_jg_c_<name>`` (``cmath`` and closed forms).
# Anything else on complex values (an order comparison, ``max``/``min``, a template written
# for real numbers only) has no CUDA kernel.
COMPLEX_TEMPLATES = frozenset({
    "{0}", "-{0}", "{0} + {1}", "{0} - {1}", "{1} - {0}", "{0} * {1}", "{0} / {1}", "1.0 / {0}",
    "{0} == {1}", "{0} != {1}", "{1} if {0} else {2}", "{0}.real", "{0}.imag",
    "{0}.conjugate()", "abs({0})",
    # math functions (COMPLEX_NAMES) and the templates made of them
    *(f"{name}({{0}})" for name in COMPLEX_NAMES), "1.0 / sqrt({0})", "({0} ** {1})",
    "({0} ** {p[exponent]})", "({p[base]} ** {0})", "({0} * {0})", "({0} * {0} * {0})",
    "{0} / (1.0 + exp(-{0}))", "{0} != {0}", "{0} * 0.017453292519943295",
    "{0} * 57.29577951308232", "{0} + {p[value]} * {1} * {2}", "{0} + {p[value]} * {1} / {2}",
    "({0} + {2} * ({1} - {0}) if abs({2}) < 0.5 else {1} - ({1} - {0}) * (1 - {2}))"})
# Templates whose complex form differs (the backward rules conjugate on complex values, as the
# CPU's impls do): the complex equation renders the second text.
COMPLEX_FORMS = {"{0} * (1 - {1}) * {1}": "{0} * ((1 - {1}) * {1}).conjugate()",
                 "{0} * (1 - {1} * {1})": "{0} * (1 - {1} * {1}).conjugate()"}
_TO_REAL = ("{0}.real", "{0}.imag", "abs({0})", "isfinite({0})", "isinf({0})", "{0} != {0}")
_COMPLEX_CALL = re.compile(r"\b_jg_(" + "|".join(COMPLEX_NAMES) + r")\(")


def check_complex(e) -> bool:
    """Whether an equation computes on complex values; raises ``NotRenderableError`` for one
    without a complex kernel (see ``COMPLEX_TEMPLATES``); a complex value becomes real only
    through ``abs``, ``.real``, ``.imag`` or a predicate (``to(float32)`` of a complex tensor
    has no kernel)."""
    ins = [v.dtype for v in e.in_vars()]
    out = e.outputs[0].dtype
    if not any(d.is_complex for d in ins + [out]):
        return False
    if any(not isinstance(x, Var) for x in e.inputs):  # (eager mode passes it as an argument)
        raise NotRenderableError(f"{e.op.name}: a constant in a complex kernel")
    work = next(d for d in ins + [out] if d.is_complex).np
    text = template_of(e.op, e.params, work)
    if text not in COMPLEX_TEMPLATES and text not in COMPLEX_FORMS:
        raise NotRenderableError(f"{e.op.name}: no kernel for complex values on the device")
    if any(d.is_complex for d in ins) and not out.is_complex and text not in _TO_REAL + (
            "{0} == {1}", "{0} != {1}"):
        raise NotRenderableError(f"{e.op.name}: a cast from complex to {out} (take .real)")
    return True


def complex_calls(expr: str) -> str:
    """A complex equation's expression with its math calls renamed to the complex ones."""
    return _COMPLEX_CALL.sub(r"_jg_c_\1(", expr)


class _ComplexForm:
    """An op seen with its complex template (``COMPLEX_FORMS``); everything else is the op's."""

    def __init__(self, op, template: str) -> None:
        self._op, self.template = op, template

    def __getattr__(self, name: str):
        return getattr(self._op, name)


def _complex_pointwise(e, names: dict) -> str:
    text = template_of(e.op, e.params, next(
        d for d in [v.dtype for v in e.in_vars()] + [e.outputs[0].dtype] if d.is_complex).np)
    if text in COMPLEX_FORMS:
        e = Eqn(_ComplexForm(e.op, COMPLEX_FORMS[text]), e.inputs, e.params, e.outputs)
    return complex_calls(_pointwise(e, names))


@dataclass
class CudaReduction:
    """One reduction of a kernel: its accumulator and how the result is made from it."""

    var: Var
    dims: tuple  # reduced dims of the domain
    acc_dtype: np.dtype
    identity: object
    final: str
    full: bool


@dataclass
class CudaSource:
    """A rendered CUDA kernel and what its launcher passes: the domain's sizes, the inputs
    (reshaped to the domain's rank), the full-size outputs, one accumulator per reduction."""

    name: str
    source: str
    rank: int
    inputs: list
    outputs: list
    reductions: list = field(default_factory=list)
    n_ops: int = 0


def atomic_of(template, acc_dtype: np.dtype) -> str:
    """The atomic that merges partial results of a reduction template."""
    if acc_dtype not in ATOMIC_DTYPES:
        raise NotRenderableError(f"no CUDA atomic for {acc_dtype} accumulators")
    if template.additive:
        return "add"
    if template.identity == "-inf":
        return "max"
    if template.identity == "inf":
        return "min"
    raise NotRenderableError(f"no CUDA atomic combines {template.combine!r}")


def render_cuda(body: Graph, name: str, block: int, scalars: frozenset = frozenset()
                ) -> CudaSource:
    """The CUDA source of one kernel body (``block``: threads per block, for shared memory).
    Inputs in ``scalars`` (0-d) are passed as scalar arguments, not arrays: eager mode's
    Python numbers, so a new number reuses the compiled kernel."""
    dom = domain_of(body.eqns[0])
    domain = dom if dom else (1,)
    d = len(domain)
    idx = [f"i{j}" for j in range(d)]
    names: dict[Var, str] = {}
    loads: list[str] = []
    for k, v in enumerate(body.invars):
        shape = (1,) * (d - len(v.shape)) + tuple(v.shape)
        ix = [idx[j] if shape[j] == domain[j] else "0" for j in range(d)]
        names[v] = f"x{k}"
        loads.append(f"x{k} = a{k}" if v in scalars else f"x{k} = a{k}[{', '.join(ix)}]")
    reduced = {e.outputs[0] for e in body.eqns if is_reduction(e)}
    outputs = [v for v in body.outvars if v not in reduced]
    out_slot = {v: f"o{k}" for k, v in enumerate(outputs)}
    stmts: list[str] = []
    init: list[str] = []
    after: list[str] = []
    reductions: list[CudaReduction] = []
    tmp = 0
    for e in body.eqns:
        out = e.outputs[0]
        if is_reduction(e):
            k = len(reductions)
            dims = tuple(j + d - len(dom) for j in e.params["dims"]) if dom else (0,)
            acc_dt = _acc_dtype(e.op, out.dtype.np)
            if acc_dt == _F16:  # (max/min: float32 holds every float16, and has atomics)
                acc_dt = _F32
            elif acc_dt == np.bool_:  # (max/min of bools: int32 0/1, which has atomics)
                acc_dt = np.dtype(np.int32)
            tmpl = e.op.template
            cplx = acc_dt.kind == "c"  # (a sum: two atomics, on the real and imaginary parts)
            if cplx and not tmpl.additive:
                raise NotRenderableError(f"{e.op.name}: no order of complex values")
            atomic = "add" if cplx else atomic_of(tmpl, acc_dt)
            full = len(dims) == d
            red = CudaReduction(out, dims, acc_dt, _identity(tmpl.identity, acc_dt),
                                tmpl.final, full)
            reductions.append(red)
            acc_t = npname(acc_dt)
            src = f"{acc_t}({names[e.inputs[0]]})"
            if full:
                acc = f"acc{k}"
                init.append(f"{acc} = {acc_t}(0)" if cplx else
                            f"{acc} = {literal(red.identity, acc_dt)}")
                stmts.append(f"{acc} = " + _CALL.sub(r"_jg_\1(", tmpl.combine.format(
                    src, acc=acc)))
                after += _block_reduce(k, acc, tmpl, acc_t, atomic, block, cplx)
            else:
                ix = ", ".join("0" if j in dims else idx[j] for j in range(d))
                if cplx:  # (the accumulator: a float array with a last dim of 2)
                    stmts.append(f"v{k} = {src}")
                    stmts.append(f"cuda.atomic.add(r{k}, ({ix}, 0), v{k}.real)")
                    stmts.append(f"cuda.atomic.add(r{k}, ({ix}, 1), v{k}.imag)")
                elif atomic != "add" and acc_dt.kind == "f":
                    # (CUDA's atomic max/min keep the stored value when either is NaN: a NaN
                    # is stored plainly, and then stays, as NumPy's maximum propagates it)
                    stmts.append(f"v{k} = {src}")
                    stmts.append(f"if v{k} != v{k}: r{k}[{ix}] = v{k}")
                    stmts.append(f"if v{k} == v{k}: cuda.atomic.{atomic}(r{k}, ({ix},), v{k})")
                else:
                    stmts.append(f"cuda.atomic.{atomic}(r{k}, ({ix},), {src})")
            continue
        if e.op.broadcast:
            names[out] = names[e.inputs[0]]
            if out in out_slot:
                stmts.append(f"{out_slot[out]}[{', '.join(idx)}] = {names[out]}")
            continue
        var = f"t{tmp}"
        tmp += 1
        expr = _complex_pointwise(e, names) if check_complex(e) else _pointwise(e, names)
        stmts.append(f"{var} = {npname(out.dtype.np)}({expr})")
        names[out] = var
        if out in out_slot:
            stmts.append(f"{out_slot[out]}[{', '.join(idx)}] = {var}")
    sizes = [f"n{j}" for j in range(d)]
    args = sizes + [f"a{k}" for k in range(len(body.invars))] + \
        [out_slot[v] for v in outputs] + [f"r{k}" for k in range(len(reductions))]
    lines = [f"def {name}({', '.join(args)}):"]
    lines += [f"    {s}" for s in init]
    lines.append(f"    total = {' * '.join(sizes)}")
    lines.append("    for f in range(cuda.grid(1), total, cuda.gridsize(1)):")
    lines.append("        q = f")
    for j in range(d - 1, 0, -1):
        lines.append(f"        i{j} = q % n{j}")
        lines.append(f"        q = q // n{j}")
    lines.append("        i0 = q")
    lines += [f"        {s}" for s in loads + stmts]
    lines += [f"    {s}" for s in after]
    return CudaSource(name, "\n".join(lines) + "\n", d, list(body.invars), outputs, reductions,
                      len(body.eqns))


def _block_reduce(k: int, acc: str, tmpl, acc_t: str, atomic: str, block: int,
                  cplx: bool = False) -> list[str]:
    """A block's threads combine their accumulators in shared memory (a tree), then thread 0
    merges the block's value into the result with one atomic (two for a complex sum)."""
    combine = _CALL.sub(r"_jg_\1(", tmpl.combine.format(f"sh{k}[tid + s]", acc=f"sh{k}[tid]"))
    return [
        f"sh{k} = cuda.shared.array({block}, {acc_t})",
        "tid = cuda.threadIdx.x",
        f"sh{k}[tid] = {acc}",
        "cuda.syncthreads()",
        f"s = {block // 2}",
        "while s > 0:",
        "    if tid < s:",
        f"        sh{k}[tid] = {combine}",
        "    cuda.syncthreads()",
        "    s //= 2",
        "if tid == 0:",
    ] + ([f"    cuda.atomic.add(r{k}, 0, sh{k}[0].real)",
          f"    cuda.atomic.add(r{k}, 1, sh{k}[0].imag)"] if cplx else
         [f"    if sh{k}[0] != sh{k}[0]:", f"        r{k}[0] = sh{k}[0]",  # (NaN: see above)
          "    else:", f"        cuda.atomic.{atomic}(r{k}, 0, sh{k}[0])"]
         if atomic != "add" and acc_t.startswith("np.float") else
         [f"    cuda.atomic.{atomic}(r{k}, 0, sh{k}[0])"])


def render_final(red: CudaReduction, out_dtype: np.dtype) -> str:
    """A kernel ``finish(acc, out, n)`` over flat arrays: the reduction's ``final`` and the cast
    to the result dtype."""
    value = red.final.format(acc="complex(acc[f, 0], acc[f, 1])" if red.acc_dtype.kind == "c"
                             else "acc[f]", n="n")
    return ("def finish(acc, out, n):\n"
            "    for f in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):\n"
            f"        out[f] = {npname(out_dtype)}({value})\n")


def check_renderable(body: Graph, block: int = 32) -> None:
    """Raises ``NotRenderableError`` if the body has no CUDA kernel."""
    render_cuda(body, "kernel", block)


__all__ = ["CudaReduction", "CudaSource", "NotRenderableError", "render_cuda", "render_final",
           "check_renderable", "atomic_of"]
