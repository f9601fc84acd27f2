# ruff: noqa: N806 (allRank's and pycox's capitalised G, D, H0)
"""Learning-to-rank losses and metrics as allRank writes them, and survival models as pycox and
DeepSurv code write them, written for these tests in plain torch (not a copy of either):

- ranking on padded slates (``PADDED_Y_VALUE = -1``; ``y_pred[mask] = float("-inf")`` on a
  clone): ListNet (softmax cross-entropy over the list), RankNet over every index pair
  (``y[:, list_of_pairs]``) and by broadcasting ``s[:, :, None] - s[:, None, :]``, the
  LambdaLoss framework with the LambdaRank and NDCG-Loss2 weights (``sort``, ``gather``,
  ``clamp_``, NaNs of ``-inf - -inf`` masked after the fact), ApproxNDCG with a sigmoid soft
  rank (``diagonal().zero_()`` on a bool mask), NDCG@k by ``sort`` + ``cumsum`` and by
  ``topk``, ``F.margin_ranking_loss``; a scoring MLP trained with ``Adam``;
- survival: the Cox partial likelihood sorted by time (pycox's exp-cumsum-log with the max
  trick, and ``torch.logcumsumexp``), Breslow's ties by a broadcast risk-set mask and by
  ``torch.unique`` + reverse counts + ``gather``, discrete-time models (logistic hazard as
  pycox's ``nll_logistic_hazard`` and by hand with ``cumsum``/``cumprod``/``gather``, the PMF
  likelihood and DeepHit's ranking loss), Harrell's concordance index by broadcasting,
  Kaplan-Meier and Nelson-Aalen by hand (``torch.unique(return_inverse, return_counts)``,
  ``scatter_add``, ``bincount``, ``searchsorted``), Breslow's baseline hazard with
  ``index_add_``; ``torch.autograd.gradcheck`` in float64; a DeepSurv MLP and a logistic-hazard
  MLP trained with ``Adam``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
from itertools import product

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn import BCEWithLogitsLoss
from jitgrad.nn.utils.rnn import pad_sequence
from jitgrad.utils.data import DataLoader

torch.manual_seed(0)
fixed_results = {}

PADDED_Y_VALUE = -1
DEFAULT_EPS = 1e-10

# ====================================================================================== ranking
# ------------------------------------------------------------------------------------- losses


def listNet(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE):
    y_pred = y_pred.clone()
    y_true = y_true.clone()
    mask = y_true == padded_value_indicator
    y_pred[mask] = float("-inf")
    y_true[mask] = float("-inf")
    preds_smax = F.softmax(y_pred, dim=1)
    true_smax = F.softmax(y_true, dim=1)
    preds_smax = preds_smax + eps
    preds_log = torch.log(preds_smax)
    return torch.mean(-torch.sum(true_smax * preds_log, dim=1))


def rankNet(y_pred, y_true, padded_value_indicator=PADDED_Y_VALUE, weight_by_diff=False,
            weight_by_diff_powed=False):
    y_pred = y_pred.clone()
    y_true = y_true.clone()
    mask = y_true == padded_value_indicator
    y_pred[mask] = float("-inf")
    y_true[mask] = float("-inf")
    # every pair of indices of the slate, as a list of tuples used as an index
    document_pairs_candidates = list(product(range(y_true.shape[1]), repeat=2))
    pairs_true = y_true[:, document_pairs_candidates]
    selected_pred = y_pred[:, document_pairs_candidates]
    true_diffs = pairs_true[:, :, 0] - pairs_true[:, :, 1]
    pred_diffs = selected_pred[:, :, 0] - selected_pred[:, :, 1]
    # the positive pairs without a padded document (-inf - -inf is nan, not > 0)
    the_mask = (true_diffs > 0) & (~torch.isinf(true_diffs))
    pred_diffs = pred_diffs[the_mask]
    weight = None
    if weight_by_diff:
        abs_diff = torch.abs(true_diffs)
        weight = abs_diff[the_mask]
    elif weight_by_diff_powed:
        true_pow_diffs = torch.pow(pairs_true[:, :, 0], 2) - torch.pow(pairs_true[:, :, 1], 2)
        abs_diff = torch.abs(true_pow_diffs)
        weight = abs_diff[the_mask]
    true_diffs = (true_diffs > 0).type(y_pred.dtype)
    true_diffs = true_diffs[the_mask]
    return BCEWithLogitsLoss(weight=weight)(pred_diffs, true_diffs)


def ranknet_broadcast(scores, relevance, mask, sigma=1.0):
    """The pairwise logistic loss of RankNet by broadcasting: softplus(-sigma (s_i - s_j))
    over the pairs with rel_i > rel_j, both real documents."""
    s_diff = scores[:, :, None] - scores[:, None, :]
    valid = mask[:, :, None] & mask[:, None, :]
    positive = (relevance[:, :, None] > relevance[:, None, :]) & valid
    losses = F.softplus(-sigma * s_diff)
    losses = torch.where(positive, losses, torch.zeros_like(losses))
    return losses.sum() / positive.sum()


def lambdaRank_scheme(G, D, *args):
    return torch.abs(torch.pow(D[:, :, None], -1.) - torch.pow(D[:, None, :], -1.)) * torch.abs(
        G[:, :, None] - G[:, None, :])


def ndcgLoss2_scheme(G, D, *args):
    pos_idxs = torch.arange(1, G.shape[1] + 1, device=G.device)
    delta_idxs = torch.abs(pos_idxs[:, None] - pos_idxs[None, :])
    deltas = torch.abs(torch.pow(torch.abs(D[0, delta_idxs - 1]), -1.)
                       - torch.pow(torch.abs(D[0, delta_idxs]), -1.))
    deltas.diagonal().zero_()
    return deltas[None, :, :] * torch.abs(G[:, :, None] - G[:, None, :])


WEIGHING_SCHEMES = {"lambdaRank_scheme": lambdaRank_scheme, "ndcgLoss2_scheme": ndcgLoss2_scheme}


def lambdaLoss(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE,
               weighing_scheme=None, k=None, sigma=1., mu=10., reduction="sum",
               reduction_log="binary"):
    device = y_pred.device
    y_pred = y_pred.clone()
    y_true = y_true.clone()

    padded_mask = y_true == padded_value_indicator
    y_pred[padded_mask] = float("-inf")
    y_true[padded_mask] = float("-inf")

    y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
    y_true_sorted, _ = y_true.sort(descending=True, dim=-1)

    true_sorted_by_preds = torch.gather(y_true, dim=1, index=indices_pred)
    true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
    padded_pairs_mask = torch.isfinite(true_diffs)
    padded_pairs_mask = padded_pairs_mask & (true_diffs > 0)

    ndcg_at_k_mask = torch.zeros((y_pred.shape[1], y_pred.shape[1]), dtype=torch.bool,
                                 device=device)
    ndcg_at_k_mask[:k, :k] = 1

    # the -infs clamped to zero gains
    true_sorted_by_preds.clamp_(min=0.)
    y_true_sorted.clamp_(min=0.)

    pos_idxs = torch.arange(1, y_pred.shape[1] + 1).to(device)
    D = torch.log2(1. + pos_idxs.float())[None, :]
    maxDCGs = torch.sum(((torch.pow(2, y_true_sorted) - 1) / D)[:, :k], dim=-1).clamp(min=eps)
    G = (torch.pow(2, true_sorted_by_preds) - 1) / maxDCGs[:, None]

    if weighing_scheme is None:
        weights = 1.
    else:
        weights = WEIGHING_SCHEMES[weighing_scheme](G, D, mu, true_sorted_by_preds)

    # clamped for backprop: the padded pairs are nan (-inf - -inf) and are masked below
    scores_diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :]).clamp(min=-1e8,
                                                                                 max=1e8)
    scores_diffs.masked_fill(torch.isnan(scores_diffs), 0.)  # (a no-op, as in allRank)
    weighted_probas = (torch.sigmoid(sigma * scores_diffs).clamp(min=eps) ** weights).clamp(
        min=eps)
    if reduction_log == "natural":
        losses = torch.log(weighted_probas)
    elif reduction_log == "binary":
        losses = torch.log2(weighted_probas)
    else:
        raise ValueError(f"Reduction logarithm {reduction_log} not supported")

    if reduction == "sum":
        loss = -torch.sum(losses[padded_pairs_mask & ndcg_at_k_mask])
    elif reduction == "mean":
        loss = -torch.mean(losses[padded_pairs_mask & ndcg_at_k_mask])
    else:
        raise ValueError(f"Reduction method {reduction} not supported")
    return loss


def approxNDCGLoss(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE,
                   alpha=1.):
    device = y_pred.device
    y_pred = y_pred.clone()
    y_true = y_true.clone()

    padded_mask = y_true == padded_value_indicator
    y_pred[padded_mask] = float("-inf")
    y_true[padded_mask] = float("-inf")

    y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
    y_true_sorted, _ = y_true.sort(descending=True, dim=-1)

    true_sorted_by_preds = torch.gather(y_true, dim=1, index=indices_pred)
    true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
    padded_pairs_mask = torch.isfinite(true_diffs)
    padded_pairs_mask.diagonal(dim1=-2, dim2=-1).zero_()

    true_sorted_by_preds.clamp_(min=0.)
    y_true_sorted.clamp_(min=0.)

    pos_idxs = torch.arange(1, y_pred.shape[1] + 1).to(device)
    D = torch.log2(1. + pos_idxs.float())[None, :]
    maxDCGs = torch.sum((torch.pow(2, y_true_sorted) - 1) / D, dim=-1).clamp(min=eps)
    G = (torch.pow(2, true_sorted_by_preds) - 1) / maxDCGs[:, None]

    # the soft rank: 1 + sum_j sigmoid(-(s_i - s_j) alpha), then the approximate NDCG
    scores_diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :])
    scores_diffs[~padded_pairs_mask] = 0.
    approx_pos = 1. + torch.sum(padded_pairs_mask.float() * (
        torch.sigmoid(-alpha * scores_diffs).clamp(min=eps)), dim=-1)
    approx_D = torch.log2(1. + approx_pos)
    approx_NDCG = torch.sum((G / approx_D), dim=-1)
    return -torch.mean(approx_NDCG)


# ------------------------------------------------------------------------------------ metrics


def _true_sorted_by_preds(y_pred, y_true, padding_indicator=PADDED_Y_VALUE):
    mask = y_true == padding_indicator
    y_pred[mask] = float("-inf")
    y_true[mask] = 0.0
    _, indices = y_pred.sort(descending=True, dim=-1)
    return torch.gather(y_true, dim=1, index=indices)


def dcg(y_pred, y_true, ats=None, gain_function=lambda x: torch.pow(2, x) - 1,
        padding_indicator=PADDED_Y_VALUE):
    y_true = y_true.clone()
    y_pred = y_pred.clone()
    actual_length = y_true.shape[1]
    if ats is None:
        ats = [actual_length]
    ats = [min(at, actual_length) for at in ats]

    true_sorted_by_preds = _true_sorted_by_preds(y_pred, y_true, padding_indicator)
    discounts = (torch.tensor(1) / torch.log2(
        torch.arange(true_sorted_by_preds.shape[1], dtype=torch.float) + 2.0)).to(
        device=true_sorted_by_preds.device)
    gains = gain_function(true_sorted_by_preds)
    discounted_gains = (gains * discounts)[:, :np.max(ats)]
    cum_dcg = torch.cumsum(discounted_gains, dim=1)
    ats_tensor = torch.tensor(ats, dtype=torch.long) - torch.tensor(1)
    return cum_dcg[:, ats_tensor]


def ndcg(y_pred, y_true, ats=None, gain_function=lambda x: torch.pow(2, x) - 1,
         padding_indicator=PADDED_Y_VALUE, filler_value=1.0):
    idcg = dcg(y_true, y_true, ats, gain_function, padding_indicator)
    ndcg_ = dcg(y_pred, y_true, ats, gain_function, padding_indicator) / idcg
    idcg_mask = idcg == 0
    ndcg_[idcg_mask] = filler_value  # no relevant document: NDCG is the filler
    return ndcg_


def ndcg_at_k_topk(scores, relevance, mask, k):
    """NDCG@k with torch.topk, log2 discounts and padded documents filled with -inf / 0."""
    scores = scores.masked_fill(~mask, float("-inf"))
    gains = torch.where(mask, torch.pow(2.0, relevance) - 1, torch.zeros_like(relevance))
    k = min(k, scores.shape[1])
    discounts = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=gains.dtype))
    _, top_idx = torch.topk(scores, k, dim=1)
    dcg_k = (gains.gather(1, top_idx) * discounts).sum(dim=1)
    ideal, _ = torch.topk(gains, k, dim=1)
    idcg_k = (ideal * discounts).sum(dim=1)
    return torch.where(idcg_k > 0, dcg_k / idcg_k.clamp(min=1e-12), torch.ones_like(dcg_k))


# --------------------------------------------------------------------------------------- data

N_QUERIES, SLATE, N_FEATURES = 24, 8, 6


def make_slates(n_queries, w_true, dtype=torch.float32):
    """Slates of 3..8 documents, relevance 0..4 from a hidden linear score, one per query."""
    slates = []
    lengths = torch.randint(3, SLATE + 1, (n_queries,))
    for n_docs in lengths.tolist():
        x = torch.randn(n_docs, N_FEATURES, dtype=dtype)
        latent = x @ w_true.to(dtype) + 0.3 * torch.randn(n_docs, dtype=dtype)
        y = torch.clamp(torch.round(latent + 1.5), 0, 4)
        slates.append((x, y))
    return slates


def collate_slates(batch):
    """allRank pads each batch to its longest slate (here to SLATE) with y = -1."""
    xs, ys = zip(*batch)
    X = pad_sequence(list(xs), batch_first=True, padding_value=0.0)
    y = pad_sequence(list(ys), batch_first=True, padding_value=PADDED_Y_VALUE)
    if X.shape[1] < SLATE:
        X = F.pad(X, (0, 0, 0, SLATE - X.shape[1]))
        y = F.pad(y, (0, SLATE - y.shape[1]), value=PADDED_Y_VALUE)
    return X, y, y != PADDED_Y_VALUE


w_true = torch.tensor([1.0, -0.7, 0.5, 0.0, 0.3, 0.0])
slates = make_slates(N_QUERIES, w_true)
X_rank, y_rank, mask_rank = collate_slates(slates)
slate_lengths = mask_rank.sum(1)

# ---------------------------------------------------------- fixed-weight losses (recorded)

y_true64 = y_rank[:6].double()
valid64 = mask_rank[:6]
y_pred64 = torch.randn(6, SLATE, dtype=torch.float64, requires_grad=True)

rank_losses, rank_grads = {}, {}
loss_fns = {
    "listnet": lambda p: listNet(p, y_true64),
    "ranknet": lambda p: rankNet(p, y_true64),
    "ranknet_weighted": lambda p: rankNet(p, y_true64, weight_by_diff=True),
    "ranknet_powed": lambda p: rankNet(p, y_true64, weight_by_diff_powed=True),
    "ranknet_broadcast": lambda p: ranknet_broadcast(p, y_true64, valid64),
    "lambdaloss": lambda p: lambdaLoss(p, y_true64),
    "lambdarank": lambda p: lambdaLoss(p, y_true64, weighing_scheme="lambdaRank_scheme"),
    "ndcgloss2_at5": lambda p: lambdaLoss(p, y_true64, weighing_scheme="ndcgLoss2_scheme", k=5,
                                          reduction="mean", reduction_log="natural"),
    "approxndcg": lambda p: approxNDCGLoss(p, y_true64),
}
for name, fn in loss_fns.items():
    loss = fn(y_pred64)
    (grad,) = torch.autograd.grad(loss, y_pred64)
    rank_losses[name] = loss.detach()
    rank_grads[name] = grad
fixed_results["rank_losses"] = rank_losses
fixed_results["rank_grads"] = rank_grads
rank_grads_finite = {name: bool(torch.isfinite(g).all()) for name, g in rank_grads.items()}
padded_grads_zero = {name: bool((g[~valid64] == 0).all()) for name, g in rank_grads.items()}

# margin ranking loss over the positive pairs, as the (q, i, j) rows of torch.nonzero
pairs = torch.nonzero((y_true64[:, :, None] > y_true64[:, None, :])
                      & valid64[:, :, None] & valid64[:, None, :])
q, i, j = pairs.unbind(1)
s_i, s_j = y_pred64[q, i], y_pred64[q, j]
margin = F.margin_ranking_loss(s_i, s_j, torch.ones_like(s_i), margin=0.5)
margin_by_hand = torch.clamp(0.5 - (s_i - s_j), min=0).mean()
margin_module = nn.MarginRankingLoss(margin=0.5, reduction="sum")(s_j, s_i, -torch.ones_like(s_i))
fixed_results["margin"] = {"mean": margin.detach(), "sum": margin_module.detach(),
                           "grad": torch.autograd.grad(margin, y_pred64)[0]}
margin_agrees = bool(torch.allclose(margin, margin_by_hand)) and bool(
    torch.allclose(margin_module, margin_by_hand * len(s_i)))
fixed_results["n_pairs"] = torch.tensor(len(pairs))

# NDCG@k: allRank's sort + cumsum vs topk
ats = [1, 3, 5, 8]
ndcg_sorted = ndcg(y_pred64.detach(), y_true64, ats=ats)
ndcg_topk = torch.stack([ndcg_at_k_topk(y_pred64.detach(), y_true64.clamp(min=0), valid64, k)
                         for k in ats], dim=1)
fixed_results["ndcg"] = ndcg_sorted
ideal_ndcg = ndcg(y_true64, y_true64, ats=ats)

# gradcheck in float64 (small slates: each column of the numerical Jacobian is two losses)
gc_true = y_true64[:2]
gc_pred = y_pred64[:2].detach().clone().requires_grad_()
gradcheck_rank = {
    name: torch.autograd.gradcheck(lambda p, fn=fn: fn(p), (gc_pred,), eps=1e-6, atol=1e-5)
    for name, fn in (
        ("listnet", lambda p: listNet(p, gc_true)),
        ("ranknet", lambda p: rankNet(p, gc_true, weight_by_diff=True)),
        ("lambdarank", lambda p: lambdaLoss(p, gc_true, weighing_scheme="lambdaRank_scheme")),
        ("approxndcg", lambda p: approxNDCGLoss(p, gc_true)),
    )
}

# ------------------------------------------------------------------ a scoring MLP, trained


class ScoringMLP(nn.Module):
    def __init__(self, n_features, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def train_ranker(loss_name, epochs=12, lr=2e-2, seed=1):
    torch.manual_seed(seed)
    model = ScoringMLP(N_FEATURES)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(slates, batch_size=12, shuffle=True, collate_fn=collate_slates)
    losses = []
    with torch.no_grad():
        before = ndcg(model(X_rank), y_rank, ats=[5]).mean().item()
    for _ in range(epochs):
        model.train()
        for X, y, _ in loader:
            y_pred = model(X)
            if loss_name == "listnet":
                loss = listNet(y_pred, y)
            elif loss_name == "approxndcg":
                loss = approxNDCGLoss(y_pred, y)
            else:
                loss = lambdaLoss(y_pred, y, weighing_scheme="ndcgLoss2_scheme",
                                  reduction="mean")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        after = ndcg(model(X_rank), y_rank, ats=[5]).mean().item()
        after_topk = ndcg_at_k_topk(model(X_rank), y_rank.clamp(min=0), mask_rank, 5)
    return {"losses": losses, "ndcg_before": before, "ndcg_after": after,
            "ndcg_after_topk": after_topk.mean().item()}


rank_training = {name: train_ranker(name) for name in ("listnet", "approxndcg", "ndcgloss2")}

# ===================================================================================== survival
# --------------------------------------------------------------------------------------- data

N_SUBJECTS, N_COVARIATES = 40, 4
beta_true = torch.tensor([1.0, -0.8, 0.5, 0.0], dtype=torch.float64)


def simulate_survival(n):
    """Exponential times with hazard exp(x beta), uniform censoring."""
    x = torch.randn(n, N_COVARIATES, dtype=torch.float64)
    rate = torch.exp(x @ beta_true)
    event_time = -torch.log(torch.rand(n, dtype=torch.float64)) / rate
    censor_time = 3.0 * torch.rand(n, dtype=torch.float64)
    durations = torch.minimum(event_time, censor_time)
    events = (event_time <= censor_time).float()
    return x, durations, events


x_surv, durations, events = simulate_survival(N_SUBJECTS)
durations_tied = torch.ceil(durations * 4) / 4  # quarter-units: many ties

# ----------------------------------------------------------- Cox partial likelihood


def cox_ph_loss_sorted(log_h, events, eps=1e-7):
    if events.dtype is torch.bool:
        events = events.float()
    events = events.view(-1)
    log_h = log_h.view(-1)
    gamma = log_h.max()
    log_cumsum_h = log_h.sub(gamma).exp().cumsum(0).add(eps).log().add(gamma)
    return - log_h.sub(log_cumsum_h).mul(events).sum().div(events.sum())


def cox_ph_loss(log_h, durations, events, eps=1e-7):
    idx = durations.sort(descending=True)[1]
    events = events[idx]
    log_h = log_h[idx]
    return cox_ph_loss_sorted(log_h, events, eps)


def cox_ph_loss_tied(log_h, durations, events, eps=1e-7):
    """pycox's cox_ph_loss as users call it on tied times: the sort order among ties decides
    which tied subjects count in each other's risk sets."""
    # (torch's CPU sort with stable=False, the default, orders ties the way libstdc++'s
    # std::sort leaves them once the dimension exceeds 16 elements)
    idx = durations.sort(descending=True)[1]
    return cox_ph_loss_sorted(log_h[idx], events[idx], eps)


