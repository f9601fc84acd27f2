# ruff: noqa: N806, N816 (the usual A, B, C, P_hat, log_A of HMM and NeuralSort code)
"""A hidden Markov model in log space and differentiable sorting, written for these tests the
way plain-torch HMM tutorials and the NeuralSort / allRank NeuralNDCG code write torch code
(not a copy of any):

- an ``nn.Module`` HMM whose initial, transition and emission distributions are
  ``log_softmax`` of free parameters; sequences sampled with ``torch.distributions.Categorical``
  and padded to a batch with lengths (``torch.where`` freezes finished sequences);
- the forward and backward algorithms with ``torch.logsumexp`` over broadcast
  ``alpha[:, :, None] + log_A``; posteriors, pairwise posteriors, the likelihood by brute force
  over every path (``torch.cartesian_prod``); the posteriors as the gradient of the
  log-likelihood with respect to the emission scores;
- Viterbi with ``max``/``argmax`` back-pointers and backtracking with ``gather``, and the same
  path as the gradient of the max-sum score;
- Baum-Welch re-estimation (``index_add_`` emission counts, ``F.one_hot`` products), gradient
  training with ``Adam``, ``torch.autograd.gradcheck`` in float64;
- NeuralSort's relaxed permutation matrix (``|s_i - s_j|`` row sums, the ``n + 1 - 2i``
  scaling, a softmax over rows), Sinkhorn scaling to a doubly stochastic matrix, a soft rank by
  pairwise sigmoids, NeuralNDCG, a scorer trained on a soft Spearman loss.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import itertools

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.distributions import Categorical

torch.manual_seed(0)
fixed_results = {}

# ========================================================================================== HMM


class HMM(nn.Module):
    def __init__(self, n_states, n_symbols):
        super().__init__()
        self.n_states, self.n_symbols = n_states, n_symbols
        self.unnormalized_init = nn.Parameter(torch.randn(n_states))
        self.unnormalized_trans = nn.Parameter(torch.randn(n_states, n_states))
        self.unnormalized_emit = nn.Parameter(torch.randn(n_states, n_symbols))

    def log_params(self):
        return (F.log_softmax(self.unnormalized_init, dim=0),
                F.log_softmax(self.unnormalized_trans, dim=1),
                F.log_softmax(self.unnormalized_emit, dim=1))

    def forward(self, x, lengths):
        log_pi, log_A, log_B = self.log_params()
        loglik, _ = forward_algorithm(log_pi, log_A, emission_scores(log_B, x), lengths)
        return loglik


def emission_scores(log_B, x):
    """(B, T) symbols -> (B, T, K) log p(x_t | z_t = k)."""
    return log_B.t()[x]


def forward_algorithm(log_pi, log_A, emissions, lengths):
    B, T, K = emissions.shape
    log_alpha = log_pi[None, :] + emissions[:, 0]
    alphas = [log_alpha]
    for t in range(1, T):
        step = torch.logsumexp(log_alpha[:, :, None] + log_A[None], dim=1) + emissions[:, t]
        log_alpha = torch.where((t < lengths)[:, None], step, log_alpha)
        alphas.append(log_alpha)
    return torch.logsumexp(log_alpha, dim=-1), torch.stack(alphas, dim=1)


def backward_algorithm(log_A, emissions, lengths):
    B, T, K = emissions.shape
    log_beta = torch.zeros(B, K, dtype=emissions.dtype)
    betas = [log_beta]
    for t in range(T - 2, -1, -1):
        step = torch.logsumexp(log_A[None] + (emissions[:, t + 1] + log_beta)[:, None, :], dim=2)
        log_beta = torch.where((t + 1 < lengths)[:, None], step, log_beta)
        betas.append(log_beta)
    return torch.stack(betas[::-1], dim=1)


def viterbi(log_pi, log_A, emissions, lengths):
    B, T, K = emissions.shape
    score = log_pi[None, :] + emissions[:, 0]
    backpointers = []
    identity = torch.arange(K).expand(B, K)
    for t in range(1, T):
        best, arg = (score[:, :, None] + log_A[None]).max(dim=1)
        active = (t < lengths)[:, None]
        score = torch.where(active, best + emissions[:, t], score)
        backpointers.append(torch.where(active, arg, identity))
    best_score, last = score.max(dim=-1)
    path = [last]
    for bp in reversed(backpointers):
        last = bp.gather(1, last[:, None]).squeeze(1)
        path.append(last)
    return best_score, torch.stack(path[::-1], dim=1)


def brute_force(log_pi, log_A, emissions):
    """Every path of one short sequence: its log-likelihood and its best path."""
    T, K = emissions.shape
    paths = torch.cartesian_prod(*[torch.arange(K)] * T)  # (K^T, T)
    scores = log_pi[paths[:, 0]] + log_A[paths[:, :-1], paths[:, 1:]].sum(1)
    scores = scores + emissions.gather(1, paths.t()).t().sum(1)
    return torch.logsumexp(scores, dim=0), scores.max(), paths[scores.argmax()]


def sample_hmm(pi, A, B_emit, n_seq, max_len, min_len):
    lengths = torch.randint(min_len, max_len + 1, (n_seq,))
    z = Categorical(probs=pi).sample((n_seq,))
    xs, zs = [], []
    for _ in range(max_len):
        zs.append(z)
        xs.append(Categorical(probs=B_emit[z]).sample())
        z = Categorical(probs=A[z]).sample()
    x, z = torch.stack(xs, dim=1), torch.stack(zs, dim=1)
    padding = torch.arange(max_len)[None, :] >= lengths[:, None]
    return x.masked_fill(padding, 0), z.masked_fill(padding, -1), lengths


K, M = 3, 4
true_pi = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
true_A = torch.tensor([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.2, 0.1, 0.7]],
                      dtype=torch.float64)
true_B = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.05, 0.05, 0.2, 0.7]],
                      dtype=torch.float64)
x_seq, z_seq, lengths = sample_hmm(true_pi, true_A, true_B, n_seq=32, max_len=16, min_len=12)
T_MAX = x_seq.shape[1]
valid = torch.arange(T_MAX)[None, :] < lengths[:, None]

# ------------------------------------------------------------- fixed weights (recorded)

hmm64 = HMM(K, M).double()
log_pi, log_A, log_B = (p.detach() for p in hmm64.log_params())
emissions = emission_scores(log_B, x_seq).requires_grad_()
log_A_leaf = log_A.clone().requires_grad_()
loglik, log_alpha = forward_algorithm(log_pi, log_A_leaf, emissions, lengths)
log_beta = backward_algorithm(log_A, emissions.detach(), lengths)
emission_grad, transition_grad = torch.autograd.grad(loglik.sum(), (emissions, log_A_leaf))

log_alpha = log_alpha.detach()
# every time step gives the likelihood: logsumexp(alpha_t + beta_t) = log p(x)
per_step_loglik = torch.logsumexp(log_alpha + log_beta, dim=-1)
gamma = torch.softmax(log_alpha + log_beta, dim=-1) * valid[..., None]
log_xi = (log_alpha[:, :-1, :, None] + log_A[None, None]
          + (emissions.detach()[:, 1:] + log_beta[:, 1:])[:, :, None, :]
          - loglik.detach()[:, None, None, None])
xi = log_xi.exp() * valid[:, 1:, None, None]
fixed_results["loglik"] = loglik.detach()
fixed_results["gamma"] = gamma
fixed_results["xi_sum"] = xi.sum((0, 1))

# brute force over the 3^6 paths of a six-step prefix of the first sequence
short = 6
bf_loglik, bf_best, bf_path = brute_force(log_pi, log_A, emissions.detach()[0, :short])
short_lengths = torch.tensor([short])
fw_short, _ = forward_algorithm(log_pi, log_A, emissions.detach()[:1, :short], short_lengths)
vit_short_score, vit_short_path = viterbi(log_pi, log_A, emissions.detach()[:1, :short],
                                          short_lengths)

# Viterbi on the batch; the gradient of its max-sum score is the one-hot best path
emissions_v = emission_scores(log_B, x_seq).requires_grad_()
vit_score, vit_path = viterbi(log_pi, log_A, emissions_v, lengths)
(vit_grad,) = torch.autograd.grad(vit_score.sum(), emissions_v)
vit_one_hot = F.one_hot(vit_path, K).to(torch.float64) * valid[..., None]
fixed_results["viterbi_score"] = vit_score.detach()
fixed_results["viterbi_path"] = vit_path.masked_fill(~valid, -1)

# the log-likelihood through the module and its gradient
hmm_loglik = hmm64(x_seq, lengths)
hmm_grads = torch.autograd.grad(hmm_loglik.sum(), list(hmm64.parameters()))
fixed_results["hmm_grads"] = dict(zip(("init", "trans", "emit"), hmm_grads))

small_x, small_len = x_seq[:2, :5], torch.tensor([5, 3])
gc_params = tuple(p.detach().clone().requires_grad_() for p in hmm64.parameters())


def small_loglik(u_init, u_trans, u_emit):
    e = emission_scores(F.log_softmax(u_emit, dim=1), small_x)
    ll, _ = forward_algorithm(F.log_softmax(u_init, dim=0), F.log_softmax(u_trans, dim=1), e,
                              small_len)
    return ll


gradcheck_hmm = torch.autograd.gradcheck(small_loglik, gc_params)

# ---------------------------------------------------------------------------- Baum-Welch


def baum_welch_step(log_pi, log_A, log_B, x, lengths):
    emissions = emission_scores(log_B, x)
    loglik, log_alpha = forward_algorithm(log_pi, log_A, emissions, lengths)
    log_beta = backward_algorithm(log_A, emissions, lengths)
    mask = torch.arange(x.shape[1])[None, :] < lengths[:, None]
    gamma = torch.exp(log_alpha + log_beta - loglik[:, None, None]) * mask[..., None]
    log_xi = (log_alpha[:, :-1, :, None] + log_A[None, None]
              + (emissions[:, 1:] + log_beta[:, 1:])[:, :, None, :]
              - loglik[:, None, None, None])
    xi = torch.exp(log_xi) * mask[:, 1:, None, None]
    new_pi = gamma[:, 0].sum(0) / x.shape[0]
    new_A = xi.sum((0, 1))
    new_A = new_A / new_A.sum(1, keepdim=True)
    counts = torch.zeros_like(log_B).index_add_(1, x.flatten(), gamma.reshape(-1, K).t())
    counts_one_hot = gamma.reshape(-1, K).t() @ F.one_hot(x.flatten(), M).to(gamma.dtype)
    new_B = counts / counts.sum(1, keepdim=True)
    return (new_pi.log(), new_A.log(), new_B.log()), loglik.sum().item(), (counts,
                                                                            counts_one_hot)


with torch.no_grad():
    params = tuple(p.clone() for p in (log_pi, log_A, log_B))
    em_logliks = []
    for _ in range(20):
        params, ll, (counts, counts_one_hot) = baum_welch_step(*params, x_seq, lengths)
        em_logliks.append(ll)
    em_params = params
    true_loglik = forward_algorithm(true_pi.log(), true_A.log(),
                                    emission_scores(true_B.log(), x_seq), lengths)[0].sum()
fixed_results["em_logliks"] = torch.tensor(em_logliks[:6], dtype=torch.float64)
fixed_results["em_A"] = em_params[1].exp()


def decoding_accuracy(log_pi, log_A, log_B):
    """Viterbi's states against the true ones, under the best of the K! relabellings (the
    states of a fitted HMM are identified only up to a permutation)."""
    _, path = viterbi(log_pi, log_A, emission_scores(log_B, x_seq), lengths)
    best = 0.0
    for perm in itertools.permutations(range(K)):
        relabelled = torch.tensor(perm)[path]
        best = max(best, (relabelled == z_seq)[valid].double().mean().item())
    return best


accuracy_initial = decoding_accuracy(log_pi, log_A, log_B)
accuracy_em = decoding_accuracy(*em_params)
accuracy_true = decoding_accuracy(true_pi.log(), true_A.log(), true_B.log())

# --------------------------------------------------------------------- gradient training

torch.manual_seed(1)
hmm = HMM(K, M)
optimizer = torch.optim.Adam(hmm.parameters(), lr=0.05)
n_tokens = lengths.sum().item()
hmm_losses = []
for _ in range(30):
    loss = -hmm(x_seq, lengths).sum() / n_tokens
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    hmm_losses.append(loss.item())

# =============================================================================== soft sorting


def neural_sort(s, tau=1.0):
    """s: (B, n, 1) scores -> (B, n, n) relaxed permutation matrix sorting them descending."""
    n = s.size(1)
    one = torch.ones((n, 1), dtype=s.dtype)
    A_s = torch.abs(s - s.permute(0, 2, 1))
    B = torch.matmul(A_s, torch.matmul(one, torch.transpose(one, 0, 1)))
    scaling = (n + 1 - 2 * (torch.arange(n, dtype=s.dtype) + 1))
    C = torch.matmul(s, scaling.unsqueeze(0))
    P_max = (C - B).permute(0, 2, 1)
    return F.softmax(P_max / tau, dim=-1)


def sinkhorn_scaling(mat, mask=None, tol=1e-6, max_iter=50):
    """allRank's NeuralNDCG: alternate column and row normalisation."""
    if mask is not None:
        mat = mat.masked_fill(mask[:, None, :] | mask[:, :, None], 0.0)
        mat = mat.masked_fill(mask[:, None, :] & mask[:, :, None], 1.0)
    for _ in range(max_iter):
        mat = mat / mat.sum(dim=1, keepdim=True).clamp(min=1e-10)
        mat = mat / mat.sum(dim=2, keepdim=True).clamp(min=1e-10)
        if (torch.max(torch.abs(mat.sum(dim=2) - 1.)) < tol
                and torch.max(torch.abs(mat.sum(dim=1) - 1.)) < tol):
            break
    if mask is not None:
        mat = mat.masked_fill(mask[:, None, :] | mask[:, :, None], 0.0)
    return mat


