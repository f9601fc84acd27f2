"""``opcheck``: tests a custom op's registration on sample arguments, as ``torch.library.opcheck``
(the same four tests by name; jitgrad's compiler is ``jitgrad.jit`` where torch's is
AOTAutograd):

- ``test_schema``: only the arguments in ``mutates_args`` change, and outputs alias nothing.
- ``test_autograd_registration``: outputs of inputs that require grad are differentiable.
- ``test_faketensor``: a fake function is registered and gives the kernel's shapes, strides,
  dtypes and devices.
- ``test_aot_dispatch_dynamic``: under ``jitgrad.jit`` the op gives eager's outputs, writes
  what eager writes into its inputs, and (where inputs require grad) gives eager's gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd import grad as _grad
from ..autograd.grad_mode import no_grad
from ..ops.registry import Tensor
from ._custom_ops import CustomOpDef, OpOverload

__all__ = ["opcheck", "OpCheckError"]

DEFAULT_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                 "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """An ``opcheck`` test failed."""


def _clone(x: Any) -> Any:
    if isinstance(x, Tensor):
        c = x.detach().clone()
        return c.requires_grad_(True) if x.requires_grad else c
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(v) for v in x)
    return x


def _tensors(x: Any) -> list:
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


def _values(x: Tensor) -> np.ndarray:
    return x.detach().cpu().numpy().copy()


def _test_schema(opdef: CustomOpDef, args: tuple, kwargs: dict, **_: Any) -> None:
    args, kwargs = _clone(args), _clone(kwargs)
    bound, kw = opdef._bind(args, kwargs)
    named = dict(zip(opdef._signature.parameters, bound + tuple(kw.values())))
    before = {n: [_values(t) for t in _tensors(v)] for n, v in named.items()}
    with no_grad():
        opdef(*args, **kwargs)
    for n, v in named.items():
        if n in opdef._mutated:
            continue
        for old, t in zip(before[n], _tensors(v)):
            if not np.array_equal(old, _values(t), equal_nan=True):
                raise RuntimeError(f"Argument {n} is not defined as mutable but was mutated")


def _test_autograd_registration(opdef: CustomOpDef, args: tuple, kwargs: dict,
                                **_: Any) -> None:
    args, kwargs = _clone(args), _clone(kwargs)
    if not any(t.requires_grad for t in _tensors((args, kwargs))) or opdef._mutated:
        return
    for o in _tensors(opdef(*args, **kwargs)):
        if (o.dtype.is_floating_point or o.dtype.is_complex) and o.grad_fn is None:
            raise RuntimeError(f"{opdef}: an output of inputs that require grad has no "
                               "grad_fn: its autograd registration is missing")


def _test_faketensor(opdef: CustomOpDef, args: tuple, kwargs: dict, **_: Any) -> None:
    if opdef._abstract_fn is None:
        if opdef._returns_nothing:  # (nothing to describe: torch generates a trivial one)
            return
        raise RuntimeError(
            f"There was no fake impl registered for {opdef}. This is necessary for "
            "torch.compile/export/fx tracing to work. Please use "
            f"`{opdef._fn_name}.register_fake` to add an fake impl.")
    with no_grad():
        real = opdef(*_clone(args), **_clone(kwargs))
        fake = opdef._abstract_fn(*_clone(args), **_clone(kwargs))
    real_t, fake_t = _tensors(real), _tensors(fake)
    if len(real_t) != len(fake_t):
        raise RuntimeError(f"{opdef}: the fake function returned {len(fake_t)} tensors, the "
                           f"kernel {len(real_t)}")
    for i, (r, f) in enumerate(zip(real_t, fake_t)):
        for what, a, b in [("shape", tuple(r.shape), tuple(f.shape)),
                           ("stride", tuple(r.stride()), tuple(f.stride())),
                           ("dtype", r.dtype, f.dtype), ("device", r.device, f.device)]:
            if a != b:
                raise RuntimeError(f"{opdef}: output {i} of the fake function has {what} {b}, "
                                   f"the kernel's has {a}")


def _test_aot_dispatch_dynamic(opdef: CustomOpDef, args: tuple, kwargs: dict, *,
                               atol: float | None, rtol: float | None) -> None:
    from .. import jit as _jit  # (jitgrad.jit: loaded on first use)

    slots = {id(t): i for i, t in enumerate(_tensors((args, kwargs)))}

    def rebuild(x: Any, ts: tuple) -> Any:
        if isinstance(x, Tensor):
            return ts[slots[id(x)]]
        if isinstance(x, (list, tuple)):
            return type(x)(rebuild(v, ts) for v in x)
        if isinstance(x, dict):
            return {k: rebuild(v, ts) for k, v in x.items()}
        return x

    def call(*ts: Tensor) -> Any:
        return opdef(*rebuild(args, ts), **rebuild(kwargs, ts))

    def close(a: Tensor, b: Tensor) -> None:
        np.testing.assert_allclose(_values(b), _values(a), rtol=rtol or 1e-5, atol=atol or 1e-6)

    eager_in = _clone(_tensors((args, kwargs)))
    jit_in = _clone(_tensors((args, kwargs)))
    eager = call(*eager_in)
    jitted = _jit.jit(call)(*jit_in)
    e_out, j_out = _tensors(eager), _tensors(jitted)
    if len(e_out) != len(j_out):
        raise RuntimeError(f"{opdef}: {len(j_out)} outputs under jit, {len(e_out)} eagerly")
    for e, j in zip(e_out + eager_in, j_out + jit_in):  # (outputs, and the inputs it wrote)
        close(e, j)
    diff = [i for i, t in enumerate(eager_in) if t.requires_grad]
    outs = [(e, j) for e, j in zip(e_out, j_out) if e.grad_fn is not None]
    if diff and outs:
        ge = _grad([e.sum() for e, _ in outs], [eager_in[i] for i in diff], allow_unused=True)
        gj = _grad([j.sum() for _, j in outs], [jit_in[i] for i in diff], allow_unused=True)
        for a, b in zip(ge, gj):
            if (a is None) != (b is None):
                raise RuntimeError(f"{opdef}: a gradient is None under jit but not eagerly, "
                                   "or the reverse")
            if a is not None:
                close(a, b)


_TESTS = {"test_schema": _test_schema,
          "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor,
          "test_aot_dispatch_dynamic": _test_aot_dispatch_dynamic}


def opcheck(op: Any, args: tuple, kwargs: dict | None = None, *,
            test_utils: str | Sequence[str] = DEFAULT_UTILS, raise_exception: bool = True,
            atol: float | None = None, rtol: float | None = None) -> dict[str, str]:
    """Test that a custom op is registered correctly on the sample ``args``/``kwargs``.

    Args:
        op: the custom op (or ``jitgrad.ops.<ns>.<name>``).
        args: sample positional arguments (use inputs that require grad to test autograd).
        kwargs: sample keyword arguments.
        test_utils: the tests to run (all four by default; see the module docstring).
        raise_exception: raise :class:`OpCheckError` at the first failure; otherwise report
            it in the result.
        atol: absolute tolerance of the jit comparison.
        rtol: relative tolerance of the jit comparison.

    Returns:
        ``{test name: "SUCCESS" | the exception}``.
    """
    from . import _opdef

    opdef = op._opdef if isinstance(op, OpOverload) else _opdef(op, "opcheck")
    kwargs = {} if kwargs is None else kwargs
    utils = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    results: dict[str, str] = {}
    for name in utils:
        if name not in _TESTS:
            raise ValueError(f"test_utils: expected some of {list(_TESTS)}, got {name!r}")
        try:
            _TESTS[name](opdef, args, kwargs, atol=atol, rtol=rtol)
            results[name] = "SUCCESS"
        except Exception as ex:  # noqa: BLE001 - reported as torch does
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {ex} (scroll up for "
                                   "stack trace)") from ex
            results[name] = ex  # type: ignore[assignment]
    return results
