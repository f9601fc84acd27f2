"""An encoder-decoder Transformer built from parts and trained on a toy sequence task, written
for these tests in the way harvardnlp's Annotated Transformer is commonly written (modelled on
the API usage of that notebook, not a copy of it):

- the parts: ``copy.deepcopy`` clones in a ModuleList, a hand-written LayerNorm (``std``), pre-
  norm residual wrappers, ``triu(...).type(torch.uint8) == 0`` causal masks, scaled dot-product
  attention with ``masked_fill`` and ``.softmax``, multi-head attention keeping its last
  attention map, a ReLU feed-forward, embeddings scaled by sqrt(d_model), a sinusoidal
  positional buffer (``requires_grad_(False)``), Xavier init of every matrix;
- greedy decoding with ``torch.max`` / ``fill_`` / ``cat``, batches with padding and causal
  masks (``&``), a train state, an epoch loop with gradient accumulation;
- the inverse-square-root warmup rate through ``LambdaLR`` on Adam, label smoothing with
  ``KLDivLoss(reduction="sum")``, ``scatter_``, ``nonzero`` and ``index_fill_``, an
  ``Optimizer`` subclass that does nothing (it skips ``Optimizer.__init__``);
- for the torch comparison: a small model with set weights, three training steps, its
  parameters, decoded tokens and attention map, plus the schedule, smoothing and mask data.
"""
import copy
import math
import time
import warnings

import jitgrad as torch
import jitgrad.distributed as dist  # noqa: F401  (the multi-GPU imports such scripts start with)
import jitgrad.multiprocessing as mp  # noqa: F401
import jitgrad.nn as nn
from jitgrad.nn.functional import log_softmax, pad  # noqa: F401
from jitgrad.nn.parallel import DistributedDataParallel  # noqa: F401
from jitgrad.optim.lr_scheduler import LambdaLR
from jitgrad.utils.data import DataLoader  # noqa: F401
from jitgrad.utils.data.distributed import DistributedSampler  # noqa: F401

warnings.simplefilter("ignore")


# --- building blocks --------------------------------------------------------------------------
def clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class ManualLayerNorm(nn.Module):
    """(x - mean) / (std + eps), with a learned gain and shift (std, not the variance)."""

    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(size))
        self.shift = nn.Parameter(torch.zeros(size))
        self.eps = eps

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return self.gain * centred / (x.std(-1, keepdim=True) + self.eps) + self.shift


class PreNormResidual(nn.Module):
    def __init__(self, width, p_drop):
        super().__init__()
        self.norm, self.drop = ManualLayerNorm(width), nn.Dropout(p_drop)

    def forward(self, x, fn):
        return x + self.drop(fn(self.norm(x)))


def causal_mask(n):
    """(1, n, n) booleans: True where a position may look (itself and earlier ones)."""
    above = torch.triu(torch.ones((1, n, n)), diagonal=1).type(torch.uint8)
    return above == 0