def neg_partial_log_likelihood(log_h, durations, events):
    """DeepSurv style: descending times, log of the risk-set sums by torch.logcumsumexp."""
    order = torch.argsort(durations, descending=True)
    log_h, events = log_h.view(-1)[order], events[order]
    log_risk = torch.logcumsumexp(log_h, dim=0)
    return -torch.sum((log_h - log_risk) * events) / torch.sum(events)


def breslow_loss_mask(log_h, durations, events):
    """Breslow's ties: each event's risk set is every subject with t_j >= t_i (broadcast)."""
    log_h = log_h.view(-1)
    at_risk = durations[None, :] >= durations[:, None]
    log_risk = torch.logsumexp(log_h[None, :].masked_fill(~at_risk, float("-inf")), dim=1)
    return -((log_h - log_risk) * events).sum() / events.sum()


def breslow_loss_unique(log_h, durations, events):
    """The same with one sort: the risk set of a tied group ends at the group's last subject in
    descending order, found with torch.unique's counts."""
    log_h = log_h.view(-1)
    order = torch.argsort(durations, descending=True)
    log_cum = torch.logcumsumexp(log_h[order], dim=0)
    _, inverse, counts = torch.unique(durations, sorted=True, return_inverse=True,
                                      return_counts=True)
    n_at_risk = counts.flip(0).cumsum(0).flip(0)  # subjects with t >= each unique time
    log_risk = log_cum.gather(0, n_at_risk - 1)[inverse]
    return -((log_h - log_risk) * events).sum() / events.sum()