def soft_rank(s, tau=1.0):
    """Descending rank 1..n as 1 + sum_j sigmoid((s_j - s_i) / tau), j != i."""
    diff = (s[..., None, :] - s[..., :, None]) / tau
    pairwise = torch.sigmoid(diff)
    return 0.5 + pairwise.sum(-1)  # (the diagonal adds sigmoid(0) = 1/2)


def hard_rank(s):
    return torch.argsort(torch.argsort(s, dim=-1, descending=True), dim=-1) + 1


def neural_ndcg(scores, relevance, tau=1.0, mask=None):
    P_hat = neural_sort(scores.unsqueeze(-1), tau)
    P_hat = sinkhorn_scaling(P_hat, mask)
    gains = torch.pow(2.0, relevance) - 1
    sorted_gains = torch.matmul(P_hat, gains.unsqueeze(-1)).squeeze(-1)
    n = scores.shape[-1]
    discounts = 1.0 / torch.log2(torch.arange(n, dtype=scores.dtype) + 2.0)
    ideal = torch.sort(gains, descending=True, dim=-1)[0]
    return (sorted_gains * discounts).sum(-1) / (ideal * discounts).sum(-1)


def hard_ndcg(scores, relevance):
    gains = torch.pow(2.0, relevance) - 1
    order = torch.argsort(scores, dim=-1, descending=True)
    n = scores.shape[-1]
    discounts = 1.0 / torch.log2(torch.arange(n, dtype=scores.dtype) + 2.0)
    ideal = torch.sort(gains, descending=True, dim=-1)[0]
    return (gains.gather(-1, order) * discounts).sum(-1) / (ideal * discounts).sum(-1)