def scaled_attention(q, k, v, mask=None, dropout=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1.0e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return torch.matmul(weights, v), weights


class MultiHead(nn.Module):
    def __init__(self, n_heads, d_model, dropout=0.1):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.projections = clones(nn.Linear(d_model, d_model), 4)  # q, k, v, out
        self.drop = nn.Dropout(p=dropout)
        self.attn = None

    def forward(self, q, k, v, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # one mask for every head
        n = q.size(0)

        def split_heads(proj, t):
            return proj(t).view(n, -1, self.n_heads, self.d_head).transpose(1, 2)

        q, k, v = (split_heads(p, t) for p, t in zip(self.projections, (q, k, v)))
        out, self.attn = scaled_attention(q, k, v, mask=mask, dropout=self.drop)
        out = out.transpose(1, 2).contiguous().view(n, -1, self.n_heads * self.d_head)
        return self.projections[3](out)


class FeedForward(nn.Module):
    def __init__(self, width, hidden, p_drop=0.1):
        super().__init__()
        self.inner, self.outer = nn.Linear(width, hidden), nn.Linear(hidden, width)
        self.drop = nn.Dropout(p_drop)

    def forward(self, x):
        return self.outer(self.drop(self.inner(x).relu()))


class ScaledEmbedding(nn.Module):
    def __init__(self, width, n_tokens):
        super().__init__()
        self.table = nn.Embedding(n_tokens, width)
        self.d_model = width

    def forward(self, tokens):
        return self.table(tokens) * math.sqrt(self.d_model)


class SinusoidalPositions(nn.Module):
    def __init__(self, width, p_drop, max_len=5000):
        super().__init__()
        self.drop = nn.Dropout(p=p_drop)
        where = torch.arange(0, max_len).unsqueeze(1)
        freq = torch.exp(torch.arange(0, width, 2) * (-math.log(10000.0) / width))
        table = torch.zeros(max_len, width)
        table[:, 0::2] = torch.sin(where * freq)
        table[:, 1::2] = torch.cos(where * freq)
        self.register_buffer("table", table.unsqueeze(0))

    def forward(self, x):
        return self.drop(x + self.table[:, : x.size(1)].requires_grad_(False))


class EncLayer(nn.Module):
    def __init__(self, size, attn, ff, dropout):
        super().__init__()
        self.size, self.attn, self.ff = size, attn, ff
        self.res = clones(PreNormResidual(size, dropout), 2)

    def forward(self, h, mask):
        h = self.res[0](h, lambda z: self.attn(z, z, z, mask))
        return self.res[1](h, self.ff)


class DecLayer(nn.Module):
    def __init__(self, size, self_attn, src_attn, ff, dropout):
        super().__init__()
        self.size, self.self_attn, self.src_attn, self.ff = size, self_attn, src_attn, ff
        self.res = clones(PreNormResidual(size, dropout), 3)

    def forward(self, h, mem, src_mask, tgt_mask):
        h = self.res[0](h, lambda z: self.self_attn(z, z, z, tgt_mask))
        h = self.res[1](h, lambda z: self.src_attn(z, mem, mem, src_mask))
        return self.res[2](h, self.ff)


class Stack(nn.Module):
    """n copies of a layer and a final norm; extra arguments go to every layer."""

    def __init__(self, layer, n):
        super().__init__()
        self.layers, self.norm = clones(layer, n), ManualLayerNorm(layer.size)

    def forward(self, x, *context):
        for block in self.layers:
            x = block(x, *context)
        return self.norm(x)


class OutputHead(nn.Module):
    def __init__(self, width, n_tokens):
        super().__init__()
        self.logits = nn.Linear(width, n_tokens)

    def forward(self, h):
        return log_softmax(self.logits(h), dim=-1)


class Seq2Seq(nn.Module):
    def __init__(self, enc, dec, src_embed, tgt_embed, head):
        super().__init__()
        self.encoder, self.decoder = enc, dec
        self.src_embed, self.tgt_embed, self.generator = src_embed, tgt_embed, head

    def encode(self, src, mask):
        return self.encoder(self.src_embed(src), mask)

    def decode(self, mem, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), mem, src_mask, tgt_mask)

    def forward(self, src, tgt, src_m, tgt_m):
        return self.decode(self.encode(src, src_m), src_m, tgt, tgt_m)


def build(src_vocab, tgt_vocab, n=6, d_model=512, d_ff=2048, heads=8, dropout=0.1):
    attn = MultiHead(heads, d_model)
    ff = FeedForward(d_model, d_ff, dropout)
    pos = SinusoidalPositions(d_model, dropout)
    dup = copy.deepcopy
    model = Seq2Seq(
        Stack(EncLayer(d_model, dup(attn), dup(ff), dropout), n),
        Stack(DecLayer(d_model, dup(attn), dup(attn), dup(ff), dropout), n),
        nn.Sequential(ScaledEmbedding(d_model, src_vocab), dup(pos)),
        nn.Sequential(ScaledEmbedding(d_model, tgt_vocab), dup(pos)),
        OutputHead(d_model, tgt_vocab),
    )
    for w in model.parameters():
        if w.dim() >= 2:
            nn.init.xavier_uniform_(w)
    return model


def greedy(model, src, src_mask, length, first):
    mem = model.encode(src, src_mask)
    out = torch.zeros(1, 1).fill_(first).type_as(src.data)
    while out.size(1) < length:
        h = model.decode(mem, src_mask, out, causal_mask(out.size(1)).type_as(src.data))
        _, best = torch.max(model.generator(h[:, -1]), dim=1)
        step = torch.empty(1, 1).type_as(src.data).fill_(best.data[0])
        out = torch.cat([out, step], dim=1)
    return out


# --- a look at the parts ----------------------------------------------------------------------
mask_data = [{"allowed": causal_mask(20)[0][q, k].flatten(), "query": q, "key": k}
             for k in range(20) for q in range(20)]
wave = SinusoidalPositions(20, 0).forward(torch.zeros(1, 100, 20))
positional_data = [{"values": wave[0, :, d], "dim": d} for d in (2, 3, 8, 9)]

untrained_predictions = []
for _ in range(3):
    fresh = build(11, 11, 2, d_model=64, d_ff=128)
    fresh.eval()
    src = torch.LongTensor([[1, 3, 5, 7, 9, 2, 4, 6, 8, 10]])
    untrained_predictions.append(greedy(fresh, src, torch.ones(1, 1, 10), 10, 0))
    print("untrained:", untrained_predictions[-1])


# --- training machinery -----------------------------------------------------------------------
class Batch:
    def __init__(self, src, tgt=None, blank=2):
        self.src = src
        self.src_mask = (src != blank).unsqueeze(-2)
        if tgt is not None:
            self.tgt, self.tgt_y = tgt[:, :-1], tgt[:, 1:]
            keep = (self.tgt != blank).unsqueeze(-2)
            self.tgt_mask = keep & causal_mask(self.tgt.size(-1)).type_as(keep.data)
            self.ntokens = (self.tgt_y != blank).data.sum()


class TrainState:
    step: int = 0
    accum_step: int = 0
    samples: int = 0
    tokens: int = 0


class NoOptimizer(torch.optim.Optimizer):
    """For evaluation epochs: the loop's optimizer calls do nothing."""

    def __init__(self):  # (Optimizer.__init__ is skipped on purpose)
        self.param_groups = [{"lr": 0.0}]

    def step(self):
        pass

    def zero_grad(self, set_to_none=False):
        pass


class NoScheduler:
    def step(self):
        pass


def run_epoch(batches, model, compute_loss, opt, scheduler, train=True, accum_iter=1,
              state=None):
    state = TrainState() if state is None else state
    total_loss, total_tokens, since_print, accumulated = 0, 0, 0, 0
    tic = time.time()
    for i, b in enumerate(batches):
        out = model.forward(b.src, b.tgt, b.src_mask, b.tgt_mask)
        loss_sum, loss = compute_loss(out, b.tgt_y, b.ntokens)
        if train:
            loss.backward()
            state.step += 1
            state.samples += b.src.shape[0]
            state.tokens += b.ntokens
            if i % accum_iter == 0:
                opt.step()
                opt.zero_grad(set_to_none=True)
                accumulated += 1
                state.accum_step += 1
            scheduler.step()
        total_loss += loss_sum
        total_tokens += b.ntokens
        since_print += b.ntokens
        if train and i % 5 == 1:
            lr = opt.param_groups[0]["lr"]
            speed = since_print / (time.time() - tic + 1e-9)
            print(f"step {i:4d} | updates {accumulated:3d} | loss {loss_sum / b.ntokens:6.3f} "
                  f"| {speed:8.1f} tok/s | lr {lr:.2e}")
            tic, since_print = time.time(), 0
    return total_loss / total_tokens, state


def noam_rate(step, d_model, factor, warmup):
    """The warmup-then-inverse-square-root factor (step 0 counts as 1 for LambdaLR)."""
    step = max(step, 1)
    return factor * (d_model ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


def schedule_curves(settings, steps=500):
    probe = torch.nn.Linear(1, 1)
    curves = []
    for setting in settings:
        opt = torch.optim.Adam(probe.parameters(), lr=1, betas=(0.9, 0.98), eps=1e-9)
        sched = LambdaLR(optimizer=opt, lr_lambda=lambda s, c=setting: noam_rate(s, *c))
        seen = []
        for _ in range(steps):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        curves.append(seen)
    return torch.tensor(curves)


schedule_rates = schedule_curves([(512, 1, 4000), (512, 1, 8000), (256, 1, 4000)])


class SmoothedTargets(nn.Module):
    def __init__(self, n_classes, pad_idx, eps=0.0):
        super().__init__()
        self.kl = nn.KLDivLoss(reduction="sum")
        self.n_classes, self.pad_idx = n_classes, pad_idx
        self.eps, self.confidence = eps, 1.0 - eps
        self.true_dist = None

    def forward(self, logp, target):
        assert logp.size(1) == self.n_classes
        want = logp.data.clone()
        want.fill_(self.eps / (self.n_classes - 2))  # eps spread over the other real classes
        want.scatter_(1, target.data.unsqueeze(1), self.confidence)
        want[:, self.pad_idx] = 0
        pad_rows = torch.nonzero(target.data == self.pad_idx)
        if pad_rows.dim() > 0:
            want.index_fill_(0, pad_rows.squeeze(), 0.0)
        self.true_dist = want
        return self.kl(logp, want.clone().detach())


smoother = SmoothedTargets(5, 0, 0.4)
guesses = torch.FloatTensor([[0, 0.1, 0.6, 0.3, 0], [0, 0.5, 0.2, 0.2, 0.1],
                             [0.1, 0.3, 0.3, 0.2, 0.1], [0, 0.25, 0.25, 0.25, 0.25],
                             [0, 0.4, 0.1, 0.1, 0.4]])
smoothing_loss = smoother(logp=guesses.log(), target=torch.LongTensor([2, 4, 0, 1, 3]))
smoothing_true_dist = smoother.true_dist


def penalty_for(confidence, crit):
    denom = confidence + 3
    probs = torch.FloatTensor([[0, confidence / denom, 1 / denom, 1 / denom, 1 / denom]])
    return crit(probs.log(), torch.LongTensor([1])).data


penalization_data = {"loss": [float(penalty_for(c, SmoothedTargets(5, 0, 0.1)))
                              for c in range(1, 100)]}


class LossCompute:
    def __init__(self, head, criterion):
        self.head, self.criterion = head, criterion

    def __call__(self, h, target, n_tokens):
        logp = self.head(h)
        flat = self.criterion(logp.contiguous().view(-1, logp.size(-1)),
                              target.contiguous().view(-1))
        scaled = flat / n_tokens
        return scaled.data * n_tokens, scaled


def copy_batches(vocab, batch_size, count, length=10):
    """Random sequences whose target is the sequence itself; each starts with 1."""
    for _ in range(count):
        seq = torch.randint(1, vocab, size=(batch_size, length))
        seq[:, 0] = 1
        src = seq.requires_grad_(False).clone().detach()
        yield Batch(src, seq.clone().detach(), 0)


# --- the copy task ----------------------------------------------------------------------------
torch.manual_seed(0)
V = 11
crit = SmoothedTargets(n_classes=V, pad_idx=0, eps=0.0)
copy_model = build(V, V, n=2, d_model=64, d_ff=128, heads=4)
adam = torch.optim.Adam(copy_model.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
warm = LambdaLR(optimizer=adam, lr_lambda=lambda s: noam_rate(s, d_model=64, factor=1.0,
                                                              warmup=40))
train_losses = []
eval_losses = []
for epoch in range(6):
    copy_model.train()
    train_losses.append(run_epoch(copy_batches(V, 30, 10), copy_model,
                                  LossCompute(copy_model.generator, crit), adam, warm)[0].item())
    copy_model.eval()
    eval_losses.append(run_epoch(copy_batches(V, 30, 5), copy_model,
                                 LossCompute(copy_model.generator, crit), NoOptimizer(),
                                 NoScheduler(), train=False)[0].item())
    print(f"epoch {epoch}: train {train_losses[-1]:.3f} eval {eval_losses[-1]:.3f}")
copy_model.eval()
probe_src = torch.LongTensor([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]])
copy_decoded = greedy(copy_model, probe_src, torch.ones(1, 1, 10), 10, 0)
print("decoded:", copy_decoded)


# --- set weights, three steps, for the comparison with torch ----------------------------------
net = build(11, 11, n=2, d_model=16, d_ff=32, heads=4, dropout=0.0)
for m in net.modules():  # (MultiHead's own dropout default is 0.1)
    if isinstance(m, nn.Dropout):
        m.p = 0.0
with torch.no_grad():
    for k, p in enumerate(net.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 0.7)).view_as(p)
                / 3)
