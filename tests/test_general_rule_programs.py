"""Rule programs of general nodes (``rule_programs.general_key``): an ``OpNode``'s VJP rule,
traced once per key and run on arrays, gives exactly what the rule run on tensors gives, and
torch's semantics (errors, hooks, freed graphs) hold through it."""

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import rule_programs
from jitgrad.autograd.op_node import OpNode
from jitgrad.autograd.rule_programs import GENERAL_PROGRAMS
from jitgrad.ops import registry

from torch_compare import arr, both, same_error

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
torch_only = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch (the test oracle)")

# name -> (input shapes, fn(lib, *tensors) -> scalar loss); each is non-uniform somewhere
CASES = {
    "sum_dim": ([(3, 4)], lambda lib, x: (x.sum(1) * x.sum(0)[:3]).sum()),
    "mean_keepdim": ([(3, 4)], lambda lib, x: (x.mean(-1, keepdim=True) * x).sum()),
    "slice_select": ([(5, 4)], lambda lib, x: (x[1:4] * x[0]).sum() + x[2, 1]),
    "view_transpose": ([(3, 4)], lambda lib, x: (x.view(4, 3) @ x.t().reshape(3, 4)).sum()),
    "matmul_bias": ([(6, 4), (4, 3), (3,)],
                    lambda lib, x, w, b: ((x @ w + b).relu() ** 2).mean()),
    "batched_matmul": ([(2, 3, 4), (4, 5)], lambda lib, x, w: lib.tanh(x @ w).sum()),
    "scalar_operands": ([(4,)], lambda lib, x: (2.5 * x - 1 + x / 3.0 + x ** 3 + x ** 0.5).sum()),
    "broadcast_mul": ([(3, 1), (1, 4)], lambda lib, a, b: (a * b + a - b).exp().sum()),
    "cat_stack": ([(2, 3), (2, 3)],
                  lambda lib, a, b: (lib.cat([a, b], 1) * lib.stack([a, b]).sum(0).repeat(1, 2))
                  .sum()),
    "max_amax": ([(3, 4)], lambda lib, x: x.max() + x.amax(0).sum() + x.max(1).values.sum()),
    "softmax_ce": ([(4, 5)], lambda lib, x: lib.nn.functional.cross_entropy(
        x, lib.tensor([0, 2, 4, 1])) + x.log_softmax(-1).sum()),
    "layer_norm": ([(3, 6), (6,), (6,)],
                   lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (6,), w, b).pow(2).sum()),
    "gather_index": ([(4, 5)], lambda lib, x: x.gather(1, lib.tensor([[0], [2], [1], [4]])).sum()
                     + x.index_select(0, lib.tensor([3, 0])).sum()),
    "expand_permute": ([(2, 1, 3)], lambda lib, x: (x.expand(2, 4, 3).permute(2, 0, 1) * 1.5)
                       .cumsum(0).sum()),
    "var_norm_clamp": ([(3, 4)], lambda lib, x: x.var(0).sum() + x.norm() +
                       x.clamp(-0.2, 0.3).sum()),
    "flip_roll_where": ([(3, 4)], lambda lib, x: lib.where(x > 0, x.flip(0), x.roll(1, 1) * 2)
                        .sum()),
}


def _grads(lib, name: str, seed: int = 0) -> list:
    shapes, fn = CASES[name]
    rng = np.random.default_rng(seed)
    xs = [lib.tensor(rng.uniform(0.1, 0.9, s), dtype=lib.float64, requires_grad=True)
          for s in shapes]
    fn(lib, *xs).backward()
    return [arr(x.grad) for x in xs]


