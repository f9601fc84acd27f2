"""The registry is the single definition of each op: every ``OpDef`` is exercised by an opdb
record, every public name an op or a ``@public`` function declares resolves where it says,
and the worked example of docs/adding-an-op.md (``softplus``) runs as the page shows."""

from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest
from opdb import OP_DB
from test_ops import GRADGRAD_SUBSET, _prepare

import jitgrad
import jitgrad.jit  # noqa: F401 - registers the jit's ops (kernel, custom_function)
import jitgrad.jit.control_flow  # noqa: F401 - registers cond and while_loop
import jitgrad.nn.functional as F
from jitgrad.ops import numpy_compat, surface
from jitgrad.ops.out_arg import out_variant
from jitgrad.ops.registry import OPS, Public

pytestmark = pytest.mark.filterwarnings("ignore:The use of `x.T` on tensors:UserWarning")

# Ops that no opdb record can reach, each with the reason. Everything else must be run by a
# record (forward, backward, or double backward).
NO_RECORD = {
    "cond": "a staged cond holding traced branch sub-graphs (tests/test_control_flow.py)",
    "while_loop": "a staged loop holding traced sub-graphs (tests/test_control_flow.py)",
    "custom_function": "a user's autograd.Function inside jit (tests/test_function.py)",
    "custom_function_backward": "its backward equation (tests/test_function.py)",
    "detach": "Tensor.detach: no gradient, no node (tests/test_tensor.py)",
    "kernel": "a fused kernel, made by jit.passes.fuse (tests/test_numba_backend.py)",
    "copy_slices_view": "an in-place op on a view, which jit refuses to trace by design (the "
                        "opdb sweep runs every record under jit): tests/test_inplace.py",
    "normal_tensor_tensor": "random values (no NumPy reference): tests/test_tensor_ops2.py",
    "normal_tensor_float": "random values, as normal_tensor_tensor",
    "normal_float_tensor": "random values, as normal_tensor_tensor",
    "leaky_relu_result": "F.leaky_relu(inplace=True) on a non-leaf (opdb inputs are leaves): "
                         "tests/test_nn_modules2.py",
    "elu_result": "F.elu(inplace=True), as leaky_relu_result: tests/test_nn_modules2.py",
    **{name: "the node torch records on random draws (no NumPy reference): "
             "tests/test_random_nodes.py"
       for name in ("poisson_draws", "bernoulli_draws", "binomial_draws", "bernoulli_p_draws")},
    "sample_dirichlet_draws": "the node torch records on _sample_dirichlet's draws: "
                              "tests/test_script_findings_35.py",
    "ctc_loss_backward_result": "the node without a derivative over ctc_loss's gradient "
                                "(create_graph): tests/test_script_findings_35.py",
    **{name: "nn.LSTM's fused float32 layer and its backward (torch's oneDNN path): "
             "tests/test_lstm_layer.py (per-step ops, gradcheck, torch)"
       for name in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward")},
    **{name: "the parts view_as_real decomposes into (x.real/x.imag select from the view): "
             "the opdb view_as_real record under jit (tests/test_jit.py) and on cuda"
       for name in ("real", "imag")},
    "to_device": "a copy between the CPU and a cuda device (opdb runs on the CPU): "
                 "tests/test_cuda.py, on numba's CUDA simulator",
}


def _run_record(rec) -> None:
    rng = np.random.default_rng(zlib.crc32(rec.name.encode()))
    for sample in rec.samples(rng):
        fn, inputs = _prepare(rec, sample, jitgrad, jitgrad.float64)
        outs = [o for o in fn(*inputs) if isinstance(o, jitgrad.Tensor)]
        if not rec.differentiable or not inputs:
            continue
        outs = [o for o in outs if o.requires_grad]
        if not outs:
            continue
        loss = sum((o.abs() if o.dtype.is_complex else o).sum() for o in outs)
        # a first-order backward may take other ops (batch norm's one-op NumPy backward)
        jitgrad.autograd.grad(loss, inputs, retain_graph=True, allow_unused=True)
        grads = jitgrad.autograd.grad(loss, inputs, create_graph=True, allow_unused=True)
        if not (rec.gradgrad or rec.name in GRADGRAD_SUBSET):
            continue
        second = [g.sum() for g in grads if g is not None and g.requires_grad]
        if second:
            jitgrad.autograd.grad(sum(second), inputs, allow_unused=True)


def _reached_ops() -> set:
    """The names of the ops whose impl runs while every record runs forward, backward and
    double backward in eager mode."""
    reached = set()
    saved = {op: op.impl for op in OPS.values()}

    def spy(op, impl):
        def run(*args, **kwargs):
            reached.add(op.name)
            return impl(*args, **kwargs)
        return run

    try:
        for op, impl in saved.items():
            op.impl = spy(op, impl)
        for rec in OP_DB:
            _run_record(rec)
        # forward-mode rules that call ops of their own (svdvals' JVP)
        with jitgrad.autograd.forward_ad.dual_level():
            for rec in OP_DB:
                if rec.name == "linalg.svdvals":
                    x = jitgrad.randn(3, 3, dtype=jitgrad.float64)
                    dual = jitgrad.autograd.forward_ad.make_dual(x, jitgrad.ones_like(x))
                    rec.jitgrad_fn()(dual)
    finally:
        for op, impl in saved.items():
            op.impl = impl
    return reached


def test_every_op_has_an_opdb_record():
    reached = _reached_ops()
    library = {name for name in OPS if not name.startswith("test_")}  # tests' own ops: test_*
    missing = sorted(library - reached - set(NO_RECORD))
    assert not missing, f"ops that no opdb record runs (add a record): {missing}"
    stale = sorted(set(NO_RECORD) & reached)
    assert not stale, f"NO_RECORD entries that a record does run: {stale}"
    assert set(NO_RECORD) <= set(OPS)


def _declared(kind: str) -> list:
    return [(name, fn) for fn, pub in surface.declarations() for name in getattr(pub, kind)]


@pytest.mark.parametrize("name,fn", _declared("names"), ids=lambda x: x if isinstance(x, str)
                         else "")
def test_declared_function_resolves_on_jitgrad(name, fn):
    """``jitgrad.<name>`` is the declared function, with torch's ``out=`` where torch has it
    (behind the wrapper that takes NumPy's keyword aliases where it has a dim)."""
    assert numpy_compat.unwrap(getattr(jitgrad, name)) is out_variant(name, fn)
    assert numpy_compat.unwrap(getattr(jitgrad.ops, name)) is out_variant(name, fn)


@pytest.mark.parametrize("name,fn", _declared("method"), ids=lambda x: x if isinstance(x, str)
                         else "")
def test_declared_method_resolves_on_tensor(name, fn):
    assert numpy_compat.unwrap(inspect.getattr_static(jitgrad.Tensor, name)) is fn


@pytest.mark.parametrize("name", [n for n, _ in _declared("inplace")])
def test_declared_inplace_method_resolves_on_tensor(name):
    method = inspect.getattr_static(jitgrad.Tensor, name)
    assert callable(method) and method.__name__ == name


@pytest.mark.parametrize("name,fn", _declared("functional"), ids=lambda x: x if isinstance(x, str)
                         else "")
def test_declared_functional_resolves_on_nn_functional(name, fn):
    assert getattr(F, name) is fn


def test_a_name_declared_twice_is_an_error():
    before = list(surface._FUNCTIONS)
    try:
        surface.public("exp")(lambda input: input)
        with pytest.raises(RuntimeError, match="'exp' .* declared twice"):
            surface.functions()
    finally:
        surface._FUNCTIONS[:] = before


def test_public_shorthands():
    p = Public(("sub", "subtract"), method=True, inplace=True)
    assert p.method == ("sub", "subtract") and p.inplace == ("sub_",)
    assert Public("x").method == () and Public("x").inplace == ()


# ---------------------------------------------------------------- the worked example


def test_softplus_is_public_exactly_where_torch_has_it():
    torch = pytest.importorskip("torch")
    for where, ours in ((torch, jitgrad), (torch.Tensor, jitgrad.Tensor),
                        (torch.nn.functional, F)):
        for name in ("softplus", "softplus_"):
            assert hasattr(where, name) == hasattr(ours, name), (where, name)
    assert str(inspect.signature(F.softplus)) == "(input, beta=1.0, threshold=20.0)"


def test_softplus_worked_example_against_torch():
    torch = pytest.importorskip("torch")
    x = np.array([-30.0, -1.0, 0.0, 1.0, 2.4, 2.6, 10.0, 20.0, 21.0, 30.0])
    for args, kwargs in (((), {}), ((), {"beta": 2.0, "threshold": 5.0}), ((0.5, 1.0), {})):
        a = jitgrad.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        y = F.softplus(a, *args, **kwargs)
        ty = torch.nn.functional.softplus(t, *args, **kwargs)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12,
                                   atol=1e-300)
        assert y.grad_fn.name() == ty.grad_fn.name() == "SoftplusBackward0"
        g = np.linspace(-1, 1, x.size)
        y.backward(jitgrad.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-300)
    with pytest.raises(NotImplementedError, match="\"softplus_cpu\" not implemented for 'Long'"):
        F.softplus(jitgrad.tensor([1, 2]))
    with pytest.raises(NotImplementedError) as theirs:
        torch.nn.functional.softplus(torch.tensor([1, 2]))
    assert "\"softplus_cpu\" not implemented for 'Long'" in str(theirs.value)


