"""Probes of torch.autograd's API surface (autograd.grad and its arguments, backward, tensor and
Node hooks, saved-tensor hooks, custom Functions, grad modes, anomaly mode, autograd.functional,
gradcheck): each case runs the same code on torch and jitgrad and compares the results, the
warnings and the error type/text. Only cases where jitgrad agrees with torch are kept."""

import math
import re
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        v = np.asarray(x.detach().to("cpu").numpy())
        return ("T", tuple(x.shape), d, v, x.requires_grad)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, dict):
        return ("dict", [(k, _norm(v)) for k, v in x.items()])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (bool, int, float, complex, str, type(None))):
        return (type(x).__name__, x)
    if isinstance(x, type):
        return ("type", x.__name__)
    return ("other", type(x).__name__)


def _eq(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            rtol = 1e-6 if a.dtype.itemsize * (2 if a.dtype.kind == "f" else 1) >= 16 else 1e-5
            return bool(np.allclose(a, b, rtol=rtol, equal_nan=True))
        return bool((a == b).all())
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    return a == b


def _msg(s):
    s = str(s).replace("jitgrad", "torch").replace("PyTorch", "torch")
    # torch's C++ warnings name the source line that raised them
    s = re.sub(r" \(Triggered internally at [^)]*\)", "", s)
    # anomaly mode's "Error detected in ..." warning carries the forward traceback: file paths
    if "Traceback of forward call" in s:
        s = s.split("\n")[0]
    return s


def _internal(w):
    # torch's forward-AD helpers script functions on first use: a warning about torch itself
    return "`torch.jit.script` is deprecated" in str(w.message)


def _run(fn, T):
    log = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = ("ok", _norm(fn(T, log)))
        except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
            r = ("err", type(e).__name__, _msg(e))
    ws = [(x.category.__name__, _msg(x.message)) for x in w if not _internal(x)]
    return r, _norm(log), ws


def E(f):
    """Runs f, returning its result or its error's type and text (compared with torch's)."""
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, _msg(e))


def leaf(T, v, dtype=None):
    return T.tensor(v, dtype=dtype or T.float64, requires_grad=True)


_PROBES = []


def P(fn):  # noqa: N802 (registers one probe)
    _PROBES.append(fn)
    return fn


