"""What the user scripts of sets C35-E35 found jitgrad doing differently from torch, now as
torch does: ``torch._assert`` (also under fx), an empty index list, ``F.layer_norm``'s
``normalized_shape`` type check, ``bernoulli_``'s message for a number, ``copy.deepcopy`` of a
Parameter (no ``.grad``), ``Gumbel`` and ``LogNormal`` as transformed distributions (Gumbel's
draws torch's), ``Normal``/``Exponential``/``Bernoulli``/``Poisson`` as exponential families,
and the private samplers ``_standard_gamma``, ``_sample_dirichlet`` and their gradients."""

import copy
import math

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F
from jitgrad import distributions as D


def test_assert_raises_and_fx_records_it():
    assert jitgrad._assert(True, "fine") is None
    with pytest.raises(AssertionError, match="^need two rows$"):
        jitgrad._assert(jitgrad.tensor(False), "need two rows")

    class Checked(jitgrad.nn.Module):
        def forward(self, x):
            jitgrad._assert(x.shape[0] == 2, "need two rows")
            return x + 1

    traced = jitgrad.fx.symbolic_trace(Checked())
    assert "jitgrad._assert(eq, 'need two rows')" in traced.code
    assert traced(jitgrad.ones(2, 3)).tolist() == [[2.0] * 3] * 2
    with pytest.raises(AssertionError, match="need two rows"):
        traced(jitgrad.ones(3, 3))


def test_an_empty_index_list_selects_and_writes_nothing():
    mask = jitgrad.ones(5, dtype=jitgrad.bool)
    assert mask[[]].dtype is jitgrad.bool and mask[[]].shape == (0,)
    mask[[]] = 0
    assert mask.all().item()
    grid = jitgrad.arange(12.0).reshape(3, 4)
    assert grid[[], 1].shape == (0,) and grid[:, []].shape == (3, 0)
    x = jitgrad.arange(4.0, requires_grad=True)
    x[[]].sum().backward()
    assert x.grad.tolist() == [0.0] * 4


@pytest.mark.parametrize("shape,message", [
    (3, "must be tuple of ints, not int"),
    (3.0, "must be tuple of ints, not float"),
    ([3.0], "must be tuple of ints, but found element of type float at pos 0"),
    ((3, "a"), "failed to unpack the object at pos 2 with error \"type must be tuple of ints,"
               "but got str\""),
])
def test_layer_norm_takes_a_tuple_of_ints_only(shape, message):
    with pytest.raises(TypeError, match=r"^layer_norm\(\): argument 'normalized_shape' "):
        F.layer_norm(jitgrad.randn(2, 3), shape)
    with pytest.raises(TypeError) as info:
        F.layer_norm(jitgrad.randn(2, 3), shape)
    assert message in str(info.value)
    with pytest.raises(TypeError, match=r"^rms_norm\(\): argument 'normalized_shape'"):
        F.rms_norm(jitgrad.randn(2, 3), shape)


def test_layer_norm_modules_still_take_an_int():
    x = jitgrad.randn(2, 3)
    assert jitgrad.nn.LayerNorm(3)(x).shape == (2, 3)
    assert jitgrad.nn.RMSNorm(3)(x).shape == (2, 3)
    assert F.layer_norm(x, [3]).shape == F.layer_norm(x, jitgrad.Size([3])).shape == (2, 3)


def test_bernoulli_of_a_number_out_of_range_names_p():
    with pytest.raises(RuntimeError, match=r"^bernoulli_ expects p to be in \[0, 1\], but got "
                                           r"p=1.5$"):
        jitgrad.empty(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match=r"but got p=-0.5$"):
        jitgrad.bernoulli(jitgrad.zeros(3), p=-0.5)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        jitgrad.empty(3).bernoulli_(jitgrad.tensor([1.5, 0.0, 0.0]))


def test_deepcopy_of_a_parameter_is_a_fresh_leaf_without_grad():
    p = jitgrad.nn.Parameter(jitgrad.ones(2, 3, 4, 5).to(memory_format=jitgrad.channels_last))
    (p * 3).sum().backward()
    q = copy.deepcopy(p)
    assert q.grad is None and q.is_leaf and q.requires_grad and type(q) is type(p)
    assert q.is_contiguous(memory_format=jitgrad.channels_last)
    q.data.add_(1)
    assert p.detach().max().item() == 1.0  # (its own data)
    frozen = copy.deepcopy(jitgrad.nn.Parameter(jitgrad.ones(2), requires_grad=False))
    assert not frozen.requires_grad
    lin = jitgrad.nn.Linear(2, 2)
    lin(jitgrad.ones(1, 2)).sum().backward()
    twin = copy.deepcopy(lin)
    assert twin.weight.grad is None and lin.weight.grad is not None
    t = jitgrad.ones(2, requires_grad=True)
    (t * 2).sum().backward()
    assert copy.deepcopy(t).grad.tolist() == [2.0, 2.0]  # (a plain tensor keeps it, as torch)