def test_softplus_gradients_and_jit():
    rng = np.random.default_rng(0)
    x = jitgrad.tensor(rng.uniform(-4, 4, (3, 5)), requires_grad=True)
    f = lambda t: F.softplus(t, beta=2.0, threshold=3.0)  # noqa: E731
    assert jitgrad.autograd.gradcheck(f, (x,))
    assert jitgrad.autograd.gradgradcheck(f, (x,))
    for backend in ("interpreter", "numba"):
        jf = jitgrad.jit(lambda t: (f(t * 1.5) * 2).sum(), backend=backend)
        a = jitgrad.tensor(x.detach().numpy(), requires_grad=True)
        b = jitgrad.tensor(x.detach().numpy(), requires_grad=True)
        out, ref = jf(a), (f(b * 1.5) * 2).sum()
        out.backward()
        ref.backward()
        np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_generated_functions_take_the_declared_arguments():
    assert str(inspect.signature(jitgrad.exp)) == "(input, *, out=None)"
    assert str(inspect.signature(jitgrad.eq)) == "(input, other, *, out=None)"
    assert str(inspect.signature(jitgrad.Tensor.exp)) == "(input)"
    assert jitgrad.exp.__name__ == "exp" and jitgrad.greater is jitgrad.gt
    # the operands of a binary op may be NumPy arrays, as torch accepts them
    out = jitgrad.eq(np.array([1.0, 2.0]), jitgrad.tensor([1.0, 3.0]))
    assert out.tolist() == [True, False]
    x = jitgrad.tensor([0.5, -1.0])
    y = x.clone()
    assert y.exp_() is y
    np.testing.assert_allclose(y.numpy(), np.exp([0.5, -1.0]), rtol=1e-6)
