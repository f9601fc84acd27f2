"""A small Transformer language model over a toy corpus, written for these tests in the way the
PyTorch beginner tutorials commonly write torch code (modelled on the API usage of the tutorial
"Language Modeling with nn.Transformer and torchtext", not a copy of it):

- a sequence-first nn.TransformerEncoder of nn.TransformerEncoderLayer(d_model, nhead, d_hid,
  dropout), an nn.Embedding scaled by sqrt(d_model), sinusoidal positions kept with
  register_buffer, weights initialised through ``.data.uniform_`` / ``.data.zero_``;
- a tokenizer and vocabulary written here (in place of torchtext's), tokens flattened with
  torch.cat, batches laid out column-wise (view/t/contiguous) and cut into bptt windows;
- SGD at lr 5.0 with clip_grad_norm_ and lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95),
  CrossEntropyLoss, the best epoch's state_dict saved under a TemporaryDirectory and reloaded;
- the loss and gradients from sin-valued weights, for the torch comparison.
"""
import math
import os
import random
import re
import time
from tempfile import TemporaryDirectory

import jitgrad as torch
from jitgrad import Tensor, nn
from jitgrad.nn import TransformerEncoder, TransformerEncoderLayer
from jitgrad.utils.data import dataset

torch.manual_seed(1)

NAMES = ["anna", "boris", "chen", "dara", "emil"]
PLACES = ["market", "library", "harbour", "station", "museum"]
DAYS = ["monday", "tuesday", "friday", "saturday", "sunday"]


def diary(n, seed):
    pick = random.Random(seed).choice
    return [f"{pick(NAMES)} went to the {pick(PLACES)} on {pick(DAYS)}." for _ in range(n)]


def tokenize(line):
    return re.sub(r"([.,!?])", r" \1 ", line.lower()).split()


class Vocabulary:
    def __init__(self, texts, specials=("<unk>",)):
        self.itos = list(specials) + sorted({tok for t in texts for tok in tokenize(t)})
        self.stoi = {tok: i for i, tok in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def encode(self, line):
        return [self.stoi.get(tok, 0) for tok in tokenize(line)]


train_text, val_text, test_text = diary(1600, 11), diary(160, 12), diary(160, 13)
vocab = Vocabulary(train_text)
ntokens = len(vocab)


def to_ids(texts: dataset.IterableDataset) -> Tensor:
    pieces = [torch.tensor(vocab.encode(t), dtype=torch.long) for t in texts]
    return torch.cat([p for p in pieces if p.numel() > 0])


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def columns(ids: Tensor, n_cols: int) -> Tensor:
    """(len,) -> (len // n_cols, n_cols): each column a contiguous stretch of the text."""
    rows = ids.size(0) // n_cols
    return ids[:rows * n_cols].view(n_cols, rows).t().contiguous().to(device)


BPTT = 30
train_ids = columns(to_ids(train_text), 16)
val_ids = columns(to_ids(val_text), 8)
test_ids = columns(to_ids(test_text), 8)


def window(src: Tensor, start: int) -> tuple[Tensor, Tensor]:
    n = min(BPTT, len(src) - 1 - start)
    return src[start:start + n], src[start + 1:start + 1 + n].reshape(-1)


class SinePositions(nn.Module):
    def __init__(self, width, p_drop=0.1, longest=1000):
        super().__init__()
        self.drop = nn.Dropout(p=p_drop)
        pos = torch.arange(longest).unsqueeze(1)
        rate = torch.exp(torch.arange(0, width, 2) * (-math.log(10000.0) / width))
        table = torch.zeros(longest, 1, width)
        table[:, 0, 0::2] = torch.sin(pos * rate)
        table[:, 0, 1::2] = torch.cos(pos * rate)
        self.register_buffer("table", table)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(x + self.table[:x.size(0)])


class WordPredictor(nn.Module):
    def __init__(self, n_tok, width, heads, ff, depth, p_drop=0.5):
        super().__init__()
        self.width = width
        self.tok = nn.Embedding(n_tok, width)
        self.pos = SinePositions(width, p_drop)
        self.body = TransformerEncoder(TransformerEncoderLayer(width, heads, ff, p_drop), depth)
        self.readout = nn.Linear(width, n_tok)
        self.tok.weight.data.uniform_(-0.1, 0.1)
        self.readout.weight.data.uniform_(-0.1, 0.1)
        self.readout.bias.data.zero_()

    def forward(self, src: Tensor, mask: Tensor = None) -> Tensor:
        h = self.pos(self.tok(src) * math.sqrt(self.width))
        return self.readout(self.body(h, mask))


lm = WordPredictor(ntokens, 32, 2, 32, 2, 0.2).to(device)
ce = nn.CrossEntropyLoss()
sgd = torch.optim.SGD(lm.parameters(), lr=5.0)
decay = torch.optim.lr_scheduler.StepLR(sgd, 1.0, gamma=0.95)


def train_epoch(epoch):
    lm.train()
    t0, running = time.time(), 0.0
    for b, start in enumerate(range(0, train_ids.size(0) - 1, BPTT)):
        x, y = window(train_ids, start)
        loss = ce(lm(x).view(-1, ntokens), y)
        sgd.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), 0.5)
        sgd.step()
        running += loss.item()
        if b and b % 10 == 0:
            print(f"epoch {epoch} batch {b} lr {decay.get_last_lr()[0]:.2f} "
                  f"loss {running / 10:.3f} ({time.time() - t0:.2f}s)")
            running, t0 = 0.0, time.time()


def mean_loss(src: Tensor) -> float:
    lm.eval()
    total = 0.0
    with torch.no_grad():
        for start in range(0, src.size(0) - 1, BPTT):
            x, y = window(src, start)
            total += x.size(0) * ce(lm(x).view(-1, ntokens), y).item()
    return total / (len(src) - 1)


val_losses, lrs = [], []
best = float("inf")
with TemporaryDirectory() as scratch:
    best_path = os.path.join(scratch, "best_lm.pt")
    for epoch in range(1, 4):
        train_epoch(epoch)
        val_losses.append(mean_loss(val_ids))
        print(f"epoch {epoch}: validation loss {val_losses[-1]:.3f}, "
              f"perplexity {math.exp(val_losses[-1]):.2f}")
        if val_losses[-1] < best:
            best = val_losses[-1]
            torch.save(lm.state_dict(), best_path)
        decay.step()
        lrs.append(decay.get_last_lr()[0])
    lm.load_state_dict(torch.load(best_path))
test_loss = mean_loss(test_ids)
print(f"test loss {test_loss:.3f}, perplexity {math.exp(test_loss):.2f}")

# fixed weights, eval mode, the first test window: loss and gradients
ref = WordPredictor(ntokens, 16, 2, 24, 2, 0.0)
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 3)
ref.eval()
first, _ = window(test_ids, 0)
ref_loss = ce(ref(first[:12]).view(-1, ntokens), first[1:13].reshape(-1))
ref_loss.backward()
fixed_result = {"loss": ref_loss.item(), "data": first.tolist(),
                **{n: p.grad.tolist() for n, p in ref.named_parameters()}}