def _reset() -> None:
    for programs in GENERAL_PROGRAMS.values():
        programs.clear()


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_gradients_equal_the_rule_run_on_tensors(name, monkeypatch):
    _reset()
    with monkeypatch.context() as m:
        m.setattr(rule_programs, "general_key", lambda node, g: None)
        reference = _grads(jitgrad, name)  # the rules on tensors, through the dispatcher
    assert not any(GENERAL_PROGRAMS.values())
    for _ in range(3):  # first sight, built on the second, run on the third
        for got, want in zip(_grads(jitgrad, name), reference):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    assert any(callable(p) for programs in GENERAL_PROGRAMS.values() for p in programs.values())


@torch_only
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_gradients_match_torch(name):
    for _ in range(3):
        t, j = both(lambda lib: _grads(lib, name, seed=1))
        for got, want in zip(j, t):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_literals_are_keyed_by_type_and_sign():
    # 0.0 and -0.0 compare equal, as do 1, 1.0 and True: programs must not be shared
    def signs(c):
        x = jitgrad.ones(3, dtype=jitgrad.float64, requires_grad=True)
        (x * c).sum().backward()
        return np.signbit(arr(x.grad))

    for _ in range(3):
        assert not signs(0.0).any()
        assert signs(-0.0).all()
    x = jitgrad.ones(2, dtype=jitgrad.float64, requires_grad=True)
    node = (x * 1.0).grad_fn
    assert type(node).__base__ is OpNode
    g = np.ones(2)
    assert rule_programs.general_key(node, g) != \
        rule_programs.general_key((x * True).grad_fn, g)
    assert rule_programs.general_key(node, g) != rule_programs.general_key((x * 1).grad_fn, g)


def test_nodes_without_a_key_keep_the_dispatcher_path():
    x = jitgrad.ones(2, 3, dtype=jitgrad.float64, requires_grad=True)
    g = np.ones(3)
    assert rule_programs.general_key(x.sum(0).grad_fn, g) is not None
    assert rule_programs.general_key(x.sum(0).grad_fn, np.ones(4)) is None  # wrong shape
    assert rule_programs.general_key(x.sum(0).grad_fn, np.ones(3, np.float32)) is None
    with jitgrad.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x[0] * x[1]
    assert y.grad_fn is not None and rule_programs.general_key(y.grad_fn, g) is None


@torch_only
def test_modified_saved_input_raises_torchs_error_through_a_program():
    def fn(lib):
        x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        a = x * 2
        b = a * lib.ones(3, dtype=lib.float64, requires_grad=True)  # (broadcasting: an OpNode)
        a.add_(1)
        b.sum().backward()

    for _ in range(3):
        x = jitgrad.ones(2, 3, dtype=jitgrad.float64, requires_grad=True)
        (x * 2 * jitgrad.ones(3, dtype=jitgrad.float64, requires_grad=True)).sum().backward()
    assert any(callable(p) for p in GENERAL_PROGRAMS[registry.OPS["mul"]].values())
    same_error(fn)


@torch_only
def test_second_backward_raises_and_retain_graph_allows_it_through_a_program():
    def twice(lib, retain):
        x = lib.tensor([[0.5, 1.5], [2.0, -1.0]], dtype=lib.float64, requires_grad=True)
        y = (x @ x).sum(0)
        y.sum().backward(retain_graph=retain)
        y.sum().backward()
        return x.grad

    for _ in range(3):
        twice(jitgrad, True)
    same_error(lambda lib: twice(lib, False))
    t, j = both(lambda lib: twice(lib, True))
    np.testing.assert_allclose(arr(j), arr(t), rtol=1e-13)


def test_saved_tensor_hooks_still_run_on_general_nodes():
    calls = []

    def pack(t):
        calls.append("pack")
        return t

    def unpack(t):
        calls.append("unpack")
        return t

    for _ in range(3):
        calls.clear()
        x = jitgrad.ones(2, 3, dtype=jitgrad.float64, requires_grad=True)
        with jitgrad.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x @ x.t()).sum()
        y.backward()
        assert calls.count("pack") == calls.count("unpack") == 2
        np.testing.assert_array_equal(arr(x.grad), np.full((2, 3), 4.0))
