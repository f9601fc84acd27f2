"""``grad_fn._saved_<name>`` / ``_raw_saved_<name>`` with torch's names, values compared with
torch's, and PyTorch's saved-tensors-hooks tutorial run as written (torch -> jitgrad)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad


def _torch():
    return pytest.importorskip("torch")


def _assert_same(got, want, name):
    if hasattr(want, "detach"):
        assert tuple(got.shape) == tuple(want.shape), name
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                                   err_msg=name)
    else:
        assert (tuple(got) if isinstance(got, (list, tuple)) else got) == \
            (tuple(want) if isinstance(want, (list, tuple)) else want), name


_CASES = {
    "mul": (lambda L, x, y: x * y, ["self", "other"]),
    "mul_scalar_other": (lambda L, x, y: x * y.detach(), ["self", "other"]),
    "div": (lambda L, x, y: x / y, ["self", "other"]),
    "exp": (lambda L, x, y: x.exp(), ["result"]),
    "log": (lambda L, x, y: (x * x + 1).log(), ["self"]),
    "tanh": (lambda L, x, y: x.tanh(), ["result"]),
    "sigmoid": (lambda L, x, y: x.sigmoid(), ["result"]),
    "pow_scalar": (lambda L, x, y: x.pow(2), ["self", "exponent"]),
    "pow_tensor": (lambda L, x, y: (x * x + 1).pow(y), ["self", "exponent", "result"]),
    "sum": (lambda L, x, y: x.sum(), ["self_sym_sizes"]),
    "sum_dim": (lambda L, x, y: x.sum(1, keepdim=True), ["dim", "keepdim", "self_sym_sizes"]),
    "mean": (lambda L, x, y: x.mean(), ["self_sym_sizes", "self_sym_numel"]),
    "mm": (lambda L, x, y: x @ y.t(), ["self", "mat2"]),
    "softmax": (lambda L, x, y: x.softmax(1), ["dim", "result"]),
    "clamp": (lambda L, x, y: x.clamp(-0.5, 0.5), ["self", "min", "max"]),
    "cumsum": (lambda L, x, y: x.cumsum(1), ["dim"]),
    "cumprod": (lambda L, x, y: x.cumprod(1), ["dim", "self", "result"]),
    "sort": (lambda L, x, y: x.sort(1)[0], ["dim", "indices", "self_sym_sizes"]),
    "topk": (lambda L, x, y: x.topk(2, 1)[0], ["dim", "indices", "self_sym_sizes"]),
    "max_dim": (lambda L, x, y: x.max(1)[0], ["dim", "keepdim", "indices", "self_sym_sizes"]),
    "norm": (lambda L, x, y: x.norm(3, dim=1), ["dim", "keepdim", "ord", "self", "result"]),
    "tril": (lambda L, x, y: x.tril(1), ["diagonal"]),
    "permute": (lambda L, x, y: x.permute(1, 0), ["dims"]),
    "transpose": (lambda L, x, y: x.transpose(0, 1), ["dim0", "dim1"]),
    "where": (lambda L, x, y: L.where(x > 0, x, y), ["condition"]),
    "masked_fill": (lambda L, x, y: x.masked_fill(x > 0, 1.0), ["mask"]),
    "gather": (lambda L, x, y: x.gather(1, L.tensor([[0], [1], [2]])), ["dim", "index"]),
    "amax": (lambda L, x, y: x.amax(1), ["dim", "keepdim", "self", "result"]),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_saved_values_match_torch(case):
    torch = _torch()
    fn, names = _CASES[case]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    jx, jy = (jitgrad.tensor(v, dtype=jitgrad.float64, requires_grad=True) for v in (a, b))
    tx, ty = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
    jn, tn = fn(jitgrad, jx, jy).grad_fn, fn(torch, tx, ty).grad_fn
    assert jn.name() == tn.name()
    for name in names:
        want = getattr(tn, f"_saved_{name}")
        got = getattr(jn, f"_saved_{name}")
        assert (got is None) == (want is None), name
        if want is not None:
            _assert_same(got, want, name)


def test_unknown_names_raise_attribute_error():
    y = jitgrad.randn(3, requires_grad=True).exp()
    with pytest.raises(AttributeError, match="'ExpBackward0' object has no attribute "
                                             "'_saved_foo'"):
        y.grad_fn._saved_foo  # noqa: B018
    with pytest.raises(AttributeError):
        y.grad_fn._raw_saved_dim  # noqa: B018
    assert y.grad_fn._raw_saved_result is y.grad_fn._raw_saved_result


def test_saved_tensors_hooks_tutorial():
    """PyTorch's "Hooks for autograd saved tensors" tutorial, with ``torch`` as jitgrad."""
    torch = jitgrad

    def f(x):
        return x * x

    x = torch.randn(5, requires_grad=True)
    y = f(x)
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is x

    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    assert x.equal(y.grad_fn._saved_self) and x is y.grad_fn._saved_self

    x = torch.randn(5, requires_grad=True)
    y = x.exp()
    assert y.equal(y.grad_fn._saved_result) and y is not y.grad_fn._saved_result

    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        y.grad_fn._saved_self  # noqa: B018

    # registering hooks for one saved tensor
    def pack_hook(x):
        print("Packing", x)
        return x

    def unpack_hook(x):
        print("Unpacking", x)
        return x

    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    y.grad_fn._raw_saved_self.register_hooks(pack_hook, unpack_hook)
    y.grad_fn._saved_self  # noqa: B018
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="only one pair of hooks is allowed at a time"):
        y2 = x.pow(2)
        raw = y2.grad_fn._raw_saved_self
        raw.register_hooks(pack_hook, unpack_hook)
        raw.register_hooks(pack_hook, unpack_hook)

    # hooks that change what is stored: the gradient goes through the unpacked value
    x = torch.randn(5, requires_grad=True)
    y = x * x
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t * 10, lambda t: t / 10)
    y.grad_fn._raw_saved_other.register_hooks(lambda t: t, lambda t: t * 0)
    y.sum().backward()  # d(a*b)/da = b (other: unpacked as 0), d(a*b)/db = a (self: x)
    np.testing.assert_allclose(x.grad.numpy(), x.detach().numpy(), rtol=1e-6)

    # the context manager of the tutorial's second part
    def pack_to_numpy(t):
        return t.detach().numpy().copy()

    def unpack_from_numpy(a):
        return torch.tensor(a)

    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_to_numpy, unpack_from_numpy):
        y = x.pow(2)
    assert isinstance(y.grad_fn._raw_saved_self._value, np.ndarray)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


