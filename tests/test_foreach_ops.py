"""torch._foreach_* (jitgrad/_foreach_ops.py): every name torch has, the values and errors of
a script using them equal to torch's, in-place forms changing the tensors, autograd through
them."""

import pytest

import jitgrad
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def test_every_torch_foreach_function_exists():
    torch = pytest.importorskip("torch")
    names = [n for n in dir(torch) if n.startswith("_foreach_")]
    assert len(names) > 80
    assert [n for n in names if not callable(getattr(jitgrad, n, None))] == []


def test_ema_and_momentum_updates_in_place():
    ema = [jitgrad.zeros(3), jitgrad.ones(2)]
    assert jitgrad._foreach_lerp_(ema, [jitgrad.ones(3), jitgrad.zeros(2)], 0.25) is ema
    assert ema[0].tolist() == [0.25] * 3 and ema[1].tolist() == [0.75] * 2
    params = [jitgrad.ones(2)]
    jitgrad._foreach_mul_(params, 0.5)
    jitgrad._foreach_add_(params, [jitgrad.full((2,), 4.0)], alpha=0.25)
    assert params[0].tolist() == [1.5, 1.5]
    norms = jitgrad._foreach_norm([jitgrad.tensor([3.0, 4.0]), jitgrad.tensor([1.0])])
    assert isinstance(norms, tuple) and [float(n) for n in norms] == [5.0, 1.0]
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    (y,) = jitgrad._foreach_addcmul([x], [x], [x], value=0.5)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 3.0]  # 1 + x
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor."):
        jitgrad._foreach_sqrt([])


def test_values_and_errors_match_torch():
    ours = _run("foreach_probe")["results"]
    assert len(ours) == 28
    assert ours == _run_torch("foreach_probe")["results"]
