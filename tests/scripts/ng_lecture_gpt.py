"""A small character-level GPT, written for these tests in the way Karpathy's "Let's build GPT"
lecture code (ng-video-lecture gpt.py) is commonly written (modelled on the API usage of that
lecture, not a copy of it):

- single attention heads as modules: bias-free ``nn.Linear`` projections, a ``torch.tril`` mask
  kept with ``register_buffer``, ``masked_fill(..., float('-inf'))``, softmax, dropout on the
  attention weights; heads in an ``nn.ModuleList`` joined with ``torch.cat``;
- a feed-forward ``nn.Sequential(Linear, ReLU, Linear, Dropout)``, pre-``LayerNorm`` residual
  blocks stacked with ``nn.Sequential(*blocks)``, token + ``torch.arange`` position embeddings;
- weights initialised through ``Module.apply`` with ``nn.init.normal_``/``zeros_``;
- AdamW training with a ``@torch.no_grad()`` estimate in ``eval()`` mode, multinomial sampling;
- a fixed-weight section (``copy_`` of ``torch.sin`` patterns, ``view_as``, ``repeat``, ``flip``,
  ``contiguous``) whose loss, logits and gradients are compared with torch's.
"""
import os
import random
import tempfile
from dataclasses import dataclass

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn import functional as F


@dataclass
class Settings:
    batch: int = 16
    context: int = 16
    width: int = 32
    heads: int = 4
    layers: int = 2
    drop: float = 0.1
    lr: float = 3e-3
    steps: int = 60
    eval_every: int = 20
    eval_batches: int = 10


cfg = Settings()
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(99)


def make_text(seed=3, entries=300):
    """Short exchanges at a market stall: a speaker tag, a sentence, a blank line."""
    rnd = random.Random(seed)
    vocab = "fresh bread for sale two coins a loaf buy now or come back at noon please".split()
    parts = []
    for _ in range(entries):
        said = " ".join(rnd.choice(vocab) for _ in range(rnd.randint(4, 9)))
        parts.append(f"{rnd.choice(['BAKER', 'BUYER', 'GUARD'])}:\n{said.capitalize()}.\n\n")
    return "".join(parts)


path = os.path.join(tempfile.mkdtemp(), "market.txt")
with open(path, "w", encoding="utf-8") as fh:
    fh.write(make_text())
with open(path, encoding="utf-8") as fh:
    text = fh.read()

chars = sorted(set(text))
index_of = {c: i for i, c in enumerate(chars)}


def encode(s):
    return [index_of[c] for c in s]


def decode(ids):
    return "".join(chars[i] for i in ids)


ids = torch.tensor(encode(text), dtype=torch.long)
split_at = int(0.9 * len(ids))
parts = {"train": ids[:split_at], "val": ids[split_at:]}


def sample_batch(part):
    src = parts[part]
    offsets = torch.randint(len(src) - cfg.context, (cfg.batch,))
    x = torch.stack([src[o:o + cfg.context] for o in offsets])
    y = torch.stack([src[o + 1:o + 1 + cfg.context] for o in offsets])
    return x.to(device), y.to(device)


class AttentionHead(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.q = nn.Linear(cfg.width, size, bias=False)
        self.k = nn.Linear(cfg.width, size, bias=False)
        self.v = nn.Linear(cfg.width, size, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(cfg.context, cfg.context)))
        self.drop = nn.Dropout(cfg.drop)

    def forward(self, x):
        t = x.shape[1]
        keys = self.k(x)
        scores = self.q(x) @ keys.transpose(-2, -1) * keys.shape[-1] ** -0.5
        scores = scores.masked_fill(self.causal[:t, :t] == 0, float("-inf"))
        weights = self.drop(F.softmax(scores, dim=-1))
        return weights @ self.v(x)


class Heads(nn.Module):
    def __init__(self, count, size):
        super().__init__()
        self.each = nn.ModuleList(AttentionHead(size) for _ in range(count))
        self.out = nn.Linear(count * size, cfg.width)
        self.drop = nn.Dropout(cfg.drop)

    def forward(self, x):
        joined = torch.cat([head(x) for head in self.each], dim=-1)
        return self.drop(self.out(joined))


def feed_forward(width):
    return nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(),
                         nn.Linear(4 * width, width), nn.Dropout(cfg.drop))


class Layer(nn.Module):
    def __init__(self, width, count):
        super().__init__()
        self.norm_a = nn.LayerNorm(width)
        self.attn = Heads(count, width // count)
        self.norm_b = nn.LayerNorm(width)
        self.mlp = feed_forward(width)

    def forward(self, x):
        x = x + self.attn(self.norm_a(x))
        return x + self.mlp(self.norm_b(x))


def small_normal(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)


class TinyGPT(nn.Module):
    def __init__(self, n_chars):
        super().__init__()
        self.tokens = nn.Embedding(n_chars, cfg.width)
        self.places = nn.Embedding(cfg.context, cfg.width)
        self.stack = nn.Sequential(*[Layer(cfg.width, cfg.heads) for _ in range(cfg.layers)])
        self.norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, n_chars)
        self.apply(small_normal)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        h = self.tokens(idx) + self.places(torch.arange(t, device=device))
        logits = self.head(self.norm(self.stack(h)))
        if targets is None:
            return logits, None
        n, t, v = logits.shape
        return logits, F.cross_entropy(logits.view(n * t, v), targets.view(n * t))

    def generate(self, idx, count):
        for _ in range(count):
            logits, _ = self(idx[:, -cfg.context:])
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


@torch.no_grad()
def mean_losses(net):
    net.eval()
    result = {}
    for part in ("train", "val"):
        acc = torch.zeros(cfg.eval_batches)
        for j in range(cfg.eval_batches):
            acc[j] = net(*sample_batch(part))[1].item()
        result[part] = acc.mean()
    net.train()
    return result


model = TinyGPT(len(chars)).to(device)
print(f"{sum(p.numel() for p in model.parameters())} parameters")
opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

history = []  # (step, train loss, val loss)
for step in range(cfg.steps):
    if step % cfg.eval_every == 0 or step == cfg.steps - 1:
        est = mean_losses(model)
        history.append((step, est["train"].item(), est["val"].item()))
        print(f"step {step}: train {est['train']:.3f} val {est['val']:.3f}")
    x, y = sample_batch("train")
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

prompt = torch.zeros((1, 1), dtype=torch.long, device=device)
sample = decode(model.generate(prompt, 100)[0].tolist())
print(sample)

# Deterministic check against torch: set every weight to a sine pattern, switch dropout off,
# and record the loss, logits and gradients on two fixed rows.
probe = TinyGPT(len(chars))
with torch.no_grad():
    for i, (_, w) in enumerate(probe.named_parameters()):
        pattern = torch.sin(0.7 * (i + 2) * torch.arange(w.numel(), dtype=torch.float32))
        w.copy_(pattern.view_as(w) / 4)
probe.eval()
rows = torch.tensor(encode("BUYER:\nTwo coins")).view(1, -1).repeat(2, 1)
rows[1] = rows[1].flip(0)
probe_logits, probe_loss = probe(rows[:, :-1], rows[:, 1:].contiguous())
probe_loss.backward()
fixed_result = {"loss": probe_loss.item(), "logits": probe_logits.tolist()}
fixed_result.update({name: w.grad.tolist() for name, w in probe.named_parameters()})