def test_result_hooks_on_a_uniform_node():
    x = jitgrad.randn(4, requires_grad=True)
    y = x.exp()
    seen = []
    y.grad_fn._raw_saved_result.register_hooks(lambda t: (seen.append("pack"), t * 2)[1],
                                               lambda t: (seen.append("unpack"), t / 2)[1])
    y.sum().backward()
    assert seen == ["pack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-6)


def test_tutorial_saving_tensors_to_disk(tmp_path):
    """The tutorial's "saving tensors to disk" hooks, through jitgrad.save/jitgrad.load."""
    import os
    import uuid

    torch = jitgrad

    class SelfDeletingTempFile:
        def __init__(self):
            self.name = os.path.join(tmp_path, str(uuid.uuid4()))

        def __del__(self):
            os.remove(self.name)

    def pack_hook(tensor):
        temp_file = SelfDeletingTempFile()
        torch.save(tensor, temp_file.name)
        return temp_file

    def unpack_hook(temp_file):
        return torch.load(temp_file.name)

    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = x.pow(2)
    assert len(os.listdir(tmp_path)) == 1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)

    a = torch.randn(5, requires_grad=True)
    b = a.exp()
    b.grad_fn._raw_saved_result.register_hooks(pack_hook, unpack_hook)
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp(a.detach().numpy()), rtol=1e-6)


def test_unpacked_value_keeps_its_place_in_the_graph_like_torch():
    torch = _torch()
    results = []
    for lib in (jitgrad, torch):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x.pow(3)
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t.detach().numpy().copy(),
                                                 lambda a, lib=lib: lib.tensor(a))
        shown = repr(y.grad_fn._saved_self)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)  # through the unpacked x, to the leaf
        results.append((shown.replace("torch.", "jitgrad."), h.detach().numpy().tolist()))
    assert results[0] == results[1]


def test_double_backward_through_saved_tensors_hooks_matches_torch():
    torch = _torch()
    out = []
    for lib in (jitgrad, torch):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                    lambda a, lib=lib: lib.tensor(a)):
            y = x.pow(3) * x
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        out.append(h.detach().numpy().tolist())
    assert out[0] == out[1]