def test_gumbel_is_uniform_pushed_through_two_logs():
    g = D.Gumbel(jitgrad.tensor([0.0, 1.0]), jitgrad.tensor([1.0, 2.0]))
    assert isinstance(g, D.TransformedDistribution) and isinstance(g.base_dist, D.Uniform)
    finfo = jitgrad.finfo(jitgrad.float32)
    jitgrad.manual_seed(3)
    drawn = g.sample((5,))
    jitgrad.manual_seed(3)
    u = finfo.tiny + jitgrad.rand(5, 2) * ((1 - finfo.eps) - finfo.tiny)
    by_hand = g.loc + (-g.scale) * jitgrad.log(-jitgrad.log(u))
    np.testing.assert_array_equal(drawn.numpy(), by_hand.numpy())
    value = jitgrad.tensor([0.5, 0.3])
    z = (value - g.loc) / g.scale
    np.testing.assert_allclose(g.log_prob(value).numpy(),
                               (-(g.scale.log() + z + jitgrad.exp(-z))).numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.cdf(value).numpy(), jitgrad.exp(-jitgrad.exp(-z)).numpy(),
                               rtol=1e-6)
    wide = g.expand((3, 2))
    assert wide.batch_shape == (3, 2) and wide.loc.shape == (3, 2)


def test_lognormal_is_normal_through_exp():
    ln = D.LogNormal(jitgrad.tensor([0.0, 1.0]), jitgrad.tensor([1.0, 2.0]))
    assert isinstance(ln, D.TransformedDistribution) and isinstance(ln.base_dist, D.Normal)
    assert ln.loc is ln.base_dist.loc and ln.scale is ln.base_dist.scale
    value = jitgrad.tensor([0.5, 3.0])
    expected = ln.base_dist.log_prob(value.log()) - value.log()
    np.testing.assert_allclose(ln.log_prob(value).numpy(), expected.numpy(), rtol=1e-6)
    other = D.LogNormal(0.0, 1.0)
    np.testing.assert_allclose(D.kl_divergence(ln, other).numpy(),
                               D.kl_divergence(ln.base_dist, D.Normal(0.0, 1.0)).numpy())
    assert ln.expand((3, 2)).loc.shape == (3, 2)


@pytest.mark.parametrize("make", [
    lambda: D.Normal(jitgrad.tensor([0.3, -1.0]), jitgrad.tensor([2.0, 0.5])),
    lambda: D.Exponential(jitgrad.tensor([0.3, 4.0])),
    lambda: D.Bernoulli(jitgrad.tensor([0.3, 0.9])),
], ids=["normal", "exponential", "bernoulli"])
def test_exponential_families_entropy_by_bregman_equals_the_closed_form(make):
    dist = make()
    assert isinstance(dist, D.ExponentialFamily)
    np.testing.assert_allclose(D.ExponentialFamily.entropy(dist).detach().numpy(),
                               dist.entropy().numpy(), rtol=1e-5)


def test_poisson_is_an_exponential_family_without_entropy():
    rate = D.Poisson(jitgrad.tensor([2.0]))
    assert isinstance(rate, D.ExponentialFamily)
    assert rate._log_normalizer(*rate._natural_params).tolist() == pytest.approx([2.0])
    with pytest.raises(NotImplementedError):
        rate.entropy()
    with pytest.raises(NotImplementedError, match="between different exponential families"):
        D.kl_divergence(D.Normal(0.0, 1.0), rate)


def test_standard_gamma_and_its_gradient():
    alpha = jitgrad.tensor([0.8, 2.0, 30.0], dtype=jitgrad.float64, requires_grad=True)
    jitgrad.manual_seed(0)
    x = jitgrad._standard_gamma(alpha)
    assert x.grad_fn.name() == "StandardGammaBackward0" and (x > 0).all()
    x.sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy(),
                               jitgrad._standard_gamma_grad(alpha.detach(), x.detach()).numpy())
    # the implicit gradient -dF/dalpha / f of the gamma CDF F, by a central difference of F
    special = pytest.importorskip("scipy.special")
    a, v = alpha.detach().numpy(), x.detach().numpy()
    h = 1e-6
    d_cdf = (special.gammainc(a + h, v) - special.gammainc(a - h, v)) / (2 * h)
    density = np.exp((a - 1) * np.log(v) - v - special.gammaln(a))
    np.testing.assert_allclose(alpha.grad.numpy(), -d_cdf / density, rtol=1e-6)
    seeded = [jitgrad._standard_gamma(alpha.detach(),
                                      generator=jitgrad.Generator().manual_seed(5))
              for _ in range(2)]
    assert seeded[0].tolist() == seeded[1].tolist()
    with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for 'Long'"):
        jitgrad._standard_gamma(jitgrad.tensor([1, 2]))


