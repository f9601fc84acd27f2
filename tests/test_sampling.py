"""multinomial, bernoulli and Tensor.bernoulli_: torch's arguments and errors, distributions
(seeded, so each check is deterministic), no repeats without replacement, and jit."""

import numpy as np
import pytest

import jitgrad

W = [0.1, 0.2, 0.3, 0.4]


def test_multinomial_with_replacement_follows_the_weights():
    jitgrad.manual_seed(0)
    draws = jitgrad.multinomial(jitgrad.tensor(W) * 5, 40000, replacement=True)
    assert draws.dtype == jitgrad.int64 and draws.shape == (40000,)
    np.testing.assert_allclose(np.bincount(draws.numpy(), minlength=4) / 40000, W, atol=0.01)


def test_multinomial_without_replacement_draws_distinct_categories_in_weight_order():
    jitgrad.manual_seed(1)
    w = jitgrad.tensor([W] * 3000)
    draws = jitgrad.multinomial(w, 2).numpy()
    assert draws.shape == (3000, 2) and np.all(draws[:, 0] != draws[:, 1])
    first = np.bincount(draws[:, 0], minlength=4) / 3000
    np.testing.assert_allclose(first, W, atol=0.02)
    # the second draw: sum over j != i of w_j * w_i / (1 - w_j)
    second = [sum(W[j] * W[i] / (1 - W[j]) for j in range(4) if j != i) for i in range(4)]
    np.testing.assert_allclose(np.bincount(draws[:, 1], minlength=4) / 3000, second, atol=0.02)


def test_zero_weights_are_drawn_only_when_nothing_else_is_left():
    jitgrad.manual_seed(2)
    w = jitgrad.tensor([[0.0, 3.0, 0.0, 1.0]] * 200)
    assert set(jitgrad.multinomial(w, 2).numpy().ravel()) == {1, 3}
    assert set(jitgrad.multinomial(w, 1, replacement=True).numpy().ravel()) <= {1, 3}
    assert sorted(jitgrad.multinomial(jitgrad.tensor([1.0, 0.0, 0.0]), 3).tolist()) == [0, 1, 2]


@pytest.mark.parametrize("call,error,text", [
    (lambda: jitgrad.multinomial(jitgrad.ones(2, 2, 2), 1), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    (lambda: jitgrad.multinomial(jitgrad.ones(3), 0), RuntimeError,
     "cannot sample n_sample <= 0 samples"),
    (lambda: jitgrad.multinomial(jitgrad.ones(3), 4), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (lambda: jitgrad.multinomial(jitgrad.tensor([1.0, -1.0]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: jitgrad.multinomial(jitgrad.zeros(3), 1), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda: jitgrad.multinomial(jitgrad.tensor([1, 2]), 1), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda: jitgrad.bernoulli(jitgrad.tensor([1, 2])), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda: jitgrad.bernoulli(jitgrad.tensor([0.5, 1.5])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    (lambda: jitgrad.ones(2).bernoulli_(2.0), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=2"),
])
def test_torchs_errors(call, error, text):
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value)


def test_bernoulli_draws_ones_with_the_given_probabilities():
    jitgrad.manual_seed(3)
    p = jitgrad.tensor([0.0, 1.0, 0.25]).expand(20000, 3)
    draws = jitgrad.bernoulli(p)
    assert draws.dtype == jitgrad.float32 and not draws.requires_grad
    np.testing.assert_allclose(draws.numpy().mean(0), [0.0, 1.0, 0.25], atol=0.01)
    assert jitgrad.bernoulli(jitgrad.ones(5), 0.0).tolist() == [0.0] * 5
    x = jitgrad.zeros(4, dtype=jitgrad.int64)
    assert x.bernoulli_(jitgrad.tensor([0.0, 1.0, 0.0, 1.0])) is x
    assert x.tolist() == [0, 1, 0, 1] and x.dtype == jitgrad.int64


def test_under_jit_each_call_draws_afresh():
    f = jitgrad.jit(lambda w: jitgrad.multinomial(w, 8, replacement=True))
    jitgrad.manual_seed(4)
    w = jitgrad.tensor([0.0, 1.0, 1.0])
    a, b = f(w), f(w)
    assert a.shape == (8,) and set(a.tolist()) | set(b.tolist()) <= {1, 2}
    assert a.tolist() != b.tolist()
