"""``jitgrad.library.custom_op``: schemas (against torch's ``infer_schema``), errors (torch's
texts), kernels per device, autograd through ``register_autograd`` (gradcheck, and under
``jitgrad.jit``), mutating ops, ``jitgrad.ops.<ns>.<name>`` and ``opcheck``."""

import typing
from collections.abc import Sequence

import numpy as np
import pytest

import jitgrad
from jitgrad import Tensor
from jitgrad.library import OpCheckError, custom_op, infer_schema, opcheck


def _np_sin(x: Tensor) -> Tensor:
    return jitgrad.from_numpy(np.sin(x.numpy(force=True)))


def _make_sin(name: str, with_autograd: bool = True):
    @custom_op(f"jgtest::{name}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return _np_sin(x)

    @op.register_fake
    def _(x):
        return jitgrad.empty_like(x)

    if with_autograd:
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        op.register_autograd(backward, setup_context=setup_context)
    return op


# ---- schemas --------------------------------------------------------------------------------

def _protos(T, dtype_t, device_t):
    def a(x: T, n: int, f: float = 2.5, *, flag: bool = True, s: str = "hi") -> T: ...
    def b(xs: list[T], w: typing.Optional[T], sizes: Sequence[int]) -> tuple[T, T]: ...  # noqa: UP045
    def c(x: T, out: T, dt: dtype_t, dev: device_t) -> None: ...
    def d(x: T, scale: typing.Optional[float] = None) -> list[T]: ...  # noqa: UP045
    return [(a, ()), (b, ()), (c, ("out",)), (d, ()), (c, "unknown")]


def test_infer_schema_matches_torch():
    torch = pytest.importorskip("torch")
    ours = _protos(Tensor, jitgrad.dtype, jitgrad.device)
    theirs = _protos(torch.Tensor, torch.dtype, torch.device)
    for (fa, ma), (fb, mb) in zip(ours, theirs):
        assert infer_schema(fa, mutates_args=ma) == torch.library.infer_schema(fb, mutates_args=mb)
    assert infer_schema(ours[0][0], mutates_args=(), op_name="a").startswith("a(Tensor x, ")


@pytest.mark.parametrize("case", range(6))
def test_definition_errors_match_torch(case):
    torch = pytest.importorskip("torch")

    def make(lib, T):
        def f1(x: T) -> T: ...
        def f2(x) -> T: ...  # noqa: ANN001
        def f3(x: T, n: int) -> T: ...
        def f4(x: T, *args: T) -> T: ...
        def f5(x: tuple[int, int]) -> T: ...
        return [(f1, ["z"]), (f2, []), (f1, "x"), (f3, ["n"]), (f4, []), (f5, [])][case]

    fa, ma = make(jitgrad, Tensor)
    fb, mb = make(torch, torch.Tensor)
    with pytest.raises(ValueError) as theirs:
        torch.library.infer_schema(fb, mutates_args=mb)
    with pytest.raises(ValueError) as ours:
        custom_op(f"jgtest::err{case}", fa, mutates_args=ma)
    want = str(theirs.value).replace("torch.Tensor", "Tensor").replace("torch", "jitgrad")
    got = str(ours.value).replace("jitgrad.tensor.Tensor", "Tensor").replace(
        "jitgrad.Tensor", "Tensor")
    if case == 5:  # (the lists of valid types name each library's classes)
        got, want = got.split("The valid types")[0], want.split("The valid types")[0]
    assert got == want


def test_other_definition_errors():
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: "
                                        "'mutates_args'"):
        custom_op("jgtest::nomut")
    with pytest.raises(ValueError, match="not enough values to unpack"):  # (as torch)
        custom_op("jgtest_no_colons", _np_sin, mutates_args=())
    with pytest.raises(NotImplementedError, match="custom_op with kwarg-only Tensor args"):
        @custom_op("jgtest::kwt", mutates_args=())
        def kwt(x: Tensor, *, y: Tensor) -> Tensor: ...
    with pytest.raises(ValueError, match="is jitgrad.ops.linalg, one of jitgrad.s own"):
        @custom_op("linalg::mine", mutates_args=())
        def mine(x: Tensor) -> Tensor: ...
    with pytest.raises(ValueError, match="The schema suggests that the op mutates"):
        custom_op("jgtest::sch", lambda x, y: None, mutates_args=(),
                  schema="(Tensor x, Tensor(a1!) y) -> ()")
    with pytest.raises(ValueError, match="Functions without tensor inputs are required to have "
                                         "a `device: torch.device` argument"):
        @custom_op("jgtest::notensor", mutates_args=(), device_types="cpu")
        def notensor(n: int) -> Tensor: ...


