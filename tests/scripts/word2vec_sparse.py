"""Skip-gram word2vec with negative sampling on sparse embedding tables.

Written for these tests in the way word2vec code for PyTorch is commonly written (modelled on
the API usage of Andras7/word2vec-pytorch, not a copy of it). It exercises:

- two nn.Embedding(..., sparse=True) tables (centre and context words), initialised through
  nn.init.uniform_ and nn.init.constant_ on ``.weight.data``;
- the negative-sampling loss: torch.mul + torch.sum for the positive scores, torch.bmm of the
  negatives' context vectors with the centre vector, torch.clamp of both, F.logsigmoid,
  torch.mean;
- a vocabulary with a min_count cut, a noise table of word ids drawn by unigram
  frequency ** 0.75 and frequent-word subsampling (NumPy), a Dataset whose collate_fn builds
  torch.LongTensor batches (the negatives from a list of NumPy arrays), a DataLoader;
- optim.SparseAdam under optim.lr_scheduler.CosineAnnealingLR, both made afresh each epoch,
  with scheduler.step() called before optimizer.step() (torch's order warning, once per
  epoch, is recorded), and the trained centre vectors written in word2vec's text format.

The corpus is synthetic: three topics of six words, each line six words of one topic with
"the" twice among them, and a rare word under min_count. Sections marked "(recorded)" keep
results for the tests; "(added)" marks a fixed-weight run (loss, the sparse gradients and
their coalescing, two SparseAdam steps) compared with torch.
"""

import os
import tempfile
import warnings
from collections import Counter

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.nn import init
from jitgrad.utils.data import DataLoader, Dataset

device = torch.device("cpu")


# ------------------------------------------------------------------------------ the corpus


class Vocabulary:
    """Counts of a whitespace-tokenised text file, the words kept (min_count), the noise table
    for negative sampling and each word's probability of surviving subsampling."""

    def __init__(self, path, min_count, noise_size=10_000, power=0.75, sample=0.01, seed=7):
        tally = Counter()
        self.n_lines = self.n_tokens = 0
        with open(path, encoding="utf8") as fh:
            for raw in fh:
                tokens = raw.split()
                if len(tokens) < 2:
                    continue
                self.n_lines += 1
                self.n_tokens += len(tokens)
                tally.update(tokens)
        # ids in order of first appearance
        self.words = [w for w, n in tally.items() if n >= min_count]
        self.ids = {w: i for i, w in enumerate(self.words)}
        self.counts = np.array([tally[w] for w in self.words], dtype=np.int64)

        rng = np.random.default_rng(seed)
        weight = self.counts.astype(np.float64) ** power
        copies = np.rint(weight / weight.sum() * noise_size).astype(np.int64)
        self.noise = rng.permutation(np.repeat(np.arange(len(self.words)), copies))
        self._next = 0

        share = sample * self.n_tokens / self.counts
        self.keep = np.sqrt(share) + share

    def __len__(self):
        return len(self.words)

    def negatives(self, k):
        """The next k ids of the noise table, wrapping around its end."""
        picked = np.take(self.noise, np.arange(self._next, self._next + k), mode="wrap")
        self._next = (self._next + k) % len(self.noise)
        return picked


class ContextPairs(Dataset):
    """One item per line: its (centre, context, negatives) triples after subsampling, within a
    window whose radius is drawn per line."""

    def __init__(self, vocab, path, window, n_negatives=5, seed=11):
        self.vocab, self.window, self.k = vocab, window, n_negatives
        with open(path, encoding="utf8") as fh:
            self.lines = [t for t in (raw.split() for raw in fh) if len(t) >= 2]
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        known = [self.vocab.ids[w] for w in self.lines[i] if w in self.vocab.ids]
        kept = [w for w in known if self.rng.random() < self.vocab.keep[w]]
        radius = int(self.rng.integers(1, self.window))
        triples = []
        for pos, centre in enumerate(kept):
            for context in kept[max(0, pos - radius):pos + radius + 1]:
                if context != centre:
                    triples.append((centre, context, self.vocab.negatives(self.k)))
        return triples

    @staticmethod
    def collate(items):
        flat = [t for item in items for t in item]
        centres = torch.LongTensor([t[0] for t in flat])
        contexts = torch.LongTensor([t[1] for t in flat])
        noise = torch.tensor([t[2] for t in flat], dtype=torch.long)
        return centres, contexts, noise


