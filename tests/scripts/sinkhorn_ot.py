"""Entropic optimal transport with Sinkhorn's algorithm, written for these tests the way torch
OT code (POT's torch backend, GeomLoss-style Sinkhorn divergences, Cuturi et al.'s
differentiable sorting) writes it (not a copy of any):

- costs ``torch.cdist(x, y, p=2) ** 2``; Sinkhorn's scaling iterations in the plain domain
  (``torch.exp(-C / eps)``, ``u = a / (K @ v)``) and in the log domain on the dual potentials
  (``torch.logsumexp``), stopped by the marginal error (``(P.sum(1) - a).abs().sum()``) in a
  ``while`` loop; the transport plan, its cost, the dual value;
- the debiased Sinkhorn divergence ``OT(a, b) - (OT(a, a) + OT(b, b)) / 2`` as a loss, and a
  gradient flow of particles (a ``requires_grad`` leaf moved by ``torch.optim.SGD``) towards a
  target cloud;
- gradients through the unrolled iterations against the envelope-theorem gradient
  (``(P.detach() * C).sum()``), ``torch.autograd.gradcheck`` in float64 through the log-domain
  iterations;
- differentiable soft sorting and soft ranks by transport to a sorted grid, against
  ``torch.sort`` and ``torch.argsort(torch.argsort(x))`` as epsilon falls; a rank-based loss
  back-propagated through the soft ranks;
- the entropic Wasserstein barycenter of two 1-D histograms by iterated Bregman projections
  (``torch.prod`` of powers, ``torch.cumsum`` quantiles and ``torch.searchsorted``).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------------------------- Sinkhorn


def cost_matrix(x, y):
    """Squared Euclidean costs between (n, d) and (m, d) clouds."""
    return torch.cdist(x, y, p=2) ** 2


def sinkhorn_plain(a, b, C, eps, tol=1e-6, max_iter=1000):
    """Scaling vectors u, v with P = diag(u) K diag(v); stops on the row-marginal error."""
    K = torch.exp(-C / eps)
    u, v = torch.ones_like(a), torch.ones_like(b)
    err, it = float("inf"), 0
    while err > tol and it < max_iter:
        u = a / (K @ v)
        v = b / (K.T @ u)
        P = u[:, None] * K * v[None, :]
        err = (P.sum(1) - a).abs().sum().item()
        it += 1
    return P, u, v, it, err


def sinkhorn_log(a, b, C, eps, n_iter=None, tol=1e-6, max_iter=1000):
    """Dual potentials f, g with P_ij = a_i b_j exp((f_i + g_j - C_ij) / eps).

    With ``n_iter`` it runs exactly that many iterations (differentiable, unrolled); otherwise
    it stops on the row-marginal error."""
    log_a, log_b = torch.log(a), torch.log(b)
    f, g = torch.zeros_like(a), torch.zeros_like(b)
    it, err = 0, float("inf")
    while (it < n_iter) if n_iter is not None else (err > tol and it < max_iter):
        f = -eps * torch.logsumexp((g[None, :] - C) / eps + log_b[None, :], dim=1)
        g = -eps * torch.logsumexp((f[:, None] - C) / eps + log_a[:, None], dim=0)
        it += 1
        if n_iter is None:
            with torch.no_grad():
                P = plan(a, b, C, f, g, eps)
                err = (P.sum(1) - a).abs().sum().item()
    return f, g, it


def plan(a, b, C, f, g, eps):
    return a[:, None] * b[None, :] * torch.exp((f[:, None] + g[None, :] - C) / eps)


def entropic_ot(x, y, a, b, eps, n_iter):
    """The dual value <a, f> + <b, g>, differentiable through the iterations."""
    C = cost_matrix(x, y)
    f, g, _ = sinkhorn_log(a, b, C, eps, n_iter=n_iter)
    return (a * f).sum() + (b * g).sum()


def sinkhorn_divergence(x, y, a, b, eps, n_iter):
    return (entropic_ot(x, y, a, b, eps, n_iter)
            - 0.5 * entropic_ot(x, x, a, a, eps, n_iter)
            - 0.5 * entropic_ot(y, y, b, b, eps, n_iter))


def primal_value(P, C, a, b, eps):
    """<P, C> + eps KL(P | a b^T)."""
    ab = a[:, None] * b[None, :]
    return (P * C).sum() + eps * (P * torch.log(P / ab) - P + ab).sum()


# --------------------------------------------------------------- data (fixed, recorded)

n, m = 12, 10
x = torch.randn(n, 2) * 0.5
y = torch.randn(m, 2) * 0.3 + torch.tensor([1.0, 0.5])
a = torch.full((n,), 1.0 / n)
b = torch.rand(m) + 0.5
b = b / b.sum()
C = cost_matrix(x, y)
fixed_results["cost"] = C
# cdist's squared distances equal the expanded form
expanded = (x[:, None, :] - y[None, :, :]).pow(2).sum(-1)
cdist_difference = (C - expanded).abs().max().item()

eps = 0.1
P_plain, u, v, plain_iters, plain_err = sinkhorn_plain(a, b, C, eps)
f, g, log_iters = sinkhorn_log(a, b, C, eps)
P_log = plan(a, b, C, f, g, eps)
fixed_results["plan"] = P_log
fixed_results["f"], fixed_results["g"] = f, g
fixed_results["plain_plan"] = P_plain
fixed_results["iterations"] = {"plain": plain_iters, "log": log_iters}
marginal_errors = {
    "plain_rows": (P_plain.sum(1) - a).abs().max().item(),
    "plain_cols": (P_plain.sum(0) - b).abs().max().item(),
    "log_rows": (P_log.sum(1) - a).abs().max().item(),
    "log_cols": (P_log.sum(0) - b).abs().max().item(),
}
plain_log_difference = (P_plain - P_log).abs().max().item()
# the potentials are eps log of the scalings (up to a constant shift)
shift = (eps * torch.log(u / a.new_ones(n)) - f).mean()
potential_difference = (eps * torch.log(u) - f - shift).abs().max().item()
transport_cost = (P_log * C).sum().item()
dual_value = ((a * f).sum() + (b * g).sum()).item()
primal = primal_value(P_log, C, a, b, eps).item()
fixed_results["transport_cost"] = transport_cost
fixed_results["dual_value"] = dual_value

# small eps: the plain domain underflows (exp(-C / eps) is 0 in float32), the log domain works
tiny_eps = 1e-3
with torch.no_grad():
    K_tiny = torch.exp(-C / tiny_eps)
plain_underflows = bool((K_tiny.sum(1) == 0).any().item())
f_tiny, g_tiny, tiny_iters = sinkhorn_log(a, b, C, tiny_eps, max_iter=3000)
P_tiny = plan(a, b, C, f_tiny, g_tiny, tiny_eps)
tiny_marginal_error = (P_tiny.sum(1) - a).abs().sum().item()
tiny_finite = bool(torch.isfinite(P_tiny).all().item())
# the unregularised cost is approached from above as eps falls
tiny_cost = (P_tiny * C).sum().item()

# ----------------------------------- unrolled vs envelope gradients (recorded, float64)

x64 = x.double().requires_grad_()
y64, a64, b64 = y.double(), a.double(), b.double()
C64 = cost_matrix(x64, y64)
f64, g64, _ = sinkhorn_log(a64, b64, C64, eps, n_iter=300)
ot_unrolled = (a64 * f64).sum() + (b64 * g64).sum()
(grad_unrolled,) = torch.autograd.grad(ot_unrolled, x64)
# envelope theorem: at the optimum the gradient of OT_eps is that of <P*, C(x)> with P* fixed
P64 = plan(a64, b64, C64, f64, g64, eps).detach()
(grad_envelope,) = torch.autograd.grad((P64 * cost_matrix(x64, y64)).sum(), x64)
# ... which for squared costs is 2 (a_i x_i - (P y)_i)
grad_closed_form = 2 * (a64[:, None] * x64.detach() - P64 @ y64)
fixed_results["grad_unrolled"] = grad_unrolled
fixed_results["grad_envelope"] = grad_envelope
# a few unrolled iterations are not converged: their gradient differs from the envelope one
f_few, g_few, _ = sinkhorn_log(a64, b64, cost_matrix(x64, y64), eps, n_iter=2)
(grad_few,) = torch.autograd.grad((a64 * f_few).sum() + (b64 * g_few).sum(), x64)
envelope_gaps = {
    "unrolled_300": (grad_unrolled - grad_envelope).abs().max().item(),
    "unrolled_2": (grad_few - grad_envelope).abs().max().item(),
    "closed_form": (grad_closed_form - grad_envelope).abs().max().item(),
}

# gradcheck through the log-domain iterations (points and weights)
xs = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
ys = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
wa = torch.rand(4, dtype=torch.float64) + 0.5
wa = (wa / wa.sum()).requires_grad_()
wb = torch.full((3,), 1 / 3, dtype=torch.float64)


def ot_of(xs, ys, wa):
    f, g, _ = sinkhorn_log(wa, wb, cost_matrix(xs, ys), 0.5, n_iter=8)
    return torch.stack([(wa * f).sum() + (wb * g).sum(), f[0], g[-1]])


def plan_of(xs, ys):
    C = cost_matrix(xs, ys)
    f, g, _ = sinkhorn_log(wb.new_full((4,), 0.25), wb, C, 0.5, n_iter=8)
    return plan(wb.new_full((4,), 0.25), wb, C, f, g, 0.5)


gradcheck_results = {
    "dual": torch.autograd.gradcheck(ot_of, (xs, ys, wa)),
    "plan": torch.autograd.gradcheck(plan_of, (xs, ys)),
    "divergence": torch.autograd.gradcheck(
        lambda xs: sinkhorn_divergence(xs, ys.detach(), wb.new_full((4,), 0.25), wb, 0.5, 8),
        (xs,)),
}

# -------------------------------------------------- soft sort / soft rank (recorded)


def soft_sort_rank(values, eps, n_iter=None, max_iter=5000):
    """Transport the values (min-max scaled to [0, 1]) onto a sorted grid of as many points:
    the soft rank is the expected grid index of each value, the soft sort the barycentric
    projection of the values on the grid."""
    k = values.shape[0]
    scaled = (values - values.min()) / (values.max() - values.min())
    grid = torch.linspace(0, 1, k, dtype=values.dtype)
    w = torch.full((k,), 1.0 / k, dtype=values.dtype)
    Cs = cost_matrix(scaled[:, None], grid[:, None])
    f, g, _ = sinkhorn_log(w, w, Cs, eps, n_iter=n_iter, tol=1e-7, max_iter=max_iter)
    P = plan(w, w, Cs, f, g, eps)
    ranks = (P @ torch.arange(k, dtype=values.dtype)) / w
    sorted_values = (P.T @ values) / w
    return sorted_values, ranks


scores = torch.randn(8, dtype=torch.float64)
hard_sorted, hard_order = torch.sort(scores)
hard_ranks = torch.argsort(torch.argsort(scores)).to(torch.float64)
soft_errors = {}
for e in (0.1, 0.01, 0.001):
    soft_sorted, soft_ranks = soft_sort_rank(scores, e)
    soft_errors[e] = ((soft_ranks - hard_ranks).abs().max().item(),
                      (soft_sorted - hard_sorted).abs().max().item())
    fixed_results[f"soft_ranks_{e}"] = soft_ranks
descending = torch.sort(scores, descending=True).values
order_agrees = bool((hard_order == torch.argsort(scores)).all().item())
soft_rank_sum = soft_sort_rank(scores, 0.05)[1].sum().item()  # ranks of a permutation

# a differentiable rank loss: push the soft ranks towards a target order
target_ranks = torch.arange(8, dtype=torch.float64).flip(0)
learn_scores = scores.clone().requires_grad_()
rank_optimizer = torch.optim.SGD([learn_scores], lr=0.5)
rank_losses = []
for _ in range(40):
    _, ranks = soft_sort_rank(learn_scores, 0.05, n_iter=60)
    loss = ((ranks - target_ranks) ** 2).mean()
    rank_optimizer.zero_grad()
    loss.backward()
    rank_optimizer.step()
    rank_losses.append(loss.item())
learned_order = torch.argsort(learn_scores.detach(), descending=True)

# ------------------------------------------------------- gradient flow (recorded losses)

torch.manual_seed(1)
source = (torch.rand(30, 2) - 0.5) * 0.6 + torch.tensor([-0.6, 0.0])
target_angle = torch.rand(40) * 2 * math.pi
target = torch.stack([torch.cos(target_angle), torch.sin(target_angle)], dim=1) * 0.5
target = target + 0.05 * torch.randn(40, 2) + torch.tensor([0.4, 0.1])
wa_flow = torch.full((30,), 1 / 30)
wb_flow = torch.full((40,), 1 / 40)

particles = source.clone().requires_grad_(True)
# with weights 1/n each particle's gradient is 1/n of its velocity: the step scales by n
flow_optimizer = torch.optim.SGD([particles], lr=0.3 * 30)
flow_losses = []
flow_eps, flow_iter = 0.05, 30
for step in range(40):
    loss = sinkhorn_divergence(particles, target, wa_flow, wb_flow, flow_eps, flow_iter)
    flow_optimizer.zero_grad()
    loss.backward()
    flow_optimizer.step()
    flow_losses.append(loss.item())
    if step % 10 == 0:
        print(f"flow step {step}: divergence {loss.item():.5f}")
with torch.no_grad():
    final_divergence = sinkhorn_divergence(particles, target, wa_flow, wb_flow, flow_eps,
                                           flow_iter).item()
fresh = source.clone().requires_grad_(True)
sinkhorn_divergence(fresh, target, wa_flow, wb_flow, flow_eps, flow_iter).backward()
fixed_results["flow_first_grad"] = fresh.grad
self_divergence = sinkhorn_divergence(target, target, wb_flow, wb_flow, flow_eps,
                                      flow_iter).item()
mean_gap = ((particles.detach().mean(0) - target.mean(0)).norm().item(),
            (source.mean(0) - target.mean(0)).norm().item())

# ------------------------------------------------- 1-D barycenter (recorded, float64)

bins = 60
support = torch.linspace(0, 1, bins, dtype=torch.float64)


def gaussian_hist(mean, std):
    h = torch.exp(-0.5 * ((support - mean) / std) ** 2)
    return h / h.sum()


A = torch.stack([gaussian_hist(0.25, 0.05), gaussian_hist(0.7, 0.08)])  # (2, bins)
weights = torch.tensor([0.5, 0.5], dtype=torch.float64)
C_1d = cost_matrix(support[:, None], support[:, None])


def barycenter(A, weights, eps, n_iter):
    """Iterated Bregman projections (Benamou et al. 2015)."""
    K = torch.exp(-C_1d / eps)
    v = torch.ones_like(A)
    for _ in range(n_iter):
        u = A / (v @ K.T)  # rows: u_k = a_k / (K v_k)
        Ktu = u @ K  # rows: K^T u_k
        p = torch.prod(Ktu ** weights[:, None], dim=0)
        v = p[None, :] / Ktu
    return p


bary = barycenter(A, weights, 2e-3, 300)
fixed_results["barycenter"] = bary
bary_mass = bary.sum().item()
bary_mean = (bary * support).sum().item()
bary_std = math.sqrt((bary * (support - bary_mean) ** 2).sum().item())
# in 1-D the W2 barycenter averages the quantile functions: mean and std average too
levels = torch.linspace(0.02, 0.98, 25, dtype=torch.float64)
cdfs = torch.cumsum(A, dim=1)
quantiles = torch.stack([support[torch.searchsorted(cdf, levels).clamp(max=bins - 1)]
                         for cdf in cdfs])
bary_cdf = torch.cumsum(bary, 0)
bary_quantiles = support[torch.searchsorted(bary_cdf, levels).clamp(max=bins - 1)]
quantile_gap = (bary_quantiles - (weights[:, None] * quantiles).sum(0)).abs().max().item()
# the Euclidean average is bimodal; the barycenter has one mode between the two
euclidean_average = (weights[:, None] * A).sum(0)
bary_mode = support[bary.argmax()].item()

print(f"sinkhorn: plain {plain_iters} / log {log_iters} iterations, plan difference "
      f"{plain_log_difference:.1e}; flow {flow_losses[0]:.4f} -> {final_divergence:.4f}; "
      f"soft ranks {soft_errors}; barycenter mean {bary_mean:.3f} std {bary_std:.3f}")