# ---------------------------------------------------------------- autograd.grad
@P
def grad_basic(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    (g,) = T.autograd.grad((x * x).sum(), x)
    return g, x.grad


@P
def grad_single_input_returns_tuple(T, log):
    x = leaf(T, 2.0)
    r = T.autograd.grad(x**3, x)
    return type(r).__name__, len(r), r[0]


@P
def grad_grad_outputs(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * T.tensor([3.0, 4.0], dtype=T.float64)
    return T.autograd.grad(y, x, grad_outputs=T.tensor([1.0, -2.0], dtype=T.float64))


@P
def grad_grad_outputs_list_none(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad([x.sum()], [x], grad_outputs=[None])


@P
def grad_nonscalar_no_grad_outputs(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x * 2, x)


@P
def grad_twice_no_retain(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x.exp()).sum()
    log.append(T.autograd.grad(y, x))
    return T.autograd.grad(y, x)


@P
def grad_twice_retain(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x.exp()).sum()
    a = T.autograd.grad(y, x, retain_graph=True)
    b = T.autograd.grad(y, x)
    return a, b


@P
def grad_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    (g,) = T.autograd.grad((x**3).sum(), x, create_graph=True)
    (h,) = T.autograd.grad(g.sum(), x)
    return g, h, g.grad_fn is not None


@P
def grad_create_graph_third(T, log):
    x = leaf(T, 0.5)
    y = x.sin()
    (g1,) = T.autograd.grad(y, x, create_graph=True)
    (g2,) = T.autograd.grad(g1, x, create_graph=True)
    (g3,) = T.autograd.grad(g2, x)
    return g1, g2, g3


@P
def grad_unused_error(T, log):
    x = leaf(T, [1.0])
    z = leaf(T, [2.0])
    return T.autograd.grad((x * 2).sum(), [x, z])


@P
def grad_allow_unused(T, log):
    x = leaf(T, [1.0])
    z = leaf(T, [2.0])
    return T.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)


@P
def grad_materialize(T, log):
    x = leaf(T, [1.0])
    z = leaf(T, [2.0, 3.0])
    return T.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)


@P
def grad_materialize_allow_unused_false(T, log):
    x = leaf(T, [1.0])
    z = leaf(T, [2.0])
    return T.autograd.grad((x * 2).sum(), [x, z], allow_unused=False, materialize_grads=True)


@P
def grad_batched(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    y = x**2
    eye = T.eye(3, dtype=T.float64)
    return T.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)


@P
def grad_batched_scalar_out(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x**2).sum()
    v = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    return T.autograd.grad(y, x, grad_outputs=v, is_grads_batched=True)


@P
def grad_input_no_requires_grad(T, log):
    x = leaf(T, [1.0])
    w = T.tensor([2.0], dtype=T.float64)
    return T.autograd.grad((x * w).sum(), [x, w])


@P
def grad_output_no_requires_grad(T, log):
    x = leaf(T, [1.0])
    return T.autograd.grad(T.tensor(1.0), x)


@P
def grad_shape_mismatch(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x * 2, x, grad_outputs=T.ones(3, dtype=T.float64))


@P
def grad_outputs_count_mismatch(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 2
    return T.autograd.grad([y], x, grad_outputs=[T.ones(2), T.ones(2)])


@P
def grad_multiple_outputs_sum(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad([(x * 2).sum(), (x * x).sum()], x)


@P
def grad_wrt_nonleaf(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    return T.autograd.grad(y, [h, x])


@P
def grad_does_not_accumulate(T, log):
    x = leaf(T, [1.0, 2.0])
    T.autograd.grad((x * x).sum(), x)
    return x.grad


@P
def grad_float32(T, log):
    x = T.tensor([0.1, 0.2, 0.3], requires_grad=True)
    return T.autograd.grad(x.tanh().sum(), x)


@P
def grad_0d_and_empty(T, log):
    x = leaf(T, 3.0)
    e = T.zeros(0, 2, dtype=T.float64, requires_grad=True)
    return T.autograd.grad(x * x + e.sum(), [x, e])


@P
def grad_broadcast(T, log):
    a = leaf(T, [[1.0], [2.0]])
    b = leaf(T, [1.0, 2.0, 3.0])
    return T.autograd.grad((a * b).sum(), [a, b])


@P
def grad_only_inputs_warn(T, log):
    x = leaf(T, [1.0])
    return T.autograd.grad(x.sum(), x, only_inputs=False)


@P
def grad_batched_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x**3
    (j,) = T.autograd.grad(
        y, x, T.eye(2, dtype=T.float64), create_graph=True, is_grads_batched=True
    )
    (h,) = T.autograd.grad(j.sum(), x)
    return j, h


@P
def grad_outputs_none_nonscalar(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad([x * 2], [x], grad_outputs=[None])


@P
def grad_int_output(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x.sum(), x, grad_outputs=T.tensor(2))


# ---------------------------------------------------------------- backward
@P
def backward_accumulates(T, log):
    x = leaf(T, [1.0, 2.0])
    (x * x).sum().backward()
    log.append(x.grad.clone())
    (x * 3).sum().backward()
    return x.grad


@P
def backward_gradient_kw(T, log):
    x = leaf(T, [1.0, 2.0])
    (x * x).backward(gradient=T.tensor([1.0, 10.0], dtype=T.float64))
    return x.grad


@P
def backward_nonscalar_error(T, log):
    x = leaf(T, [1.0, 2.0])
    (x * x).backward()


@P
def backward_no_grad_fn(T, log):
    T.tensor([1.0]).sum().backward()


@P
def backward_inputs(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    return x.grad, w.grad


@P
def backward_inputs_single_tensor(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [3.0, 4.0])
    (x * w).sum().backward(inputs=w)
    return x.grad, w.grad


@P
def backward_inputs_empty(T, log):
    x = leaf(T, [1.0, 2.0])
    (x * 2).sum().backward(inputs=[])


@P
def backward_inputs_nonleaf(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    (h * h).sum().backward(inputs=[h])
    return h.grad, x.grad


@P
def backward_twice_error(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x.sin()).sum()
    y.backward()
    y.backward()


@P
def backward_twice_retain(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x.sin()).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


@P
def backward_twice_no_saved(T, log):
    # x * 2 saves no tensor, yet its freed graph still refuses a second backward
    x = leaf(T, [1.0, 2.0])
    y = (x * 2).sum()
    y.backward()
    y.backward()
    return x.grad


@P
def autograd_backward_fn(T, log):
    x = leaf(T, [1.0, 2.0])
    y1 = x * 2
    y2 = (x * x).sum()
    T.autograd.backward([y1, y2], grad_tensors=[T.ones(2, dtype=T.float64), None])
    return x.grad


@P
def autograd_backward_inputs(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [1.0, 2.0])
    T.autograd.backward((x * w).sum(), inputs=(w,))
    return x.grad, w.grad


@P
def backward_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    (x**3).sum().backward(create_graph=True)
    g = x.grad
    log.append(g.requires_grad)
    (gg,) = T.autograd.grad(g.sum(), x)
    return g.detach(), gg


@P
def backward_shared_leaf(T, log):
    x = leaf(T, 2.0)
    y = x * x * x + x
    y.backward()
    return x.grad


@P
def nonleaf_grad_warns(T, log):
    x = leaf(T, [1.0])
    h = x * 2
    h.sum().backward()
    return h.grad


@P
def retain_grad_nonleaf(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    return h.grad, h.retains_grad, h.is_leaf, x.retains_grad


@P
def retain_grad_leaf_noop(T, log):
    x = leaf(T, [1.0])
    x.retain_grad()
    (x * 3).sum().backward()
    return x.grad, x.retains_grad


@P
def retain_grad_no_requires_grad(T, log):
    T.tensor([1.0]).retain_grad()


@P
def retain_grad_twice_accumulate(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    return h.grad


@P
def requires_grad_nonleaf_false(T, log):
    x = leaf(T, [1.0])
    (x * 2).requires_grad_(False)


@P
def requires_grad_nonleaf_true_ok(T, log):
    x = leaf(T, [1.0])
    h = (x * 2).requires_grad_(True)
    return h.requires_grad, h.is_leaf


@P
def requires_grad_nonleaf_attr(T, log):
    x = leaf(T, [1.0])
    h = x * 2
    h.requires_grad = False


@P
def requires_grad_int(T, log):
    T.tensor([1, 2]).requires_grad_()


@P
def requires_grad_int_factory(T, log):
    T.tensor([1, 2], requires_grad=True)


@P
def requires_grad_default_and_flags(T, log):
    x = T.zeros(2)
    a = x.requires_grad
    x.requires_grad_()
    y = x * 2
    return a, x.requires_grad, x.is_leaf, y.is_leaf, y.requires_grad, x.grad_fn


@P
def leaf_inplace_error(T, log):
    x = leaf(T, [1.0])
    x.add_(1)


@P
def leaf_inplace_no_grad_ok(T, log):
    x = leaf(T, [1.0])
    with T.no_grad():
        x.mul_(3)
    return x, x._version, x.is_leaf


@P
def leaf_view_inplace_error(T, log):
    x = leaf(T, [1.0, 2.0])
    x[0] = 5.0


@P
def inplace_saved_error(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 1
    y = h.exp()
    h.add_(1)
    y.sum().backward()


@P
def inplace_saved_output_error(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    y = x.exp()
    y.mul_(2)
    y.sum().backward()


@P
def inplace_saved_2d_error(T, log):
    x = leaf(T, [[1.0, 2.0], [3.0, 4.0]])
    h = x.clone()
    y = h * h
    h.zero_()
    h.add_(1)
    y.sum().backward()


@P
def inplace_not_saved_ok(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 1
    y = h + 3
    h.add_(1)
    y.sum().backward()
    return x.grad, h._version


@P
def version_counter(T, log):
    x = T.zeros(3)
    v = [x._version]
    x.add_(1)
    v.append(x._version)
    x[0] = 2
    v.append(x._version)
    y = x.view(3)
    y.mul_(2)
    v.append((x._version, y._version))
    return v


@P
def grad_assign_wrong_shape(T, log):
    x = leaf(T, [1.0, 2.0])
    x.grad = T.zeros(3, dtype=T.float64)


@P
def grad_assign_wrong_dtype(T, log):
    x = leaf(T, [1.0, 2.0])
    x.grad = T.zeros(2, dtype=T.float32)


@P
def grad_assign_then_accumulate(T, log):
    x = leaf(T, [1.0, 2.0])
    x.grad = T.ones(2, dtype=T.float64)
    (x * 3).sum().backward()
    x.grad = None
    (x * 2).sum().backward()
    return x.grad


@P
def detach_and_detach_(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    d = h.detach()
    h2 = x * 3
    h2.detach_()
    return d.requires_grad, d.is_leaf, h2.requires_grad, h2.is_leaf, h2.grad_fn


@P
def grad_outputs_dtype_mismatch(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x * 2, x, grad_outputs=T.ones(2, dtype=T.float32))


@P
def backward_gradient_wrong_shape(T, log):
    x = leaf(T, [1.0, 2.0])
    (x * 2).backward(T.ones(3, dtype=T.float64))


@P
def backward_scalar_gradient_shape1(T, log):
    x = leaf(T, [1.0, 2.0])
    x.sum().backward(T.ones(1, dtype=T.float64))
    return x.grad


@P
def backward_scalar_gradient_0d(T, log):
    x = leaf(T, [1.0, 2.0])
    x.sum().backward(T.tensor(3.0, dtype=T.float64))
    return x.grad


@P
def backward_gradient_float(T, log):
    x = leaf(T, [1.0, 2.0])
    x.sum().backward(2.0)
    return x.grad


@P
def grad_int_input(T, log):
    x = leaf(T, [1.0, 2.0])
    i = T.tensor([1, 2])
    return T.autograd.grad((x * i).sum(), [x, i])


@P
def grad_x_wrt_x(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x, x, T.tensor([3.0, 4.0], dtype=T.float64))


@P
def grad_same_input_twice(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad((x * x).sum(), [x, x])


@P
def grad_kw_names(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(outputs=(x * x).sum(), inputs=(x,), retain_graph=None)


@P
def grad_create_graph_retains(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x.exp()).sum()
    a = T.autograd.grad(y, x, create_graph=True)
    b = T.autograd.grad(y, x)
    return a[0].detach(), b


@P
def grad_complex_output(T, log):
    x = T.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    return T.autograd.grad((x * x).sum(), x)


@P
def grad_complex_real_out(T, log):
    x = T.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    return T.autograd.grad((x.abs() ** 2).sum(), x)


@P
def backward_complex_real(T, log):
    x = T.tensor([1 + 2j, 3 - 1j], dtype=T.complex128, requires_grad=True)
    (x * x.conj()).real.sum().backward()
    return x.grad


@P
def backward_half(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float16, requires_grad=True)
    (x * x).sum().backward()
    return x.grad


@P
def grad_set_non_tensor(T, log):
    x = leaf(T, [1.0, 2.0])
    x.grad = [1.0, 2.0]


@P
def grad_set_requires_grad_false(T, log):
    x = leaf(T, [1.0, 2.0])
    (x * 2).sum().backward()
    x.requires_grad_(False)
    return x.grad, x.requires_grad


@P
def grad_through_copyslices(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    h = x.clone()
    h[1] = h[0] * 10
    h.sum().backward()
    return x.grad


@P
def variable_legacy(T, log):
    v = T.autograd.Variable(T.tensor([1.0, 2.0]), requires_grad=True)
    (v * v).sum().backward()
    return v.grad, type(v).__name__


@P
def grad_leaf_view(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    v = x[1:]
    return v.is_leaf, v.grad_fn.name(), v._base is x, v.requires_grad


@P
def detach_shares_version(T, log):
    x = leaf(T, [1.0, 2.0])
    d = x.detach()
    d.add_(1)
    return x._version, d._version, x


@P
def detach_inplace_saved_error(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x.exp()
    y.detach().zero_()
    y.sum().backward()


@P
def data_inplace_no_error(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x.exp()
    y.data.zero_()
    y.sum().backward()
    return x.grad, y._version


@P
def backward_on_leaf(T, log):
    x = leaf(T, [1.0, 2.0])
    x.backward(T.tensor([2.0, 3.0], dtype=T.float64))
    return x.grad


@P
def backward_0d_leaf(T, log):
    x = leaf(T, 3.0)
    x.backward()
    return x.grad


@P
def grad_empty_outputs(T, log):
    x = leaf(T, [1.0])
    return T.autograd.grad([], [x])


@P
def grad_empty_inputs(T, log):
    x = leaf(T, [1.0])
    return T.autograd.grad(x.sum(), [])


@P
def grad_is_grads_batched_shape_err(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(
        x * 2, x, grad_outputs=T.ones(2, 3, dtype=T.float64), is_grads_batched=True
    )


@P
def grad_is_grads_batched_allow_unused(T, log):
    x = leaf(T, [1.0, 2.0])
    z = leaf(T, [1.0])
    return T.autograd.grad(
        x * 2,
        [x, z],
        grad_outputs=T.eye(2, dtype=T.float64),
        is_grads_batched=True,
        allow_unused=True,
    )


@P
def grad_is_grads_batched_materialize(T, log):
    x = leaf(T, [1.0, 2.0])
    z = leaf(T, [1.0])
    return T.autograd.grad(
        x * 2,
        [x, z],
        grad_outputs=T.eye(2, dtype=T.float64),
        is_grads_batched=True,
        materialize_grads=True,
    )


@P
def grad_non_tensor_outputs(T, log):
    x = leaf(T, [1.0])
    return T.autograd.grad(3.0, [x])


@P
def grad_retain_graph_false_create_true(T, log):
    x = leaf(T, [1.0])
    y = x.exp().sum()
    T.autograd.grad(y, x, create_graph=True, retain_graph=False)
    return T.autograd.grad(y, x)


@P
def backward_retain_then_inputs_partial(T, log):
    x = leaf(T, [1.0])
    w = leaf(T, [2.0])
    y = (x * w).sum()
    y.backward(inputs=[x], retain_graph=True)
    y.backward(inputs=[w])
    return x.grad, w.grad


@P
def backward_twice_error_view(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x * x)[0]
    y.backward()
    y.backward()


@P
def backward_twice_custom_error_text(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x @ x
    y.backward()
    y.backward()


@P
def leaf_inplace_error_view_text(T, log):
    x = leaf(T, [1.0, 2.0])
    x[:1].mul_(2)


@P
def leaf_out_kwarg(T, log):
    x = leaf(T, [1.0, 2.0])
    T.add(x, 1, out=T.empty(2, dtype=T.float64))


@P
def leaf_out_kwarg_requires_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    o = leaf(T, [0.0, 0.0])
    T.add(x, 1, out=o)


@P
def requires_grad_set_on_view(T, log):
    x = T.ones(3)
    v = x[1:]
    v.requires_grad_()
    return v.requires_grad, x.requires_grad, v.is_leaf


@P
def requires_grad_float64_attr(T, log):
    x = T.ones(2, dtype=T.int64)
    x.requires_grad = True


@P
def is_leaf_after_detach_requires_grad(T, log):
    x = leaf(T, [1.0])
    d = (x * 2).detach().requires_grad_()
    (d * 3).sum().backward()
    return d.is_leaf, d.grad, x.grad


@P
def grad_outputs_tuple(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(
        (x * 2, x * 3), (x,), grad_outputs=(T.ones(2, dtype=T.float64), T.ones(2, dtype=T.float64))
    )


@P
def grad_outputs_float(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x.sum(), x, grad_outputs=2.0)


@P
def zero_grad_then_acc(T, log):
    x = leaf(T, [1.0])
    (x * 2).sum().backward()
    g = x.grad
    x.grad.zero_()
    (x * 5).sum().backward()
    return x.grad, g is x.grad


@P
def requires_grad_returns_self(T, log):
    x = T.ones(2)
    return x.requires_grad_() is x, x.requires_grad_(False) is x, x.requires_grad


@P
def leaf_set_data(T, log):
    x = leaf(T, [1.0, 2.0])
    x.data = T.tensor([5.0, 6.0, 7.0], dtype=T.float64)
    (x * x).sum().backward()
    return x.grad, x._version


@P
def autograd_grad_outputs_not_seq(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad(x * 2, x, grad_outputs=[T.ones(2, dtype=T.float64)])


# ---------------------------------------------------------------- tensor hooks
@P
def hook_modifies_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    x.register_hook(lambda g: g * 10)
    (x * x).sum().backward()
    return x.grad


@P
def hook_returns_none_logs(T, log):
    x = leaf(T, [1.0, 2.0])
    x.register_hook(lambda g: log.append(g.clone()))
    (x * 3).sum().backward()
    return x.grad


@P
def hook_remove(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x.register_hook(lambda g: g * 10)
    h.remove()
    (x * x).sum().backward()
    return x.grad


@P
def hook_order_chain(T, log):
    x = leaf(T, [1.0])

    def a(g):
        log.append(("a", g.tolist()))
        return g + 1

    def b(g):
        log.append(("b", g.tolist()))
        return g * 2

    x.register_hook(a)
    x.register_hook(b)
    (x * 3).sum().backward()
    return x.grad


@P
def hook_nonleaf(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: g * 100)
    (h * h).sum().backward()
    return x.grad


@P
def hook_nonleaf_retain_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 100)
    (h * 1).sum().backward()
    return h.grad, x.grad


@P
def hook_no_requires_grad(T, log):
    T.tensor([1.0]).register_hook(lambda g: g)


@P
def hook_wrong_shape(T, log):
    x = leaf(T, [1.0, 2.0])
    x.register_hook(lambda g: T.ones(3, dtype=T.float64))
    (x * 2).sum().backward()


@P
def hook_with_autograd_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: g * 5)
    return T.autograd.grad((h * 3).sum(), x)


@P
def hook_handle_ctx(T, log):
    x = leaf(T, [1.0])
    with x.register_hook(lambda g: g * 7):
        (x * 1).sum().backward()
    (x * 1).sum().backward()
    return x.grad


@P
def post_acc_hook(T, log):
    x = leaf(T, [1.0, 2.0])

    def hk(t):
        log.append((t is x, t.grad.tolist()))

    x.register_post_accumulate_grad_hook(hk)
    (x * x).sum().backward()
    (x * 1).sum().backward()
    return x.grad


@P
def post_acc_hook_modify_inplace(T, log):
    x = leaf(T, [1.0, 2.0])

    def hk(t):
        t.grad.mul_(0.5)

    x.register_post_accumulate_grad_hook(hk)
    (x * 4).sum().backward()
    return x.grad


@P
def post_acc_hook_remove(T, log):
    x = leaf(T, [1.0])
    h = x.register_post_accumulate_grad_hook(lambda t: log.append(1))
    h.remove()
    (x * 2).sum().backward()
    return x.grad


@P
def post_acc_hook_nonleaf(T, log):
    x = leaf(T, [1.0])
    (x * 2).register_post_accumulate_grad_hook(lambda t: None)


@P
def post_acc_hook_autograd_grad_not_called(T, log):
    x = leaf(T, [1.0])
    x.register_post_accumulate_grad_hook(lambda t: log.append("called"))
    return T.autograd.grad((x * 2).sum(), x)


# ---------------------------------------------------------------- Node API and hooks
@P
def grad_fn_names(T, log):
    x = leaf(T, [1.0, 2.0])
    a = x * 2
    b = a + 1
    c = b.exp()
    d = c.sum()
    e = d.neg()
    return [t.grad_fn.name() for t in (a, b, c, d, e)]


@P
def grad_fn_next_functions(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [3.0, 4.0])
    y = x * w
    nf = y.grad_fn.next_functions
    return (
        len(nf),
        [(type(f).__name__, i) for f, i in nf],
        nf[0][0].variable is x,
        nf[1][0].variable is w,
    )


@P
def grad_fn_next_functions_const(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * T.ones(2, dtype=T.float64)
    z = y + 1
    return (
        [(f is None, i) for f, i in y.grad_fn.next_functions],
        [(None if f is None else f.name(), i) for f, i in z.grad_fn.next_functions],
    )


@P
def grad_fn_next_functions_chain(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x.sin().cos()
    f = y.grad_fn
    out = []
    while f is not None:
        out.append(type(f).__name__)
        f = f.next_functions[0][0] if f.next_functions else None
    return out


@P
def grad_fn_multi_output_index(T, log):
    x = leaf(T, [[1.0, 2.0], [3.0, 4.0]])
    a, b = x.unbind(0)
    y = a + b
    return [(f.name(), i) for f, i in y.grad_fn.next_functions]


@P
def grad_fn_leaf_none(T, log):
    x = leaf(T, [1.0])
    return x.grad_fn, T.tensor([1.0]).grad_fn, (x * 1).detach().grad_fn


@P
def node_hook(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3
    z = y.sum()

    def hk(gi, go):
        log.append((len(gi), len(go), gi[0].tolist(), go[0].tolist()))

    y.grad_fn.register_hook(hk)
    z.backward()
    return x.grad


@P
def node_hook_replace_grad_inputs(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,) + tuple(gi[1:]))
    y.sum().backward()
    return x.grad


@P
def node_prehook(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3

    def pre(go):
        log.append((type(go).__name__, go[0].tolist()))
        return (go[0] * 2,)

    y.grad_fn.register_prehook(pre)
    y.sum().backward()
    return x.grad


@P
def node_hook_remove(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3
    h = y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    h.remove()
    y.sum().backward()
    return x.grad


@P
def node_hook_accumulate_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
    acc.register_hook(lambda gi, go: log.append(("post", len(gi), go[0].tolist())))
    y.sum().backward()
    return type(acc).__name__, x.grad


@P
def node_hook_wrong_count(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3
    y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    y.sum().backward()


@P
def grad_fn_metadata(T, log):
    x = leaf(T, [1.0])
    y = x * 2
    y.grad_fn.metadata["k"] = 1
    return dict(y.grad_fn.metadata), type(y.grad_fn.metadata).__name__


@P
def grad_fn_saved_attrs(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [3.0, 4.0])
    y = x * w
    z = x.pow(3)
    return y.grad_fn._saved_self, y.grad_fn._saved_other, z.grad_fn._saved_exponent


@P
def grad_fn_call_directly(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [3.0, 4.0])
    y = x * w
    return y.grad_fn(T.ones(2, dtype=T.float64))


@P
def hook_removable_handle(T, log):
    x = leaf(T, [1.0])
    h = x.register_hook(lambda g: g)
    h2 = x.register_hook(lambda g: g)
    return type(h).__name__, h2.id > h.id


@P
def hook_raises(T, log):
    x = leaf(T, [1.0])

    def hk(g):
        raise ValueError("boom hook")

    x.register_hook(hk)
    (x * 2).sum().backward()


@P
def hook_on_view(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    h = x * 1
    v = h[1:]
    v.register_hook(lambda g: g * 3)
    (v * v).sum().backward()
    return x.grad


@P
def hook_on_output_used_twice(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: log.append(g.tolist()))
    (h * h + h).sum().backward()
    return x.grad


@P
def hook_registered_after_backward_first(T, log):
    x = leaf(T, [1.0])
    y = x * 2
    y.sum().backward(retain_graph=True)
    y.register_hook(lambda g: g * 4)
    y.sum().backward()
    return x.grad


@P
def node_isinstance(T, log):
    x = leaf(T, [1.0])
    y = x * 2
    return (
        isinstance(y.grad_fn, T.autograd.graph.Node),
        isinstance(y.grad_fn.next_functions[0][0], T.autograd.graph.Node),
        isinstance(_square(T).apply(x).grad_fn, T.autograd.graph.Node),
    )


@P
def multi_grad_hook(T, log):
    a = leaf(T, [1.0])
    b = leaf(T, [2.0])
    c = leaf(T, [3.0])

    def hk(grads):
        log.append([None if g is None else g.tolist() for g in grads])

    T.autograd.graph.register_multi_grad_hook((a, b, c), hk)
    (a * b).sum().backward()
    return a.grad, b.grad


@P
def multi_grad_hook_any(T, log):
    a = leaf(T, [1.0])
    b = leaf(T, [2.0])

    def hk(g):
        log.append(g.tolist())

    T.autograd.graph.register_multi_grad_hook((a, b), hk, mode="any")
    (a * b).sum().backward()
    return a.grad


@P
def increment_version(T, log):
    x = T.ones(2)
    v0 = x._version
    T.autograd.graph.increment_version(x)
    return v0, x._version


@P
def grad_accumulate_dtype_layout(T, log):
    x = leaf(T, [[1.0, 2.0]])
    (x.t() * 2).sum().backward()
    return x.grad, x.grad.is_contiguous()


@P
def grad_fn_names_many(T, log):
    x = leaf(T, [[1.0, 2.0], [3.0, 4.0]])
    ops = [
        x.view(4),
        x.t(),
        x[0],
        x[:, 1:],
        x.expand(3, 2, 2),
        x[[0, 1]],
        x.clone(),
        x.unsqueeze(0),
        x.permute(1, 0),
        x @ x,
        x.mean(),
        x.sum(1),
        x.reshape(-1),
        x.relu(),
        x.sigmoid(),
        x.tanh(),
        x.log(),
        x.abs(),
        x.max(),
        x.amax(1),
        x.transpose(0, 1),
        x.flatten(),
        x.squeeze(),
        x.pow(2),
        x.sqrt(),
        x / 2,
        x - 1,
        T.cat([x, x]),
        T.stack([x, x]),
        x.softmax(-1),
        x.log_softmax(-1),
        x.norm(),
        x.to(T.float32),
        x.float(),
        x.narrow(0, 0, 1),
        x.masked_fill(x > 2, 0.0),
        T.where(x > 2, x, 0.0),
        x.gather(0, T.tensor([[0, 1]])),
        x.cumsum(0),
        x.prod(),
        x.var(),
        x.std(),
        x.exp(),
        x.neg(),
        x.clamp(0, 2),
        x.split(1)[0],
        x.chunk(2)[1],
        x.unbind()[0],
        T.nn.functional.linear(x, x),
        T.addmm(x, x, x),
        x.matmul(x[0]),
        x.flatten().dot(x.flatten()),
        x.min(dim=1)[0],
        x.sort()[0],
        x.topk(1)[0],
        x.repeat(2, 1),
        x.flip(0),
        x.roll(1),
        x.diagonal(),
        x.trace(),
        x.triu(),
        x.tril(),
        x.max(0).values,
        x.sum(dtype=T.float32),
        x * 2,
        2 * x,
        x + x,
        x.sin(),
        x.cos(),
        x.mul(x),
        x.div(x),
        x.sub(x, alpha=2),
        x.index_select(0, T.tensor([1])),
        x.squeeze(0),
        x.unfold(0, 1, 1),
        x.logsumexp(0),
        x.mean(0, keepdim=True),
        x.sum((0, 1)),
        x.add(1, alpha=2),
        x.rsqrt(),
        x.reciprocal(),
        T.nn.functional.mse_loss(x, x.detach() * 2),
        T.nn.functional.gelu(x),
        x.erf(),
    ]
    return [o.grad_fn.name() for o in ops]


@P
def gradient_edge(T, log):
    x = leaf(T, [1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    e = T.autograd.graph.get_gradient_edge(h)
    r = T.autograd.grad(y, e)
    return r, type(e).__name__, e.node.name(), e.output_nr


@P
def accumulate_next_functions(T, log):
    x = leaf(T, [1.0])
    acc = (x * 2).grad_fn.next_functions[0][0]
    return acc.next_functions, type(acc).__name__


@P
def node_hook_custom_fn(T, log):
    x = leaf(T, [1.0, 2.0])
    y = _square(T).apply(x)
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: log.append((gi[0].tolist(), go[0].tolist())))
    y.sum().backward()
    return x.grad


@P
def node_prehook_none(T, log):
    x = leaf(T, [1.0, 2.0])
    y = x * 3
    y.grad_fn.register_prehook(lambda go: None)
    y.sum().backward()
    return x.grad


@P
def node_hook_wrong_count_post(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [1.0, 2.0])
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    y.sum().backward()


@P
def node_hook_order_with_tensor_hook(T, log):
    x = leaf(T, [1.0])
    y = x * 3
    z = y * 2
    y.register_hook(lambda g: log.append("tensor") or g)
    y.grad_fn.register_prehook(lambda go: log.append("pre") or None)
    y.grad_fn.register_hook(lambda gi, go: log.append("post") or None)
    z.sum().backward()
    return x.grad


@P
def hook_on_leaf_and_post_acc_order(T, log):
    x = leaf(T, [1.0])
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
    x.register_hook(lambda g: log.append(("hook", g.tolist())) or g * 2)
    (x * 3).sum().backward()
    return x.grad


@P
def hook_leaf_grad_replaced_not_inplace(T, log):
    x = leaf(T, [1.0])
    x.grad = T.tensor([5.0], dtype=T.float64)
    g0 = x.grad
    (x * 3).sum().backward()
    return g0, x.grad, g0 is x.grad


# ---------------------------------------------------------------- saved tensor hooks
@P
def saved_hooks_pack_unpack(T, log):
    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
    log.append("bw")
    y.backward()
    return x.grad


@P
def saved_hooks_modify(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
        y = (x * x).sum()
    y.backward()
    return x.grad


@P
def saved_hooks_not_applied_outside(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append("p") or t, lambda t: t):
        pass
    (x * x).sum().backward()
    return x.grad, log


@P
def saved_hooks_nested(T, log):
    x = leaf(T, [1.0])
    outer = T.autograd.graph.saved_tensors_hooks(lambda t: log.append("o") or t, lambda t: t)
    inner = T.autograd.graph.saved_tensors_hooks(lambda t: log.append("i") or t, lambda t: t)
    with outer:
        with inner:
            y = x * x
        z = x.sin()
    (y + z).sum().backward()
    return x.grad


@P
def save_on_cpu(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    y.backward()
    return x.grad


@P
def save_on_cpu_pin(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.save_on_cpu(pin_memory=False):
        y = x.pow(2).sum()
    y.backward()
    return x.grad


@P
def disable_saved_hooks(T, log):
    with T.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass


@P
def saved_hooks_custom_function(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(T, [1.0, 3.0])
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append("p") or t, lambda t: t):
        y = F.apply(x)
    y.sum().backward()
    return x.grad


@P
def saved_tensors_hooks_view(T, log):
    x = leaf(T, [1.0, 2.0, 3.0])
    with T.autograd.graph.saved_tensors_hooks(
        lambda t: log.append(tuple(t.shape)) or t, lambda t: t
    ):
        y = (x[1:] ** 2).sum()
    y.backward()
    return x.grad


@P
def saved_hooks_unpack_called_twice(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: log.append("u") or t):
        y = (x.exp()).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


@P
def saved_hooks_pack_non_tensor(T, log):
    x = leaf(T, [1.0, 2.0])
    store = []

    def pack(t):
        store.append(t)
        return len(store) - 1

    def unpack(i):
        return store[i]

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    y.backward()
    return x.grad, len(store)


@P
def saved_hooks_unpack_wrong(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = (x * x).sum()
    y.backward()


@P
def saved_hooks_pack_called_per_saved(T, log):
    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [3.0, 4.0])
    seen = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t.tolist()) or t, lambda t: t):
        y = (x * w).sum()
        z = (x + w).sum()
        x.sin()
    return y, z, sorted(seen)


# ---------------------------------------------------------------- custom Function
def _square(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return Square


@P
def fn_basic(T, log):
    x = leaf(T, [1.0, 2.0])
    y = _square(T).apply(x)
    y.sum().backward()
    return y, x.grad, y.grad_fn.name(), y.requires_grad


@P
def fn_needs_input_grad(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            log.append(ctx.needs_input_grad)
            return g, g, None

    a = leaf(T, [1.0])
    b = T.tensor([2.0], dtype=T.float64)
    F.apply(a, b, 3).sum().backward()
    return a.grad


@P
def fn_mark_dirty(T, log):
    class AddOne(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = leaf(T, [1.0, 2.0])
    h = a.clone()
    y = AddOne.apply(h)
    y.sum().backward()
    return y is h, h, a.grad, y.grad_fn.name(), h._version


@P
def fn_mark_dirty_leaf_error(T, log):
    class AddOne(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    AddOne.apply(leaf(T, [1.0]))


@P
def fn_mark_non_differentiable(T, log):
    class SortIdx(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            (i,) = ctx.saved_tensors
            log.append(gi)
            g = T.zeros_like(gv)
            g[i] = gv
            return g

    x = leaf(T, [3.0, 1.0, 2.0])
    v, i = SortIdx.apply(x)
    (v * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
    return v.requires_grad, i.requires_grad, x.grad


@P
def fn_materialize_grads_default(T, log):
    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log.append((g1.tolist(), g2.tolist()))
            return g1 * 2 + g2 * 3

    x = leaf(T, [1.0])
    a, b = Two.apply(x)
    a.sum().backward()
    return x.grad


@P
def fn_set_materialize_false(T, log):
    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log.append((g1 is None, g2 is None))
            out = 0
            if g1 is not None:
                out = out + g1 * 2
            if g2 is not None:
                out = out + g2 * 3
            return out

    x = leaf(T, [1.0])
    a, b = Two.apply(x)
    b.sum().backward()
    return x.grad


@P
def fn_once_differentiable(T, log):
    from torch.autograd.function import once_differentiable as od_t

    from jitgrad.autograd.function import once_differentiable as od_j

    od = od_t if T is torch else od_j

    class Sq(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @od
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log.append((g.requires_grad, T.is_grad_enabled()))
            return 2 * x * g

    x = leaf(T, [1.0, 2.0])
    y = Sq.apply(x).sum()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    log.append(g.tolist())
    log.append(g.requires_grad)
    T.autograd.grad(g.sum(), x)


@P
def fn_setup_context(T, log):
    class Mul(T.autograd.Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            a, b = inputs
            ctx.save_for_backward(a, b)
            log.append(type(output).__name__)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = leaf(T, [1.0, 2.0])
    b = leaf(T, [3.0, 5.0])
    y = Mul.apply(a, b)
    y.sum().backward()
    return y, a.grad, b.grad


@P
def fn_double_backward(T, log):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    x = leaf(T, [1.0, 2.0])
    (g,) = T.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = T.autograd.grad(g.sum(), x)
    return g, h


@P
def fn_wrong_grad_count(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return (g,)

    F.apply(leaf(T, [1.0]), leaf(T, [2.0])).sum().backward()


@P
def fn_extra_none_grads_ok(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = leaf(T, [1.0])
    F.apply(x).sum().backward()
    return x.grad


@P
def fn_wrong_grad_shape(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return T.ones(3, dtype=T.float64)

    F.apply(leaf(T, [1.0, 2.0])).sum().backward()


@P
def fn_grad_for_nondiff_input(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    x = leaf(T, [1.0])
    F.apply(x, 3).sum().backward()
    return x.grad


@P
def fn_save_non_tensor(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, 3)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g

    F.apply(leaf(T, [1.0]))


@P
def fn_save_none(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, None)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, n = ctx.saved_tensors
            log.append(n)
            return g * 2

    x = leaf(T, [1.0])
    F.apply(x).sum().backward()
    return x.grad


@P
def fn_saved_freed(T, log):
    Sq = _square(T)
    x = leaf(T, [1.0])
    y = Sq.apply(x)
    y.sum().backward()
    return y.grad_fn.saved_tensors


@P
def fn_ctx_attrs(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, scale):
            ctx.scale = scale
            ctx.shape = a.shape
            return a * scale

        @staticmethod
        def backward(ctx, g):
            log.append((ctx.scale, list(ctx.shape)))
            return g * ctx.scale, None

    x = leaf(T, [1.0, 2.0])
    F.apply(x, 4.0).sum().backward()
    return x.grad


@P
def fn_no_grad_inside(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            log.append(T.is_grad_enabled())
            return a * 2

        @staticmethod
        def backward(ctx, g):
            log.append(T.is_grad_enabled())
            return g * 2

    x = leaf(T, [1.0])
    y = F.apply(x)
    y.sum().backward()
    return x.grad


@P
def fn_under_no_grad(T, log):
    Sq = _square(T)
    x = leaf(T, [2.0])
    with T.no_grad():
        y = Sq.apply(x)
    return y, y.grad_fn


@P
def fn_no_requires_grad_input(T, log):
    y = _square(T).apply(T.tensor([2.0]))
    return y, y.grad_fn


@P
def fn_returns_input(T, log):
    class Ident(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = leaf(T, [1.0, 2.0])
    y = Ident.apply(x)
    y.sum().backward()
    return y is x, y.is_leaf, y.grad_fn.name(), x.grad


@P
def fn_multiple_outputs_tuple(T, log):
    class Split(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1, x * 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga + gb * 2

    x = leaf(T, [1.0, 2.0])
    a, b = Split.apply(x)
    (a * b).sum().backward()
    return a, b, x.grad, a.grad_fn is b.grad_fn


@P
def fn_returns_non_tensor(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 7

        @staticmethod
        def backward(ctx, g, _):
            return g * 2

    x = leaf(T, [1.0])
    y, k = F.apply(x)
    y.sum().backward()
    return k, x.grad


@P
def fn_jvp(T, log):
    class Sq(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            raise NotImplementedError

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 2 * x * t

    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        x = fwAD.make_dual(
            T.tensor([1.0, 3.0], dtype=T.float64), T.tensor([1.0, 0.5], dtype=T.float64)
        )
        y = Sq.apply(x)
        p, t = fwAD.unpack_dual(y)
        return p, t


@P
def fn_vjp_alias(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def vjp(ctx, g):
            return g * 3

    x = leaf(T, [1.0, 2.0])
    F.apply(x).sum().backward()
    return x.grad


@P
def fn_backward_not_implemented(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

    x = leaf(T, [1.0, 2.0])
    F.apply(x).sum().backward()


@P
def fn_forward_not_implemented(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def backward(ctx, g):
            return g

    F.apply(leaf(T, [1.0]))


@P
def fn_backward_returns_none(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return None

    x = leaf(T, [1.0, 2.0])
    w = leaf(T, [1.0, 1.0])
    (F.apply(x) + w).sum().backward()
    return x.grad, w.grad


@P
def fn_kwargs_apply(T, log):
    Sq = _square(T)
    Sq.apply(x=leaf(T, [1.0]))


@P
def fn_backward_twice_saved(T, log):
    Sq = _square(T)
    x = leaf(T, [1.0])
    y = Sq.apply(x).sum()
    y.backward()
    y.backward()


@P
def fn_grad_dtype_cast(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).float()

    x = leaf(T, [1.0, 2.0])
    F.apply(x).sum().backward()
    return x.grad


@P
def fn_grad_broadcast_reduce(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.expand(3, 2)

    x = leaf(T, [1.0, 2.0])
    F.apply(x).sum().backward()


@P
def fn_ctx_needs_input_grad_tuple(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            log.append(ctx.needs_input_grad)
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    a = leaf(T, [1.0])
    b = T.tensor([1.0], dtype=T.float64)
    F.apply(a, b, "s").sum().backward()
    return a.grad


@P
def fn_mark_non_diff_backward_request(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            o = x * 2
            ctx.mark_non_differentiable(o)
            return o

        @staticmethod
        def backward(ctx, g):
            return g

    y = F.apply(leaf(T, [1.0]))
    y.sum().backward()


@P
def fn_save_output_then_inplace(T, log):
    class Exp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    x = leaf(T, [1.0])
    y = Exp.apply(x)
    y.mul_(2)
    y.sum().backward()


@P
def fn_save_output_ok(T, log):
    class Exp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    x = leaf(T, [0.0, 1.0])
    Exp.apply(x).sum().backward()
    return x.grad


@P
def fn_saved_input_inplace(T, log):
    Sq = _square(T)
    x = leaf(T, [1.0])
    h = x.clone()
    y = Sq.apply(h)
    h.add_(1)
    y.sum().backward()


@P
def fn_view_output(T, log):
    class V(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g.view(2, 2) * 2

    x = leaf(T, [[1.0, 2.0], [3.0, 4.0]])
    y = V.apply(x)
    y.sum().backward()
    return x.grad, y._base is x


@P
def fn_legacy_instance(T, log):
    class F(T.autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, g):
            return g

    F()(leaf(T, [1.0]))


@P
def fn_fresh_output(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return T.ones(2, dtype=T.float64)

        @staticmethod
        def backward(ctx, g):
            return g * 7

    x = leaf(T, [1.0, 2.0])
    y = F.apply(x)
    y.sum().backward()
    return y.requires_grad, x.grad


@P
def fn_save_twice(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x)
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            log.append(len(ctx.saved_tensors))
            (w,) = ctx.saved_tensors
            return g * w, None

    x = leaf(T, [1.0])
    F.apply(x, T.tensor([5.0], dtype=T.float64)).sum().backward()
    return x.grad


@P
def fn_backward_raises(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad bw")

    F.apply(leaf(T, [1.0])).sum().backward()


@P
def fn_backward_raises_anomaly(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad bw")

    with T.autograd.detect_anomaly():
        F.apply(leaf(T, [1.0])).sum().backward()


@P
def fn_needs_input_grad_in_forward_nograd(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            log.append(ctx.needs_input_grad)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    F.apply(T.tensor([1.0]))
    with T.no_grad():
        F.apply(leaf(T, [1.0]))


@P
def fn_vmap_staticmethod_setup(T, log):
    class Mul(T.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a):
            return a * 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf(T, [1.0, 2.0])
    y = Mul.apply(x)
    y.sum().backward()
    return x.grad, y.grad_fn.name()


@P
def fwd_ad_basic(T, log):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        x = fwAD.make_dual(
            T.tensor([1.0, 2.0], dtype=T.float64), T.tensor([1.0, 0.0], dtype=T.float64)
        )
        y = x.sin() * x
        p, t = fwAD.unpack_dual(y)
        return p, t, type(fwAD.unpack_dual(y)).__name__


@P
def fwd_ad_no_level(T, log):
    fwAD = T.autograd.forward_ad
    fwAD.make_dual(T.ones(2), T.ones(2))


@P
def fwd_ad_shape_mismatch(T, log):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        fwAD.make_dual(T.ones(2), T.ones(3))


@P
def fwd_ad_unpack_plain(T, log):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        r = fwAD.unpack_dual(T.ones(2))
        return r.primal, r.tangent


@P
def fn_same_tensor_twice(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            return y, y

        @staticmethod
        def backward(ctx, g1, g2):
            log.append((g1.tolist(), g2.tolist()))
            return (g1 + g2) * 2

    x = leaf(T, [1.0])
    a, b = F.apply(x)
    (a * 3 + b).sum().backward()
    return a is b, x.grad


@P
def fn_materialize_false_nondiff(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            i = x.argmax()
            ctx.mark_non_differentiable(i)
            return x * 2, i

        @staticmethod
        def backward(ctx, g, gi):
            log.append((g is None, gi is None))
            return g * 2

    x = leaf(T, [1.0, 3.0])
    y, i = F.apply(x)
    y.sum().backward()
    return x.grad, i


@P
def fn_once_diff_grad_enabled(T, log):
    from torch.autograd.function import once_differentiable as od_t
    from jitgrad.autograd.function import once_differentiable as od_j

    od = od_t if T is torch else od_j

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @od
        def backward(ctx, g):
            log.append((T.is_grad_enabled(), g.requires_grad))
            return g * 2

    x = leaf(T, [1.0])
    F.apply(x).sum().backward()
    return x.grad


@P
def fn_mark_dirty_missing(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf(T, [1.0])
    h = x.clone()
    y = F.apply(h)
    y.sum().backward()
    return y, x.grad, h._version


@P
def fn_input_returned_nondiff_view(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[0]

        @staticmethod
        def backward(ctx, g):
            return T.ones(2, dtype=T.float64) * g

    x = leaf(T, [1.0, 2.0])
    y = F.apply(x)
    y.backward()
    return x.grad, y.grad_fn.name()


# ---------------------------------------------------------------- grad modes
@P
def no_grad_ctx(T, log):
    x = leaf(T, [1.0])
    with T.no_grad():
        y = x * 2
        log.append(T.is_grad_enabled())
    log.append(T.is_grad_enabled())
    return y.requires_grad, y.grad_fn


@P
def no_grad_decorator(T, log):
    @T.no_grad()
    def f(x):
        log.append(T.is_grad_enabled())
        return x * 2

    y = f(leaf(T, [1.0]))
    return y.requires_grad, f.__name__


@P
def no_grad_decorator_bare(T, log):
    @T.no_grad
    def f(x):
        return x * 2

    return f(leaf(T, [1.0])).requires_grad


@P
def enable_grad_inside_no_grad(T, log):
    x = leaf(T, [1.0])
    with T.no_grad():
        with T.enable_grad():
            y = x * 2
        z = x * 2
    return y.requires_grad, z.requires_grad


@P
def enable_grad_decorator(T, log):
    @T.enable_grad()
    def f(x):
        return x * 2

    with T.no_grad():
        y = f(leaf(T, [1.0]))
    return y.requires_grad


@P
def set_grad_enabled_fn(T, log):
    x = leaf(T, [1.0])
    T.set_grad_enabled(False)
    try:
        y = x * 2
        log.append(T.is_grad_enabled())
    finally:
        T.set_grad_enabled(True)
    return y.requires_grad, T.is_grad_enabled()


@P
def set_grad_enabled_ctx(T, log):
    x = leaf(T, [1.0])
    with T.set_grad_enabled(False):
        a = x * 2
        with T.set_grad_enabled(True):
            b = x * 2
    return a.requires_grad, b.requires_grad, T.is_grad_enabled()


@P
def set_grad_enabled_decorator(T, log):
    @T.set_grad_enabled(False)
    def f(x):
        return x * 2

    y = f(leaf(T, [1.0]))
    return y.requires_grad, T.is_grad_enabled()


@P
def no_grad_generator(T, log):
    @T.no_grad()
    def gen(x):
        for i in range(2):
            yield (x * i).requires_grad, T.is_grad_enabled()

    return list(gen(leaf(T, [1.0]))), T.is_grad_enabled()


@P
def no_grad_exception_restores(T, log):
    try:
        with T.no_grad():
            raise KeyError("k")
    except KeyError:
        pass
    return T.is_grad_enabled()


@P
def no_grad_factory_requires_grad(T, log):
    with T.no_grad():
        x = T.ones(2, requires_grad=True)
    return x.requires_grad, x.is_leaf


@P
def inference_mode_ctx(T, log):
    x = leaf(T, [1.0])
    with T.inference_mode():
        y = x * 2
        log.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))
    return y.requires_grad, y.is_inference(), x.is_inference(), T.is_inference_mode_enabled()


@P
def inference_mode_false(T, log):
    x = leaf(T, [1.0])
    with T.inference_mode(False):
        y = x * 2
    return y.requires_grad, y.is_inference()


@P
def inference_mode_decorator(T, log):
    @T.inference_mode()
    def f(x):
        return x * 2

    y = f(leaf(T, [1.0]))
    return y.requires_grad, y.is_inference()


@P
def inference_mode_bare_decorator(T, log):
    @T.inference_mode
    def f(x):
        return x * 2

    y = f(leaf(T, [1.0]))
    return y.requires_grad, y.is_inference()


@P
def inference_tensor_in_autograd(T, log):
    with T.inference_mode():
        t = T.ones(2, dtype=T.float64)
    x = leaf(T, [1.0, 2.0])
    return (x * t).sum()


@P
def inference_tensor_inplace_outside(T, log):
    with T.inference_mode():
        t = T.ones(2)
    t.add_(1)


@P
def inference_tensor_clone_ok(T, log):
    with T.inference_mode():
        t = T.ones(2, dtype=T.float64)
    c = t.clone()
    x = leaf(T, [1.0, 2.0])
    (x * c).sum().backward()
    return c.is_inference(), x.grad


@P
def inference_tensor_requires_grad(T, log):
    with T.inference_mode():
        t = T.ones(2)
    t.requires_grad_()


@P
def grad_mode_classes(T, log):
    return (
        isinstance(T.no_grad(), T.autograd.grad_mode.no_grad),
        T.autograd.no_grad is T.no_grad,
        T.autograd.enable_grad is T.enable_grad,
        T.autograd.set_grad_enabled is T.set_grad_enabled,
        T.autograd.inference_mode is T.inference_mode,
    )


@P
def grad_outputs_second_no_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    return T.autograd.grad([x.sum(), T.tensor(1.0, dtype=T.float64)], x)


@P
def backward_under_no_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x * x).sum()
    with T.no_grad():
        y.backward()
    return x.grad


@P
def grad_under_no_grad(T, log):
    x = leaf(T, [1.0, 2.0])
    y = (x * x).sum()
    with T.no_grad():
        return T.autograd.grad(y, x, create_graph=True)


@P
def enable_grad_in_inference(T, log):
    x = leaf(T, [1.0])
    with T.inference_mode():
        with T.enable_grad():
            y = x * 2
            log.append(T.is_grad_enabled())
    return y.requires_grad, y.is_inference()


@P
def no_grad_in_inference_false(T, log):
    x = leaf(T, [1.0])
    with T.inference_mode():
        with T.inference_mode(False):
            y = x * 2
            log.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))
    return y.requires_grad, y.is_inference()


@P
def inference_view_of_normal(T, log):
    x = T.ones(3)
    with T.inference_mode():
        v = x[1:]
        w = x * 2
    return v.is_inference(), w.is_inference()


@P
def grad_enabled_thread(T, log):
    import threading

    out = []
    with T.no_grad():
        t = threading.Thread(target=lambda: out.append(T.is_grad_enabled()))
        t.start()
        t.join()
    return out


@P
def no_grad_class_decorator_warn(T, log):
    @T.no_grad()
    class C:
        pass

    return C.__name__ if isinstance(C, type) else type(C).__name__


@P
def set_grad_enabled_repr_state(T, log):
    a = T.set_grad_enabled(False)
    r = T.is_grad_enabled()
    T.set_grad_enabled(True)
    return type(a).__name__, r


@P
def inference_mode_int_arg(T, log):
    with T.inference_mode(mode=True):
        return T.is_inference_mode_enabled()


@P
def no_grad_op_is_leaf(T, log):
    x = leaf(T, [1.0])
    with T.no_grad():
        y = x * 2
    return y.is_leaf, y.requires_grad


@P
def saved_hooks_inference(T, log):
    x = T.ones(2)
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append("p") or t, lambda t: t):
        with T.inference_mode():
            y = x * x
    return y.is_inference()


@P
def saved_hooks_no_grad_no_pack(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append("p") or t, lambda t: t):
        with T.no_grad():
            y = x * x
    return y


@P
def retain_grad_in_no_grad(T, log):
    x = leaf(T, [1.0])
    h = x * 2
    with T.no_grad():
        h.retain_grad()
    (h * 3).sum().backward()
    return h.grad


@P
def inference_mode_nested_restore(T, log):
    with T.inference_mode():
        with T.inference_mode(False):
            pass
        a = T.is_inference_mode_enabled()
    return a, T.is_inference_mode_enabled(), T.is_grad_enabled()


@P
def inference_tensor_grad_access(T, log):
    with T.inference_mode():
        x = T.ones(2, requires_grad=True)
    return x.requires_grad, x.is_leaf, x.is_inference()


@P
def inference_tensor_view_outside(T, log):
    with T.inference_mode():
        x = T.ones(3)
    v = x[1:]
    return v.is_inference()


@P
def inference_normal_inplace_inside(T, log):
    x = T.ones(3)
    with T.inference_mode():
        x.add_(1)
    return x, x._version


@P
def inference_mode_stacked_decorator_gen(T, log):
    @T.inference_mode()
    def gen():
        yield T.is_inference_mode_enabled()
        yield T.is_grad_enabled()

    return list(gen()), T.is_inference_mode_enabled()


# ---------------------------------------------------------------- anomaly mode
@P
def anomaly_nan(T, log):
    x = leaf(T, [0.0, 1.0])
    with T.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        y.backward()


@P
def anomaly_no_nan(T, log):
    x = leaf(T, [1.0, 4.0])
    with T.autograd.detect_anomaly():
        x.sqrt().sum().backward()
    return x.grad


@P
def anomaly_check_nan_false(T, log):
    x = leaf(T, [0.0, 1.0])
    with T.autograd.detect_anomaly(check_nan=False):
        (x.sqrt() * 0).sum().backward()
    return x.grad


@P
def anomaly_flags(T, log):
    a = [T.is_anomaly_enabled()]
    T.autograd.set_detect_anomaly(True)
    a.append(T.is_anomaly_enabled())
    a.append(T.is_anomaly_check_nan_enabled())
    T.autograd.set_detect_anomaly(False)
    a.append(T.is_anomaly_enabled())
    with T.autograd.set_detect_anomaly(True, check_nan=False):
        a.append((T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()))
    a.append(T.is_anomaly_enabled())
    return a


@P
def anomaly_custom_function_nan(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = leaf(T, [1.0])
    with T.autograd.detect_anomaly():
        F.apply(x).sum().backward()


@P
def anomaly_nan_without_mode(T, log):
    x = leaf(T, [0.0, 1.0])
    (x.sqrt() * 0).sum().backward()
    return x.grad


@P
def anomaly_inplace_error(T, log):
    x = leaf(T, [1.0, 2.0])
    with T.autograd.detect_anomaly():
        h = x * 1
        y = h.exp()
        h.add_(1)
        y.sum().backward()


@P
def anomaly_warn_text(T, log):
    with T.autograd.detect_anomaly():
        pass
    with T.autograd.set_detect_anomaly(True):
        pass


@P
def anomaly_nan_forward_warning(T, log):
    x = leaf(T, [0.0, 1.0])
    with T.autograd.detect_anomaly():
        y = (x.log() * 0).sum()
        y.backward()


@P
def anomaly_nested_restore(T, log):
    with T.autograd.detect_anomaly():
        with T.autograd.set_detect_anomaly(False):
            log.append(T.is_anomaly_enabled())
        log.append(T.is_anomaly_enabled())
    return T.is_anomaly_enabled()


@P
def anomaly_nan_1th(T, log):
    a = leaf(T, [float("nan"), 1.0])
    b = leaf(T, [1.0, 2.0])
    with T.autograd.detect_anomaly():
        (a * b).sum().backward()


# ---------------------------------------------------------------- autograd.functional
def _f2(T):
    def f(x):
        return x**2 * 3

    return f


@P
def af_jacobian(T, log):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x.sin() * x, x)


@P
def af_jacobian_tuple_inputs(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda a, b: a * b, (a, b))


@P
def af_jacobian_tuple_outputs(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda a: (a.exp(), a.sum()), a)


@P
def af_jacobian_tuple_both(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor(3.0, dtype=T.float64)
    return T.autograd.functional.jacobian(lambda a, b: (a * b, (a**2).sum() + b), (a, b))


@P
def af_jacobian_2d(T, log):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x @ x, x)


@P
def af_jacobian_scalar(T, log):
    x = T.tensor(2.0, dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x**3, x)


@P
def af_jacobian_vectorize(T, log):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x.exp() * x.sum(), x, vectorize=True)


@P
def af_jacobian_forward_mode(T, log):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    return T.autograd.functional.jacobian(
        lambda x: x.exp() * x.sum(), x, vectorize=True, strategy="forward-mode"
    )


@P
def af_jacobian_forward_mode_no_vectorize(T, log):
    x = T.tensor([1.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x, x, strategy="forward-mode")


@P
def af_jacobian_bad_strategy(T, log):
    x = T.tensor([1.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x, x, strategy="sideways")


@P
def af_jacobian_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    j = T.autograd.functional.jacobian(lambda x: x**3, x, create_graph=True)
    (g,) = T.autograd.grad(j.sum(), x)
    return j.detach(), j.requires_grad, g


@P
def af_jacobian_no_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    j = T.autograd.functional.jacobian(lambda x: x**3, x)
    return j, j.requires_grad


@P
def af_jacobian_independent(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: T.ones(3, dtype=T.float64), x)


@P
def af_jacobian_strict_independent(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x.detach() * 2, x, strict=True)


@P
def af_jacobian_strict_vectorize(T, log):
    x = T.tensor([1.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x, x, strict=True, vectorize=True)


@P
def af_jacobian_output_not_tensor(T, log):
    x = T.tensor([1.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: 3.0, x)


@P
def af_jacobian_input_not_tensor(T, log):
    return T.autograd.functional.jacobian(lambda x: x, [1.0])


@P
def af_jacobian_float32(T, log):
    x = T.tensor([0.5, 1.5])
    return T.autograd.functional.jacobian(lambda x: x.tanh(), x)


@P
def af_hessian(T, log):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: (x**3).sum() + x[0] * x[1], x)


@P
def af_hessian_tuple(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor(3.0, dtype=T.float64)
    return T.autograd.functional.hessian(lambda a, b: (a * a * b).sum(), (a, b))


@P
def af_hessian_vectorize(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: (x.exp() * x).sum(), x, vectorize=True)


@P
def af_hessian_nonscalar(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: x * 2, x)


@P
def af_hessian_linear(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: x.sum() * 2, x)


@P
def af_hessian_strict_linear(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: x.sum() * 2, x, strict=True)


@P
def af_vjp(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    v = T.tensor([1.0, -1.0], dtype=T.float64)
    return T.autograd.functional.vjp(lambda x: x.exp(), x, v)


@P
def af_vjp_scalar_no_v(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vjp(lambda x: (x**2).sum(), x)


@P
def af_vjp_nonscalar_no_v(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vjp(lambda x: x**2, x)


@P
def af_vjp_v_shape_mismatch(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vjp(lambda x: x**2, x, T.ones(3, dtype=T.float64))


@P
def af_vjp_tuple(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0, 4.0], dtype=T.float64)
    v = (T.ones(2, dtype=T.float64), T.tensor([2.0, 3.0], dtype=T.float64))
    return T.autograd.functional.vjp(lambda a, b: (a * b, a + b), (a, b), v)


@P
def af_vjp_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    out, g = T.autograd.functional.vjp(lambda x: (x**3).sum(), x, create_graph=True)
    (h,) = T.autograd.grad(g.sum(), x)
    return out.requires_grad, g.requires_grad, h


@P
def af_vjp_strict(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vjp(
        lambda x: T.ones(2, dtype=T.float64), x, T.ones(2, dtype=T.float64), strict=True
    )


@P
def af_vjp_unused_zero(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0], dtype=T.float64)
    return T.autograd.functional.vjp(lambda a, b: a.sum() * 2, (a, b))


@P
def af_jvp(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    v = T.tensor([1.0, 0.5], dtype=T.float64)
    return T.autograd.functional.jvp(lambda x: x.exp() * x[0], x, v)


@P
def af_jvp_scalar_input_no_v(T, log):
    x = T.tensor(2.0, dtype=T.float64)
    return T.autograd.functional.jvp(lambda x: x**2, x)


@P
def af_jvp_no_v_error(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jvp(lambda x: x**2, x)


@P
def af_jvp_tuple(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0, 4.0], dtype=T.float64)
    v = (T.ones(2, dtype=T.float64), T.tensor([2.0, 3.0], dtype=T.float64))
    return T.autograd.functional.jvp(lambda a, b: (a * b, (a + b).sum()), (a, b), v)


@P
def af_jvp_strict(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jvp(
        lambda x: x.detach(), x, T.ones(2, dtype=T.float64), strict=True
    )


@P
def af_hvp(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    v = T.tensor([1.0, -1.0], dtype=T.float64)
    return T.autograd.functional.hvp(lambda x: (x**3).sum() + x[0] * x[1], x, v)


@P
def af_vhp(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    v = T.tensor([1.0, -1.0], dtype=T.float64)
    return T.autograd.functional.vhp(lambda x: (x**3).sum() + x[0] * x[1], x, v)


@P
def af_hvp_tuple(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0], dtype=T.float64)
    v = (T.ones(2, dtype=T.float64), T.tensor([2.0], dtype=T.float64))
    return T.autograd.functional.hvp(lambda a, b: (a * a * b).sum(), (a, b), v)


@P
def af_hvp_nonscalar(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hvp(lambda x: x**2, x, T.ones(2, dtype=T.float64))


@P
def af_vhp_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    out, r = T.autograd.functional.vhp(
        lambda x: (x**3).sum(), x, T.ones(2, dtype=T.float64), create_graph=True
    )
    (g,) = T.autograd.grad(r.sum(), x)
    return out.detach(), r.detach(), r.requires_grad, g


@P
def af_vhp_strict_linear(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vhp(lambda x: x.sum(), x, T.ones(2, dtype=T.float64), strict=True)


@P
def af_vhp_linear_nonstrict(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vhp(lambda x: x.sum(), x, T.ones(2, dtype=T.float64))


@P
def af_input_requires_grad_unchanged(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    T.autograd.functional.jacobian(lambda x: x * 2, x)
    return x.requires_grad, x.grad


@P
def af_hessian_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    h = T.autograd.functional.hessian(lambda x: (x**3).sum(), x, create_graph=True)
    (g,) = T.autograd.grad(h.sum(), x)
    return h.detach(), h.requires_grad, g


@P
def af_hvp_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    o, r = T.autograd.functional.hvp(
        lambda x: (x**3).sum(), x, T.ones(2, dtype=T.float64), create_graph=True
    )
    return o.requires_grad, r.requires_grad, r.detach()


@P
def af_jvp_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    o, r = T.autograd.functional.jvp(
        lambda x: x**3, x, T.ones(2, dtype=T.float64), create_graph=True
    )
    (g,) = T.autograd.grad(r.sum(), x)
    return o.requires_grad, r.requires_grad, g


@P
def af_jacobian_vectorize_create_graph(T, log):
    x = leaf(T, [1.0, 2.0])
    j = T.autograd.functional.jacobian(lambda x: x**3, x, vectorize=True, create_graph=True)
    (g,) = T.autograd.grad(j.sum(), x)
    return j.detach(), g


@P
def af_hessian_bad_outer(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(
        lambda x: (x.exp() * x).sum(), x, outer_jacobian_strategy="forward-mode"
    )


@P
def af_vjp_v_not_tensor(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vjp(lambda x: x**2, x, [1.0, 1.0])


@P
def af_jvp_v_count(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jvp(
        lambda x: x**2, x, (T.ones(2, dtype=T.float64), T.ones(2, dtype=T.float64))
    )


@P
def af_hvp_no_v_scalar(T, log):
    x = T.tensor(2.0, dtype=T.float64)
    return T.autograd.functional.hvp(lambda x: x**3, x)


@P
def af_jacobian_strict_ok(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x * 2, x, strict=True)


@P
def af_jacobian_strict_partial(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([1.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda a, b: a * 2, (a, b), strict=True)


@P
def af_hessian_strict_independent(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: T.tensor(1.0, dtype=T.float64), x, strict=True)


@P
def af_jacobian_strict_create_graph(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: x * 2, x, strict=True, create_graph=True)


@P
def af_vjp_unused_none_grad(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.vjp(
        lambda x: T.ones(2, dtype=T.float64) * 3, x, T.ones(2, dtype=T.float64)
    )


@P
def af_jacobian_int_out(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jacobian(lambda x: (x > 1).long(), x)


@P
def af_hessian_tuple_output(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hessian(lambda x: ((x**2).sum(),), x)


@P
def af_jvp_nontensor_out(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.jvp(lambda x: [x * 2], x, T.ones(2, dtype=T.float64))


@P
def af_jacobian_float32_vectorize(T, log):
    x = T.tensor([0.5, 1.5, 2.5])
    return T.autograd.functional.jacobian(lambda x: x.sin() * x.cos(), x, vectorize=True)


@P
def af_hessian_float32(T, log):
    x = T.tensor([0.5, 1.5])
    return T.autograd.functional.hessian(lambda x: (x.sin() * x).sum(), x)


@P
def af_vhp_tuple(T, log):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0], dtype=T.float64)
    v = (T.ones(2, dtype=T.float64), T.tensor([2.0], dtype=T.float64))
    return T.autograd.functional.vhp(lambda a, b: (a * a * b).sum(), (a, b), v)


@P
def af_hvp_v_wrong_shape(T, log):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return T.autograd.functional.hvp(lambda x: (x**3).sum(), x, T.ones(3, dtype=T.float64))


@P
def af_jvp_2d(T, log):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64)
    return T.autograd.functional.jvp(lambda x: x @ x, x, T.eye(2, dtype=T.float64))


# ---------------------------------------------------------------- gradcheck
@P
def gradcheck_ok(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: x.sin() * x, (x,))


@P
def gradcheck_ok_single_tensor(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: x.exp(), x)


@P
def gradcheck_multi_inputs_outputs(T, log):
    a = leaf(T, [0.3, 0.7])
    b = leaf(T, [1.5, -0.5])
    return T.autograd.gradcheck(lambda a, b: (a * b, a / b), (a, b))


@P
def gradcheck_fast_mode(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: x.tanh(), (x,), fast_mode=True)


def _bad(T):
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return Bad


@P
def gradcheck_fail_no_raise(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(_bad(T).apply, (x,), raise_exception=False)


@P
def gradcheck_fail_raise_type(T, log):
    x = leaf(T, [0.3, 0.7])
    try:
        T.autograd.gradcheck(_bad(T).apply, (x,))
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, isinstance(e, RuntimeError), str(e).split("\n")[0]


@P
def gradcheck_float32_warn(T, log):
    x = T.tensor([0.3, 0.7], requires_grad=True)
    return T.autograd.gradcheck(lambda x: x * 2, (x,), eps=1e-2, atol=1e-2)


@P
def gradcheck_no_requires_grad(T, log):
    x = T.tensor([0.3, 0.7], dtype=T.float64)
    return T.autograd.gradcheck(lambda x: x * 2, (x,))


@P
def gradgradcheck_ok(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradgradcheck(lambda x: x.sin() * x**2, (x,))


@P
def gradgradcheck_consistent_backward(T, log):
    class OnceBad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * x  # wrong, but gradgradcheck checks backward's own derivative

    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradgradcheck(OnceBad.apply, (x,), raise_exception=False)


@P
def gradcheck_nondiff_arg(T, log):
    x = leaf(T, [0.3, 0.7])
    k = T.tensor([2.0, 3.0], dtype=T.float64)
    return T.autograd.gradcheck(lambda x, k: x * k, (x, k))


@P
def gradcheck_check_undefined(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: (x * 2, x * 3), (x,), check_undefined_grad=True)


@P
def gradcheck_fail_fast_mode_no_raise(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(_bad(T).apply, (x,), fast_mode=True, raise_exception=False)


@P
def gradcheck_complex(T, log):
    x = T.tensor([0.3 + 0.1j, 0.7 - 0.4j], dtype=T.complex128, requires_grad=True)
    return T.autograd.gradcheck(lambda x: (x * x).exp(), (x,))


@P
def gradcheck_fail_raise_text(T, log):
    x = leaf(T, [0.3, 0.7])
    T.autograd.gradcheck(_bad(T).apply, (x,))


@P
def gradcheck_fail_fast_raise_text(T, log):
    x = leaf(T, [0.3, 0.7])
    T.autograd.gradcheck(_bad(T).apply, (x,), fast_mode=True)


@P
def gradcheck_batched(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: x.sin(), (x,), check_batched_grad=True)


@P
def gradcheck_atol_rtol(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(_bad(T).apply, (x,), atol=10.0, rtol=1.0)


@P
def gradcheck_backward_ad_false(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(
        lambda x: x.sin(), (x,), check_backward_ad=False, check_forward_ad=True
    )


@P
def gradcheck_non_tensor_output(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: 3, (x,))


@P
def gradcheck_undefined_fail(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf(T, [0.3])
    return T.autograd.gradcheck(F.apply, (x,), check_undefined_grad=True)


@P
def gradgradcheck_grad_outputs(T, log):
    x = leaf(T, [0.3, 0.7])
    go = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    return T.autograd.gradgradcheck(lambda x: x**3, (x,), (go,))


@P
def gradcheck_error_class(T, log):
    import sys

    mod = sys.modules[T.__name__ + ".autograd.gradcheck"]
    return mod.GradcheckError.__mro__[1].__name__


@P
def gradcheck_nondet_tol(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: x.exp(), (x,), nondet_tol=1e-10)


@P
def gradcheck_int_output_ignored(T, log):
    x = leaf(T, [0.3, 0.7])
    return T.autograd.gradcheck(lambda x: (x * 2, x.argmax()), (x,))


@P
def gradcheck_raise_false_no_requires(T, log):
    x = T.tensor([0.3], dtype=T.float64)
    return T.autograd.gradcheck(lambda x: x * 2, (x,), raise_exception=False)


def _pair(fns):
    """One case that runs two neighbouring probes, each with its own log; an error in one is
    recorded (type and text) and the other still runs."""

    def case(T, log):
        out = []
        for f in fns:
            sub = []
            out.append((f.__name__, E(lambda f=f, sub=sub: f(T, sub)), sub))
        return out

    case.__name__ = "+".join(f.__name__ for f in fns)
    return case


_CASES = [_pair(_PROBES[i : i + 2]) for i in range(0, len(_PROBES), 2)]


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_autograd_api_matches_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