# ------------------------------------------------------------------------------ the model


class SkipGram(nn.Module):
    def __init__(self, n_words, dim):
        super().__init__()
        self.dim = dim
        self.centre = nn.Embedding(n_words, dim, sparse=True)
        self.context = nn.Embedding(n_words, dim, sparse=True)
        init.uniform_(self.centre.weight.data, -1.0 / dim, 1.0 / dim)
        init.constant_(self.context.weight.data, 0.0)

    def forward(self, centres, contexts, noise):
        c = self.centre(centres)  # (B, D)
        pos = self.context(contexts)  # (B, D)
        neg = self.context(noise)  # (B, K, D)
        pos_logit = torch.clamp(torch.sum(torch.mul(c, pos), dim=1), min=-10, max=10)
        neg_logit = torch.clamp(torch.bmm(neg, c.unsqueeze(2)).squeeze(2), min=-10, max=10)
        per_pair = -F.logsigmoid(pos_logit) - torch.sum(F.logsigmoid(-neg_logit), dim=1)
        return torch.mean(per_pair)

    def write_vectors(self, words, path):
        table = self.centre.weight.detach().cpu().numpy()
        with open(path, "w", encoding="utf8") as fh:
            fh.write(f"{len(words)} {self.dim}\n")
            for i, word in enumerate(words):
                fh.write(word + " " + " ".join(f"{x:.9g}" for x in table[i]) + "\n")


# ------------------------------------------------------------------------------ training

losses, lrs = [], []  # (recorded)


class Word2Vec:
    def __init__(self, corpus, out_path, dim=100, batch_size=32, window=5, epochs=3, lr=1e-3,
                 min_count=12):
        self.vocab = Vocabulary(corpus, min_count)
        pairs = ContextPairs(self.vocab, corpus, window)
        self.loader = DataLoader(pairs, batch_size=batch_size, shuffle=False,
                                 collate_fn=ContextPairs.collate)
        self.model = SkipGram(len(self.vocab), dim).to(device)
        self.out_path, self.epochs, self.lr = out_path, epochs, lr

    def fit(self):
        for epoch in range(self.epochs):
            # a fresh optimizer and a fresh cosine cycle each epoch (restarts by hand)
            opt = optim.SparseAdam(list(self.model.parameters()), lr=self.lr)
            cycle = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=len(self.loader))
            smoothed = None
            for centres, contexts, noise in self.loader:
                if centres.numel() < 2:
                    continue
                cycle.step()  # (before opt.step(): torch warns about the order)
                opt.zero_grad()
                loss = self.model(centres.to(device), contexts.to(device), noise.to(device))
                loss.backward()
                opt.step()
                value = loss.item()
                smoothed = value if smoothed is None else 0.9 * smoothed + 0.1 * value
                losses.append(value)  # (recorded)
                lrs.append(cycle.get_last_lr()[0])  # (recorded)
            print(f"epoch {epoch + 1}: smoothed loss {smoothed:.4f}")
            self.model.write_vectors(self.vocab.words, self.out_path)


# (recorded) the corpus: 360 lines of one topic each, "the" twice per line, "quasar" on 6
topics = {"colours": ["red", "green", "blue", "yellow", "purple", "orange"],
          "tools": ["hammer", "saw", "drill", "wrench", "chisel", "pliers"],
          "birds": ["robin", "crow", "owl", "eagle", "heron", "finch"]}
workdir = tempfile.mkdtemp()
corpus_path = os.path.join(workdir, "corpus.txt")


