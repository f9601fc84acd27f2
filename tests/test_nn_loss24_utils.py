"""nn.utils submodules and names (clip_grad, convert_parameters, stateless, init.skip_init,
memory_format, the fusion re-exports) and nn.init's sparse_ and deprecated aliases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
from jitgrad.nn import utils as U


def test_submodules_and_names_resolve():
    from jitgrad.nn.utils import clip_grad, convert_parameters, fusion, init, memory_format, \
        stateless

    assert U.clip_grad_norm_ is clip_grad.clip_grad_norm_
    assert U.parameters_to_vector is convert_parameters.parameters_to_vector
    assert U.fuse_conv_bn_eval is fusion.fuse_conv_bn_eval
    assert U.fuse_linear_bn_weights is fusion.fuse_linear_bn_weights
    assert U.skip_init is init.skip_init
    assert U.convert_conv3d_weight_memory_format is \
        memory_format.convert_conv3d_weight_memory_format
    assert callable(stateless.functional_call)


def test_clip_grad_norm_is_a_deprecated_clip_grad_norm_():
    p = nn.Parameter(jitgrad.tensor([3.0, 4.0]))
    p.grad = jitgrad.tensor([3.0, 4.0])
    with pytest.warns(FutureWarning, match="`torch.nn.utils.clip_grad_norm` is now deprecated "
                                           "in favor of `torch.nn.utils.clip_grad_norm_`"):
        total = U.clip_grad_norm(p, 1.0)
    assert float(total) == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_stateless_functional_call_warns_and_calls():
    m = nn.Linear(3, 2)
    w = jitgrad.zeros(2, 3)
    b = jitgrad.ones(2)
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = U.stateless.functional_call(m, {"weight": w, "bias": b}, (jitgrad.randn(4, 3),))
    np.testing.assert_array_equal(out.numpy(), np.ones((4, 2)))
    assert not np.all(m.weight.detach().numpy() == 0)  # the module's own weights are back


def test_skip_init():
    m = U.skip_init(nn.Linear, 5, 1)
    assert isinstance(m, nn.Linear) and tuple(m.weight.shape) == (1, 5)
    m2 = U.skip_init(nn.Linear, in_features=6, out_features=1, dtype=jitgrad.float64)
    assert m2.weight.dtype == jitgrad.float64
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        U.skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip "
                                           "initialization"):
        U.skip_init(NoDevice, 3)


def test_memory_format_conversion_keeps_the_values_and_returns_the_module():
    m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU())
    before = m[0].weight.detach().numpy().copy()
    x = jitgrad.randn(1, 2, 5, 5)
    want = m(x).detach().numpy()
    assert U.convert_conv2d_weight_memory_format(m, jitgrad.channels_last) is m
    assert m[0].weight.is_contiguous(memory_format=jitgrad.channels_last)
    assert not m[0].weight.is_contiguous()
    from jitgrad.ops.extras import channels_last_3d

    assert U.convert_conv3d_weight_memory_format(m, channels_last_3d) is m
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), before)
    np.testing.assert_array_equal(m(x).detach().numpy(), want)
    with pytest.raises(TypeError, match="must be torch.memory_format, not str"):
        U.convert_conv2d_weight_memory_format(m, "channels_last")


def test_init_sparse_():
    jitgrad.manual_seed(0)
    w = jitgrad.empty(10, 6)
    assert nn.init.sparse_(w, 0.25, std=0.5) is w
    a = w.numpy()
    assert np.all((a == 0).sum(0) == 3)  # ceil(0.25 * 10) per column
    assert 0.2 < a[a != 0].std() < 1.0
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.sparse_(jitgrad.empty(3), 0.1)


@pytest.mark.parametrize("old,args", [("uniform", ()), ("normal", ()), ("constant", (0.5,)),
                                      ("eye", ()), ("xavier_uniform", ()),
                                      ("xavier_normal", ()), ("kaiming_uniform", ()),
                                      ("kaiming_normal", ()), ("orthogonal", ()),
                                      ("sparse", (0.5,))])
def test_init_deprecated_aliases_warn_and_fill(old, args):
    w = jitgrad.zeros(4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = getattr(nn.init, old)(w, *args)
    assert out is w and not np.all(w.numpy() == 0)
    assert caught[0].category is FutureWarning
    assert str(caught[0].message) == \
        f"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`."
    assert getattr(nn.init, old).__name__ == old


def test_init_dirac_alias():
    w = jitgrad.zeros(2, 2, 3)
    with pytest.warns(FutureWarning, match="`nn.init.dirac` is now deprecated"):
        nn.init.dirac(w)
    assert float(w.sum()) == 2.0
