"""Character-level name generators of six kinds, written for these tests in the way Karpathy's
makemore (makemore.py) is commonly written (modelled on the API usage of makemore, not a copy
of it):

- a ``Dataset`` of words as (x, y) long tensors with -1 targets after the end token, split with
  ``torch.randperm``; an endless loader from ``RandomSampler(replacement=True,
  num_samples=int(1e10))`` and ``DataLoader(sampler=..., pin_memory=True)``;
- models: a logits table (``nn.Parameter`` indexed by the tokens), an MLP over shifted contexts
  (``torch.roll``, index assignment, ``nn.Sequential``/``nn.Tanh``), RNN and GRU cells written
  out (``torch.cat``, ``F.tanh``, ``F.sigmoid``, a learned start state ``expand``-ed,
  ``torch.stack``), a causal bag of words (``masked_fill`` of ``torch.zeros``, softmax) and a
  GPT-2 style Transformer (a tanh GELU with ``torch.pow``, ``split``/``view``/``transpose``
  attention with a ``register_buffer`` tril mask, ``nn.ModuleDict``/``nn.ModuleList``);
  ``F.cross_entropy(..., ignore_index=-1)``;
- argparse options, ``torch.manual_seed``/``torch.cuda.manual_seed_all``, ``AdamW`` with betas
  and eps, ``zero_grad(set_to_none=True)``, an ``@torch.inference_mode()`` evaluation,
  ``torch.save``/``torch.load`` of the best state dict and a sample-only resume;
- ``@torch.no_grad()`` generation with temperature, top-k masking (``torch.topk``, boolean index
  assignment of ``-inf``), ``torch.multinomial`` or greedy ``topk(k=1)``;
- a fixed-weight section per model whose loss, logits, gradients and greedy continuations are
  compared with torch's.
"""
import argparse
import math
import os
import random
import tempfile
import time
from dataclasses import dataclass

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn import functional as F
from jitgrad.utils.data import Dataset
from jitgrad.utils.data.dataloader import DataLoader


@dataclass
class Settings:
    block_size: int = None  # tokens seen at once: the start token plus the longest word
    vocab_size: int = None  # characters plus the start/stop token 0
    n_layer: int = 4
    n_embd: int = 64
    n_embd2: int = 64
    n_head: int = 4


def lm_loss(logits, targets):
    if targets is None:
        return None
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


# ---- the Transformer ----------------------------------------------------------------------