# (recorded) fixed weights: a linear predictor with a fixed beta
beta_fixed = torch.tensor([0.7, -0.4, 0.2, 0.1], dtype=torch.float64, requires_grad=True)
log_h_fixed = x_surv @ beta_fixed
cox_values, cox_grads = {}, {}
for name, fn, times in (
        ("pycox", cox_ph_loss, durations),
        ("logcumsumexp", neg_partial_log_likelihood, durations),
        ("breslow_mask", breslow_loss_mask, durations),
        ("breslow_unique", breslow_loss_unique, durations),
        ("breslow_mask_tied", breslow_loss_mask, durations_tied),
        ("breslow_unique_tied", breslow_loss_unique, durations_tied),
        ("pycox_tied", cox_ph_loss_tied, durations_tied)):
    loss = fn(x_surv @ beta_fixed, times, events)
    cox_values[name] = loss.detach()
    cox_grads[name] = torch.autograd.grad(loss, beta_fixed)[0]
fixed_results["cox"] = cox_values
fixed_results["cox_grads"] = cox_grads
n_unique_tied = len(torch.unique(durations_tied))

# the score at beta = 0 by hand: sum over events of x_i - mean of x over the risk set
at_risk = (durations[None, :] >= durations[:, None]).double()
risk_means = at_risk @ x_surv / at_risk.sum(1, keepdim=True)
score_by_hand = ((x_surv - risk_means) * events[:, None]).sum(0) / events.sum()
beta_zero = torch.zeros(N_COVARIATES, dtype=torch.float64, requires_grad=True)
score_autograd = -torch.autograd.grad(
    neg_partial_log_likelihood(x_surv @ beta_zero, durations, events), beta_zero)[0]

