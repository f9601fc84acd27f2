"""nn.attention.sdpa_kernel / SDPBackend, as torch's CPU build runs them."""

import contextlib

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck
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


def _layouts(mod):
    x = mod.tensor(np.random.default_rng(1).standard_normal((2, 5, 3 * 8)))
    split = tuple(t.view(2, 5, 2, 4).transpose(1, 2) for t in x.chunk(3, -1))  # nanoGPT's heads
    heads_outer = mod.tensor(np.random.default_rng(2).standard_normal((5, 2, 2, 4))).permute(
        1, 2, 0, 3)
    last_strided = mod.tensor(np.random.default_rng(3).standard_normal((5, 4, 2, 2))).permute(
        2, 3, 0, 1)
    return {"split": split, "contiguous": tuple(t.contiguous() for t in split),
            "heads_outer": (heads_outer,) * 3, "last_strided": (last_strided,) * 3}


@pytest.mark.parametrize("case", ["split", "contiguous", "heads_outer", "last_strided"])
@pytest.mark.parametrize("backends", [None, ["MATH"]])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_output_layout_as_torch(case, backends, dropout):
    ours, theirs = _layouts(jg)[case], _layouts(torch)[case]
    ctx = (sdpa_kernel([SDPBackend[b] for b in backends]), tattention.sdpa_kernel(
        [getattr(tattention.SDPBackend, b) for b in backends])) if backends else (
        contextlib.nullcontext(), contextlib.nullcontext())
    with ctx[0]:
        out = jg.nn.functional.scaled_dot_product_attention(*ours, dropout_p=dropout)
    with ctx[1]:
        expect = torch.nn.functional.scaled_dot_product_attention(*theirs, dropout_p=dropout)
    assert out.stride() == expect.stride()
    if dropout == 0.0:
        np.testing.assert_allclose(out.numpy(), expect.numpy(), rtol=1e-12, atol=1e-12)


def test_heads_split_as_nanogpt_then_merged_by_view():
    q, k, v = (t.requires_grad_() for t in _layouts(jg)["contiguous"])

    def attend(q, k, v):
        heads = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v)]
        y = jg.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        return y.transpose(1, 2).view(2, 5, 8)  # raises unless y is laid out as (N, L, H, E)

    assert gradcheck(attend, (q, k, v))
    assert jg.allclose(jg.jit(attend)(q, k, v), attend(q, k, v))