rows = torch.tensor([[1, 4, 8, 2, 6, 10, 3, 7, 9, 5], [1, 6, 6, 0, 2, 9, 0, 8, 7, 3]])
batch = Batch(rows, rows, 0)
net_opt = torch.optim.Adam(net.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
net_sched = LambdaLR(optimizer=net_opt, lr_lambda=lambda s: noam_rate(s, 16, 1.0, 4))
state = TrainState()
step_losses = []
for _ in range(3):
    avg, state = run_epoch([batch], net, LossCompute(net.generator, SmoothedTargets(11, 0, 0.1)),
                           net_opt, net_sched, state=state)
    step_losses.append(avg.item())
net.eval()
fixed_results = {
    "losses": step_losses,
    "params": {name: p.tolist() for name, p in net.named_parameters()},
    "lr": net_opt.param_groups[0]["lr"],
    "decoded": greedy(net, rows[:1], batch.src_mask[:1], 10, 1).tolist(),
    "attn": net.decoder.layers[0].src_attn.attn.tolist(),
    "schedule": schedule_rates[:, ::40].tolist(),
    "smoothing": [smoothing_true_dist.tolist(), float(smoothing_loss)],
    "penalization": penalization_data["loss"],
    "mask": [float(d["allowed"].item()) for d in mask_data[:60]],
    "positional": [d["values"].tolist() for d in positional_data],
    "state": [state.step, state.accum_step, state.samples, int(state.tokens)],
}