class Gelu(nn.Module):
    """The tanh approximation of GELU used by GPT-2."""

    def forward(self, x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


class MaskedSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.heads, self.width = cfg.n_head, cfg.n_embd
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        n = cfg.block_size
        self.register_buffer("mask", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def _by_head(self, t):
        b, n, c = t.size()
        return t.view(b, n, self.heads, c // self.heads).transpose(1, 2)

    def forward(self, x):
        b, n, c = x.size()
        q, k, v = (self._by_head(t) for t in self.qkv(x).split(self.width, dim=2))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores = scores.masked_fill(self.mask[:, :, :n, :n] == 0, float("-inf"))
        mixed = F.softmax(scores, dim=-1) @ v
        return self.proj(mixed.transpose(1, 2).contiguous().view(b, n, c))


class DecoderBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.n_embd)
        self.attn = MaskedSelfAttention(cfg)
        self.norm2 = nn.LayerNorm(cfg.n_embd)
        self.ff = nn.ModuleDict({"up": nn.Linear(cfg.n_embd, 4 * cfg.n_embd),
                                 "act": Gelu(),
                                 "down": nn.Linear(4 * cfg.n_embd, cfg.n_embd)})

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        h = self.norm2(x)
        return x + self.ff.down(self.ff.act(self.ff.up(h)))


class GPTNames(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block_size = cfg.block_size
        self.body = nn.ModuleDict({
            "tok": nn.Embedding(cfg.vocab_size, cfg.n_embd),
            "pos": nn.Embedding(cfg.block_size, cfg.n_embd),
            "layers": nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.n_layer)),
            "norm": nn.LayerNorm(cfg.n_embd),
        })
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        print(f"transformer body: {sum(p.numel() for p in self.body.parameters())} parameters")

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size, f"sequence of {t} is longer than the block ({self.block_size})"
        where = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.body["tok"](idx) + self.body["pos"](where)
        for layer in self.body["layers"]:
            x = layer(x)
        logits = self.head(self.body["norm"](x))
        return logits, lm_loss(logits, targets)


# ---- causal bag of words ------------------------------------------------------------------

class PrefixMean(nn.Module):
    """Each position gets the average of the vectors up to and including it."""

    def __init__(self, cfg):
        super().__init__()
        n = cfg.block_size
        self.register_buffer("mask", torch.tril(torch.ones(n, n)).view(1, n, n))

    def forward(self, x):
        b, t, c = x.size()
        weights = torch.zeros((b, t, t), device=x.device)
        weights = weights.masked_fill(self.mask[:, :t, :t] == 0, float("-inf"))
        return F.softmax(weights, dim=-1) @ x


class BagOfWords(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block_size = cfg.block_size
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.mean = PrefixMean(cfg)
        self.ff = nn.ModuleDict({"a": nn.Linear(cfg.n_embd, cfg.n_embd2),
                                 "b": nn.Linear(cfg.n_embd2, cfg.n_embd)})
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size
        x = self.tok(idx) + self.pos(torch.arange(0, t, dtype=torch.long, device=idx.device)
                                     .unsqueeze(0))
        x = x + self.mean(x)
        x = x + self.ff["b"](F.tanh(self.ff["a"](x)))
        logits = self.head(x)
        return logits, lm_loss(logits, targets)


# ---- recurrent models ---------------------------------------------------------------------

class VanillaCell(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.step = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)

    def forward(self, x, h):
        return F.tanh(self.step(torch.cat([x, h], dim=1)))


class GatedCell(nn.Module):
    """A GRU step: reset gate r, update gate z, candidate c."""

    def __init__(self, cfg):
        super().__init__()
        both = cfg.n_embd + cfg.n_embd2
        self.reset_gate = nn.Linear(both, cfg.n_embd2)
        self.update_gate = nn.Linear(both, cfg.n_embd2)
        self.candidate = nn.Linear(both, cfg.n_embd2)

    def forward(self, x, h):
        xh = torch.cat([x, h], dim=1)
        r = F.sigmoid(self.reset_gate(xh))
        c = F.tanh(self.candidate(torch.cat([x, r * h], dim=1)))
        z = F.sigmoid(self.update_gate(xh))
        return (1 - z) * h + z * c


class Recurrent(nn.Module):
    def __init__(self, cfg, cell):
        super().__init__()
        self.block_size = cfg.block_size
        self.h0 = nn.Parameter(torch.zeros(1, cfg.n_embd2))
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.cell = {"rnn": VanillaCell, "gru": GatedCell}[cell](cfg)
        self.head = nn.Linear(cfg.n_embd2, cfg.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        x = self.tok(idx)
        h = self.h0.expand((b, -1))
        states = []
        for i in range(t):
            h = self.cell(x[:, i, :], h)
            states.append(h)
        logits = self.head(torch.stack(states, 1))
        return logits, lm_loss(logits, targets)


# ---- MLP over a window and the bigram table -----------------------------------------------

class WindowMLP(nn.Module):
    """Concatenates the embeddings of the block_size previous tokens (a blank token, index
    vocab_size, stands before the start) and reads the next token off an MLP."""

    def __init__(self, cfg):
        super().__init__()
        self.block_size, self.blank = cfg.block_size, cfg.vocab_size
        self.tok = nn.Embedding(cfg.vocab_size + 1, cfg.n_embd)
        self.net = nn.Sequential(nn.Linear(cfg.block_size * cfg.n_embd, cfg.n_embd2), nn.Tanh(),
                                 nn.Linear(cfg.n_embd2, cfg.vocab_size))

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        pieces = []
        for _ in range(self.block_size):
            pieces.append(self.tok(idx))
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.blank
        logits = self.net(torch.cat(pieces, -1))
        return logits, lm_loss(logits, targets)


class PairTable(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.table = nn.Parameter(torch.zeros((cfg.vocab_size, cfg.vocab_size)))

    def get_block_size(self):
        return 1

    def forward(self, idx, targets=None):
        logits = self.table[idx]
        return logits, lm_loss(logits, targets)


MODELS = {
    "transformer": GPTNames,
    "bigram": PairTable,
    "mlp": WindowMLP,
    "rnn": lambda cfg: Recurrent(cfg, "rnn"),
    "gru": lambda cfg: Recurrent(cfg, "gru"),
    "bow": BagOfWords,
}


# ---- data ---------------------------------------------------------------------------------

class NameSet(Dataset):
    def __init__(self, words, alphabet, longest):
        self.words, self.alphabet, self.longest = words, alphabet, longest
        self.to_id = {ch: i + 1 for i, ch in enumerate(alphabet)}
        self.to_ch = {i: ch for ch, i in self.to_id.items()}

    def __len__(self):
        return len(self.words)

    def get_vocab_size(self):
        return len(self.alphabet) + 1

    def get_output_length(self):
        return self.longest + 1

    def decode(self, ids):
        return "".join(self.to_ch[i] for i in ids)

    def __getitem__(self, i):
        ids = torch.tensor([self.to_id[ch] for ch in self.words[i]], dtype=torch.long)
        n = len(ids)
        x = torch.zeros(self.longest + 1, dtype=torch.long)
        y = torch.zeros(self.longest + 1, dtype=torch.long)
        x[1:n + 1] = ids
        y[:n] = ids
        y[n + 1:] = -1  # nothing to predict after the stop token
        return x, y


def load_splits(path):
    with open(path) as fh:
        words = [line.strip() for line in fh if line.strip()]
    alphabet = sorted(set("".join(words)))
    longest = max(map(len, words))
    n_test = min(1000, len(words) // 10)
    order = torch.randperm(len(words)).tolist()
    train_words = [words[i] for i in order[n_test:]]
    test_words = [words[i] for i in order[:n_test]]
    print(f"{len(words)} words, alphabet {''.join(alphabet)!r}, longest {longest}")
    return NameSet(train_words, alphabet, longest), NameSet(test_words, alphabet, longest)


def endless_batches(dataset, batch_size, workers):
    sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=int(1e10))
    loader = DataLoader(dataset, sampler=sampler, batch_size=batch_size, pin_memory=True,
                        num_workers=workers)
    while True:
        yield from loader


# ---- sampling and evaluation --------------------------------------------------------------

@torch.no_grad()
def generate(model, idx, n_new, temperature=1.0, do_sample=False, top_k=None):
    window = model.get_block_size()
    for _ in range(n_new):
        context = idx if idx.size(1) <= window else idx[:, -window:]
        logits, _ = model(context)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            kth, _ = torch.topk(logits, top_k)
            logits[logits < kth[:, [-1]]] = -float("inf")
        probs = F.softmax(logits, dim=-1)
        if do_sample:
            nxt = torch.multinomial(probs, num_samples=1)
        else:
            _, nxt = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, nxt), dim=1)
    return idx


def show_samples(model, train_set, test_set, opts, count=10):
    start = torch.zeros(count, 1, dtype=torch.long).to(opts.device)
    top_k = None if opts.top_k == -1 else opts.top_k
    rows = generate(model, start, train_set.get_output_length() - 1, top_k=top_k,
                    do_sample=True).to("cpu")
    for r in range(rows.size(0)):
        ids = rows[r, 1:].tolist()
        word = train_set.decode(ids[:ids.index(0)] if 0 in ids else ids)
        seen = "train" if word in train_set.words else "test" if word in test_set.words else "new"
        print(f"  {word:<14} ({seen})")


@torch.inference_mode()
def mean_loss(model, dataset, device, batch_size=50, max_batches=None):
    model.eval()
    values = []
    for i, (x, y) in enumerate(DataLoader(dataset, shuffle=True, batch_size=batch_size,
                                          num_workers=0)):
        values.append(model(x.to(device), y.to(device))[1].item())
        if max_batches is not None and i >= max_batches:
            break
    model.train()
    return torch.tensor(values).mean().item()


# ---- one run from a command line ----------------------------------------------------------

def options(argv):
    p = argparse.ArgumentParser(description="name generator")
    p.add_argument("--input-file", "-i", default="names.txt")
    p.add_argument("--work-dir", "-o", default="out")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--sample-only", action="store_true")
    p.add_argument("--num-workers", "-n", type=int, default=4)
    p.add_argument("--max-steps", type=int, default=-1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--top-k", type=int, default=-1)
    p.add_argument("--type", default="transformer", choices=sorted(MODELS))
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-embd2", type=int, default=64)
    p.add_argument("--batch-size", "-b", type=int, default=32)
    p.add_argument("--learning-rate", "-l", type=float, default=5e-4)
    p.add_argument("--weight-decay", "-w", type=float, default=0.01)
    return p.parse_args(argv)


def run(argv, eval_every=20, sample_every=40):
    """Returns (model, train set, record); the record is {"samples_only": True} with
    --sample-only."""
    opts = options(argv)
    torch.manual_seed(opts.seed)
    torch.cuda.manual_seed_all(opts.seed)
    os.makedirs(opts.work_dir, exist_ok=True)
    checkpoint = os.path.join(opts.work_dir, "model.pt")

    train_set, test_set = load_splits(opts.input_file)
    cfg = Settings(vocab_size=train_set.get_vocab_size(),
                   block_size=train_set.get_output_length(), n_layer=opts.n_layer,
                   n_head=opts.n_head, n_embd=opts.n_embd, n_embd2=opts.n_embd2)
    model = MODELS[opts.type](cfg)
    model.to(opts.device)
    print(f"{opts.type}: {sum(p.numel() for p in model.parameters())} parameters")
    if opts.resume or opts.sample_only:
        model.load_state_dict(torch.load(checkpoint))
    if opts.sample_only:
        show_samples(model, train_set, test_set, opts, count=20)
        return model, train_set, {"samples_only": True}

    opt = torch.optim.AdamW(model.parameters(), lr=opts.learning_rate,
                            weight_decay=opts.weight_decay, betas=(0.9, 0.99), eps=1e-8)
    batches = endless_batches(train_set, opts.batch_size, opts.num_workers)
    record = {"losses": [], "evals": [], "best_loss": None}
    for step in range(opts.max_steps if opts.max_steps >= 0 else 10**12):
        tic = time.time()
        x, y = (t.to(opts.device) for t in next(batches))
        _, loss = model(x, y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if opts.device.startswith("cuda"):
            torch.cuda.synchronize()
        record["losses"].append(loss.item())
        if step % 10 == 0:
            print(f"{opts.type} step {step}: loss {loss.item():.4f} ({time.time() - tic:.3f}s)")
        if step and step % eval_every == 0:
            scores = [mean_loss(model, d, opts.device, batch_size=100, max_batches=10)
                      for d in (train_set, test_set)]
            record["evals"].append((step, *scores))
            if record["best_loss"] is None or scores[1] < record["best_loss"]:
                record["best_loss"] = scores[1]
                torch.save(model.state_dict(), checkpoint)
        if step and step % sample_every == 0:
            show_samples(model, train_set, test_set, opts)
    return model, train_set, record


# names.txt stands in for a real list of names: made-up names glued from syllables
pieces = ["ka", "to", "ri", "mel", "sa", "vo", "un", "de", "li", "ar", "ny", "be", "i", "a", "os"]
pick = random.Random(11)
made_up = sorted({"".join(pick.choice(pieces) for _ in range(pick.randint(1, 3)))
                  for _ in range(600)})
root = tempfile.mkdtemp()
names_path = os.path.join(root, "names.txt")
with open(names_path, "w") as fh:
    fh.write("\n".join(made_up) + "\n")

small = ["--n-layer", "2", "--n-embd", "16", "--n-embd2", "16"]
results = {}
for kind, n_steps in [("bigram", 60), ("mlp", 60), ("rnn", 40), ("gru", 40), ("bow", 40),
                      ("transformer", 40)]:
    lr = "1e-2" if kind == "bigram" else "5e-3"
    _, _, results[kind] = run(["-i", names_path, "-o", os.path.join(root, kind), "--type", kind,
                               "--num-workers", "0", "--max-steps", str(n_steps),
                               "--top-k", "5", "--learning-rate", lr, *small])

# sample-only: the transformer comes back from its best checkpoint
model, train_dataset, sample_only = run(["-i", names_path, "-o", os.path.join(root, "transformer"),
                                         "--type", "transformer", "--sample-only", *small])
reloaded = {name: t.clone() for name, t in model.state_dict().items()}
sampled = generate(model, torch.zeros(4, 1, dtype=torch.long),
                   train_dataset.get_output_length() - 1, top_k=3, do_sample=True)

# Deterministic check against torch: every model with weights set to a cosine pattern on one
# fixed batch (loss, logits, gradients), then a greedy continuation in eval mode.
tiny = Settings(vocab_size=7, block_size=5, n_layer=1, n_head=2, n_embd=8, n_embd2=8)
probe_x = torch.tensor([[0, 2, 5, 1, 3], [0, 6, 6, 4, 0]])
probe_y = torch.tensor([[2, 5, 1, 3, 0], [6, 6, 4, 0, -1]])
fixed_results = {}
for kind, build in MODELS.items():
    probe = build(tiny)
    with torch.no_grad():
        for j, (_, w) in enumerate(probe.named_parameters()):
            w.copy_(torch.cos(torch.arange(w.numel(), dtype=torch.float32) * (0.4 * j + 0.9))
                    .view_as(w) / 3)
    logits, loss = probe(probe_x.clone(), probe_y)
    loss.backward()
    entry = {"loss": loss.item(), "logits": logits.tolist()}
    entry.update({name: w.grad.tolist() for name, w in probe.named_parameters()})
    probe.eval()
    entry["greedy"] = generate(probe, probe_x[:, :2], 3).tolist()
    fixed_results[kind] = entry