def test_sample_dirichlet_is_not_differentiable_but_dirichlet_rsample_is():
    alpha = jitgrad.tensor([[1.0, 2.0, 0.5]], requires_grad=True)
    jitgrad.manual_seed(1)
    draws = jitgrad._sample_dirichlet(alpha)
    assert draws.grad_fn.name() == "NotImplemented"
    assert draws.sum().item() == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(RuntimeError, match="derivative for aten::_sample_dirichlet is not "
                                           "implemented"):
        draws.sum().backward()
    sample = D.Dirichlet(alpha).rsample()
    assert type(sample.grad_fn).__name__ == "_DirichletBackward"
    (sample * jitgrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert alpha.grad.shape == (1, 3) and math.isfinite(alpha.grad.sum().item())


def test_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        lib.manual_seed(0)
    ours = D.Gumbel(0.0, 1.0).sample((6,))
    theirs = torch.distributions.Gumbel(0.0, 1.0).sample((6,))
    # (the same uniforms; NumPy's float32 log is within 2-3 ulp, torch's SLEEF log within 1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=3e-7, atol=0)
    for lib in (torch, jitgrad):
        lib.manual_seed(2)
    ours = D.LogNormal(jitgrad.tensor([0.0, 1.0]), jitgrad.tensor([1.0, 2.0])).rsample((3,))
    theirs = torch.distributions.LogNormal(torch.tensor([0.0, 1.0]),
                                           torch.tensor([1.0, 2.0])).rsample((3,))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-6)
    for lib in (torch, jitgrad):
        lib.manual_seed(4)
    ours = jitgrad._sample_dirichlet(jitgrad.tensor([[1.0, 2.0, 0.5]]))
    theirs = torch._sample_dirichlet(torch.tensor([[1.0, 2.0, 0.5]]))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        torch.nn.functional.layer_norm(torch.randn(2, 3), 3)


def test_ctc_loss_second_derivative_raises_instead_of_missing_a_term():
    x = jitgrad.randn(6, 2, 4, dtype=jitgrad.float64, requires_grad=True)
    targets = jitgrad.tensor([[1, 2], [3, 3]])
    loss = F.ctc_loss(x.log_softmax(2), targets, (6, 5), (2, 2))
    (g,) = jitgrad.autograd.grad(loss, x, create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not "
                                           "implemented"):
        jitgrad.autograd.grad(g.pow(2).sum(), x)
    lp = x.detach().log_softmax(2).requires_grad_()
    (g,) = jitgrad.autograd.grad(F.ctc_loss(lp, targets, (6, 5), (2, 2)), lp, create_graph=True)
    assert g.grad_fn.name() == "NotImplemented"
    (plain,) = jitgrad.autograd.grad(F.ctc_loss(lp, targets, (6, 5), (2, 2)), lp)
    assert not plain.requires_grad
    np.testing.assert_array_equal(plain.numpy(), g.detach().numpy())


def test_randint_takes_one_element_integer_tensors_as_ints():
    jitgrad.manual_seed(0)
    drawn = jitgrad.randint(0, jitgrad.tensor(7), (5,))
    jitgrad.manual_seed(0)
    assert drawn.tolist() == jitgrad.randint(0, 7, (5,)).tolist()
    assert jitgrad.randint(jitgrad.tensor([0]), 7, (3,)).shape == (3,)
    assert jitgrad.randint(5, (jitgrad.tensor(2), 3)).shape == (2, 3)
    for bad in [(0, jitgrad.tensor(7.0), (3,)), (0, jitgrad.tensor([7, 8]), (3,)),
                (0, 5, jitgrad.tensor([2, 3]))]:
        with pytest.raises(TypeError, match="received an invalid combination of arguments"):
            jitgrad.randint(*bad)