# a Cox regression fitted by LBFGS: its score vanishes at the fit
beta_fit = torch.zeros(N_COVARIATES, dtype=torch.float64, requires_grad=True)
lbfgs = torch.optim.LBFGS([beta_fit], lr=1, max_iter=50, tolerance_grad=1e-10,
                          tolerance_change=1e-14, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    loss = breslow_loss_mask(x_surv @ beta_fit, durations_tied, events)
    loss.backward()
    return loss


lbfgs.step(closure)
fixed_results["beta_fit"] = beta_fit.detach()
fit_grad_norm = beta_fit.grad.norm().item()


# Newton-Raphson as lifelines fits it: the Hessian of the partial likelihood is the observed
# information (the risk-set covariance of x summed over the events), its inverse the variance
def information_by_hand(beta, x, durations, events):
    w = torch.exp(x @ beta)
    info = torch.zeros(x.shape[1], x.shape[1], dtype=x.dtype)
    for i in torch.nonzero(events).flatten().tolist():
        in_risk_set = durations >= durations[i]
        p = w[in_risk_set] / w[in_risk_set].sum()
        mean = p @ x[in_risk_set]
        info += (p[:, None] * x[in_risk_set]).T @ x[in_risk_set] - torch.outer(mean, mean)
    return info


def breslow_nll_sum(beta):
    return breslow_loss_mask(x_surv @ beta, durations_tied, events) * events.sum()


beta_nr = torch.zeros(N_COVARIATES, dtype=torch.float64)
newton_steps = []
for _ in range(6):
    beta_req = beta_nr.clone().requires_grad_()
    (score,) = torch.autograd.grad(breslow_nll_sum(beta_req), beta_req)
    hessian = torch.autograd.functional.hessian(breslow_nll_sum, beta_nr)
    step = torch.linalg.solve(hessian, score)
    beta_nr = beta_nr - step
    newton_steps.append(step.norm().item())
standard_errors = torch.sqrt(torch.diag(torch.linalg.inv(hessian)))
information = information_by_hand(beta_nr, x_surv, durations_tied, events)
hessian_at_fit = torch.autograd.functional.hessian(breslow_nll_sum, beta_nr)
fixed_results["newton"] = {"beta": beta_nr, "se": standard_errors, "hessian": hessian_at_fit}
z_scores = beta_nr / standard_errors

# the partial likelihood does not change when every log-hazard moves by the same amount: a
# float32 DeepSurv output near 100 gives the same loss and gradient as near 0
log_h32 = (x_surv @ beta_fixed).detach().float().requires_grad_()
shift_losses, shift_grads = {}, {}
for shift in (0.0, 100.0):
    shifted = log_h32 + shift
    loss = neg_partial_log_likelihood(shifted, durations.float(), events.float())
    shift_losses[shift] = loss.item()
    shift_grads[shift] = torch.autograd.grad(loss, log_h32)[0]
fixed_results["shift_grad"] = shift_grads[100.0]

gc_h = log_h_fixed[:8].detach().clone().requires_grad_()
gc_t, gc_tt, gc_e = durations[:8], durations_tied[:8], events[:8]
gradcheck_cox = {
    "pycox": torch.autograd.gradcheck(lambda h: cox_ph_loss(h, gc_t, gc_e), (gc_h,)),
    "logcumsumexp": torch.autograd.gradcheck(
        lambda h: neg_partial_log_likelihood(h, gc_t, gc_e), (gc_h,)),
    "breslow_mask": torch.autograd.gradcheck(
        lambda h: breslow_loss_mask(h, gc_tt, gc_e), (gc_h,)),
    "breslow_unique": torch.autograd.gradcheck(
        lambda h: breslow_loss_unique(h, gc_tt, gc_e), (gc_h,)),
}

# ------------------------------------------------------------------- concordance index


def concordance_index(durations, risk, events):
    """Harrell's C: among pairs with t_i < t_j and an event at t_i, the share where the
    earlier subject has the higher risk (ties in risk count one half)."""
    comparable = (durations[:, None] < durations[None, :]) & (events[:, None] == 1)
    concordant = (risk[:, None] > risk[None, :]) & comparable
    tied = (risk[:, None] == risk[None, :]) & comparable
    return (concordant.sum() + 0.5 * tied.sum()) / comparable.sum()


def concordance_loop(durations, risk, events):
    t, r, e = durations.tolist(), risk.tolist(), events.tolist()
    num = den = 0.0
    for a in range(len(t)):
        for b in range(len(t)):
            if t[a] < t[b] and e[a] == 1:
                den += 1
                num += 1.0 if r[a] > r[b] else 0.5 if r[a] == r[b] else 0.0
    return num / den


risk_fixed = log_h_fixed.detach()
risk_rounded = torch.round(risk_fixed * 2) / 2  # ties in risk
c_index = {
    "true_beta": concordance_index(durations, x_surv @ beta_true, events),
    "fixed": concordance_index(durations, risk_fixed, events),
    "rounded_tied": concordance_index(durations_tied, risk_rounded, events),
}
c_index_loop = {
    "true_beta": concordance_loop(durations, x_surv @ beta_true, events),
    "fixed": concordance_loop(durations, risk_fixed, events),
    "rounded_tied": concordance_loop(durations_tied, risk_rounded, events),
}
fixed_results["c_index"] = c_index

# -------------------------------------------------------- Kaplan-Meier, Nelson-Aalen


def kaplan_meier(durations, events):
    times, inverse, counts = torch.unique(durations, sorted=True, return_inverse=True,
                                          return_counts=True)
    deaths = torch.zeros_like(times).scatter_add(0, inverse, events.to(times.dtype))
    n_at_risk = counts.flip(0).cumsum(0).flip(0).to(times.dtype)
    survival = torch.cumprod(1.0 - deaths / n_at_risk, dim=0)
    cum_hazard = torch.cumsum(deaths / n_at_risk, dim=0)  # Nelson-Aalen
    return times, survival, cum_hazard, deaths, n_at_risk


def kaplan_meier_loop(durations, events):
    t, e = durations.tolist(), events.tolist()
    surv, s = [], 1.0
    for u in sorted(set(t)):
        d = sum(1 for ti, ei in zip(t, e) if ti == u and ei == 1)
        n = sum(1 for ti in t if ti >= u)
        s *= 1 - d / n
        surv.append(s)
    return surv


def survival_at(times, survival, query):
    """S(t) as a step function: the last unique time <= t (1 before the first)."""
    idx = torch.searchsorted(times, query, right=True)
    padded = torch.cat([torch.ones(1, dtype=survival.dtype), survival])
    return padded[idx]


km_times, km_survival, na_hazard, km_deaths, km_at_risk = kaplan_meier(durations_tied, events)
_, inverse_tied = torch.unique(durations_tied, return_inverse=True)
deaths_bincount = torch.bincount(inverse_tied, weights=events, minlength=len(km_times))
km_loop = kaplan_meier_loop(durations_tied, events)
km_queries = torch.tensor([0.0, 0.1, 0.25, 0.3, 0.9, 1.7, 10.0], dtype=torch.float64)
fixed_results["km"] = {"times": km_times, "survival": km_survival, "nelson_aalen": na_hazard,
                       "at": survival_at(km_times, km_survival, km_queries)}

# Breslow's baseline cumulative hazard at the fitted beta, with index_add_
with torch.no_grad():
    risk_fit = torch.exp(x_surv @ beta_fit)
    risk_sum = torch.zeros(len(km_times), dtype=torch.float64)
    risk_sum.index_add_(0, inverse_tied, risk_fit)
    risk_set_sum = risk_sum.flip(0).cumsum(0).flip(0)
    baseline_hazard = torch.cumsum(km_deaths / risk_set_sum, dim=0)
    # survival curves of the first three subjects: S(t | x) = exp(-H0(t) exp(x beta))
    subject_curves = torch.exp(-baseline_hazard[None, :] * risk_fit[:3, None])
fixed_results["baseline_hazard"] = baseline_hazard
fixed_results["subject_curves"] = subject_curves

# -------------------------------------------------------- discrete-time survival models

N_BINS = 6
cuts = torch.linspace(0, float(durations.max()), N_BINS + 1, dtype=torch.float64)
idx_durations = torch.bucketize(durations, cuts[1:-1], right=True)  # 0..N_BINS-1


def pad_col(input, val=0, where="end"):
    if len(input.shape) != 2:
        raise ValueError("Only works for `phi` tensor that is 2-D.")
    pad = torch.zeros_like(input[:, :1])
    if val != 0:
        pad = pad + val
    if where == "end":
        return torch.cat([input, pad], dim=1)
    return torch.cat([pad, input], dim=1)


def _reduction(loss, reduction="mean"):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    return loss.sum()


def nll_logistic_hazard(phi, idx_durations, events, reduction="mean"):
    if phi.shape[1] <= idx_durations.max():
        raise ValueError("Network output `phi` is too small for `idx_durations`.")
    if events.dtype is torch.bool:
        events = events.float()
    events = events.view(-1, 1).to(phi.dtype)
    idx_durations = idx_durations.view(-1, 1)
    y_bce = torch.zeros_like(phi).scatter(1, idx_durations, events)
    bce = F.binary_cross_entropy_with_logits(phi, y_bce, reduction="none")
    loss = bce.cumsum(1).gather(1, idx_durations).view(-1)
    return _reduction(loss, reduction)


def logistic_hazard_by_hand(phi, idx_durations, events):
    """log h_k + sum_{j<k} log(1 - h_j) for an event in bin k; sum_{j<=k} for a censoring."""
    idx = idx_durations.view(-1, 1)
    log_h = F.logsigmoid(phi)
    log_1mh = F.logsigmoid(-phi)
    survived = torch.cumsum(log_1mh, dim=1).gather(1, idx).squeeze(1)
    at_event = log_h.gather(1, idx).squeeze(1) - log_1mh.gather(1, idx).squeeze(1)
    return -(survived + events * at_event)


def nll_pmf(phi, idx_durations, events, reduction="mean", epsilon=1e-7):
    events = events.view(-1)
    idx_durations = idx_durations.view(-1, 1)
    phi = pad_col(phi)
    gamma = phi.max(1)[0]
    cumsum = phi.sub(gamma.view(-1, 1)).exp().cumsum(1)
    sum_ = cumsum[:, -1]
    part1 = phi.gather(1, idx_durations).view(-1).sub(gamma).mul(events)
    part2 = - sum_.relu().add(epsilon).log()
    part3 = sum_.sub(cumsum.gather(1, idx_durations).view(-1)).relu().add(epsilon).log().mul(
        1. - events)
    loss = - part1.add(part2).add(part3)
    return _reduction(loss, reduction)


def pair_rank_mat(idx_durations, events):
    """DeepHit's comparable pairs: i had an event, and j outlived it (or was censored in the
    same bin)."""
    d_i, d_j = idx_durations[:, None], idx_durations[None, :]
    e_i, e_j = events[:, None], events[None, :]
    return ((e_i == 1) & ((d_i < d_j) | ((d_i == d_j) & (e_j == 0)))).to(torch.float64)


def rank_loss_deephit_single(phi, idx_durations, events, rank_mat, sigma, reduction="mean"):
    idx_durations = idx_durations.view(-1, 1)
    pmf = pad_col(phi).softmax(1)
    y = torch.zeros_like(pmf).scatter(1, idx_durations, 1.)
    n = pmf.shape[0]
    ones = torch.ones((n, 1), dtype=pmf.dtype)
    r = pmf.cumsum(1).matmul(y.transpose(0, 1))
    diag_r = r.diag().view(1, -1)
    r = (ones.matmul(diag_r) - r).transpose(0, 1)
    loss = rank_mat * torch.exp(-r / sigma)
    loss = loss.mean(1, keepdim=True)
    return _reduction(loss, reduction)


phi_fixed = torch.randn(N_SUBJECTS, N_BINS, dtype=torch.float64, requires_grad=True)
rank_mat = pair_rank_mat(idx_durations, events)
discrete_losses = {
    "logistic_hazard": nll_logistic_hazard(phi_fixed, idx_durations, events),
    "logistic_hazard_by_hand": logistic_hazard_by_hand(phi_fixed, idx_durations, events).mean(),
    "pmf": nll_pmf(phi_fixed, idx_durations, events),
    "deephit_rank": rank_loss_deephit_single(phi_fixed, idx_durations, events, rank_mat, 0.1),
}
fixed_results["discrete"] = {name: v.detach() for name, v in discrete_losses.items()}
fixed_results["discrete_grads"] = {
    name: torch.autograd.grad(v, phi_fixed)[0] for name, v in discrete_losses.items()}
with torch.no_grad():
    hazard = torch.sigmoid(phi_fixed)
    surv_hazard = torch.cumprod(1 - hazard, dim=1)
    surv_hazard_log = torch.exp(torch.cumsum(F.logsigmoid(-phi_fixed), dim=1))
    pmf = pad_col(phi_fixed).softmax(1)
    surv_pmf = 1 - pmf.cumsum(1)
fixed_results["surv_hazard"] = surv_hazard[:5]
fixed_results["surv_pmf"] = surv_pmf[:5]
fixed_results["rank_mat_sum"] = rank_mat.sum()


def brier_scores(surv, surv_times, durations, events, time_grid):
    """pycox's IPCW Brier score: ``surv`` (n, len(surv_times)) are step functions, and the
    censoring distribution G is the Kaplan-Meier estimate with the events flipped."""
    c_times, c_surv, *_ = kaplan_meier(durations, 1 - events)
    G_grid = survival_at(c_times, c_surv, time_grid).clamp(min=1e-7)
    G_own = survival_at(c_times, c_surv, durations).clamp(min=1e-7)
    surv_padded = torch.cat([torch.ones_like(surv[:, :1]), surv], dim=1)
    S = surv_padded[:, torch.searchsorted(surv_times, time_grid, right=True)]
    died = (durations[:, None] <= time_grid[None, :]) & (events[:, None] == 1)
    alive = durations[:, None] > time_grid[None, :]
    zero = torch.zeros((), dtype=S.dtype)
    scores = (torch.where(died, S ** 2 / G_own[:, None], zero)
              + torch.where(alive, (1 - S) ** 2 / G_grid[None, :], zero))
    return scores.mean(0)


def integrated_brier_score(surv, surv_times, durations, events, time_grid):
    scores = brier_scores(surv, surv_times, durations, events, time_grid)
    return torch.trapezoid(scores, time_grid) / (time_grid[-1] - time_grid[0])


time_grid = torch.linspace(0.05, float(durations.max()) * 0.8, 12, dtype=torch.float64)
fixed_results["brier"] = brier_scores(surv_hazard, cuts[1:], durations, events, time_grid)
fixed_results["ibs"] = integrated_brier_score(surv_hazard, cuts[1:], durations, events,
                                              time_grid)

gc_phi = phi_fixed[:4, :].detach().clone().requires_grad_()
gc_idx, gc_ev = idx_durations[:4], events[:4]
gradcheck_discrete = {
    "logistic_hazard": torch.autograd.gradcheck(
        lambda p: nll_logistic_hazard(p, gc_idx, gc_ev), (gc_phi,)),
    "pmf": torch.autograd.gradcheck(lambda p: nll_pmf(p, gc_idx, gc_ev), (gc_phi,)),
    "deephit_rank": torch.autograd.gradcheck(
        lambda p: rank_loss_deephit_single(p, gc_idx, gc_ev, rank_mat[:4, :4], 0.1),
        (gc_phi,)),
}

# -------------------------------------------------------------- DeepSurv and a hazard net


class DeepSurv(nn.Module):
    def __init__(self, n_in, hidden=16, n_out=1, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 nn.Dropout(dropout), nn.Linear(hidden, n_out, bias=n_out > 1))

    def forward(self, x):
        return self.net(x)


torch.manual_seed(2)
x_train, t_train, e_train = simulate_survival(160)
x_train32, t_train32, e_train32 = x_train.float(), t_train.float(), e_train.float()
surv_model = DeepSurv(N_COVARIATES)
surv_optimizer = torch.optim.Adam(surv_model.parameters(), lr=1e-2, weight_decay=1e-4)
surv_model.eval()
with torch.no_grad():
    c_before = concordance_index(t_train32, surv_model(x_train32).view(-1), e_train32).item()
surv_losses = []
for _ in range(20):
    surv_model.train()
    for batch in torch.randperm(160).split(80):
        loss = neg_partial_log_likelihood(surv_model(x_train32[batch]), t_train32[batch],
                                          e_train32[batch])
        surv_optimizer.zero_grad()
        loss.backward()
        surv_optimizer.step()
        surv_losses.append(loss.item())
surv_model.eval()
with torch.no_grad():
    c_after = concordance_index(t_train32, surv_model(x_train32).view(-1), e_train32).item()
    c_oracle = concordance_index(t_train, x_train @ beta_true, e_train).item()

# a logistic-hazard net on the discrete-time bins (pycox's LogisticHazard)
train_cuts = torch.linspace(0, float(t_train.max()), N_BINS + 1, dtype=torch.float64)
idx_train = torch.bucketize(t_train, train_cuts[1:-1], right=True)
hazard_model = DeepSurv(N_COVARIATES, n_out=N_BINS, dropout=0.0)
hazard_optimizer = torch.optim.Adam(hazard_model.parameters(), lr=1e-2)
hazard_losses = []
for _ in range(30):
    phi = hazard_model(x_train32)
    loss = nll_logistic_hazard(phi, idx_train, e_train32)
    hazard_optimizer.zero_grad()
    loss.backward()
    hazard_optimizer.step()
    hazard_losses.append(loss.item())
hazard_model.eval()
with torch.no_grad():
    survival_curves = torch.cumprod(1 - torch.sigmoid(hazard_model(x_train32)), dim=1)
    # risk as one minus the survival at the median bin: its concordance with the times
    c_hazard = concordance_index(t_train32, 1 - survival_curves[:, N_BINS // 2],
                                 e_train32).item()
    # the integrated Brier score of the net against Kaplan-Meier's (the same curve for all)
    grid = torch.linspace(0.05, float(t_train.max()) * 0.8, 12, dtype=torch.float64)
    ibs_hazard = integrated_brier_score(survival_curves.double(), train_cuts[1:], t_train,
                                        e_train, grid).item()
    km_t, km_s, *_ = kaplan_meier(t_train, e_train)
    ibs_km = integrated_brier_score(km_s.expand(len(t_train), -1), km_t, t_train, e_train,
                                    grid).item()

print("ranking: " + ", ".join(
    f"{k} {v['losses'][0]:.3f}->{v['losses'][-1]:.3f} ndcg@5 {v['ndcg_before']:.3f}->"
    f"{v['ndcg_after']:.3f}" for k, v in rank_training.items()))
print(f"cox: c-index {c_before:.3f} -> {c_after:.3f} (oracle {c_oracle:.3f}); logistic hazard "
      f"{hazard_losses[0]:.3f} -> {hazard_losses[-1]:.3f}, c {c_hazard:.3f}, IBS {ibs_hazard:.3f} "
      f"(Kaplan-Meier {ibs_km:.3f})")
