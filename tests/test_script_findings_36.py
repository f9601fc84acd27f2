"""What the user-script sets L35-N35 found, each checked against torch where installed: shape
arguments by keyword (MAE's ``imgs.reshape(shape=...)``), SDPA with a mask and
``is_causal=True`` on the flash path, warnings that name the user's line, ``from_numpy`` of
negative strides, and the transformer module's private helpers."""

import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F


def _torch():
    return pytest.importorskip("torch")


def _shapes(lib):
    x = lib.arange(24.0).view(2, 3, 4)
    return [tuple(t.shape) for t in (
        x.reshape(shape=(4, 6)), lib.reshape(x, shape=(4, 6)), x.view(size=(4, 6)),
        x.permute(dims=(2, 0, 1)), lib.permute(x, dims=(2, 0, 1)), x.repeat(repeats=(1, 2, 1)),
        x[:, :1].expand(size=(2, 5, 4)))] + [str(x.view(dtype=lib.int32).dtype).split(".")[1]]


def test_shape_arguments_by_keyword():
    ours = _shapes(jitgrad)
    assert ours[0] == (4, 6) and ours[3] == (4, 2, 3) and ours[-1] == "int32"
    x = jitgrad.zeros(2, 3)
    with pytest.raises(TypeError, match="reshape\\(\\) received an invalid combination"):
        x.reshape((3, 2), shape=(3, 2))
    with pytest.raises(TypeError, match="permute\\(\\) received an invalid combination"):
        x.permute(1, 0, dims=(1, 0))
    assert ours == _shapes(_torch())


def _sdpa(lib, float_mask: bool, shape=(2, 2, 3, 4), dropout_p=0.0):
    rng = np.random.default_rng(0)
    q, k, v = (lib.tensor(rng.standard_normal(shape), dtype=lib.float64, requires_grad=True)
               for _ in range(3))
    mask = lib.tensor(np.array([[True, False, True], [True, True, True], [False, True, True]]))
    if float_mask:
        mask = lib.tensor(rng.standard_normal((3, 3)), dtype=lib.float64)
    try:
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                             is_causal=True, dropout_p=dropout_p)
    except RuntimeError as e:
        return str(e)
    out.square().sum().backward()
    return [t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)]


@pytest.mark.parametrize("float_mask", [False, True])
def test_sdpa_mask_and_is_causal_on_the_flash_path(float_mask):
    ours = _sdpa(jitgrad, float_mask)
    # both masks: the causal one alone would let the first row attend to key 0 only, as here
    causal_only = F.scaled_dot_product_attention(
        *(jitgrad.tensor(np.random.default_rng(0).standard_normal((2, 2, 3, 4)))
          for _ in range(3)), is_causal=True)
    assert not np.allclose(ours[0], causal_only.numpy())
    # 3-D inputs (the math path) refuse the pair, as torch's
    refused = _sdpa(jitgrad, float_mask, shape=(2, 3, 4))
    assert refused == ("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                       "when is_causal=True")
    torch = _torch()
    theirs = _sdpa(torch, float_mask)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert refused == _sdpa(torch, float_mask, shape=(2, 3, 4))


def _warning_lines(lib):
    fn = lib.nn.functional
    x, t = lib.zeros(2, 3), lib.zeros(1, 3)
    calls = [lambda: fn.mse_loss(x, t), lambda: fn.l1_loss(x, t),
             lambda: fn.smooth_l1_loss(x, t), lambda: fn.huber_loss(x, t),
             lambda: fn.kl_div(x, x),
             lambda: fn.grid_sample(lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2)),
             lambda: fn.nll_loss(x, lib.zeros(2).long(), reduce=False)]
    where = []
    for call in calls:
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            call()
        where.append([w.filename for w in ws])
    return where


def test_functional_warnings_name_the_users_line():
    for files in _warning_lines(jitgrad):
        assert files == [__file__], files


def test_from_numpy_refuses_negative_strides():
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is "
                                         "negative, and tensors with negative strides are not "
                                         "currently supported"):
        jitgrad.from_numpy(np.arange(3)[::-1])
    torch = _torch()
    with pytest.raises(ValueError) as theirs:
        torch.from_numpy(np.arange(3)[::-1])
    with pytest.raises(ValueError) as ours:
        jitgrad.from_numpy(np.arange(3)[::-1])
    assert str(ours.value) == str(theirs.value)


def test_transformer_private_helpers():
    from jitgrad.nn.modules import transformer

    x = jitgrad.zeros(2, 5, 4)
    assert transformer._get_seq_len(x, True) == 5
    assert transformer._get_seq_len(x, False) == 2
    assert transformer._get_seq_len(jitgrad.zeros(5, 4), True) == 5  # (unbatched)
    causal = jitgrad.nn.Transformer.generate_square_subsequent_mask(4)
    assert transformer._detect_is_causal_mask(causal) is True
    assert transformer._detect_is_causal_mask(jitgrad.zeros(4, 4)) is False
    assert transformer._detect_is_causal_mask(None, is_causal=True) is True
    assert transformer._detect_is_causal_mask(None) is False
    torch = _torch()
    from torch.nn.modules import transformer as theirs

    t_causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert theirs._detect_is_causal_mask(t_causal) is True
    assert theirs._detect_is_causal_mask(torch.zeros(4, 4)) is False
    assert theirs._get_seq_len(torch.zeros(2, 5, 4), True) == 5


def _inf_and_nan(lib):
    x = lib.tensor([0.0, -1.0, 2.0, 1e30], requires_grad=True)
    y = (x / x).nansum() + x.log().sum() + x.sqrt().nansum() + (x * 1e10).exp().sum() \
        + (x ** -1).sum() + x.reciprocal().sum() + (1 / x).sum() + x.log1p().sum()
    y.backward()
    z = lib.zeros(3)
    return [y.item(), x.grad.tolist(), (z / z).tolist(), z.log().tolist(),
            lib.tensor([1e30]).float().pow(3).tolist()]


def test_ops_give_inf_and_nan_silently_under_an_error_filter():
    # (NumPy's floating-point warnings, even where the user's filters turn warnings into
    # errors: pytest -W error, warnings.simplefilter("error"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _inf_and_nan(jitgrad)
        f = jitgrad.jit(lambda t: (t.log() + 1 / t).sum(), backend="interpreter")
        jitted = f(jitgrad.zeros(2)).item()
    assert jitted == float("inf") or np.isnan(jitted)
    torch = _torch()
    theirs = _inf_and_nan(torch)
    np.testing.assert_equal(np.array(ours[0]), np.array(theirs[0]))
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_equal(np.array(a), np.array(b))