def test_multivariate_normal_reads_only_the_lower_triangle_of_scale_tril():
    low = jitgrad.tensor([[2.0, 0.0], [1.0, 3.0]], dtype=jitgrad.float64, requires_grad=True)
    value = jitgrad.ones(2, dtype=jitgrad.float64)
    log_prob = D.MultivariateNormal(jitgrad.zeros(2, dtype=jitgrad.float64),
                                    scale_tril=low).log_prob(value)
    (grad,) = jitgrad.autograd.grad(log_prob, low)
    assert grad[0, 1].item() == 0.0  # (a step keeps the factor lower triangular)
    # -log N(1; 0, L L^T): x = L^-1 1 = (0.5, 1/6), so 0.5|x|^2 + log 6 + log(2 pi)
    expected = -(0.5 * (0.25 + 1 / 36) + math.log(6.0) + math.log(2 * math.pi))
    assert log_prob.item() == pytest.approx(expected, rel=1e-12)
    upper = jitgrad.tensor([[2.0, 5.0], [1.0, 3.0]], dtype=jitgrad.float64)
    loose = D.MultivariateNormal(jitgrad.zeros(2, dtype=jitgrad.float64), scale_tril=upper,
                                 validate_args=False)
    assert loose.log_prob(value).item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("decay", [1.5, -0.1])
def test_ema_functions_refuse_a_decay_outside_0_1(decay):
    from jitgrad.optim import swa_utils

    for make in (swa_utils.get_ema_multi_avg_fn, swa_utils.get_ema_avg_fn):
        with pytest.raises(ValueError, match=f"Invalid decay value {decay} provided. Please "
                                             r"provide a value in \[0,1\] range."):
            make(decay)


def test_spectral_norm_records_its_version_and_loads_old_checkpoints():
    nn = jitgrad.nn
    jitgrad.manual_seed(0)
    lin = nn.utils.spectral_norm(nn.Linear(3, 2))
    assert lin.state_dict()._metadata[""] == {"version": 1,
                                              "spectral_norm": {"weight.version": 1}}
    lin(jitgrad.ones(1, 3))
    lin.eval()
    # a checkpoint from before weight_v was kept: the weight itself, no metadata
    old = {"weight_orig": lin.weight_orig.detach(), "bias": lin.bias.detach(),
           "weight": lin.weight.detach(), "weight_u": lin.weight_u}
    fresh = nn.utils.spectral_norm(nn.Linear(3, 2)).eval()
    assert not fresh.load_state_dict(old).missing_keys
    x = jitgrad.randn(4, 3)
    np.testing.assert_allclose(fresh(x).detach().numpy(), lin(x).detach().numpy(), atol=1e-6)
    partial = {k: v for k, v in lin.state_dict().items() if k != "weight_v"}
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "weight", '
                                           '"weight_v"'):
        nn.utils.spectral_norm(nn.Linear(3, 2)).load_state_dict(partial)
    today = dict(lin.state_dict())  # (today's entries without the metadata load as they are)
    assert not nn.utils.spectral_norm(nn.Linear(3, 2)).load_state_dict(today).missing_keys


def test_compiled_functions_return_dataclasses_and_ordered_dict_subclasses():
    import collections
    import dataclasses

    @dataclasses.dataclass
    class Output:  # (as HF's ModelOutput: a dataclass of optional tensors)
        logits: object = None
        loss: object = None

    class Named(collections.OrderedDict):
        pass

    lin = jitgrad.nn.Linear(3, 2)
    as_dataclass = jitgrad.compile(lambda x: Output(logits=lin(x)))
    as_mapping = jitgrad.compile(lambda x: Named(a=lin(x), b=x * 2))
    for _ in range(2):  # (traced, then the cached call path)
        x = jitgrad.randn(4, 3)
        out = as_dataclass(x)
        assert type(out) is Output and out.loss is None
        np.testing.assert_allclose(out.logits.detach().numpy(), lin(x).detach().numpy(),
                                   rtol=1e-6)
        mapped = as_mapping(x)
        assert type(mapped) is Named and list(mapped) == ["a", "b"]
    out.logits.sum().backward()
    assert lin.weight.grad.shape == (2, 3)


def test_bfloat16_cube_and_inverse_square_round_the_square_first():
    x = jitgrad.tensor([0.361328125, -2.328125]).bfloat16()
    assert (x ** 3).float().tolist() == [0.04736328125, -12.5625]  # (not 0.0471, -12.625)
    square = (x.float() * x.float()).bfloat16().float()
    np.testing.assert_array_equal(jitgrad.pow(x, -2).float().numpy(),
                                  (1 / square).bfloat16().float().numpy())
    assert (x ** 3).grad_fn is None and (x.float() ** 3).dtype is jitgrad.float32