def write_corpus(path, n_lines=360):
    rng = np.random.default_rng(3)
    names = list(topics)
    with open(path, "w", encoding="utf8") as fh:
        for n in range(n_lines):
            line = [str(w) for w in rng.choice(topics[names[n % 3]], size=6)]
            for at in sorted(rng.choice(7, size=2, replace=False).tolist(), reverse=True):
                line.insert(at, "the")
            if n % 60 == 5:
                line.append("quasar")
            fh.write(" ".join(line) + "\n")


write_corpus(corpus_path)


# (added) a fixed-weight model of 7 words in 4 dimensions, weights from NumPy (centre word 6
# against negative 5 scores -25, clamped to -10), a batch repeating some words: its loss and
# sparse gradients, then two SparseAdam steps under CosineAnnealingLR in the order used above
def fixed_run():
    model = SkipGram(7, 4)
    rng = np.random.default_rng(1)
    centre_w, context_w = rng.normal(0.0, 0.5, (7, 4)), rng.normal(0.0, 0.5, (7, 4))
    centre_w[6], context_w[5] = 2.5, -2.5
    with torch.no_grad():
        model.centre.weight.copy_(torch.tensor(centre_w, dtype=torch.float32))
        model.context.weight.copy_(torch.tensor(context_w, dtype=torch.float32))
    centres = torch.LongTensor([0, 3, 3, 6, 1])
    contexts = torch.LongTensor([1, 2, 4, 0, 1])
    noise = torch.LongTensor(np.array([[2, 5, 5, 0, 4], [1, 1, 6, 0, 2], [3, 4, 5, 6, 0],
                                       [5, 5, 2, 1, 3], [0, 2, 4, 6, 3]]))
    out = {"losses": [], "lrs": []}
    opt = optim.SparseAdam(model.parameters(), lr=0.05, betas=(0.8, 0.9))
    cycle = optim.lr_scheduler.CosineAnnealingLR(opt, 3)
    for step in range(2):
        cycle.step()
        opt.zero_grad()
        loss = model(centres, contexts, noise)
        loss.backward()
        if step == 0:
            for name, p in model.named_parameters():
                grad, merged = p.grad, p.grad.coalesce()
                out[name] = {
                    "is_sparse": grad.is_sparse, "sparse_coo": grad.layout == torch.sparse_coo,
                    "is_coalesced": grad.is_coalesced(), "nnz": grad._nnz(),
                    "shape": tuple(grad.shape), "indices": grad._indices().clone(),
                    "values": grad._values().clone(), "dense": grad.to_dense(),
                    "coalesced_indices": merged.indices(), "coalesced_values": merged.values(),
                    "coalesced_is_coalesced": merged.is_coalesced()}
        opt.step()
        out["losses"].append(loss.item())
        out["lrs"].append(cycle.get_last_lr()[0])
        out[f"weights_{step}"] = {n: p.detach().clone() for n, p in model.named_parameters()}
    out["state"] = {k: {n: (v if n == "step" else v.clone()) for n, v in s.items()}
                    for k, s in opt.state_dict()["state"].items()}
    with torch.no_grad():
        out["scores"] = torch.sum(torch.mul(model.centre(centres), model.context(contexts)), dim=1)
    return out


torch.manual_seed(0)
fixed_results = fixed_run()  # (added)


if __name__ == "__main__":
    trainer = Word2Vec(corpus_path, os.path.join(workdir, "vectors.txt"), dim=16,
                       batch_size=32, epochs=10, lr=0.05)
    with warnings.catch_warnings(record=True) as train_warnings:  # (recorded)
        warnings.simplefilter("always")
        trainer.fit()

    # (recorded) cosine similarity of every pair of trained centre vectors, and each topic
    # word's nearest other word ("the" left out)
    vectors = trainer.model.centre.weight.detach()
    unit = vectors / vectors.norm(dim=1, keepdim=True)
    cosine = (unit @ unit.T).numpy()
    ids, words = trainer.vocab.ids, trainer.vocab.words
    nearest = {}
    for members in topics.values():
        for w in members:
            row = cosine[ids[w]].copy()
            row[[ids[w], ids["the"]]] = -2.0
            nearest[w] = words[int(row.argmax())]
