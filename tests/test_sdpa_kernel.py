"""nn.attention.sdpa_kernel / SDPBackend, as torch's CPU build runs them."""

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.nn.attention import SDPBackend, sdpa_kernel

torch = pytest.importorskip("torch")
from torch.nn import attention as tattention  # noqa: E402

Q = np.random.default_rng(0).standard_normal((1, 2, 4, 8)).astype(np.float32)


@pytest.mark.parametrize("backends", [["MATH"], ["FLASH_ATTENTION"], ["EFFICIENT_ATTENTION"],
                                      ["CUDNN_ATTENTION"], ["EFFICIENT_ATTENTION", "MATH"]])
def test_backend_choice_as_torch(backends):
    ours = [SDPBackend[b] for b in backends]
    theirs = [getattr(tattention.SDPBackend, b) for b in backends]
    q, tq = jg.tensor(Q), torch.tensor(Q)
    with tattention.sdpa_kernel(theirs):
        try:
            want = torch.nn.functional.scaled_dot_product_attention(tq, tq, tq)
        except RuntimeError as e:
            want = e
    with sdpa_kernel(ours):
        if isinstance(want, RuntimeError):
            with pytest.raises(RuntimeError, match="No viable backend for "
                               "scaled_dot_product_attention was found"):
                jg.nn.functional.scaled_dot_product_attention(q, q, q)
        else:
            got = jg.nn.functional.scaled_dot_product_attention(q, q, q)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # restored on exit
    assert jg.nn.functional.scaled_dot_product_attention(q, q, q).shape == (1, 2, 4, 8)


def test_values_names_and_errors_as_torch():
    assert {b.name: int(b) for b in SDPBackend} == \
        {name: int(b.value) for name, b in tattention.SDPBackend.__members__.items()}
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a "
                       "list of SDPBackend instances, got int"):
        with sdpa_kernel(3):
            pass
    assert jg.nn.attention is not None
