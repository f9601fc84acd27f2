# ruff: noqa: N812 (the usual F alias of nn.functional)
"""An RNN-Transducer recognizer written by hand, for these tests, the way transducer tutorials
and small research repositories write it in plain torch (not a copy of any of them):

- the RNN-T loss by dynamic programming over the (T, U + 1) lattice of a joint network's
  ``log_softmax`` output ``(B, T, U + 1, V)``: blank and label log-probabilities by indexing
  and ``Tensor.gather`` on ``expand``-ed targets; forward variables (alphas) by nested Python
  loops with ``torch.logaddexp``, and batched along the lattice's anti-diagonals (``F.pad``
  shifts, ``gather`` along ``u = n - t``, ``torch.where`` masks, ``torch.stack``); the
  per-utterance end ``alpha[T_b - 1, U_b]`` picked by advanced indexing for variable input and
  target lengths; backward variables (betas) by a reverse loop with masks;
- checks: a brute-force ``torch.logsumexp`` over every alignment (``itertools.combinations``)
  on tiny lattices, alpha == beta, padding invariance (each utterance alone vs the padded
  batch), ``torch.autograd.grad`` vs the analytic alpha * beta gradient (``exp``,
  ``scatter_add``), a ``torch.autograd.Function`` that saves the analytic gradient in
  ``forward`` (warp-transducer style, fused with ``log_softmax``), ``torch.autograd.gradcheck``
  in float64, the occupancy invariants (one blank per frame, each label once); the
  ``-inf``-masked ``logsumexp`` whose gradient is NaN;
- "speech": tone bursts per token in noise; a log power spectrum from ``Tensor.unfold``,
  ``torch.fft.rfft`` and a Hann window; ``pad_sequence`` in a ``DataLoader`` ``collate_fn``;
- the model: a GRU encoder with frame stacking (time reduction by ``reshape``) on
  ``pack_padded_sequence(enforce_sorted=False)`` / ``pad_packed_sequence(total_length=)``; an
  ``nn.Embedding`` + ``nn.LSTM`` prediction network fed the blank as start token; a joint
  network ``Linear`` + ``tanh`` on ``(B, T, 1, H) + (B, 1, U + 1, H)`` broadcasting;
- greedy transducer decoding with a max-symbols-per-step loop, one utterance at a time and
  batched (states updated by ``torch.where`` for the utterances that emitted);
- ``Adam``, ``clip_grad_norm_``, a ``StepLR`` schedule, ``model.eval()`` / ``torch.no_grad``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import itertools
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from jitgrad.utils.data import DataLoader

torch.manual_seed(0)
fixed_results = {}

BLANK = 0
NEG = -1e30  # "minus infinity" that keeps logaddexp's gradient finite


# -------------------------------------------------------------------- the RNN-T lattice


def gather_blank_and_labels(log_probs, targets, blank=BLANK):
    """(B, T, U + 1, V) log-probs -> blank (B, T, U + 1) and label (B, T, U) log-probs."""
    B, T, U1, V = log_probs.shape
    blank_lp = log_probs[:, :, :, blank]
    index = targets[:, None, :, None].expand(B, T, U1 - 1, 1)
    emit_lp = log_probs[:, :, :-1, :].gather(3, index).squeeze(-1)
    return blank_lp, emit_lp


def alphas_loop(log_probs, targets, blank=BLANK):
    """alpha[t][u]: log-probability of emitting targets[:u] by frame t; a (B, T, U + 1) grid."""
    blank_lp, emit_lp = gather_blank_and_labels(log_probs, targets, blank)
    B, T, U1 = blank_lp.shape
    alpha = [[None] * U1 for _ in range(T)]
    for t in range(T):
        for u in range(U1):
            if t == 0 and u == 0:
                alpha[t][u] = log_probs.new_zeros(B)
            elif t == 0:
                alpha[t][u] = alpha[t][u - 1] + emit_lp[:, t, u - 1]
            elif u == 0:
                alpha[t][u] = alpha[t - 1][u] + blank_lp[:, t - 1, u]
            else:
                alpha[t][u] = torch.logaddexp(alpha[t - 1][u] + blank_lp[:, t - 1, u],
                                              alpha[t][u - 1] + emit_lp[:, t, u - 1])
    return torch.stack([torch.stack(row, dim=1) for row in alpha], dim=1), blank_lp


def alphas_diagonal(log_probs, targets, blank=BLANK):
    """The same alphas computed one anti-diagonal n = t + u at a time for the whole batch."""
    blank_lp, emit_lp = gather_blank_and_labels(log_probs, targets, blank)
    B, T, U1 = blank_lp.shape
    U = U1 - 1
    # blank_prev[:, t, u] = blank[:, t - 1, u]; emit_lp padded to U + 1 columns
    blank_prev = F.pad(blank_lp[:, :-1], (0, 0, 1, 0), value=NEG)
    emit_full = F.pad(emit_lp, (0, 1), value=NEG)
    t_idx = torch.arange(T)
    first = torch.where(t_idx == 0, 0.0, NEG).to(log_probs.dtype)
    diagonals = [first.expand(B, T)]
    for n in range(1, T + U):
        u_idx = n - t_idx
        valid = (u_idx >= 0) & (u_idx <= U)
        u_here = u_idx.clamp(0, U)[None, :, None].expand(B, T, 1)
        u_left = (u_idx - 1).clamp(0, U)[None, :, None].expand(B, T, 1)
        prev = diagonals[-1]  # prev[:, t] = alpha[t, n - 1 - t]
        from_blank = F.pad(prev[:, :-1], (1, 0), value=NEG) \
            + blank_prev.gather(2, u_here).squeeze(2)
        from_label = prev + emit_full.gather(2, u_left).squeeze(2)
        from_label = torch.where(u_idx >= 1, from_label, NEG)
        diagonals.append(torch.where(valid, torch.logaddexp(from_blank, from_label), NEG))
    by_diag = torch.stack(diagonals, dim=2)  # (B, T, T + U): [b, t, n]
    grid = (t_idx[:, None] + torch.arange(U1)[None, :]).expand(B, T, U1)
    return by_diag.gather(2, grid), blank_lp


def betas_loop(log_probs, targets, logit_lengths, target_lengths, blank=BLANK):
    """beta[t][u]: log-probability of the rest, from (t, u) to the end of each utterance."""
    blank_lp, emit_lp = gather_blank_and_labels(log_probs, targets, blank)
    B, T, U1 = blank_lp.shape
    last_t, last_u = logit_lengths - 1, target_lengths
    neg = log_probs.new_full((B,), NEG)
    beta = [[None] * U1 for _ in range(T)]
    for t in reversed(range(T)):
        for u in reversed(range(U1)):
            stay = beta[t + 1][u] + blank_lp[:, t, u] if t + 1 < T else neg
            move = beta[t][u + 1] + emit_lp[:, t, u] if u + 1 < U1 else neg
            value = torch.logaddexp(stay, move)
            value = torch.where((t == last_t) & (u == last_u), blank_lp[:, t, u], value)
            beta[t][u] = torch.where((t > last_t) | (u > last_u), neg, value)
    return torch.stack([torch.stack(row, dim=1) for row in beta], dim=1)


def rnnt_loss(log_probs, targets, logit_lengths, target_lengths, blank=BLANK,
              reduction="mean", method="diagonal"):
    alphas_fn = alphas_diagonal if method == "diagonal" else alphas_loop
    alphas, blank_lp = alphas_fn(log_probs, targets, blank)
    b = torch.arange(log_probs.size(0))
    t_end, u_end = logit_lengths - 1, target_lengths
    costs = -(alphas[b, t_end, u_end] + blank_lp[b, t_end, u_end])
    if reduction == "sum":
        return costs.sum()
    if reduction == "mean":
        return costs.mean()
    if reduction == "mean_per_label":  # ESPnet-style normalisation by target length
        return (costs / target_lengths.clamp(min=1)).mean()
    return costs


def brute_force_loss(log_probs, targets, T, U, blank=BLANK):
    """-log sum over every alignment of one utterance: T - 1 blanks and U labels in any
    order from (0, 0) to (T - 1, U), then the final blank."""
    scores = []
    for label_steps in itertools.combinations(range(T - 1 + U), U):
        t = u = 0
        score = log_probs.new_zeros(())
        for step in range(T - 1 + U):
            if step in label_steps:
                score = score + log_probs[t, u, targets[u]]
                u += 1
            else:
                score = score + log_probs[t, u, blank]
                t += 1
        scores.append(score + log_probs[T - 1, U, blank])
    return -torch.logsumexp(torch.stack(scores), dim=0), len(scores)


def analytic_grad(log_probs, targets, logit_lengths, target_lengths, blank=BLANK):
    """d(sum of costs)/d(log_probs) = -exp(alpha + lp + beta_next - log P) on each edge."""
    B, T, U1, V = log_probs.shape
    alphas, blank_lp = alphas_diagonal(log_probs, targets, blank)
    _, emit_lp = gather_blank_and_labels(log_probs, targets, blank)
    betas = betas_loop(log_probs, targets, logit_lengths, target_lengths, blank)
    log_like = betas[:, 0, 0]
    t_grid = torch.arange(T)[None, :, None]
    u_grid = torch.arange(U1)[None, None, :]
    final = (t_grid == (logit_lengths - 1)[:, None, None]) \
        & (u_grid == target_lengths[:, None, None])
    beta_next_t = torch.where(final, 0.0, F.pad(betas[:, 1:], (0, 0, 0, 1), value=NEG))
    g_blank = torch.exp(alphas + blank_lp + beta_next_t - log_like[:, None, None])
    g_emit = torch.exp(alphas[:, :, :-1] + emit_lp + betas[:, :, 1:] - log_like[:, None, None])
    grad = torch.zeros_like(log_probs)
    index = targets[:, None, :, None].expand(B, T, U1 - 1, 1)
    grad[:, :, :-1].scatter_add_(3, index, -g_emit.unsqueeze(-1))
    grad[..., blank] -= g_blank
    return grad, g_blank, g_emit, -log_like


class RNNTLossFunction(torch.autograd.Function):
    """Costs per utterance from logits, with the log_softmax fused into the analytic backward
    (as warp-transducer and numba implementations do it)."""

    @staticmethod
    def forward(ctx, logits, targets, logit_lengths, target_lengths, blank):
        log_probs = logits.log_softmax(dim=-1)
        grad_lp, _, _, costs = analytic_grad(log_probs, targets, logit_lengths,
                                             target_lengths, blank)
        grad_logits = grad_lp - log_probs.exp() * grad_lp.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(grad_logits)
        return costs

    @staticmethod
    def backward(ctx, grad_costs):
        (grad_logits,) = ctx.saved_tensors
        return grad_costs[:, None, None, None] * grad_logits, None, None, None, None


def rnnt_loss_fused(logits, targets, logit_lengths, target_lengths, blank=BLANK):
    return RNNTLossFunction.apply(logits, targets, logit_lengths, target_lengths, blank)


# ------------------------------------------------ lattice checks on fixed inputs (recorded)

gen = torch.Generator().manual_seed(7)
B0, T0, U0, V0 = 3, 5, 3, 5
lattice_logits = torch.randn(B0, T0, U0 + 1, V0, generator=gen, dtype=torch.float64)
lattice_targets = torch.tensor([[1, 3, 2], [4, 4, 0], [2, 0, 0]])
lattice_ilens = torch.tensor([5, 4, 3])
lattice_ylens = torch.tensor([3, 2, 1])

logits64 = lattice_logits.clone().requires_grad_(True)
log_probs64 = F.log_softmax(logits64, dim=-1)
log_probs64.retain_grad()
alpha_loop, _ = alphas_loop(log_probs64, lattice_targets)
alpha_diag, _ = alphas_diagonal(log_probs64, lattice_targets)
beta_grid = betas_loop(log_probs64, lattice_targets, lattice_ilens, lattice_ylens)
costs_loop = rnnt_loss(log_probs64, lattice_targets, lattice_ilens, lattice_ylens, reduction="none",
                       method="loop")
costs_diag = rnnt_loss(log_probs64, lattice_targets, lattice_ilens, lattice_ylens, reduction="none")
costs_beta = -beta_grid[:, 0, 0]
costs_sum = costs_diag.sum()
costs_sum.backward()
autograd_lp_grad = log_probs64.grad.clone()
autograd_logit_grad = logits64.grad.clone()
# (on a leaf of its own: autograd.grad into log_probs64 would fill its retained .grad too)
lp_leaf = log_probs64.detach().requires_grad_(True)
(loop_lp_grad,) = torch.autograd.grad(
    rnnt_loss(lp_leaf, lattice_targets, lattice_ilens, lattice_ylens,
              reduction="sum", method="loop"), lp_leaf)

# the brute-force sum over alignments, utterance by utterance, and its gradient
brute_costs, n_alignments, brute_grads = [], [], []
for i in range(B0):
    Ti, Ui = int(lattice_ilens[i]), int(lattice_ylens[i])
    lp_i = log_probs64.detach()[i, :Ti, :Ui + 1].clone().requires_grad_(True)
    cost, count = brute_force_loss(lp_i, lattice_targets[i].tolist(), Ti, Ui)
    (grad_i,) = torch.autograd.grad(cost, lp_i)
    brute_costs.append(cost.detach())
    brute_grads.append(grad_i)
    n_alignments.append(count)
brute_costs = torch.stack(brute_costs)

with torch.no_grad():
    grad_lp, occupancy_blank, occupancy_emit, costs_analytic = analytic_grad(
        log_probs64, lattice_targets, lattice_ilens, lattice_ylens)
# one blank per frame of each utterance, each label emitted once along every path
blank_per_frame = occupancy_blank.sum(dim=2)  # (B, T)
label_counts = occupancy_emit.sum(dim=1)  # (B, U)

# each utterance alone, unpadded, costs what it costs in the padded batch
alone_costs = torch.stack([
    rnnt_loss(log_probs64.detach()[i:i + 1, :int(lattice_ilens[i]), :int(lattice_ylens[i]) + 1],
              lattice_targets[i:i + 1, :int(lattice_ylens[i])], lattice_ilens[i:i + 1],
              lattice_ylens[i:i + 1], reduction="none")[0] for i in range(B0)])

# the autograd.Function with the analytic gradient
logits_fused = lattice_logits.clone().requires_grad_(True)
costs_fused = rnnt_loss_fused(logits_fused, lattice_targets, lattice_ilens, lattice_ylens)
weights = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
(costs_fused * weights).sum().backward()
fused_logit_grad = logits_fused.grad.clone()
logits_weighted = lattice_logits.clone().requires_grad_(True)
(rnnt_loss(logits_weighted.log_softmax(-1), lattice_targets, lattice_ilens, lattice_ylens,
           reduction="none") * weights).sum().backward()
weighted_logit_grad = logits_weighted.grad.clone()

# (the second utterance has an empty target: its cost is the blanks' alone)
small = torch.randn(2, 3, 2, 3, generator=gen, dtype=torch.float64).requires_grad_(True)
small_targets, small_ilens, small_ylens = torch.tensor([[2], [0]]), torch.tensor([3, 2]), \
    torch.tensor([1, 0])
gradcheck_results = {
    "diagonal": torch.autograd.gradcheck(
        lambda x: rnnt_loss(x.log_softmax(-1), small_targets, small_ilens, small_ylens,
                            reduction="sum"), (small,)),
    "fused": torch.autograd.gradcheck(
        lambda x: rnnt_loss_fused(x, small_targets, small_ilens, small_ylens), (small,),
        fast_mode=True),
}

# float32: the same lattice loss in single precision, every reduction
lp32 = F.log_softmax(lattice_logits.float(), dim=-1)
reductions32 = {name: rnnt_loss(lp32, lattice_targets, lattice_ilens, lattice_ylens, reduction=name)
                for name in ("none", "sum", "mean", "mean_per_label")}

# the -inf convention: logsumexp over nothing but -inf has a NaN gradient (why NEG above)
inf_grid = torch.full((2, 3), float("-inf"), dtype=torch.float64, requires_grad=True)
inf_value = torch.logsumexp(inf_grid, dim=1)
inf_value.sum().backward()
inf_grad_is_nan = bool(torch.isnan(inf_grid.grad).all())
neg_grid = torch.full((2, 3), NEG, dtype=torch.float64, requires_grad=True)
torch.logsumexp(neg_grid, dim=1).sum().backward()

fixed_results["lattice"] = {
    "alphas": alpha_diag.detach(), "betas": beta_grid.detach(),
    "costs": costs_diag.detach(), "costs_fused": costs_fused.detach(),
    "lp_grad": autograd_lp_grad, "logit_grad": autograd_logit_grad,
    "fused_logit_grad": fused_logit_grad, "float32": reductions32,
    "neg_grad": neg_grid.grad.clone(),
}


# --------------------------------------------------------------------------------- data

TOKEN_HZ = [None, 220.0, 420.0, 660.0]  # tokens 1..3; 0 is the blank
VOCAB = len(TOKEN_HZ)
SAMPLE_RATE, WIN, HOP = 2000, 64, 32
rng = np.random.default_rng(0)
window = torch.hann_window(WIN)


def synth_utterance(tokens):
    pieces = [np.zeros(HOP * int(rng.integers(1, 3)))]
    for tok in tokens:
        n = HOP * int(rng.integers(4, 7))
        t = np.arange(n) / SAMPLE_RATE
        pieces.append(np.hanning(n) * np.sin(2 * np.pi * TOKEN_HZ[tok] * t + rng.uniform(0, 6)))
        pieces.append(np.zeros(HOP * int(rng.integers(1, 3))))
    wave = np.concatenate(pieces)
    return torch.from_numpy((wave + 0.05 * rng.standard_normal(len(wave))).astype(np.float32))


def log_spectrum(wave):
    frames = wave.unfold(0, WIN, HOP)  # (T, WIN)
    power = torch.fft.rfft(frames * window, dim=-1).abs().pow(2)
    return torch.log(F.avg_pool1d(power[None, :, 1:], kernel_size=2).squeeze(0) + 1e-4)


def make_dataset(n):
    data = []
    for _ in range(n):
        tokens = rng.integers(1, VOCAB, size=int(rng.integers(1, 4))).tolist()
        data.append((log_spectrum(synth_utterance(tokens)), torch.tensor(tokens)))
    return data


train_set = make_dataset(120)
test_set = make_dataset(16)
all_frames = torch.cat([f for f, _ in train_set])
feat_mean, feat_std = all_frames.mean(0), all_frames.std(0)
N_FEATS = all_frames.size(1)


def collate(batch):
    feats = [(f - feat_mean) / feat_std for f, _ in batch]
    ys = [y for _, y in batch]
    return (pad_sequence(feats, batch_first=True), torch.tensor([len(f) for f in feats]),
            pad_sequence(ys, batch_first=True, padding_value=BLANK),
            torch.tensor([len(y) for y in ys]))


# -------------------------------------------------------------------------------- model


class Encoder(nn.Module):
    def __init__(self, n_feats, hidden, stack=3):
        super().__init__()
        self.stack = stack
        self.rnn = nn.GRU(n_feats * stack, hidden, batch_first=True)

    def forward(self, x, lengths):
        B, T, D = x.shape
        T2 = T // self.stack
        x = x[:, :T2 * self.stack].reshape(B, T2, D * self.stack)  # time reduction
        lengths = lengths // self.stack
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True, total_length=T2)
        return out, out_lengths


class Predictor(nn.Module):
    def __init__(self, vocab, embed, hidden, blank=BLANK):
        super().__init__()
        self.blank = blank
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.LSTM(embed, hidden, batch_first=True)

    def forward(self, labels, state=None):
        out, state = self.rnn(self.embed(labels), state)
        return out, state

    def train_forward(self, targets):
        """The blank as start token: (B, U) -> (B, U + 1, H)."""
        return self(F.pad(targets, (1, 0), value=self.blank))[0]


class Joiner(nn.Module):
    def __init__(self, enc_dim, pred_dim, joint_dim, vocab):
        super().__init__()
        self.enc_proj = nn.Linear(enc_dim, joint_dim)
        self.pred_proj = nn.Linear(pred_dim, joint_dim, bias=False)
        self.out = nn.Linear(joint_dim, vocab)

    def forward(self, enc, pred):
        """(B, T, E) and (B, U + 1, P) -> (B, T, U + 1, V) logits."""
        h = self.enc_proj(enc).unsqueeze(2) + self.pred_proj(pred).unsqueeze(1)
        return self.out(torch.tanh(h))


class Transducer(nn.Module):
    def __init__(self, n_feats, vocab, hidden=24, blank=BLANK):
        super().__init__()
        self.blank = blank
        self.encoder = Encoder(n_feats, hidden)
        self.predictor = Predictor(vocab, 8, hidden, blank)
        self.joiner = Joiner(hidden, hidden, hidden, vocab)

    def forward(self, feats, feat_lengths, targets):
        enc, enc_lengths = self.encoder(feats, feat_lengths)
        pred = self.predictor.train_forward(targets)
        return self.joiner(enc, pred), enc_lengths


def transducer_loss(model, feats, feat_lengths, targets, target_lengths):
    logits, enc_lengths = model(feats, feat_lengths, targets)
    log_probs = logits.log_softmax(dim=-1)
    return rnnt_loss(log_probs, targets, enc_lengths, target_lengths), logits


@torch.no_grad()
def greedy_decode(model, feats, length, max_symbols_per_step=3):
    """One utterance: at each frame emit up to ``max_symbols_per_step`` labels, stop at blank;
    also the log-probability of the alignment it took and whether the cap was hit."""
    enc, enc_lengths = model.encoder(feats[None], length[None])
    token = torch.tensor([[model.blank]])
    pred, state = model.predictor(token)
    hyp, path_logprob, capped = [], 0.0, False
    for t in range(int(enc_lengths[0])):
        for _ in range(max_symbols_per_step):
            log_probs = model.joiner(enc[:, t:t + 1], pred).log_softmax(-1)[0, 0, 0]
            k = int(log_probs.argmax())
            path_logprob += float(log_probs[k])
            if k == model.blank:
                break
            hyp.append(k)
            pred, state = model.predictor(torch.tensor([[k]]), state)
        else:
            capped = True
    return hyp, path_logprob, capped


@torch.no_grad()
def greedy_decode_batch(model, feats, lengths, max_symbols_per_step=3):
    enc, enc_lengths = model.encoder(feats, lengths)
    B = enc.size(0)
    tokens = torch.full((B, 1), model.blank, dtype=torch.long)
    pred, (h, c) = model.predictor(tokens)
    hyps = [[] for _ in range(B)]
    for t in range(enc.size(1)):
        active = t < enc_lengths  # (B,)
        for _ in range(max_symbols_per_step):
            if not bool(active.any()):
                break
            k = model.joiner(enc[:, t:t + 1], pred)[:, 0, 0].argmax(-1)
            emit = active & (k != model.blank)
            for b in torch.nonzero(emit).flatten().tolist():
                hyps[b].append(int(k[b]))
            new_pred, (new_h, new_c) = model.predictor(k[:, None], (h, c))
            keep = emit[None, :, None]
            h, c = torch.where(keep, new_h, h), torch.where(keep, new_c, c)
            pred = torch.where(emit[:, None, None], new_pred, pred)
            active = emit
    return hyps


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]


def token_error_rate(model, dataset):
    errors = total = 0
    hyps = []
    for feats, ys in dataset:
        f = (feats - feat_mean) / feat_std
        hyp, _, _ = greedy_decode(model, f, torch.tensor(len(f)))
        hyps.append(hyp)
        errors += edit_distance(hyp, ys.tolist())
        total += len(ys)
    return errors / total, hyps


# ------------------------------------------------------- fixed-weight model (recorded)

torch.manual_seed(0)
model = Transducer(N_FEATS, VOCAB)
fixed_batch = collate(train_set[:6])
feats, feat_lengths, targets, target_lengths = fixed_batch
loss0, logits0 = transducer_loss(model, feats, feat_lengths, targets, target_lengths)
loss0.backward()
fixed_grads = {name: p.grad.clone() for name, p in model.named_parameters()}
model.zero_grad()
enc_lengths0 = feat_lengths // 3
with torch.no_grad():
    costs_loop0 = rnnt_loss(logits0.log_softmax(-1), targets, enc_lengths0, target_lengths,
                            reduction="none", method="loop")
    fused0 = rnnt_loss_fused(logits0, targets, enc_lengths0, target_lengths)
model.eval()
untrained_hyps = greedy_decode_batch(model, feats, feat_lengths)
untrained_single = [greedy_decode(model, feats[i], feat_lengths[i])[0] for i in range(6)]
model.train()
fixed_results["model"] = {
    "loss": loss0.detach(), "logits": logits0.detach(), "costs_loop": costs_loop0,
    "fused": fused0, "grads": fixed_grads,
}


# ----------------------------------------------------------------------------- training

torch.manual_seed(0)
model = Transducer(N_FEATS, VOCAB)
optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)
loader = DataLoader(train_set, batch_size=20, shuffle=True, collate_fn=collate,
                    generator=torch.Generator().manual_seed(0))
epochs = 8
losses, grad_norms, lrs = [], [], []
for _ in range(epochs):
    for feats, feat_lengths, targets, target_lengths in loader:
        loss, _ = transducer_loss(model, feats, feat_lengths, targets, target_lengths)
        optimizer.zero_grad()
        loss.backward()
        grad_norms.append(float(nn.utils.clip_grad_norm_(model.parameters(), 2.0)))
        optimizer.step()
        losses.append(loss.item())
    lrs.append(scheduler.get_last_lr()[0])
    scheduler.step()

model.eval()
test_ter, test_hyps = token_error_rate(model, test_set)
test_batch = collate(test_set)
batch_hyps = greedy_decode_batch(model, test_batch[0], test_batch[1])
# the greedy alignment is one alignment of its hypothesis: its log-probability is at most the
# log-likelihood of the hypothesis summed over all alignments
path_checks = []
with torch.no_grad():
    for feats, _ in test_set[:6]:
        f = (feats - feat_mean) / feat_std
        hyp, path_logprob, capped = greedy_decode(model, f, torch.tensor(len(f)))
        if capped or not hyp:
            continue
        y = torch.tensor([hyp])
        logits, enc_len = model(f[None], torch.tensor([len(f)]), y)
        total = -float(rnnt_loss(logits.log_softmax(-1), y, enc_len, torch.tensor([len(hyp)])))
        path_checks.append((path_logprob, total))
max_symbols_one = [greedy_decode(model, (f - feat_mean) / feat_std, torch.tensor(len(f)),
                                 max_symbols_per_step=1)[0] for f, _ in test_set[:6]]

print(f"lattice costs {costs_diag.tolist()} brute {brute_costs.tolist()}")
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, test TER {test_ter:.3f}")
print("hyps", test_hyps[:4], "refs", [y.tolist() for _, y in test_set[:4]])
print("log10 lattice", math.log10(max(n_alignments)))