# ---- calls, autograd, jit -------------------------------------------------------------------

def test_eager_autograd_and_gradcheck():
    op = _make_sin("sin1")
    x = jitgrad.randn(5, dtype=jitgrad.float64, requires_grad=True)
    y = op(x)
    assert y.grad_fn is not None and "GeneratedBackwardFor_jgtest_sin1" in type(y.grad_fn).__name__
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()))
    assert jitgrad.autograd.gradcheck(op, (x,))
    with jitgrad.no_grad():
        assert op(x).grad_fn is None
    assert op(x.detach()).grad_fn is None
    assert repr(op) == "<CustomOpDef(jgtest::sin1)>"
    assert jitgrad.ops.jgtest.sin1(x.detach()).tolist() == op(x.detach()).tolist()
    assert repr(jitgrad.ops.jgtest.sin1.default) == "jgtest.sin1.default"


def test_backward_without_formula_raises_torchs_error():
    op = _make_sin("sin_noad", with_autograd=False)
    x = jitgrad.randn(3, requires_grad=True)
    y = op(x)
    with pytest.raises(RuntimeError, match="Trying to backward through jgtest.sin_noad.default "
                                           "but no autograd formula was registered. Please use "
                                           "register_autograd to add one."):
        y.sum().backward()


def test_jit_of_a_custom_op_matches_eager_values_and_gradients():
    op = _make_sin("sin_jit")
    f = jitgrad.jit(lambda t: (op(t * 2) * t).sum())
    x = jitgrad.randn(4, dtype=jitgrad.float64, requires_grad=True)
    (ge,) = jitgrad.autograd.grad((op(x * 2) * x).sum(), x)
    out = f(x)
    (gj,) = jitgrad.autograd.grad(out, x)
    np.testing.assert_allclose(out.item(), (op(x * 2) * x).sum().item())
    np.testing.assert_allclose(gj.numpy(), ge.numpy())
    out2 = f(x + 1)  # (same signature: the compiled program, with the new values)
    np.testing.assert_allclose(out2.item(), (op((x + 1) * 2) * (x + 1)).sum().item())


def test_list_and_keyword_only_arguments():
    @custom_op("jgtest::wsum", mutates_args=())
    def wsum(xs: list[Tensor], weights: Sequence[float], *, scale: float = 1.0) -> Tensor:
        total = sum(w * x.numpy(force=True) for x, w in zip(xs, weights))
        return jitgrad.from_numpy(total * scale)

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        ctx.weights = inputs[1]
        ctx.scale = keyword_only_inputs["scale"]

    def backward(ctx, grad):
        return [grad * w * ctx.scale for w in ctx.weights], None

    wsum.register_autograd(backward, setup_context=setup_context)
    a = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    b = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    assert jitgrad.autograd.gradcheck(lambda a, b: wsum([a, b], [2.0, -1.0], scale=0.5), (a, b))
    y = wsum([a, b], [2.0, -1.0])
    np.testing.assert_allclose(y.detach().numpy(), 2 * a.detach().numpy() - b.detach().numpy())


