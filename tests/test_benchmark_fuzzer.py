"""``jitgrad.utils.benchmark``'s Fuzzer against ``torch.utils.benchmark``'s: for a seed, the
same parameters, sizes, steps and layouts (both draw them from one NumPy RandomState)."""

from __future__ import annotations

import pytest

import jitgrad
from jitgrad.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from jitgrad.utils.benchmark.op_fuzzers import binary, unary


def _example(lib, seed=0):
    b = lib.utils.benchmark
    return b.Fuzzer(
        parameters=[b.FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
                    b.FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform"),
                    b.FuzzedParameter("n", minval=2, maxval=5, distribution="uniform"),
                    b.FuzzedParameter("u", minval=0.0, maxval=1.0, distribution="uniform")],
        tensors=[b.FuzzedTensor("x", size=("k0", "k1"), steps=(1, 2), min_elements=128,
                                max_elements=100000, probability_contiguous=0.6),
                 b.FuzzedTensor("i", size=("n",), dtype=lib.int32)],
        constraints=[lambda params: params["k0"] != 7], seed=seed)


def _cases(fuzzer, n):
    return [(params, {k: (tuple(t.shape), t.stride(), t.is_contiguous(), str(t.dtype))
                      for k, t in tensors.items()},
             {k: (p["numel"], tuple(p["order"]), p["steps"], p["is_contiguous"])
              for k, p in props.items()})
            for tensors, props, params in fuzzer.take(n)]


def test_fuzzer_draws_torchs_parameters_and_layouts():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.utils.benchmark")
    ours, theirs = _cases(_example(jitgrad), 12), _cases(_example(torch), 12)
    for (p1, t1, q1), (p2, t2, q2) in zip(ours, theirs, strict=True):
        assert p1 == p2
        assert {k: v[:3] for k, v in t1.items()} == {k: v[:3] for k, v in t2.items()}
        assert q1 == q2
    assert any(not c[2]["x"][3] for c in ours)  # some discontiguous cases among them


def test_fuzzed_tensor_values_and_bounds():
    f = _example(jitgrad, seed=3)
    for tensors, _, params in f.take(6):
        x, i = tensors["x"], tensors["i"]
        assert 128 <= x.numel() <= 100000 and params["k0"] != 7
        assert x.dtype is jitgrad.float32 and bool((x >= 0).all()) and bool((x < 1).all())
        assert i.dtype is jitgrad.int32 and bool((i >= 1).all()) and bool((i < 127).all())
        assert 2 <= params["n"] <= 5 and isinstance(params["n"], int)
    assert 0.0 <= f.rejection_rate < 1.0
    # the same seed gives the same tensors
    a = next(iter(_example(jitgrad, 5).take(1)))[0]["x"]
    b = next(iter(_example(jitgrad, 5).take(1)))[0]["x"]
    assert jitgrad.equal(a, b)


def test_binary_op_fuzzer_gives_the_recipes_cases():
    # (pytorch/tutorials recipes/benchmark.py prints these for BinaryOpFuzzer(seed=0); torch
    # 2.13 itself cannot build the fuzzer: see the next test)
    labels = []
    for tensors, tensor_params, params in binary.BinaryOpFuzzer(seed=0).take(3):
        contiguous = tensor_params["x"]["is_contiguous"]
        labels.append(f"{params['k0']:<6} x {params['k1']:<4} "
                      f"{'' if contiguous else '(discontiguous)'}")
        assert tensors["x"].is_contiguous() == contiguous
        x, y = tensors["x"], tensors["y"]
        assert all(b in (1, a) for a, b in zip(x.shape, y.shape))  # y broadcasts to x
    assert labels == ["64     x 473  (discontiguous)", "16384  x 12642115 (discontiguous)",
                      "8192   x 892  "]
    x = next(iter(unary.UnaryOpFuzzer(seed=1).take(1)))[0]["x"]
    assert 4 * 1024 <= x.numel() <= 32 * 1024 ** 2


def test_distribution_checks():
    assert FuzzedParameter("a", distribution={1: 0.25, 2: 0.75}).sample(
        __import__("numpy").random.RandomState(0)) in (1, 2)
    with pytest.raises(AssertionError, match="^Distribution is not normalized$"):
        FuzzedParameter("a", distribution={1: 0.5, 2: 0.4})
    with pytest.raises(AssertionError, match="^Probabilities cannot be negative$"):
        FuzzedParameter("a", distribution={1: 1.5, 2: -0.5})
    with pytest.raises(AssertionError, match="'minval' must be None"):
        FuzzedParameter("a", minval=1, distribution={1: 1.0})
    with pytest.raises(AssertionError, match="^Unknown distribution: normal$"):
        FuzzedParameter("a", 0, 1, distribution="normal")
    with pytest.raises(ValueError, match="Duplicate names in parameters and tensors"):
        Fuzzer([FuzzedParameter("x", 1, 2, "uniform")], [FuzzedTensor("x", size=(2,))])
    cyc = Fuzzer([FuzzedParameter("a", distribution={ParameterAlias("b"): 1.0}),
                  FuzzedParameter("b", distribution={ParameterAlias("a"): 1.0})], [], seed=0)
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        next(iter(cyc.take(1)))
    never = Fuzzer([FuzzedParameter("a", 1, 2, "uniform")], [], constraints=[lambda p: False],
                   seed=0)
    with pytest.raises(ValueError, match="^Failed to generate a set of valid parameters.$"):
        next(iter(never.take(1)))
    assert repr(ParameterAlias("k0")) == "ParameterAlias[alias_to: k0]"


def test_torch_errors_match():
    tb = pytest.importorskip("torch.utils.benchmark")
    for args in ({"distribution": {1: 1.5, 2: -0.5}}, {"minval": 0, "maxval": 1,
                                                         "distribution": "normal"}):
        with pytest.raises(AssertionError) as theirs:
            tb.FuzzedParameter("a", **args)
        with pytest.raises(AssertionError) as ours:
            FuzzedParameter("a", **args)
        assert str(ours.value) == str(theirs.value)
