"""Python protocols on tensors (``bool``, ``in``, ``int``, ``len``, ``format``, operators with
numbers) and device strings, against torch: values, and errors with torch's class and text.

Also: a PyTorch tensor meeting a jitgrad tensor raises a TypeError saying so (each library's
``__torch_function__`` called the other's function back until Python's recursion limit).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad

CASES = {
    "int_multi": lambda L: int(L.tensor([1., 2.])),
    "int_0d": lambda L: int(L.tensor(2.7)),
    "float_multi": lambda L: float(L.tensor([1., 2.])),
    "bool_multi": lambda L: bool(L.tensor([1., 2.])),
    "bool_empty": lambda L: bool(L.tensor([])),
    "bool_one": lambda L: bool(L.tensor([0.0])),
    "len_0d": lambda L: len(L.tensor(1.)),
    "iter_0d": lambda L: list(L.tensor(1.)),
    "item_multi": lambda L: L.tensor([1., 2.]).item(),
    "index_float": lambda L: [1, 2, 3][L.tensor(1.)],
    "index_int": lambda L: [1, 2, 3][L.tensor(1)],
    "contains": lambda L: 2.0 in L.tensor([1., 2.]),
    "contains_tensor": lambda L: L.tensor(2.) in L.tensor([1., 2.]),
    "contains_str": lambda L: "a" in L.tensor([1., 2.]),
    "new_zeros_float": lambda L: L.ones(2).new_zeros(2.5),
    "to_bad_string": lambda L: L.ones(2).to("float64"),
    "device_bad_index": lambda L: L.device("cuda:x"),
    "format": lambda L: f"{L.tensor(2.5):.2f}",
    "format_multi": lambda L: f"{L.tensor([2.5]):.2f}",
    "setitem_int_float": lambda L: (lambda t: (t.__setitem__(0, 2.7), t)[1])(
        L.zeros(2, dtype=L.int64)),
    "setitem_int_too_big": lambda L: (lambda t: (t.__setitem__(0, 1e20), t)[1])(
        L.zeros(2, dtype=L.int64)),
    "floordiv_zero": lambda L: L.tensor([2]) // 0,
    "int_mod_negative": lambda L: L.tensor([-3]) % 2,
    "float_mod_negative": lambda L: L.tensor([-3.5]) % 2,
    "true_div_ints": lambda L: L.tensor([3]) / 2,
    "div_bad_mode": lambda L: L.tensor([3]).div(2, rounding_mode="x"),
}


def _outcome(lib, case):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = CASES[case](lib)
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", f"{type(e).__name__}: {e}"
    if isinstance(out, lib.Tensor):
        return "ok", (tuple(out.shape), str(out.dtype).split(".")[-1], out.numpy().tolist())
    return "ok", out


@pytest.mark.parametrize("case", sorted(CASES))
def test_protocols_match_torch(case):
    torch = pytest.importorskip("torch")
    assert _outcome(jitgrad, case) == _outcome(torch, case)


def test_an_unknown_device_type_lists_jitgrad_s():
    # (torch lists its twenty device types; jitgrad names the three it has)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, meta device type at start "
                                           "of device string: cpux"):
        jitgrad.ones(2).to("cpux")


def test_contains_and_bool_without_torch():
    assert 2.0 in jitgrad.tensor([1.0, 2.0]) and 3 not in jitgrad.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Tensor.__contains__ only supports Tensor or scalar"):
        assert "a" in jitgrad.tensor([1.0])
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(jitgrad.tensor([]))


def test_mixing_with_pytorch_tensors_raises_instead_of_recursing():
    torch = pytest.importorskip("torch")
    x, t = jitgrad.ones(2), torch.ones(2)
    for f in (lambda: x + t, lambda: t + x, lambda: jitgrad.add(x, t), lambda: torch.add(t, x),
              lambda: jitgrad.cat([x, t]), lambda: jitgrad.nn.Linear(2, 1)(t)):
        with pytest.raises(TypeError, match="jitgrad does not mix with PyTorch objects"):
            f()
    # (the way across: through NumPy)
    assert np.array_equal((x + jitgrad.from_numpy(t.numpy())).numpy(), [2.0, 2.0])


def test_size_arithmetic_gives_sizes():
    s = jitgrad.Size([3])
    for out in (s + (2,), (2,) + s, s + jitgrad.Size([]), s * 2, 2 * s):
        assert type(out) is jitgrad.Size
    assert repr(s + (2,)) == "jitgrad.Size([3, 2])"


def test_uniform_checks_low_below_high():
    dist = jitgrad.distributions
    with pytest.raises(ValueError, match=r"Expected parameter low .* to satisfy the constraint "
                                         r"LessThan\(upper_bound=0.0\)"):
        dist.Uniform(1.0, 0.0)
    assert tuple(dist.Uniform(0.0, 1.0).sample((2,)).shape) == (2,)
    with pytest.raises(ValueError, match=r"Value is not broadcastable with "
                                         r"batch_shape\+event_shape: jitgrad.Size\(\[2\]\) vs "
                                         r"jitgrad.Size\(\[3\]\)."):
        dist.Normal(jitgrad.zeros(3), 1.0).log_prob(jitgrad.zeros(2))