def test_kernels_per_device_and_set_kernel_enabled():
    calls = []

    @custom_op("jgtest::dev", mutates_args=(), device_types="cpu")
    def dev(x: Tensor) -> Tensor:
        calls.append("cpu")
        return x.clone()

    x = jitgrad.ones(2)
    dev(x)
    assert calls == ["cpu"]

    @dev.register_kernel("cpu")
    def _(x):
        calls.append("cpu2")
        return x + 1

    assert dev(x).tolist() == [2.0, 2.0] and calls[-1] == "cpu2"
    with dev.set_kernel_enabled("cpu", enabled=False):
        dev(x)
        assert calls[-1] == "cpu"  # (the op's own function)
    dev(x)
    assert calls[-1] == "cpu2"
    jitgrad.library.register_kernel("jgtest::dev", "cpu", lambda x: x * 3)
    assert dev(x).tolist() == [3.0, 3.0]

    @custom_op("jgtest::cuda_only", mutates_args=(), device_types="cuda")
    def cuda_only(x: Tensor) -> Tensor:
        return x.clone()

    with pytest.raises(NotImplementedError, match="Could not run 'jgtest::cuda_only' with "
                                                  "arguments from the 'CPU' backend"):
        cuda_only(x)

    @custom_op("jgtest::factory", mutates_args=(), device_types="cpu")
    def factory(n: int, device: jitgrad.device) -> Tensor:
        return jitgrad.arange(n, dtype=jitgrad.float32)

    assert factory(3, jitgrad.device("cpu")).tolist() == [0.0, 1.0, 2.0]


def test_an_output_aliasing_an_input_raises_torchs_error():
    @custom_op("jgtest::alias", mutates_args=())
    def alias(x: Tensor) -> Tensor:
        return x[1:]

    with pytest.raises(RuntimeError, match=r"alias \(with implementation in .*\): The output of "
                                           r"this custom operator \(1\) must not also be an "
                                           "input"):
        alias(jitgrad.ones(3))