# ------------------------------------------------------------- fixed weights (recorded)

s = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
P_hat = neural_sort(s.unsqueeze(-1), tau=0.5)
soft_sorted = torch.matmul(P_hat, s.unsqueeze(-1)).squeeze(-1)
ranks = soft_rank(s, tau=0.3)
(ns_grad,) = torch.autograd.grad((soft_sorted * torch.arange(6.0, dtype=s.dtype)).sum(), s)
(rank_grad,) = torch.autograd.grad((ranks ** 2).sum(), s)
fixed_results["neural_sort"] = P_hat.detach()
fixed_results["soft_sorted"] = soft_sorted.detach()
fixed_results["soft_rank"] = ranks.detach()
fixed_results["neural_sort_grad"] = ns_grad
fixed_results["soft_rank_grad"] = rank_grad

with torch.no_grad():
    # as tau -> 0: the permutation matrix of the descending sort and the hard ranks
    P_cold = neural_sort(s.unsqueeze(-1), tau=1e-4)
    P_true = F.one_hot(torch.argsort(s, dim=-1, descending=True), 6).to(s.dtype)
    ranks_cold = soft_rank(s, tau=1e-4)
    ranks_hard = hard_rank(s)
    sorted_desc = torch.sort(s, dim=-1, descending=True)[0]
    P_sinkhorn = sinkhorn_scaling(P_hat, tol=1e-9, max_iter=1000)
    row_sums, col_sums = P_sinkhorn.sum(2), P_sinkhorn.sum(1)

