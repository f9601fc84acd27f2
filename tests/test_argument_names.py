"""Keyword arguments by torch's names: every public function and Tensor method of jitgrad takes
the names torch's argument parser takes (its native schemas' names, ``self`` read as ``input``;
``inspect.signature`` for torch's Python-level functions), and calls by keyword give torch's
results."""

from __future__ import annotations

import collections
import inspect
import warnings

import numpy as np
import pytest

import jitgrad

# names torch takes that jitgrad does not, and why
KNOWN = {
    "resize_as_": "jitgrad's resize_as_ is the Tensor method; its first argument is self",
    "save": "torch's private _disable_byteorder_record (jitgrad writes little-endian only)",
    **{f"sparse_{k}_tensor": "jitgrad's compressed sparse constructors make their own layout"
       for k in ("bsc", "bsr", "csc", "csr")},
    "nn.functional.elu_": "aten's scale/input_scale are internal to torch's SELU and ELU",
    "nn.functional.rrelu_": "jitgrad draws from its default generator",
    "Tensor.uniform_": "torch's 'from' is a Python keyword: it is only ever passed positionally",
    "Tensor.swapaxes_": "an alias of transpose_ (dim0, dim1)",
}
_VAR = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _schemas(torch, methods: bool) -> dict:
    found = collections.defaultdict(list)
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("aten::"):
            continue
        names = [a.name for a in s.arguments if not a.is_out and a.name != "out"]
        if methods:
            if names and names[0] == "self":
                found[s.name[6:]].append(names[1:])
        else:
            found[s.name[6:]].append(["input" if n == "self" else n for n in names])
    return found


def _missing(tf, jf, schemas: dict, aten_name: str, skip_self: bool) -> list | None:
    try:
        jsig = inspect.signature(jf)
    except (TypeError, ValueError):
        return None
    if any(p.kind in _VAR for p in jsig.parameters.values()):
        return None  # (jitgrad's overload dispatch reads *args itself)
    ours = set(list(jsig.parameters)[1:] if skip_self else jsig.parameters)
    try:
        tsig = inspect.signature(tf)
        params = list(tsig.parameters)[1:] if skip_self else list(tsig.parameters)
        overloads = [[p for p in params if tsig.parameters[p].kind not in _VAR]]
    except (TypeError, ValueError):
        overloads = schemas.get(aten_name)
        if not overloads:
            return None
    common = set.intersection(*[set(o) for o in overloads]) - {"out"}
    return sorted(common - ours)


def test_functions_take_torchs_argument_names():
    torch = pytest.importorskip("torch")
    schemas = _schemas(torch, methods=False)
    bad = []
    for prefix, aten, tm, jm in (("", "", torch, jitgrad),
                                 ("linalg.", "linalg_", torch.linalg, jitgrad.linalg),
                                 ("special.", "special_", torch.special, jitgrad.special),
                                 ("fft.", "fft_", torch.fft, jitgrad.fft),
                                 ("nn.functional.", "", torch.nn.functional,
                                  jitgrad.nn.functional)):
        for name in dir(jm):
            jf = getattr(jm, name)
            if name.startswith("_") or not hasattr(tm, name) or not callable(jf) or \
                    inspect.isclass(jf) or inspect.ismodule(jf):
                continue
            missing = _missing(getattr(tm, name), jf, schemas, aten + name, skip_self=False)
            if missing and prefix + name not in KNOWN:
                bad.append(f"{prefix}{name}: {missing}")
    assert bad == []


def test_tensor_methods_take_torchs_argument_names():
    torch = pytest.importorskip("torch")
    schemas = _schemas(torch, methods=True)
    bad = []
    for name in dir(jitgrad.Tensor):
        if name.startswith("_") or not hasattr(torch.Tensor, name) or isinstance(
                inspect.getattr_static(jitgrad.Tensor, name), property):
            continue
        jf = getattr(jitgrad.Tensor, name)
        if callable(jf):
            missing = _missing(getattr(torch.Tensor, name), jf, schemas, name, skip_self=True)
            if missing and f"Tensor.{name}" not in KNOWN:
                bad.append(f"Tensor.{name}: {missing}")
    assert bad == []


