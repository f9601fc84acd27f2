"""Seeded random programs checked against torch, eagerly and under ``jitgrad.jit``.

Custom Functions (random inputs/outputs, what they save, ``mark_non_differentiable``,
``set_materialize_grads(False)``): values, gradients, second derivatives and ``gradgradcheck``
agree with torch, eagerly and under jit. In-place chains on a clone and its views: the same
gradients (and gradgradcheck verdict), or the same error, as torch; under jit the
functionalized chain's (or, with views, jit's documented JitTraceError). Programs are
generated from seeds by tests/random_programs.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
from random_programs import FunctionProgram, InplaceProgram

torch = pytest.importorskip("torch")

N_FUNCTION = 160  # in CI (a few seconds); the slow sweep runs more seeds
N_INPLACE = 240


def _outcome(run):
    """``run()``'s result as arrays (None kept), or ``(error type name, text)``."""
    try:
        res = run()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, re.sub(r"\bjitgrad\b", "torch", str(e)))
    return [None if r is None else np.asarray(r.detach().numpy()) for r in res]


def _same(a, b, none_is_zero: bool = False, rtol: float = 1e-7, atol: float = 1e-9) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if none_is_zero:
            x = np.zeros_like(y) if x is None and y is not None else x
            y = np.zeros_like(x) if y is None and x is not None else y
        if (x is None) != (y is None):
            return False
        if x is not None and not np.allclose(x, y, rtol=rtol, atol=atol):
            return False
    return True


def _first_and_second(lib, loss_fn, xs, cot_seed):
    """(loss and first-order gradients, second-order gradients through create_graph)."""
    wrt = [x for x in xs if x.requires_grad]

    def first():
        loss = loss_fn(*xs)
        return [loss] + list(lib.autograd.grad(loss, wrt, allow_unused=True))

    def second():
        loss = loss_fn(*xs)
        grads = lib.autograd.grad(loss, wrt, create_graph=True, allow_unused=True)
        rng = np.random.default_rng(cot_seed)
        total = 0
        for g, x in zip(grads, wrt):
            v = lib.tensor(rng.uniform(-1, 1, tuple(x.shape)))  # (drawn for every input)
            if g is not None:
                total = total + (g * v).sum()
        return list(lib.autograd.grad(total, wrt, allow_unused=True))

    return _outcome(first), _outcome(second)


def _check_function_program(seed: int, gradgrad: bool) -> None:
    prog = FunctionProgram(seed)
    results = {}
    for name, lib in (("torch", torch), ("jitgrad", jitgrad)):
        fn = prog.function(lib)
        xs = prog.inputs(lib)
        results[name] = _first_and_second(lib, prog.loss_fn(lib, fn), xs, prog.cotangent_seed)
    (t1, t2), (j1, j2) = results["torch"], results["jitgrad"]
    assert _same(t1, j1), (prog, t1, j1)
    assert _same(t2, j2), (prog, t2, j2)
    # under jit: the user's backward runs inside the compiled program (twice: a cache hit);
    # one seed in four on Numba's kernels, the others on the interpreter backend (the same
    # traced and differentiated program: each Numba compile costs ~0.4 s of CI, and the
    # kernels of every op are checked against the interpreter by test_numba_backend)
    fn = prog.function(jitgrad)
    backend = _backend(seed)
    jitted = jitgrad.jit(prog.loss_fn(jitgrad, fn), backend=backend)
    for _ in range(2):
        xs = prog.inputs(jitgrad)
        k1, k2 = _first_and_second(jitgrad, jitted, xs, prog.cotangent_seed)
        # (a None gradient from backward is zeros under jit: see docs/jit.md)
        assert _same(t1, k1, none_is_zero=True), (prog, t1, k1)
        if not isinstance(t2, tuple):
            assert _same(t2, k2, none_is_zero=True), (prog, t2, k2)
        else:  # the same error, unless a None gradient became zeros (then torch's
            # second-order error about the None may not happen)
            none_became_zeros = any(a is None and b is not None for a, b in zip(t1, k1))
            assert k2 == t2 or none_became_zeros, (prog, t2, k2)
    assert jitted.cache_info().misses == 1
    if gradgrad and not isinstance(t1, tuple):  # (torch's gradgradcheck needs an output
        # that requires grad)
        outcomes = []
        for lib in (torch, jitgrad):
            loss = prog.loss_fn(lib, prog.function(lib))
            xs = prog.inputs(lib)
            f = _of_differentiable(loss, xs)
            wrt = tuple(x for x in xs if x.requires_grad)
            # (one fixed cotangent for both: gradgradcheck's random ones differ per library)
            cot = (lib.tensor(1.0, dtype=lib.float64),)
            outcomes.append(lib.autograd.gradgradcheck(f, wrt, cot, raise_exception=False))
            if lib is jitgrad:
                jitted_f = jitgrad.jit(f, backend=backend)
                outcomes.append(lib.autograd.gradgradcheck(jitted_f, wrt, cot,
                                                           raise_exception=False))
        assert outcomes[0] == outcomes[1] == outcomes[2], (prog, outcomes)


