"""The dispatcher's lanes (``registry.lane``): the eager hot path of pointwise ops on tensors of
one dtype, and every way out of it (per-thread grad mode, inference mode, forward AD, jit
traces, broadcasting, foreign operands, dtypes computed in another dtype)."""

import threading

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd.op_node import OpNode, UniformNode
from jitgrad.ops import registry


def leaf(values=(0.5, -1.0, 2.0), dtype=jitgrad.float64):
    return jitgrad.tensor(list(values), dtype=dtype, requires_grad=True)


def test_operators_and_functions_take_the_lane():
    assert registry.LANES[registry.OPS["mul"]] is not None
    x, w = leaf(), leaf((1.5, 2.0, -0.5))
    y = jitgrad.tanh(x * w + w)
    assert isinstance(y.grad_fn, UniformNode) and y.grad_fn.name() == "TanhBackward0"
    assert isinstance(y.grad_fn.next_functions[0][0], UniformNode)
    y.sum().backward()
    xs, ws = x.detach().numpy(), w.detach().numpy()
    t = np.tanh(xs * ws + ws)
    np.testing.assert_allclose(x.grad.numpy(), (1 - t * t) * ws)
    np.testing.assert_allclose(w.grad.numpy(), (1 - t * t) * (xs + 1))


def test_generated_function_keeps_its_signature():
    x = leaf()
    np.testing.assert_allclose(jitgrad.tanh(input=x).detach().numpy(), np.tanh(x.detach().numpy()))
    with pytest.raises(TypeError):
        jitgrad.tanh(x, x)


def test_lane_reads_each_threads_grad_mode():
    x, w = leaf(), leaf()
    seen = {}

    def worker():
        seen["worker"] = (x * w).grad_fn  # a new thread starts with grad mode on
        with jitgrad.no_grad():
            seen["worker_no_grad"] = (x * w).grad_fn

    with jitgrad.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        main = (x * w).grad_fn
    assert main is None and seen["worker_no_grad"] is None
    assert isinstance(seen["worker"], UniformNode)


def test_broadcasting_records_an_op_node_and_mismatch_raises_torchs_text():
    x = jitgrad.tensor([[1.0], [2.0]], dtype=jitgrad.float64, requires_grad=True)
    w = leaf()
    y = x * w
    assert type(y.grad_fn).__base__ is OpNode and tuple(y.shape) == (2, 3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.5], [1.5]])
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 0"):
        w * jitgrad.tensor([1.0, 2.0], dtype=jitgrad.float64)


def test_operands_off_the_lane():
    x = leaf()
    # a Python number, a NumPy array, a 0-d NumPy value: the general path, same values
    np.testing.assert_allclose((x * 2).detach().numpy(), [1.0, -2.0, 4.0])
    np.testing.assert_allclose((x * np.array([1.0, 2.0, 3.0])).detach().numpy(), [0.5, -2.0, 6.0])
    np.testing.assert_allclose((x + np.float64(1.0)).detach().numpy(), [1.5, 0.0, 3.0])
    assert (2 * x).grad_fn.name() == "MulBackward0"
    with pytest.raises(TypeError):
        x * "a"  # the operator returns NotImplemented for a foreign operand
    # tensors of two dtypes: promoted on the general path
    y = x * jitgrad.tensor([1.0, 1.0, 1.0], dtype=jitgrad.float32)
    assert y.dtype is jitgrad.float64 and type(y.grad_fn).__base__ is OpNode
    # a floating op on integers computes in the default dtype
    t = jitgrad.tanh(jitgrad.tensor([0, 1, 2]))
    assert t.dtype is jitgrad.float32
    np.testing.assert_allclose(t.numpy(), np.tanh([0.0, 1.0, 2.0]), rtol=1e-6)
    # a Parameter (a Tensor subclass) records as a leaf
    p = jitgrad.nn.Parameter(jitgrad.tensor([1.0, 2.0, 3.0], dtype=jitgrad.float64))
    (p * x).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [0.5, -1.0, 2.0])


def test_no_input_needs_a_gradient_records_nothing():
    a = jitgrad.tensor([1.0, 2.0])
    y = a * a
    assert y.grad_fn is None and not y.requires_grad


def test_inference_mode_and_forward_ad_leave_the_lane():
    x = leaf()
    with jitgrad.inference_mode():
        y = x * x
    assert y.is_inference() and y.grad_fn is None
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * y  # mul saves both inputs
    fwad = jitgrad.autograd.forward_ad
    with fwad.dual_level():
        d = fwad.make_dual(x.detach(), jitgrad.ones_like(x))
        out = jitgrad.tanh(d * d)
        tangent = fwad.unpack_dual(out).tangent
    xs = x.detach().numpy()
    np.testing.assert_allclose(tangent.numpy(), (1 - np.tanh(xs * xs) ** 2) * 2 * xs)


def test_jit_trace_leaves_the_lane():
    w = leaf((1.0, 2.0, 3.0))

    @jitgrad.jit
    def f(x):
        return jitgrad.tanh(x * w) + x  # w: a captured eager tensor, recorded by the trace

    x = leaf()
    np.testing.assert_allclose(f(x).detach().numpy(),
                               np.tanh(x.detach().numpy() * [1.0, 2.0, 3.0]) + x.detach().numpy())


def test_only_category_ops_have_lanes():
    ops = registry.OPS
    assert all(op.by_category for op in registry.LANES)
    assert ops["mul"] in registry.LANES and ops["to_copy"] not in registry.LANES
    with pytest.raises(ValueError, match="has no lane"):
        registry.lane(ops["to_copy"])
