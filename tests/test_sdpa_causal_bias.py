"""nn.attention.bias: causal_upper_left / causal_lower_right with scaled_dot_product_attention,
as torch's (values, gradients, errors, warning, under compile)."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck
from jitgrad.nn.attention.bias import CausalBias, CausalVariant, causal_lower_right, \
    causal_upper_left

RNG = np.random.default_rng(0)
Q, K, V = (RNG.standard_normal(s) for s in ((2, 3, 2, 4), (2, 3, 5, 4), (2, 3, 5, 6)))


def _qkv(dtype=jg.float64, grad=False):
    return [jg.tensor(a, dtype=dtype, requires_grad=grad) for a in (Q, K, V)]


def test_biases_are_tensors_printing_their_masks():
    upper, lower = causal_upper_left(2, 5), causal_lower_right(2, 5)
    assert type(upper) is type(lower) is CausalBias and isinstance(upper, jg.Tensor)
    assert (upper.variant, upper.seq_len_q, upper.seq_len_kv) == (CausalVariant.UPPER_LEFT, 2, 5)
    assert upper._materialize().tolist() == np.tril(np.ones((2, 5), bool)).tolist()
    assert lower._materialize().tolist() == np.tril(np.ones((2, 5), bool), 3).tolist()
    assert repr(lower) == repr(lower._materialize())


def test_upper_left_is_is_causal_and_lower_right_its_mask_with_gradients():
    q, k, v = _qkv()
    assert jg.allclose(F.scaled_dot_product_attention(q, k, v, causal_upper_left(2, 5)),
                       F.scaled_dot_product_attention(q, k, v, is_causal=True))
    lower = F.scaled_dot_product_attention(q, k, v, causal_lower_right(2, 5))
    mask = jg.tensor(np.tril(np.ones((2, 5), bool), 3))
    assert jg.allclose(lower, F.scaled_dot_product_attention(q, k, v, mask))
    assert not jg.allclose(lower, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, causal_lower_right(2, 5)), tuple(_qkv(grad=True)))


def test_under_compile():
    q, k, v = _qkv(jg.float32)
    compiled = jg.compile(F.scaled_dot_product_attention, fullgraph=True)
    for bias in (causal_upper_left(2, 5), causal_lower_right(2, 5)):
        assert jg.allclose(compiled(q, k, v, bias), F.scaled_dot_product_attention(q, k, v, bias),
                           atol=1e-6)


def test_errors_and_warning_as_torch():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        F.scaled_dot_product_attention(q, k, v, causal_upper_left(2, 5), is_causal=True)
    with pytest.raises(AssertionError, match="causal_lower_right only supports 2D tensors"):
        causal_lower_right(1, 2, 5)
    with pytest.raises(AssertionError, match="variant must be a CausalVariant, got int"):
        CausalBias(1, 2, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        causal_lower_right(5, 2)
    assert "Lower right causal bias will produce NaNs" in str(caught[0].message)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.attention import bias as tbias

    for ours, theirs in ((causal_upper_left, tbias.causal_upper_left),
                         (causal_lower_right, tbias.causal_lower_right)):
        for lq, lk in ((2, 5), (5, 5)):
            q, k, v = (jg.tensor(a[..., :n, :]) for a, n in zip((Q, K, V), (lq, lk, lk)))
            tq, tk, tv = (torch.tensor(a[..., :n, :]) for a, n in zip((Q, K, V), (lq, lk, lk)))
            assert repr(ours(lq, lk)) == repr(theirs(lq, lk)).replace("torch", "jitgrad")
            tsdpa = torch.nn.functional.scaled_dot_product_attention
            np.testing.assert_allclose(
                F.scaled_dot_product_attention(q, k, v, ours(lq, lk)).numpy(),
                tsdpa(tq, tk, tv, theirs(lq, lk)).numpy(), rtol=1e-12, atol=1e-12)