def _backend(seed: int) -> str:
    return "numba" if seed % 4 == 0 else "interpreter"


def _of_differentiable(loss, xs):
    """``loss`` as a function of the inputs that require grad (the others fixed)."""
    mask = [x.requires_grad for x in xs]

    def f(*wrt):
        it = iter(wrt)
        return loss(*(next(it) if m else x for x, m in zip(xs, mask)))
    return f


@pytest.mark.parametrize("block", range(8))
def test_random_custom_functions_match_torch(block):
    for seed in range(block, N_FUNCTION, 8):
        _check_function_program(seed, gradgrad=seed % 4 == 0)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))  # (blocks, so that xdist's workers share them)
def test_random_custom_functions_match_torch_more_seeds(block):
    # (80 more seeds: 320 took 150 s of CI's 20 minutes, 160 took 70)
    for seed in range(N_FUNCTION + block, N_FUNCTION + N_FUNCTION // 2, 4):
        _check_function_program(seed, gradgrad=seed % 2 == 0)


def _inplace_outcome(lib, prog: InplaceProgram, functional: bool = False, jit: bool = False):
    x = lib.tensor(prog.x, dtype=lib.float64, requires_grad=True)
    c = lib.tensor(prog.c, dtype=lib.float64, requires_grad=True)

    def run():
        f = (lambda x, c: prog.run(lib, x, c, functional))
        loss = jitgrad.jit(f)(x, c) if jit else f(x, c)
        loss.backward()
        return [loss, x.grad, c.grad]

    return _outcome(run)


def _inplace_gradgradcheck(lib, prog: InplaceProgram, functional: bool = False,
                           jit: bool = False):
    """gradgradcheck's verdict on the program (with one fixed cotangent), or its error."""
    x = lib.tensor(prog.x, dtype=lib.float64, requires_grad=True)
    c = lib.tensor(prog.c, dtype=lib.float64, requires_grad=True)
    f = (lambda x, c: prog.run(lib, x, c, functional))
    try:
        return lib.autograd.gradgradcheck(jitgrad.jit(f) if jit else f, (x, c),
                                          (lib.tensor(1.0, dtype=lib.float64),),
                                          raise_exception=False)
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, re.sub(r"\bjitgrad\b", "torch", str(e)))


def _check_inplace_program(seed: int, gradgrad: bool = False) -> None:
    prog = InplaceProgram(seed)
    expected = _inplace_outcome(torch, prog)
    got = _inplace_outcome(jitgrad, prog)
    assert _same(expected, got), (prog, expected, got)
    if gradgrad:
        verdicts = (_inplace_gradgradcheck(torch, prog), _inplace_gradgradcheck(jitgrad, prog))
        assert verdicts[0] == verdicts[1], (prog, verdicts)
        if not prog.uses_views:
            assert _inplace_gradgradcheck(jitgrad, prog, jit=True) == \
                _inplace_gradgradcheck(torch, prog, functional=True), prog
    # under jit: in-place ops are functionalized (the chain's true gradients, where eager
    # torch may refuse with its version-counter error); on views, jit raises JitTraceError
    got = _inplace_outcome(jitgrad, prog, jit=True)
    if prog.uses_views:
        assert isinstance(got, tuple) and got[0] == "JitTraceError", (prog, got)
    else:
        assert _same(_inplace_outcome(torch, prog, functional=True), got), (prog, got)


@pytest.mark.parametrize("block", range(8))
def test_random_inplace_chains_match_torch(block):
    for seed in range(block, N_INPLACE, 8):
        _check_inplace_program(seed, gradgrad=seed % 4 == 0)


@pytest.mark.slow
def test_random_inplace_chains_match_torch_more_seeds():
    for seed in range(N_INPLACE, 2 * N_INPLACE):  # (240 more seeds: 480 took 12 s of CI)
        _check_inplace_program(seed, gradgrad=seed % 2 == 0)
