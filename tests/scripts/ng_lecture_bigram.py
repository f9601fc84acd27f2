"""A character-level bigram language model, written for these tests in the way Karpathy's
"Let's build GPT" lecture code (ng-video-lecture bigram.py) is commonly written (modelled on the
API usage of that lecture, not a copy of it):

- a corpus encoded to a long tensor, split 90/10, random (x, y) windows from ``torch.randint`` and
  ``torch.stack``, moved with ``.to(device)``;
- an ``nn.Embedding(vocab, vocab)`` lookup table as the whole model, ``view`` + ``F.cross_entropy``;
- ``torch.optim.AdamW``, ``zero_grad(set_to_none=True)``;
- a ``@torch.no_grad()`` evaluation that switches ``eval()``/``train()`` and averages into
  ``torch.zeros``;
- sampling with ``F.softmax``, ``torch.multinomial`` and ``torch.cat``.
"""
import os
import random
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn import functional as F

torch.manual_seed(2024)
device = "cuda" if torch.cuda.is_available() else "cpu"

BATCH = 32
CONTEXT = 8
STEPS = 300
EVAL_EVERY = 100
EVAL_BATCHES = 20
LR = 0.1


def write_corpus(path, n_entries=300, seed=7):
    """A small ship's log: a speaker line, then a sentence made of a few dozen words."""
    pick = random.Random(seed)
    crew = ["CAPTAIN", "BOSUN", "COOK"]
    words = ("wind from the west rain on deck all hands haul the sail "
             "we sight land at dawn calm sea low tide").split()
    entries = []
    for _ in range(n_entries):
        sentence = " ".join(pick.choice(words) for _ in range(pick.randint(4, 9)))
        entries.append(pick.choice(crew) + ":\n" + sentence.capitalize() + ".\n\n")
    with open(path, "w", encoding="utf-8") as out:
        out.write("".join(entries))


corpus_path = os.path.join(tempfile.mkdtemp(), "log.txt")
write_corpus(corpus_path)
with open(corpus_path, encoding="utf-8") as fh:
    text = fh.read()

chars = sorted(set(text))
vocab_size = len(chars)
char_to_id = {c: i for i, c in enumerate(chars)}


def encode(s):
    return [char_to_id[c] for c in s]


def decode(ids):
    return "".join(chars[i] for i in ids)


tokens = torch.tensor(encode(text), dtype=torch.long)
cut = int(len(tokens) * 0.9)
splits = {"train": tokens[:cut], "val": tokens[cut:]}


def batch(split):
    source = splits[split]
    starts = torch.randint(len(source) - CONTEXT, (BATCH,))
    xs = torch.stack([source[s:s + CONTEXT] for s in starts])
    ys = torch.stack([source[s + 1:s + CONTEXT + 1] for s in starts])
    return xs.to(device), ys.to(device)


class Bigram(nn.Module):
    """Row i of the table holds the next-character logits after character i."""

    def __init__(self, n_chars):
        super().__init__()
        self.table = nn.Embedding(n_chars, n_chars)

    def forward(self, ids, targets=None):
        logits = self.table(ids)  # (batch, time, vocab)
        if targets is None:
            return logits, None
        b, t, v = logits.shape
        loss = F.cross_entropy(logits.view(b * t, v), targets.view(b * t))
        return logits, loss

    def generate(self, ids, n_new):
        for _ in range(n_new):
            logits, _ = self(ids)
            probs = F.softmax(logits[:, -1, :], dim=-1)
            nxt = torch.multinomial(probs, num_samples=1)
            ids = torch.cat((ids, nxt), dim=1)
        return ids


@torch.no_grad()
def evaluate(net):
    net.eval()
    means = {}
    for split in ("train", "val"):
        values = torch.zeros(EVAL_BATCHES)
        for i in range(EVAL_BATCHES):
            _, loss = net(*batch(split))
            values[i] = loss.item()
        means[split] = values.mean()
    net.train()
    return means


model = Bigram(vocab_size).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=LR)

history = []  # (step, train loss, val loss)
for step in range(STEPS):
    if step % EVAL_EVERY == 0:
        est = evaluate(model)
        history.append((step, est["train"].item(), est["val"].item()))
        print(f"{step:4d}  train {est['train']:.3f}  val {est['val']:.3f}")
    xb, yb = batch("train")
    _, loss = model(xb, yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

start = torch.zeros((1, 1), dtype=torch.long, device=device)
sample = decode(model.generate(start, 100)[0].tolist())
print(sample)
