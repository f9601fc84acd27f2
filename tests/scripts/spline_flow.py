# ruff: noqa: N812 (the usual F alias)
"""A neural spline flow (rational-quadratic splines, Durkan et al. 2019) on a 2-D two-moons
density, written for these tests the way nflows and other public implementations write
torch code (modelled on their API usage, not a copy of any of them):

- the spline: unconstrained widths/heights/derivatives; ``F.softmax`` plus a minimum bin size,
  ``torch.cumsum``, ``F.pad(..., (1, 0), value=0.0)``, the end knots set in place
  (``cumwidths[..., 0] = left``), ``F.softplus`` derivatives with the boundary derivative padded
  to 1 (``math.log(math.expm1(1 - min_derivative))``), bins found by the sum-of-comparisons
  bucketing and by ``torch.searchsorted(..., right=True)``, bin parameters picked by
  ``torch.gather``; the forward rational-quadratic map and the inverse by the stable root of the
  quadratic (``2c / (-b - sqrt(b^2 - 4ac))``), both with log|det|;
- identity ("linear") tails outside ``[-B, B]`` by boolean-mask assignment (``outputs[inside] =
  ...`` into ``torch.zeros_like``) and also by ``torch.where`` on clamped inputs;
- a coupling layer with a half-split mask (``register_buffer``, ``mask.bool()``, ``index_select``
  by the identity/transform feature indices, ``torch.empty_like`` + index assignment to put the
  halves back), an MLP conditioner (``nn.Sequential`` of ``nn.Linear``/``nn.ReLU``) whose output
  is ``reshape``d to ``(N, D, 3K - 1)`` and split, widths/heights divided by
  ``sqrt(hidden_features)`` as nflows does; a ``ReversePermutation`` between couplings
  (``torch.flip``); a ``StandardNormal`` base (``-0.5 z^2 - log(2 pi) / 2`` summed) and the
  same density from ``Independent(Normal(...), 1)``; an element-wise spline written as a
  ``torch.distributions.transforms.Transform`` and ``nn.Module`` at once (as Pyro's transform
  modules are: ``_call``/``_inverse``, ``log_abs_det_jacobian`` from the cached pair
  ``_cached_x_y``) inside a ``TransformedDistribution`` (``log_prob``, ``rsample``), fitted;
- checks: ``inverse(forward(x)) == x``, log-dets of the two directions cancel, the log-det
  equals the ``torch.linalg.slogdet`` of ``torch.autograd.functional.jacobian`` of the flow
  at single points (float64), monotonicity, ``torch.autograd.gradcheck`` of the spline in both
  directions; training by ``optim.Adam`` with ``clip_grad_norm_`` and a ``CosineAnnealingLR``
  on seeded two moons, sampling through the inverse under ``torch.no_grad()``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.distributions import Independent, Normal, TransformedDistribution, constraints
from jitgrad.distributions.transforms import Transform

torch.manual_seed(0)
fixed_results = {}

MIN_BIN_WIDTH = 1e-3
MIN_BIN_HEIGHT = 1e-3
MIN_DERIVATIVE = 1e-3


# ---------------------------------------------------------------------------------- spline


def bucketize_by_comparisons(bin_locations, inputs, eps=1e-6):
    """The index of the bin holding each input: how many knots lie at or below it, minus one
    (the last knot nudged up so that the right end falls in the last bin)."""
    bin_locations = bin_locations.detach().clone()
    bin_locations[..., -1] += eps
    return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1


def bucketize_by_searchsorted(bin_locations, inputs):
    num_bins = bin_locations.shape[-1] - 1
    idx = torch.searchsorted(bin_locations.detach().contiguous(), inputs[..., None].contiguous(),
                             right=True)[..., 0] - 1
    return idx.clamp(0, num_bins - 1)


def knots(unnormalized, left, right, min_bin_size):
    """Bin sizes from unconstrained values, and the cumulative knot positions."""
    num_bins = unnormalized.shape[-1]
    sizes = F.softmax(unnormalized, dim=-1)
    sizes = min_bin_size + (1 - min_bin_size * num_bins) * sizes
    cum = torch.cumsum(sizes, dim=-1)
    cum = F.pad(cum, pad=(1, 0), mode="constant", value=0.0)
    cum = (right - left) * cum + left
    cum[..., 0] = left
    cum[..., -1] = right
    return cum[..., 1:] - cum[..., :-1], cum


def rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights,
                              unnormalized_derivatives, inverse=False, left=0.0, right=1.0,
                              bottom=0.0, top=1.0, bucketize=bucketize_by_comparisons):
    """A monotone rational-quadratic spline on [left, right] -> [bottom, top] (all inputs
    inside); the derivatives have num_bins + 1 entries (the knots)."""
    widths, cumwidths = knots(unnormalized_widths, left, right, MIN_BIN_WIDTH)
    heights, cumheights = knots(unnormalized_heights, bottom, top, MIN_BIN_HEIGHT)
    derivatives = MIN_DERIVATIVE + F.softplus(unnormalized_derivatives)

    bin_idx = bucketize(cumheights if inverse else cumwidths, inputs)[..., None]
    input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
    input_bin_widths = widths.gather(-1, bin_idx)[..., 0]
    input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
    delta = heights / widths
    input_delta = delta.gather(-1, bin_idx)[..., 0]
    input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
    input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]
    input_heights = heights.gather(-1, bin_idx)[..., 0]
    slope_sum = input_derivatives + input_derivatives_plus_one - 2 * input_delta

    if inverse:
        shifted = inputs - input_cumheights
        a = shifted * slope_sum + input_heights * (input_delta - input_derivatives)
        b = input_heights * input_derivatives - shifted * slope_sum
        c = -input_delta * shifted
        discriminant = b.pow(2) - 4 * a * c
        root = (2 * c) / (-b - torch.sqrt(discriminant))
        outputs = root * input_bin_widths + input_cumwidths
        theta = root
    else:
        theta = (inputs - input_cumwidths) / input_bin_widths
    theta_one_minus_theta = theta * (1 - theta)
    denominator = input_delta + slope_sum * theta_one_minus_theta
    if not inverse:
        numerator = input_heights * (input_delta * theta.pow(2)
                                     + input_derivatives * theta_one_minus_theta)
        outputs = input_cumheights + numerator / denominator
    derivative_numerator = input_delta.pow(2) * (
        input_derivatives_plus_one * theta.pow(2) + 2 * input_delta * theta_one_minus_theta
        + input_derivatives * (1 - theta).pow(2))
    logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
    return outputs, (-logabsdet if inverse else logabsdet)


def pad_derivatives(unnormalized_derivatives):
    """Interior knot derivatives plus the two boundary ones, set so softplus gives 1 - the
    slope of the identity tails."""
    padded = F.pad(unnormalized_derivatives, pad=(1, 1))
    constant = math.log(math.expm1(1 - MIN_DERIVATIVE))
    padded[..., 0] = constant
    padded[..., -1] = constant
    return padded


def unconstrained_rq_spline(inputs, unnormalized_widths, unnormalized_heights,
                            unnormalized_derivatives, inverse=False, tail_bound=3.0,
                            bucketize=bucketize_by_comparisons):
    """Identity outside [-B, B] by boolean-mask assignment, the spline inside."""
    inside = (inputs >= -tail_bound) & (inputs <= tail_bound)
    outside = ~inside
    outputs = torch.zeros_like(inputs)
    logabsdet = torch.zeros_like(inputs)
    outputs[outside] = inputs[outside]
    logabsdet[outside] = 0
    derivatives = pad_derivatives(unnormalized_derivatives)
    if inside.any():
        outputs[inside], logabsdet[inside] = rational_quadratic_spline(
            inputs[inside], unnormalized_widths[inside, :], unnormalized_heights[inside, :],
            derivatives[inside, :], inverse=inverse, left=-tail_bound, right=tail_bound,
            bottom=-tail_bound, top=tail_bound, bucketize=bucketize)
    return outputs, logabsdet


def unconstrained_rq_spline_where(inputs, unnormalized_widths, unnormalized_heights,
                                  unnormalized_derivatives, inverse=False, tail_bound=3.0):
    """The same with ``torch.where``: the spline sees clamped inputs, so the unused branch
    stays finite (a NaN there would leak into the gradient)."""
    inside = (inputs >= -tail_bound) & (inputs <= tail_bound)
    clamped = inputs.clamp(-tail_bound, tail_bound)
    spline_out, spline_logdet = rational_quadratic_spline(
        clamped, unnormalized_widths, unnormalized_heights,
        pad_derivatives(unnormalized_derivatives), inverse=inverse, left=-tail_bound,
        right=tail_bound, bottom=-tail_bound, top=tail_bound,
        bucketize=bucketize_by_searchsorted)
    outputs = torch.where(inside, spline_out, inputs)
    logabsdet = torch.where(inside, spline_logdet, torch.zeros_like(inputs))
    return outputs, logabsdet


# ------------------------------------------------------------------------------------ flow


class MLP(nn.Module):
    def __init__(self, in_features, out_features, hidden_features, num_layers=2):
        super().__init__()
        layers = [nn.Linear(in_features, hidden_features), nn.ReLU()]
        for _ in range(num_layers - 1):
            layers += [nn.Linear(hidden_features, hidden_features), nn.ReLU()]
        layers.append(nn.Linear(hidden_features, out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class RQSplineCoupling(nn.Module):
    """Features where ``mask`` is 1 are transformed by a spline whose parameters an MLP
    computes from the others."""

    def __init__(self, mask, hidden_features=32, num_bins=8, tail_bound=3.0, use_where=False):
        super().__init__()
        mask = torch.as_tensor(mask)
        self.register_buffer("mask", mask)
        features = torch.arange(mask.numel())
        self.register_buffer("identity_features", features[~mask.bool()])
        self.register_buffer("transform_features", features[mask.bool()])
        self.num_bins, self.tail_bound = num_bins, tail_bound
        self.hidden_features = hidden_features
        self.use_where = use_where
        n_id, n_tr = len(self.identity_features), len(self.transform_features)
        self.conditioner = MLP(n_id, n_tr * (3 * num_bins - 1), hidden_features)

    def _spline_params(self, identity_split):
        params = self.conditioner(identity_split)
        params = params.reshape(identity_split.shape[0], -1, 3 * self.num_bins - 1)
        K = self.num_bins
        unnormalized_widths = params[..., :K] / math.sqrt(self.hidden_features)
        unnormalized_heights = params[..., K:2 * K] / math.sqrt(self.hidden_features)
        unnormalized_derivatives = params[..., 2 * K:]
        return unnormalized_widths, unnormalized_heights, unnormalized_derivatives

    def _coupling(self, inputs, inverse):
        identity_split = inputs.index_select(1, self.identity_features)
        transform_split = inputs.index_select(1, self.transform_features)
        params = self._spline_params(identity_split)
        spline = unconstrained_rq_spline_where if self.use_where else unconstrained_rq_spline
        transformed, logabsdet = spline(transform_split, *params, inverse=inverse,
                                        tail_bound=self.tail_bound)
        outputs = torch.empty_like(inputs)
        outputs[:, self.identity_features] = identity_split
        outputs[:, self.transform_features] = transformed
        return outputs, logabsdet.sum(dim=1)

    def forward(self, inputs):
        return self._coupling(inputs, inverse=False)

    def inverse(self, inputs):
        return self._coupling(inputs, inverse=True)


class ReversePermutation(nn.Module):
    def forward(self, inputs):
        return torch.flip(inputs, dims=(1,)), inputs.new_zeros(inputs.shape[0])

    def inverse(self, inputs):
        return self.forward(inputs)


class StandardNormal(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.features = features
        self.register_buffer("_log_z", torch.tensor(0.5 * features * math.log(2 * math.pi),
                                                    dtype=torch.float64), persistent=False)

    def log_prob(self, z):
        return -0.5 * z.pow(2).sum(dim=1) - self._log_z

    def sample(self, num_samples, generator=None):
        return torch.randn(num_samples, self.features, generator=generator)


class Flow(nn.Module):
    def __init__(self, transforms, base):
        super().__init__()
        self.transforms = nn.ModuleList(transforms)
        self.base = base

    def forward(self, x):
        """x -> z with the summed log|det dz/dx|."""
        total = x.new_zeros(x.shape[0])
        for transform in self.transforms:
            x, logabsdet = transform(x)
            total = total + logabsdet
        return x, total

    def inverse(self, z):
        total = z.new_zeros(z.shape[0])
        for transform in reversed(self.transforms):
            z, logabsdet = transform.inverse(z)
            total = total + logabsdet
        return z, total

    def log_prob(self, x):
        z, logabsdet = self(x)
        return self.base.log_prob(z) + logabsdet

    def sample(self, num_samples, generator=None):
        z = self.base.sample(num_samples, generator=generator)
        return self.inverse(z)[0]


def make_flow(num_layers=4, hidden_features=32, num_bins=8, use_where=False):
    transforms = []
    for i in range(num_layers):
        mask = torch.tensor([i % 2, (i + 1) % 2])
        transforms.append(RQSplineCoupling(mask, hidden_features, num_bins,
                                           use_where=use_where))
        transforms.append(ReversePermutation())
    return Flow(transforms, StandardNormal(2))


class ElementwiseSpline(Transform, nn.Module):
    """An unconditional element-wise spline as a ``torch.distributions`` transform with
    learnable parameters (the way Pyro's ``Spline`` transform module is written): the log-det
    of the last call is kept and returned when ``log_abs_det_jacobian`` gets the cached
    pair."""

    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True

    def __init__(self, features, num_bins=8, bound=3.0):
        Transform.__init__(self, cache_size=1)
        nn.Module.__init__(self)
        self.bound = bound
        self.unnormalized_widths = nn.Parameter(0.1 * torch.randn(features, num_bins))
        self.unnormalized_heights = nn.Parameter(0.1 * torch.randn(features, num_bins))
        self.unnormalized_derivatives = nn.Parameter(0.1 * torch.randn(features, num_bins - 1))
        self._cache_log_detJ = None

    def __hash__(self):
        return super(nn.Module, self).__hash__()

    def _spline(self, inputs, inverse):
        params = (p.expand(inputs.shape + (-1,)) for p in (
            self.unnormalized_widths, self.unnormalized_heights, self.unnormalized_derivatives))
        outputs, logabsdet = unconstrained_rq_spline(inputs, *params, inverse=inverse,
                                                     tail_bound=self.bound)
        self._cache_log_detJ = logabsdet.sum(-1)
        return outputs

    def _call(self, x):
        return self._spline(x, inverse=False)

    def _inverse(self, y):
        x = self._spline(y, inverse=True)
        self._cache_log_detJ = -self._cache_log_detJ
        return x

    def log_abs_det_jacobian(self, x, y):
        x_old, y_old = self._cached_x_y
        if x is not x_old or y is not y_old:
            self(x)
        return self._cache_log_detJ


# ------------------------------------------------------------------------------------ data


def two_moons(n, noise=0.1, generator=None):
    """Half the points on each moon, standardised roughly to zero mean and unit scale (made in
    float64, so that float32's last-bit differences between cos/sin implementations stay out
    of the data)."""
    n_outer = n // 2
    theta = torch.rand(n, generator=generator, dtype=torch.float64) * math.pi
    outer = torch.stack([torch.cos(theta[:n_outer]), torch.sin(theta[:n_outer])], 1)
    inner = torch.stack([1 - torch.cos(theta[n_outer:]), 0.5 - torch.sin(theta[n_outer:])], 1)
    x = torch.cat([outer, inner]) + noise * torch.randn(n, 2, generator=generator,
                                                        dtype=torch.float64)
    x = (x - torch.tensor([0.5, 0.25], dtype=torch.float64)) / torch.tensor(
        [0.87, 0.5], dtype=torch.float64)
    return x[torch.randperm(n, generator=generator)].float()


gen = torch.Generator().manual_seed(42)
train_data = two_moons(2048, generator=gen)
test_data = two_moons(512, generator=gen)
fixed_results["data_head"] = train_data[:5]

# ---------------------------------------------------- the spline on fixed values (recorded)

K = 5
w = torch.randn(7, K, dtype=torch.float64)
h = torch.randn(7, K, dtype=torch.float64)
d = torch.randn(7, K - 1, dtype=torch.float64)
x = torch.tensor([-4.0, -3.0, -1.7, 0.0, 0.3, 2.999, 5.0], dtype=torch.float64)
y, logdet = unconstrained_rq_spline(x, w, h, d)
x_back, logdet_back = unconstrained_rq_spline(y, w, h, d, inverse=True)
y_where, logdet_where = unconstrained_rq_spline_where(x, w, h, d)
fixed_results["spline_y"] = y
fixed_results["spline_logdet"] = logdet
spline_roundtrip = (x_back - x).abs().max().item()
spline_logdet_cancel = (logdet + logdet_back).abs().max().item()
where_vs_mask = max((y_where - y).abs().max().item(), (logdet_where - logdet).abs().max().item())
tails_identity = (torch.equal(y[[0, 6]], x[[0, 6]])
                  and torch.equal(logdet[[0, 6]], torch.zeros(2, dtype=torch.float64)))

# both bucketings agree, also exactly on the knots
_, cumwidths = knots(w, -3.0, 3.0, MIN_BIN_WIDTH)
probe = torch.cat([cumwidths[:, :-1], torch.rand(7, 20, dtype=torch.float64) * 6 - 3], dim=1)
probe = torch.cat([probe, torch.full((7, 1), 3.0, dtype=torch.float64)], dim=1)
buckets_cmp = bucketize_by_comparisons(cumwidths[:, None, :].expand(7, probe.shape[1], K + 1),
                                       probe)
buckets_ss = bucketize_by_searchsorted(cumwidths[:, None, :].expand(7, probe.shape[1], K + 1),
                                       probe)
buckets_agree = torch.equal(buckets_cmp, buckets_ss)
fixed_results["buckets"] = buckets_cmp

# the derivative of the spline is its exp(logdet), and it is monotone on a grid
grid = torch.linspace(-3.5, 3.5, 141, dtype=torch.float64)
wg, hg, dg = (t[:1].expand(141, -1) for t in (w, h, d))
grid_out, grid_logdet = unconstrained_rq_spline(grid, wg, hg, dg)
monotone = bool((grid_out[1:] > grid_out[:-1]).all())
grid_in = grid.clone().requires_grad_()
slope = torch.autograd.grad(unconstrained_rq_spline(grid_in, wg, hg, dg)[0].sum(), grid_in)[0]
slope_vs_logdet = (slope.log() - grid_logdet).abs().max().item()
# the spline is continuous with slope 1 at the tail bounds
edge = torch.tensor([-3.0 - 1e-9, -3.0, 3.0, 3.0 + 1e-9], dtype=torch.float64)
edge_out, edge_logdet = unconstrained_rq_spline(edge, *(t[:1].expand(4, -1) for t in (w, h, d)))
fixed_results["edge_out"] = edge_out
fixed_results["edge_logdet"] = edge_logdet

# gradients with respect to the unconstrained parameters (recorded)
params = [t.clone().requires_grad_() for t in (w, h, d)]
x_in = x.clone().requires_grad_()
y_g, ld_g = unconstrained_rq_spline(x_in, *params)
weights = torch.linspace(0.5, 1.5, 7, dtype=torch.float64)
(y_g * weights + ld_g).sum().backward()
fixed_results["spline_grads"] = dict(zip(("widths", "heights", "derivatives", "inputs"),
                                         [p.grad for p in params] + [x_in.grad]))
xi_inv = y.detach().clone().requires_grad_()
params_inv = [t.clone().requires_grad_() for t in (w, h, d)]
x_inv, ld_inv = unconstrained_rq_spline(xi_inv, *params_inv, inverse=True)
(x_inv * weights + ld_inv).sum().backward()
fixed_results["spline_inverse_grads"] = dict(zip(("widths", "heights", "derivatives", "inputs"),
                                                 [p.grad for p in params_inv] + [xi_inv.grad]))

# gradcheck of the spline inside the bounds, both directions and both tail styles
gc_x = (torch.rand(4, dtype=torch.float64) * 5 - 2.5).requires_grad_()
gc_params = tuple(t[:4].clone().requires_grad_() for t in (w, h, d))
gradcheck_results = {
    "forward": torch.autograd.gradcheck(
        lambda *a: unconstrained_rq_spline(*a), (gc_x, *gc_params)),
    "inverse": torch.autograd.gradcheck(
        lambda *a: unconstrained_rq_spline(*a, inverse=True), (gc_x, *gc_params)),
    "where": torch.autograd.gradcheck(
        lambda *a: unconstrained_rq_spline_where(*a), (gc_x, *gc_params)),
}

# ------------------------------------------------------ the flow on fixed weights (recorded)

torch.manual_seed(1)
flow64 = make_flow(num_layers=2, hidden_features=16, num_bins=6).double()
xs = 1.5 * torch.randn(6, 2, dtype=torch.float64)
xs[0] = torch.tensor([3.5, -0.2], dtype=torch.float64)  # one coordinate in the tails
z64, logdet64 = flow64(xs)
x64_back, logdet64_back = flow64.inverse(z64)
flow_roundtrip = (x64_back - xs).abs().max().item()
flow_logdet_cancel = (logdet64 + logdet64_back).abs().max().item()
fixed_results["flow_z"] = z64.detach()
fixed_results["flow_logdet"] = logdet64.detach()
fixed_results["flow_log_prob"] = flow64.log_prob(xs).detach()

# log|det| against the slogdet of the Jacobian, one point at a time
jacobian_logdets = []
for point in xs:
    J = torch.autograd.functional.jacobian(lambda p: flow64(p[None])[0][0], point)
    sign, logabs = torch.linalg.slogdet(J)
    jacobian_logdets.append(logabs)
jacobian_logdets = torch.stack(jacobian_logdets)
jacobian_vs_logdet = (jacobian_logdets - logdet64.detach()).abs().max().item()
fixed_results["jacobian_logdets"] = jacobian_logdets

# the same density with the base as Independent(Normal) and the torch.where tails
base = Independent(Normal(torch.zeros(2, dtype=torch.float64),
                          torch.ones(2, dtype=torch.float64)), 1)
independent_vs_standard = (base.log_prob(z64) + logdet64
                           - flow64.log_prob(xs)).abs().max().item()
flow64_where = make_flow(num_layers=2, hidden_features=16, num_bins=6, use_where=True).double()
flow64_where.load_state_dict(flow64.state_dict())
where_flow_difference = (flow64_where.log_prob(xs) - flow64.log_prob(xs)).abs().max().item()

# the loss and its gradients (recorded)
flow64.zero_grad()
loss64 = -flow64.log_prob(xs).mean()
loss64.backward()
fixed_results["flow_loss"] = loss64.detach()
fixed_results["flow_grads"] = {n: p.grad.clone() for n, p in flow64.named_parameters()}
flow64_where.zero_grad()
(-flow64_where.log_prob(xs).mean()).backward()
where_grad_difference = max((p.grad - q.grad).abs().max().item() for p, q in zip(
    flow64.parameters(), flow64_where.parameters()))

# an element-wise spline as a transform module of a TransformedDistribution (recorded)
torch.manual_seed(2)
elementwise = ElementwiseSpline(2, num_bins=6).double()
marginal_flow = TransformedDistribution(base, [elementwise])
fixed_results["transformed_log_prob"] = marginal_flow.log_prob(xs).detach()
x_from_z, manual_logdet = unconstrained_rq_spline(
    xs, *(p.expand(6, 2, -1) for p in (elementwise.unnormalized_widths,
                                       elementwise.unnormalized_heights,
                                       elementwise.unnormalized_derivatives)), inverse=True)
transformed_vs_manual = (marginal_flow.log_prob(xs) - base.log_prob(x_from_z)
                         - manual_logdet.sum(-1)).abs().max().item()
draws = marginal_flow.rsample((5,))
draw_log_prob = marginal_flow.log_prob(draws)  # the cached (x, y) pair
draw_log_prob_fresh = marginal_flow.log_prob(draws.detach().clone())
fixed_results["transformed_grads"] = dict(zip(
    ("widths", "heights", "derivatives"),
    torch.autograd.grad(marginal_flow.log_prob(xs).sum(), list(elementwise.parameters()))))
marginal_optimizer = optim.Adam(elementwise.parameters(), lr=0.05)
marginal_losses = []
train64 = train_data.double()
for _ in range(40):
    marginal_optimizer.zero_grad()
    loss = -marginal_flow.log_prob(train64[:512]).mean()
    loss.backward()
    marginal_optimizer.step()
    marginal_losses.append(loss.item())

# ------------------------------------------------------------------------------- training

torch.manual_seed(0)
flow = make_flow(num_layers=4, hidden_features=32, num_bins=8)
optimizer = optim.Adam(flow.parameters(), lr=5e-3)
num_iters, batch_size = 300, 256
scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_iters)
losses = []
for _ in range(num_iters):
    batch = train_data[torch.randint(0, train_data.shape[0], (batch_size,))]
    optimizer.zero_grad()
    loss = -flow.log_prob(batch).mean()
    loss.backward()
    nn.utils.clip_grad_norm_(flow.parameters(), max_norm=5.0)
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())

flow.eval()
with torch.no_grad():
    test_nll = -flow.log_prob(test_data).mean().item()
    # a Gaussian fitted to the training data, for reference
    mean, cov = train_data.mean(0), torch.cov(train_data.T)
    gaussian_nll = -torch.distributions.MultivariateNormal(mean, cov).log_prob(
        test_data).mean().item()
    samples = flow.sample(1000, generator=torch.Generator().manual_seed(5))
    z_test, _ = flow(test_data)
    test_roundtrip = (flow.inverse(z_test)[0] - test_data).abs().max().item()
    # samples should land near the moons: the distance to the nearest training point
    nearest = torch.cdist(samples, train_data).min(dim=1).values
    sample_nearest_median = nearest.median().item()
    test_nearest_median = torch.cdist(test_data, train_data).min(dim=1).values.median().item()

print(f"spline roundtrip {spline_roundtrip:.2e}, flow roundtrip {flow_roundtrip:.2e}, jacobian "
      f"{jacobian_vs_logdet:.2e}, where {where_flow_difference:.2e}/{where_grad_difference:.2e}; "
      f"gradcheck {gradcheck_results}; loss {losses[0]:.3f} -> {losses[-1]:.3f}, test nll "
      f"{test_nll:.3f} (gaussian {gaussian_nll:.3f}), roundtrip {test_roundtrip:.2e}, "
      f"nearest {sample_nearest_median:.3f} (test {test_nearest_median:.3f})")