relevance = torch.randint(0, 4, (3, 6)).to(torch.float64)
ndcg_soft = neural_ndcg(s, relevance, tau=1.0)
(ndcg_grad,) = torch.autograd.grad(ndcg_soft.sum(), s)
fixed_results["neural_ndcg"] = ndcg_soft.detach()
fixed_results["neural_ndcg_grad"] = ndcg_grad
with torch.no_grad():
    ndcg_cold = neural_ndcg(s, relevance, tau=1e-4)
    ndcg_hard = hard_ndcg(s, relevance)

gc_s = s[:2, :4].detach().clone().requires_grad_()
gradcheck_sort = {
    "neural_sort": torch.autograd.gradcheck(lambda v: neural_sort(v.unsqueeze(-1), 0.5),
                                            (gc_s,)),
    "soft_rank": torch.autograd.gradcheck(lambda v: soft_rank(v, 0.3), (gc_s,)),
    "neural_ndcg": torch.autograd.gradcheck(
        lambda v: neural_ndcg(v, relevance[:1, :4], 1.0), (gc_s[:1].detach().requires_grad_(),)),
}

# ------------------------------------------------------ a scorer on a soft Spearman loss

torch.manual_seed(2)
N_ITEMS = 24
features = torch.randn(8, N_ITEMS, 4)
targets = features @ torch.tensor([1.0, -2.0, 0.5, 0.0]) + 0.2 * torch.randn(8, N_ITEMS)
target_ranks = hard_rank(targets).float()
scorer = nn.Linear(4, 1)
scorer_opt = torch.optim.Adam(scorer.parameters(), lr=0.05)


def spearman(a_ranks, b_ranks):
    a = a_ranks - a_ranks.mean(-1, keepdim=True)
    b = b_ranks - b_ranks.mean(-1, keepdim=True)
    return ((a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))).mean()


with torch.no_grad():
    spearman_before = spearman(hard_rank(scorer(features).squeeze(-1)).float(),
                               target_ranks).item()
spearman_losses = []
for _ in range(30):
    pred_ranks = soft_rank(scorer(features).squeeze(-1), tau=0.1)
    loss = F.mse_loss(pred_ranks, target_ranks) / N_ITEMS
    scorer_opt.zero_grad()
    loss.backward()
    scorer_opt.step()
    spearman_losses.append(loss.item())
with torch.no_grad():
    spearman_after = spearman(hard_rank(scorer(features).squeeze(-1)).float(),
                              target_ranks).item()

print(f"HMM: loglik {loglik.sum().item():.3f}, EM {em_logliks[0]:.3f} -> {em_logliks[-1]:.3f} "
      f"(true {true_loglik.item():.3f}), Adam {hmm_losses[0]:.3f} -> {hmm_losses[-1]:.3f}; "
      f"Spearman {spearman_before:.3f} -> {spearman_after:.3f}")