CALLS = [
    "L.linalg.cholesky(input=E)", "L.linalg.eigh(input=E, UPLO='U').eigenvalues",
    "L.linalg.lstsq(input=E, b=E).solution", "L.linalg.tensorsolve(input=E, other=E[0])",
    "L.linalg.vector_norm(x=E)", "L.linalg.vector_norm(input=E, ord=1)",
    "L.linalg.vector_norm(a=E)", "L.linalg.norm(x=E)", "L.linalg.inv(A=E)", "L.linalg.det(A=E)",
    "L.linalg.slogdet(A=E).logabsdet", "L.linalg.matrix_norm(input=E)", "L.linalg.pinv(input=E)",
    "L.linalg.solve_triangular(input=E, B=E, upper=True)", "L.linalg.matrix_exp(input=E)",
    "L.matrix_exp(input=E)", "L.linalg.cond(input=E)", "L.linalg.inv(E, A=E)",
    "L.special.airy_ai(x=E)", "L.special.chebyshev_polynomial_t(x=E, n=2)",
    "L.special.spherical_bessel_j0(x=E)", "L.nn.functional.one_hot(input=L.tensor([1, 0]))",
    "L.promote_types(type1=L.float32, type2=L.int64)", "L.fill(input=E, value=1.5)",
    "L.gather(E, 0, L.tensor([[0]]), sparse_grad=False)",
    "E.swapaxes(axis0=0, axis1=1)", "L.swapaxes(E, axis0=1, axis1=0)",
    # layout, pin_memory and memory_format, as torch's factories take them
    "L.zeros(2, layout=L.strided, pin_memory=False)", "L.full((2,), 3.0, layout=L.strided)",
    "L.arange(3, layout=L.strided)", "L.eye(2, layout=L.strided)",
    "L.linspace(0, 1, 3, layout=L.strided)", "L.ones(2, layout='x')",
    "L.zeros_like(E, memory_format=L.preserve_format)", "L.full_like(E, 3, layout=L.strided)",
    "L.ones_like(E, memory_format=L.contiguous_format)", "L.zeros_like(E, memory_format=3)",
    "L.zeros_like(L.ones(2, 3, 4, 5).to(memory_format=L.channels_last)).stride()",
    "L.empty_like(L.ones(2, 3, 4, 5), memory_format=L.channels_last).stride()",
    "L.rand_like(L.ones(2, 3, 4, 5, 6).to(memory_format=L.channels_last_3d)).stride()",
    "L.empty_like(E, memory_format=L.channels_last)",
]


def _outcome(lib, code: str):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = eval(code, {"L": lib, "E": lib.tensor([[2.0, 0.5], [0.5, 3.0]])})  # noqa: S307
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return type(e).__name__, str(e).split(":")[-1].strip()
    if hasattr(value, "tolist"):
        return np.atleast_1d(np.asarray(value.tolist(), dtype=float)).tolist()
    if isinstance(value, float):
        return [value]
    return str(value).split(".")[-1]  # (a dtype, a tuple of strides)


@pytest.mark.parametrize("code", CALLS)
def test_keyword_calls_match_torch(code):
    torch = pytest.importorskip("torch")
    got, expected = _outcome(jitgrad, code), _outcome(torch, code)
    if isinstance(expected, list):
        np.testing.assert_allclose(np.asarray(got, dtype=float),
                                   np.asarray(expected, dtype=float), rtol=1e-6, atol=1e-6)
    elif isinstance(expected, tuple) and len(expected) == 2 and isinstance(expected[0], str):
        assert got[0] == expected[0]  # (the class; texts name each library's types)
    else:
        assert str(got) == str(expected)


def test_signatures_without_torch():
    assert list(inspect.signature(jitgrad.linalg.cholesky).parameters)[0] == "input"
    assert list(inspect.signature(jitgrad.linalg.inv).parameters)[0] == "A"
    assert list(inspect.signature(jitgrad.special.airy_ai).parameters)[0] == "x"
    x = jitgrad.ones(2, 3, 4, 5).contiguous(memory_format=jitgrad.channels_last)
    assert jitgrad.zeros_like(x).stride() == x.stride()
    with pytest.raises(RuntimeError, match="make strided tensors"):
        jitgrad.zeros(2, layout=jitgrad.sparse_coo)
    with pytest.raises(TypeError, match="got multiple values for argument 'input'"):
        jitgrad.linalg.vector_norm(jitgrad.ones(2), input=jitgrad.ones(2))


def _python_level_missing(tm, jm, classes: bool) -> list:
    bad = []
    for name in dir(jm):
        if name.startswith("_") or not hasattr(tm, name):
            continue
        jc, tc = getattr(jm, name), getattr(tm, name)
        if classes != inspect.isclass(jc) or not callable(jc) or inspect.ismodule(jc):
            continue
        try:
            ts = inspect.signature(tc.__init__ if classes else tc)
            js = inspect.signature(jc.__init__ if classes else jc)
        except (TypeError, ValueError):
            continue
        if any(p.kind in _VAR for p in js.parameters.values()):
            continue
        for p, tp in ts.parameters.items():
            if tp.kind in _VAR or p == "self" or p.startswith("_"):
                continue
            if p not in js.parameters:
                bad.append(f"{name}: no {p}")
                continue
            td, jd = tp.default, js.parameters[p].default
            if callable(td) and callable(jd):
                td, jd = td.__name__, jd.__name__
            if td is not inspect.Parameter.empty and "torch" not in type(td).__module__ and \
                    not (td == jd or repr(td) == repr(jd)):
                bad.append(f"{name}: {p} defaults to {jd!r}, torch's to {td!r}")
    return bad


def test_python_level_names_and_defaults():
    """Module constructors, optimizers, schedulers, data utilities and the Python-level
    functions: torch's parameter names, with equal defaults."""
    torch = pytest.importorskip("torch")
    bad = []
    for tm, jm, classes in ((torch.nn, jitgrad.nn, True), (torch.optim, jitgrad.optim, True),
                            (torch.optim.lr_scheduler, jitgrad.optim.lr_scheduler, True),
                            (torch.utils.data, jitgrad.utils.data, True),
                            (torch.nn.functional, jitgrad.nn.functional, False),
                            (torch.nn.init, jitgrad.nn.init, False),
                            (torch.nn.utils, jitgrad.nn.utils, False),
                            (torch.autograd, jitgrad.autograd, False),
                            (torch.func, jitgrad.func, False)):
        bad += [f"{jm.__name__}.{row}" for row in _python_level_missing(tm, jm, classes)]
    assert bad == []
