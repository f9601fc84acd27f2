# ruff: noqa: N806, N816 (the usual matrix names A, C, Q, R, P, K, S, G, sP, learned_R)
"""A differentiable Kalman filter and Rauch-Tung-Striebel smoother for a linear-Gaussian
state-space model, written for these tests the way public PyTorch state-space code (filterpy
ports, torch-kf, pykalman-style learners, "differentiable Kalman filter" notebooks) writes
torch code (not a copy of any of them), float64 throughout:

- parameters of ``nn.Module``: the transition matrix as ``torch.linalg.matrix_exp(dt * G)`` of
  a free generator (or a ``torch.tanh``-scaled matrix), the process noise as ``L @ L.mT +
  eps * I`` with ``L = torch.tril(raw, -1) + torch.diag_embed(F.softplus(diag))``, the
  observation noise as a ``F.softplus`` diagonal, the initial state mean and covariance;
- the filter as a Python loop over time, batched over sequences: the predict step
  (``P = A @ P @ A.mT + Q``), the innovation covariance factored by ``torch.linalg.cholesky``,
  the gain through ``torch.cholesky_solve`` (also ``torch.linalg.solve`` and
  ``torch.linalg.solve_triangular``), the Joseph-form covariance update (and the short form
  ``(I - K C) P`` beside it), ``torch.stack`` of the filtered moments;
- the innovation log-likelihood through ``MultivariateNormal(loc, scale_tril=L).log_prob`` and
  by hand (``torch.linalg.slogdet``, a triangular solve, ``math.log(2 * math.pi)``);
- the RTS smoother backwards over the stored moments (the smoother gain by
  ``torch.linalg.solve``), checked against the exact Gaussian posterior of a short sequence
  as one dense joint covariance (``torch.kron``, block slices, ``torch.linalg.solve``), and
  the likelihood against the dense ``MultivariateNormal(covariance_matrix=...)``;
- per-sequence log-likelihoods and gradients by ``torch.func.vmap(torch.func.grad(...))`` over
  ``torch.func.functional_call`` of the module (their sum is the batched gradient);
- ``torch.autograd.gradcheck`` of one filter step; maximum likelihood on seeded synthetic data
  with ``optim.Adam`` then ``optim.LBFGS(line_search_fn="strong_wolfe")``; the smoothed means
  compared with the true states.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.distributions import MultivariateNormal
from jitgrad.func import functional_call, grad, vmap

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)
fixed_results = {}
DT = 0.1


# ------------------------------------------------------------------------------------ model


def psd_from_cholesky(raw_lower, raw_diag, eps=1e-6):
    """``L @ L.T + eps I`` with a positive diagonal in L (softplus)."""
    L = torch.tril(raw_lower, diagonal=-1) + torch.diag_embed(F.softplus(raw_diag))
    return L @ L.mT + eps * torch.eye(L.shape[-1], dtype=L.dtype)


class LinearGaussianSSM(nn.Module):
    """x_t = A x_{t-1} + w_t, w ~ N(0, Q);  y_t = C x_t + v_t, v ~ N(0, R)."""

    def __init__(self, state_dim, obs_dim, transition="expm", learn_emission=True):
        super().__init__()
        self.state_dim, self.obs_dim = state_dim, obs_dim
        self.transition = transition
        self.generator = nn.Parameter(torch.zeros(state_dim, state_dim))
        emission = torch.zeros(obs_dim, state_dim)
        emission[:, :obs_dim] = torch.eye(obs_dim)
        if learn_emission:
            self.emission = nn.Parameter(emission)
        else:
            self.register_buffer("emission", emission)
        self.q_lower = nn.Parameter(torch.zeros(state_dim, state_dim))
        self.q_diag = nn.Parameter(torch.full((state_dim,), -1.0))
        self.r_diag = nn.Parameter(torch.zeros(obs_dim))
        self.init_mean = nn.Parameter(torch.zeros(state_dim))
        self.init_log_std = nn.Parameter(torch.zeros(state_dim))

    @property
    def A(self):
        if self.transition == "expm":
            return torch.linalg.matrix_exp(DT * self.generator)
        # a tanh-scaled matrix: entries in (-1, 1), shrunk so the spectral radius stays < 1
        return 0.95 * torch.tanh(self.generator) / math.sqrt(self.state_dim)

    @property
    def C(self):
        return self.emission

    @property
    def Q(self):
        return psd_from_cholesky(self.q_lower, self.q_diag)

    @property
    def R(self):
        return torch.diag(F.softplus(self.r_diag) + 1e-6)

    @property
    def P0(self):
        return torch.diag(torch.exp(2 * self.init_log_std))

    def forward(self, y):
        return kalman_filter(y, self.init_mean, self.P0, self.A, self.C, self.Q, self.R)


def filter_step(m, P, y, A, C, Q, R, joseph=True, gain="cholesky_solve"):
    """One predict/update step for a batch: m (B, n), P (B, n, n), y (B, m)."""
    n = A.shape[-1]
    eye = torch.eye(n, dtype=m.dtype)
    # predict
    m_pred = m @ A.mT
    P_pred = A @ P @ A.mT + Q
    P_pred = 0.5 * (P_pred + P_pred.mT)
    # innovation
    v = y - m_pred @ C.mT
    S = C @ P_pred @ C.mT + R
    L = torch.linalg.cholesky(S)
    PCt = P_pred @ C.mT  # (B, n, m)
    if gain == "cholesky_solve":
        K = torch.cholesky_solve(PCt.mT, L).mT
    elif gain == "solve":
        K = torch.linalg.solve(S, PCt.mT).mT
    else:  # two triangular solves: L^-T L^-1
        Z = torch.linalg.solve_triangular(L, PCt.mT, upper=False)
        K = torch.linalg.solve_triangular(L.mT, Z, upper=True).mT
    # update
    m_new = m_pred + (K @ v.unsqueeze(-1)).squeeze(-1)
    IKC = eye - K @ C
    if joseph:
        P_new = IKC @ P_pred @ IKC.mT + K @ R @ K.mT
    else:
        P_new = IKC @ P_pred
    return m_new, P_new, m_pred, P_pred, v, L


def innovation_log_prob(v, L):
    return MultivariateNormal(torch.zeros_like(v), scale_tril=L).log_prob(v)


def innovation_log_prob_by_hand(v, S):
    """-1/2 (k log 2 pi + log|S| + v^T S^-1 v), with slogdet and a triangular solve."""
    k = v.shape[-1]
    sign, logdet = torch.linalg.slogdet(S)
    L = torch.linalg.cholesky(S)
    z = torch.linalg.solve_triangular(L, v.unsqueeze(-1), upper=False).squeeze(-1)
    return -0.5 * (k * math.log(2 * math.pi) + logdet + (z * z).sum(-1))


def kalman_filter(y, m0, P0, A, C, Q, R, joseph=True, gain="cholesky_solve", by_hand=False):
    """Batched filter over y (B, T, m). Returns the log-likelihood per sequence and the
    filtered and predicted moments (stacked over time)."""
    B, T, _ = y.shape
    n = A.shape[-1]
    # the prior on x_0 is propagated as if it were the "filtered" state at t = -1: the first
    # predict step maps it through A (P0 is the covariance of x_{-1})
    m = m0.expand(B, n)
    P = P0.expand(B, n, n)
    log_lik = torch.zeros(B, dtype=y.dtype)
    ms, Ps, m_preds, P_preds = [], [], [], []
    for t in range(T):
        m, P, m_pred, P_pred, v, L = filter_step(m, P, y[:, t], A, C, Q, R, joseph, gain)
        if by_hand:
            log_lik = log_lik + innovation_log_prob_by_hand(v, L @ L.mT)
        else:
            log_lik = log_lik + innovation_log_prob(v, L)
        ms.append(m)
        Ps.append(P)
        m_preds.append(m_pred)
        P_preds.append(P_pred)
    return log_lik, (torch.stack(ms, 1), torch.stack(Ps, 1),
                     torch.stack(m_preds, 1), torch.stack(P_preds, 1))


def rts_smoother(A, ms, Ps, m_preds, P_preds):
    """Rauch-Tung-Striebel backward pass over (B, T, ...) filtered and predicted moments."""
    T = ms.shape[1]
    m_s, P_s = ms[:, -1], Ps[:, -1]
    smoothed_m, smoothed_P = [m_s], [P_s]
    for t in range(T - 2, -1, -1):
        # G = P_t A^T P_pred_{t+1}^{-1}, solved as P_pred G^T = A P_t
        G = torch.linalg.solve(P_preds[:, t + 1], A @ Ps[:, t]).mT
        m_s = ms[:, t] + (G @ (m_s - m_preds[:, t + 1]).unsqueeze(-1)).squeeze(-1)
        P_s = Ps[:, t] + G @ (P_s - P_preds[:, t + 1]) @ G.mT
        smoothed_m.append(m_s)
        smoothed_P.append(P_s)
    return torch.stack(smoothed_m[::-1], 1), torch.stack(smoothed_P[::-1], 1)


def dense_posterior(y, m0, P0, A, C, Q, R):
    """The exact joint Gaussian of (x_0..x_{T-1}, y_0..y_{T-1}) for a short sequence, and
    the posterior mean and marginal covariances of the states by conditioning."""
    B, T, k = y.shape
    n = A.shape[-1]
    # state means and covariances: x_t = A^{t+1} x_{-1} + sum_s A^{t-s} w_s
    powers = [torch.eye(n, dtype=y.dtype)]
    for _ in range(T):
        powers.append(A @ powers[-1])
    mean_x = torch.cat([m0 @ powers[t + 1].mT for t in range(T)])
    Sxx = torch.zeros(T * n, T * n, dtype=y.dtype)
    for t in range(T):
        for s in range(T):
            cov = powers[t + 1] @ P0 @ powers[s + 1].mT
            for r in range(min(t, s) + 1):
                cov = cov + powers[t - r] @ Q @ powers[s - r].mT
            Sxx[t * n:(t + 1) * n, s * n:(s + 1) * n] = cov
    Cbig = torch.kron(torch.eye(T, dtype=y.dtype), C)
    Rbig = torch.kron(torch.eye(T, dtype=y.dtype), R)
    Syy = Cbig @ Sxx @ Cbig.T + Rbig
    Sxy = Sxx @ Cbig.T
    mean_y = Cbig @ mean_x
    resid = y.reshape(B, T * k) - mean_y
    post_mean = mean_x + torch.linalg.solve(Syy, resid.T).T @ Sxy.T
    post_cov = Sxx - Sxy @ torch.linalg.solve(Syy, Sxy.T)
    marginals = torch.stack([post_cov[t * n:(t + 1) * n, t * n:(t + 1) * n] for t in range(T)])
    log_lik = MultivariateNormal(mean_y, covariance_matrix=Syy).log_prob(y.reshape(B, T * k))
    return post_mean.reshape(B, T, n), marginals, log_lik


# ------------------------------------------------------------------------------------- data


def true_system():
    """A lightly damped 2-D rotation in position/velocity coordinates observed in position."""
    omega, damping = 1.5, 0.2
    G = torch.tensor([[0.0, 0.0, 1.0, 0.0],
                      [0.0, 0.0, 0.0, 1.0],
                      [-omega ** 2, 0.0, -damping, 0.5],
                      [0.0, -omega ** 2, -0.5, -damping]])
    A = torch.linalg.matrix_exp(DT * G)
    C = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    Q = torch.diag(torch.tensor([1e-4, 1e-4, 4e-3, 4e-3]))
    R = 0.05 * torch.eye(2)
    m0 = torch.tensor([1.0, 0.0, 0.0, 1.0])
    P0 = 0.1 * torch.eye(4)
    return A, C, Q, R, m0, P0


def simulate(A, C, Q, R, m0, P0, batch, steps, generator):
    n, k = A.shape[0], C.shape[0]
    LQ, LR = torch.linalg.cholesky(Q), torch.linalg.cholesky(R)
    x = m0 + torch.randn(batch, n, generator=generator) @ torch.linalg.cholesky(P0).T
    xs, ys = [], []
    for _ in range(steps):
        x = x @ A.T + torch.randn(batch, n, generator=generator) @ LQ.T
        xs.append(x)
        ys.append(x @ C.T + torch.randn(batch, k, generator=generator) @ LR.T)
    return torch.stack(xs, 1), torch.stack(ys, 1)


gen = torch.Generator().manual_seed(1234)
A_true, C_true, Q_true, R_true, m0_true, P0_true = true_system()
x_true, y_obs = simulate(A_true, C_true, Q_true, R_true, m0_true, P0_true, 8, 60, gen)
fixed_results["y_obs"] = y_obs[:2, :5]

# ------------------------------------------------ the filter on the true parameters (recorded)

log_lik, (ms, Ps, m_preds, P_preds) = kalman_filter(y_obs, m0_true, P0_true, A_true, C_true,
                                                     Q_true, R_true)
sm, sP = rts_smoother(A_true, ms, Ps, m_preds, P_preds)
fixed_results["true_log_lik"] = log_lik
fixed_results["true_filtered"] = ms[:, ::10]
fixed_results["true_smoothed"] = sm[:, ::10]
fixed_results["true_smoothed_cov"] = sP[0, ::10]
filtered_rmse = (ms - x_true).pow(2).mean().sqrt().item()
smoothed_rmse = (sm - x_true).pow(2).mean().sqrt().item()
observation_rmse = (y_obs - x_true[..., :2]).pow(2).mean().sqrt().item()
smoothed_position_rmse = (sm[..., :2] - x_true[..., :2]).pow(2).mean().sqrt().item()
# the truth falls within the smoother's 2-sigma band most of the time
z_scores = (sm - x_true) / torch.diagonal(sP, dim1=-2, dim2=-1).sqrt()
coverage_2sigma = (z_scores.abs() < 2).double().mean().item()

# the same filter with the other gains, the short covariance update, the hand-made density
variants = {}
for name, kwargs in (("solve", {"gain": "solve"}), ("triangular", {"gain": "triangular"}),
                     ("short_update", {"joseph": False}), ("by_hand", {"by_hand": True})):
    ll, (m_v, P_v, _, _) = kalman_filter(y_obs, m0_true, P0_true, A_true, C_true, Q_true,
                                         R_true, **kwargs)
    variants[name] = (ll, m_v, P_v)

# the smoother equals the exact posterior of a short sequence; the likelihood too
short = y_obs[:3, :12]
ll_short, moments_short = kalman_filter(short, m0_true, P0_true, A_true, C_true, Q_true, R_true)
sm_short, sP_short = rts_smoother(A_true, *moments_short)
dense_mean, dense_cov, dense_ll = dense_posterior(short, m0_true, P0_true, A_true, C_true,
                                                  Q_true, R_true)
smoother_vs_dense = {"mean": (sm_short - dense_mean).abs().max().item(),
                     "cov": (sP_short[0] - dense_cov).abs().max().item(),
                     "log_lik": (ll_short - dense_ll).abs().max().item()}

# ----------------------------------------------- gradients on fixed parameters (recorded)

torch.manual_seed(3)
model = LinearGaussianSSM(4, 2)
with torch.no_grad():
    model.generator.normal_(0, 0.5)
    model.emission.add_(0.1 * torch.randn(2, 4))
    model.q_lower.normal_(0, 0.1)
    model.r_diag.uniform_(-2.0, -1.0)
    model.init_mean.copy_(m0_true)
log_lik_model, (ms_model, Ps_model, mp_model, Pp_model) = model(y_obs[:4, :30])
loss = -log_lik_model.mean()
loss.backward()
fixed_results["model_loss"] = loss.detach()
fixed_results["model_grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
fixed_results["model_A"] = model.A.detach()
fixed_results["model_Q"] = model.Q.detach()
sm_model, _ = rts_smoother(model.A, ms_model, Ps_model, mp_model, Pp_model)
fixed_results["model_smoothed"] = sm_model[:, ::5].detach()

tanh_model = LinearGaussianSSM(4, 2, transition="tanh")
tanh_model.load_state_dict(model.state_dict())
tanh_loss = -tanh_model(y_obs[:4, :30])[0].mean()
fixed_results["tanh_loss"] = tanh_loss.detach()
fixed_results["tanh_grad_generator"] = torch.autograd.grad(tanh_loss, tanh_model.generator)[0]

# gradients of the likelihood through the smoother's output and the "by hand" density agree
ll_hand, _ = kalman_filter(y_obs[:4, :30], model.init_mean, model.P0, model.A, model.C,
                           model.Q, model.R, by_hand=True)
grads_hand = torch.autograd.grad(-ll_hand.mean(), list(model.parameters()))
by_hand_grad_difference = max(
    (g - p.grad).abs().max().item() for g, p in zip(grads_hand, model.parameters()))

# the gradient of an innovation density with respect to its Cholesky factor as a leaf: the
# factor is read as lower triangular (solve_triangular, its diagonal), so the upper triangle
# gets no gradient and an optimizer step keeps it lower triangular (recorded apart)
S_fixed = model.C @ Pp_model[0, 3] @ model.C.mT + model.R
scale_tril_leaf = torch.linalg.cholesky(S_fixed.detach()).requires_grad_()
innovations = y_obs[:4, 3] - mp_model[:, 3].detach() @ model.C.detach().mT
scale_tril_grad = torch.autograd.grad(innovation_log_prob(innovations, scale_tril_leaf).sum(),
                                      scale_tril_leaf)[0]

# ------------------------------------------ per-sequence gradients with torch.func (recorded)

params = {name: p.detach() for name, p in model.named_parameters()}


def sequence_loss(params, y_seq):
    log_lik, _ = functional_call(model, params, (y_seq[None],))
    return -log_lik[0]


y_short = y_obs[:4, :10]
per_sequence_grads = vmap(grad(sequence_loss), in_dims=(None, 0))(params, y_short)
per_sequence_log_lik = vmap(lambda ys: -sequence_loss(params, ys))(y_short)
fixed_results["per_sequence_grads"] = per_sequence_grads
fixed_results["per_sequence_log_lik"] = per_sequence_log_lik
log_lik_short = model(y_short)[0]
grads_short = torch.autograd.grad(-log_lik_short.sum(), list(model.parameters()))
per_sequence_difference = max(
    (per_sequence_grads[name].sum(0) - g).abs().max().item() for name, g in zip(params,
                                                                              grads_short))
per_sequence_log_lik_difference = (per_sequence_log_lik - log_lik_short).abs().max().item()

# ------------------------------------------------------------- gradcheck of one filter step


def step_of_raw(m, P_raw, y, A, C, q_raw, r_raw):
    """A filter step as a function of unconstrained inputs (PD matrices built inside)."""
    n = m.shape[-1]
    P = P_raw @ P_raw.mT + torch.eye(n, dtype=m.dtype)
    Q = q_raw @ q_raw.mT + 0.1 * torch.eye(n, dtype=m.dtype)
    R = torch.diag(F.softplus(r_raw))
    m_new, P_new, _, _, v, L = filter_step(m, P, y, A, C, Q, R)
    return m_new, P_new, innovation_log_prob(v, L)


gc_inputs = (torch.randn(2, 3), torch.randn(2, 3, 3), torch.randn(2, 2),
             0.5 * torch.randn(3, 3), torch.randn(2, 3), torch.randn(3, 3), torch.randn(2))
gc_inputs = tuple(t.requires_grad_() for t in gc_inputs)
gradcheck_step = torch.autograd.gradcheck(step_of_raw, gc_inputs, eps=1e-6, atol=1e-5)
gradcheck_by_hand = torch.autograd.gradcheck(
    lambda v, S_raw: innovation_log_prob_by_hand(v, S_raw @ S_raw.mT + torch.eye(2)),
    (torch.randn(3, 2, requires_grad=True), torch.randn(2, 2, requires_grad=True)))
fixed_results["gradcheck_outputs"] = dict(zip(("mean", "cov", "log_prob"),
                                              (o.detach() for o in step_of_raw(*gc_inputs))))

# ------------------------------------------------------------ maximum likelihood learning

torch.manual_seed(7)
learner = LinearGaussianSSM(4, 2, learn_emission=False)
with torch.no_grad():
    learner.generator.normal_(0, 0.1)
    learner.init_mean.copy_(y_obs[:, 0].mean(0).repeat(2) * torch.tensor([1.0, 1.0, 0.0, 0.0]))
y_train = y_obs[:, :40]
optimizer = optim.Adam(learner.parameters(), lr=0.05)
adam_losses = []
for _ in range(40):
    optimizer.zero_grad()
    loss = -learner(y_train)[0].mean() / y_train.shape[1]
    loss.backward()
    optimizer.step()
    adam_losses.append(loss.item())

lbfgs = optim.LBFGS(learner.parameters(), lr=1.0, max_iter=15, history_size=10,
                    line_search_fn="strong_wolfe")
lbfgs_losses = []


def closure():
    lbfgs.zero_grad()
    loss = -learner(y_train)[0].mean() / y_train.shape[1]
    loss.backward()
    lbfgs_losses.append(loss.item())
    return loss


lbfgs.step(closure)
with torch.no_grad():
    final_loss = (-learner(y_train)[0].mean() / y_train.shape[1]).item()
    true_loss = (-kalman_filter(y_train, learner.init_mean, learner.P0, A_true, C_true, Q_true,
                                R_true)[0].mean() / y_train.shape[1]).item()
    ll_fit, moments_fit = learner(y_obs)
    sm_fit, _ = rts_smoother(learner.A, *moments_fit)
learned_position_rmse = (sm_fit[..., :2] - x_true[..., :2]).pow(2).mean().sqrt().item()
learned_R = learner.R.diagonal().tolist()
learned_eigs = torch.linalg.eigvals(learner.A).abs().max().item()

torch.set_default_dtype(torch.float32)  # (as it was)

print(f"rmse obs {observation_rmse:.4f}, filtered {filtered_rmse:.4f}, smoothed "
      f"{smoothed_rmse:.4f} (position {smoothed_position_rmse:.4f}), coverage "
      f"{coverage_2sigma:.3f}; dense {smoother_vs_dense}; gradcheck {gradcheck_step}; "
      f"adam {adam_losses[0]:.3f} -> {adam_losses[-1]:.3f}, lbfgs -> {final_loss:.3f} "
      f"(true {true_loss:.3f}), learned position rmse {learned_position_rmse:.4f}, "
      f"R {learned_R}")