def test_mutating_op_eagerly_and_under_jit():
    @custom_op("jgtest::sin_out", mutates_args={"out"})
    def sin_out(x: Tensor, out: Tensor) -> None:
        np.sin(x.numpy(), out=out.numpy())

    x = jitgrad.randn(4)
    out = jitgrad.zeros(4)
    v = out._version
    assert sin_out(x, out) is None
    assert out._version == v + 1
    np.testing.assert_allclose(out.numpy(), np.sin(x.numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional "
                                           "operator <CustomOpDef\\(jgtest::sin_out\\)> with "
                                           "schema jgtest::sin_out\\(Tensor x, Tensor\\(a1!\\) "
                                           "out\\) -> \\(\\)"):
        sin_out.register_autograd(lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        sin_out(x, jitgrad.zeros(4, requires_grad=True))

    @jitgrad.jit
    def f(x, acc):
        buf = jitgrad.empty(4)
        sin_out(x, buf)
        sin_out(x * 2, acc)  # (written back into the input after the call)
        return buf + 1

    acc = jitgrad.zeros(4)
    y = f(x, acc)
    np.testing.assert_allclose(y.numpy(), np.sin(x.numpy()) + 1, rtol=1e-6)
    np.testing.assert_allclose(acc.numpy(), np.sin(2 * x.numpy()), rtol=1e-6)
    y = f(x + 1, acc)  # (the compiled program runs the kernel on the new values)
    np.testing.assert_allclose(y.numpy(), np.sin(x.numpy() + 1) + 1, rtol=1e-5)


# ---- opcheck --------------------------------------------------------------------------------

def test_opcheck_passes_a_correct_op_and_catches_broken_ones():
    op = _make_sin("sin_ok")
    x = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    assert opcheck(op, (x,)) == {k: "SUCCESS" for k in (
        "test_schema", "test_autograd_registration", "test_faketensor",
        "test_aot_dispatch_dynamic")}

    no_fake = custom_op("jgtest::nofake", lambda x: _np_sin(x), mutates_args=(),
                        schema="(Tensor x) -> Tensor")
    with pytest.raises(OpCheckError, match="test_faketensor failed with There was no fake impl "
                                           "registered for <CustomOpDef\\(jgtest::nofake\\)>"):
        opcheck(no_fake, (x.detach(),))

    bad_fake = _make_sin("sin_badfake")
    bad_fake.register_fake(lambda x: jitgrad.empty(x.shape[0] + 1, dtype=x.dtype))
    res = opcheck(bad_fake, (x,), raise_exception=False)
    assert isinstance(res["test_faketensor"], Exception) and res["test_schema"] == "SUCCESS"

    @custom_op("jgtest::sneaky", mutates_args=())
    def sneaky(x: Tensor, y: Tensor) -> Tensor:
        y.numpy()[:] = 0
        return x.clone()

    with pytest.raises(OpCheckError, match="test_schema failed with Argument y is not defined "
                                           "as mutable but was mutated"):
        opcheck(sneaky, (jitgrad.ones(2), jitgrad.ones(2)), test_utils="test_schema")

    no_grad_formula = _make_sin("sin_noformula", with_autograd=False)
    with pytest.raises(OpCheckError, match="test_aot_dispatch_dynamic failed with Trying to "
                                           "backward through"):
        opcheck(no_grad_formula, (x,))


# ---- Library / define / impl ----------------------------------------------------------------

def test_library_define_and_impl_per_dispatch_key():
    lib = jitgrad.library.Library("jglib", "DEF")
    assert lib.define("scale(Tensor x, float s=2.0) -> Tensor") == "scale"
    lib.impl("scale", lambda x, s: jitgrad.from_numpy(x.numpy(force=True) * s), "CPU")
    x = jitgrad.ones(3, dtype=jitgrad.float64, requires_grad=True)
    assert jitgrad.ops.jglib.scale(x.detach()).tolist() == [2.0] * 3
    assert jitgrad.ops.jglib.scale(x.detach(), s=3.0).tolist() == [3.0] * 3
    jitgrad.library.register_autograd(
        "jglib::scale", lambda ctx, g: (g * ctx.s, None),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "s", inputs[1]))
    assert jitgrad.autograd.gradcheck(lambda t: jitgrad.ops.jglib.scale(t, 0.5), (x,))

    # CompositeImplicitAutograd (Library.impl's default): differentiated through its ops
    lib.define("csin(Tensor x) -> Tensor")
    lib.impl("csin", lambda x: (x * 3).sin())
    y = jitgrad.ops.jglib.csin(x)
    assert y.grad_fn.name() == "SinBackward0"
    f = jitgrad.jit(lambda t: jitgrad.ops.jglib.csin(t).sum())
    np.testing.assert_allclose(f(x).item(), np.sin(3.0) * 3)

    # the function-style API and a Meta (fake) kernel
    jitgrad.library.define("jglib::twice", "(Tensor x) -> Tensor")

    @jitgrad.library.impl("jglib::twice", "cpu")
    def _(x):
        return x * 2

    jitgrad.library.impl("jglib::twice", "Meta", lambda x: jitgrad.empty_like(x))
    res = opcheck(jitgrad.ops.jglib.twice, (x.detach(),),
                  test_utils=("test_schema", "test_faketensor"))
    assert res == {"test_schema": "SUCCESS", "test_faketensor": "SUCCESS"}
    with pytest.raises(RuntimeError, match="with the same name and overload name multiple"):
        lib.define("scale(Tensor x) -> Tensor")
    lib._destroy()
    assert not hasattr(jitgrad.ops.jglib, "scale")


def test_library_errors_match_torch():
    torch = pytest.importorskip("torch")
    for make in [lambda m: m.library.Library("x", "WRONG"),
                 lambda m: m.library.define("jgx::f", "f(Tensor x) -> Tensor"),
                 lambda m: m.library.define("jgx_f", "(Tensor x) -> Tensor"),
                 lambda m: m.library.Library("prim", "DEF")]:
        with pytest.raises(ValueError) as ours:
            make(jitgrad)
        with pytest.raises(ValueError) as theirs:
            make(torch)
        assert str(ours.value) == str(theirs.value)
    lib = jitgrad.library.Library("jgerr", "DEF")
    lib.define("f(Tensor x) -> Tensor")
    with pytest.raises(TypeError, match="Input function is required to be a callable"):
        lib.impl("f", 3, "CPU")
    with pytest.raises(NotImplementedError, match="jitgrad dispatches on CPU, CUDA"):
        lib.impl("f", lambda x: x, "XLA")
    with pytest.raises(RuntimeError, match="Invalid alias_analysis type PURE"):
        lib.define("g(Tensor x) -> Tensor", alias_analysis="PURE")
