"""``grad_fn._saved_<name>`` / ``_raw_saved_<name>`` with torch's names, values compared with
torch's, and our own walk through saved-tensors hooks (written in the way PyTorch's
saved-tensors-hooks tutorial uses the API, not a copy of it)."""

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


def test_saved_tensors_hooks_walkthrough():
    """Saved-tensor introspection and pack/unpack hooks on jitgrad, our own walk-through written
    in the way the "Hooks for autograd saved tensors" tutorial uses the API, not a copy of it."""
    # what a node keeps: inputs are saved as the same objects, outputs as a fresh view
    leaf = jitgrad.randn(2, 3, requires_grad=True)
    prod = leaf * leaf
    assert prod.grad_fn._saved_self is leaf and prod.grad_fn._saved_other is leaf
    sq = leaf.pow(2)
    assert leaf.equal(sq.grad_fn._saved_self) and sq.grad_fn._saved_self is leaf
    ex = leaf.exp()
    assert ex.equal(ex.grad_fn._saved_result) and ex.grad_fn._saved_result is not ex

    # backward frees what was saved
    spent = jitgrad.randn(2, 3, requires_grad=True).pow(2)
    spent.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        spent.grad_fn._saved_self  # noqa: B018

    # one pair of hooks on one saved tensor: pack runs at registration, unpack on every read
    events = []

    def note_pack(t):
        events.append(f"pack {t}")
        return t

    def note_unpack(t):
        events.append(f"unpack {t}")
        return t

    base = jitgrad.randn(2, 3, requires_grad=True)
    sq = base.pow(2)
    sq.grad_fn._raw_saved_self.register_hooks(note_pack, note_unpack)
    sq.grad_fn._saved_self  # noqa: B018
    sq.sum().backward()
    assert [e.split(" ")[0] for e in events] == ["pack", "unpack", "unpack"]
    np.testing.assert_allclose(base.grad.numpy(), 2 * base.detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="only one pair of hooks is allowed at a time"):
        slot = base.pow(2).grad_fn._raw_saved_self
        slot.register_hooks(note_pack, note_unpack)
        slot.register_hooks(note_pack, note_unpack)

    # hooks may store something else: backward sees what unpack returns
    base = jitgrad.randn(2, 3, requires_grad=True)
    prod = base * base
    prod.grad_fn._raw_saved_self.register_hooks(lambda t: t - 3, lambda t: t + 3)  # round trip
    prod.grad_fn._raw_saved_other.register_hooks(lambda t: t, lambda t: t * 0)  # reads as zeros
    prod.sum().backward()  # d/dself = other (zeros), d/dother = self: the grad is base alone
    np.testing.assert_allclose(base.grad.numpy(), base.detach().numpy(), rtol=1e-6)

    # the same through the context manager: every tensor saved inside is kept as a numpy copy
    def to_host_array(t):
        return t.detach().numpy().copy()

    def from_host_array(arr):
        return jitgrad.tensor(arr)

    base = jitgrad.randn(2, 3, requires_grad=True)
    with jitgrad.autograd.graph.saved_tensors_hooks(to_host_array, from_host_array):
        sq = base.pow(2)
    assert isinstance(sq.grad_fn._raw_saved_self._value, np.ndarray)
    sq.sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), 2 * base.detach().numpy(), rtol=1e-6)


def test_result_hooks_on_a_uniform_node():
    x = jitgrad.randn(4, requires_grad=True)
    y = x.exp()
    seen = []
    y.grad_fn._raw_saved_result.register_hooks(lambda t: (seen.append("pack"), t * 2)[1],
                                               lambda t: (seen.append("unpack"), t / 2)[1])
    y.sum().backward()
    assert seen == ["pack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-6)


def test_saved_tensors_spilled_to_disk(tmp_path):
    """Saved tensors spilled to files by jitgrad.save and read back by jitgrad.load (our own
    hooks, in the way the saved-tensors-hooks tutorial's disk example uses the API)."""
    import itertools
    import os

    serial = itertools.count()

    class Spill:
        """One saved tensor on disk; the file goes when the graph drops this handle."""

        def __init__(self, t):
            self.path = str(tmp_path / f"spill-{next(serial)}.pt")
            jitgrad.save(t, self.path)

        def __del__(self):
            os.remove(self.path)

    def restore(spill):
        return jitgrad.load(spill.path)

    w = jitgrad.randn(2, 3, requires_grad=True)
    with jitgrad.autograd.graph.saved_tensors_hooks(Spill, restore):
        sq = w.pow(2)
    assert len(os.listdir(tmp_path)) == 1
    sq.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy(), rtol=1e-6)

    v = jitgrad.randn(2, 3, requires_grad=True)
    ev = v.exp()
    ev.grad_fn._raw_saved_result.register_hooks(Spill, restore)
    ev.sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), np.exp(v.detach().numpy()), rtol=1e-6)


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
