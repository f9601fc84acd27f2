"""A variable-length sequence pipeline, written for these tests in the way PyTorch's "Datasets
& DataLoaders" material and torch.utils.data user code are commonly written (modelled on the
API usage of that material, not a copy of it):

- a map-style ``Dataset`` returning dicts (with ``transform``/``target_transform``),
  ``random_split`` by fractions, a ``collate_fn`` using ``pad_sequence``
- a length-bucketing ``Sampler`` passed as ``batch_sampler``, a bidirectional ``nn.LSTM`` over
  ``pack_padded_sequence(enforce_sorted=False)``/``pad_packed_sequence``, AdamW,
  ``BCEWithLogitsLoss``
- ``default_collate`` (dicts, tuples, NumPy arrays), an ``IterableDataset`` with
  ``get_worker_info``, ``drop_last``, ``WeightedRandomSampler``, ``SubsetRandomSampler``,
  ``BatchSampler(SequentialSampler)``, ``ConcatDataset`` of ``Subset``s, seeded shuffling
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from jitgrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                                Sampler, SequentialSampler, Subset, SubsetRandomSampler,
                                WeightedRandomSampler, default_collate, get_worker_info,
                                random_split)

torch.manual_seed(0)


class RandomWalks(Dataset):
    """Sequences of 2 to 8 steps of 3 features; the target says whether feature 0 sums > 0."""

    def __init__(self, count, transform=None, target_transform=None):
        gen = torch.Generator().manual_seed(7)
        self.lengths = torch.randint(2, 9, (count,), generator=gen).tolist()
        self.walks = [torch.randn(n, 3, generator=gen) for n in self.lengths]
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.walks)

    def __getitem__(self, i):
        walk = self.walks[i]
        target = int(walk[:, 0].sum() > 0)
        if self.transform is not None:
            walk = self.transform(walk)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return {"seq": walk, "label": target, "length": walk.shape[0]}


def pad_batch(items):
    """dicts -> (padded (B, T, 3), lengths (B,), float targets (B,))."""
    padded = pad_sequence([it["seq"] for it in items], batch_first=True, padding_value=0.0)
    lengths = torch.tensor([it["length"] for it in items])
    targets = torch.tensor([it["label"] for it in items], dtype=torch.float32)
    return padded, lengths, targets


class SimilarLengths(Sampler):
    """Batches of indices whose sequences have about the same length, in random batch order."""

    def __init__(self, lengths, batch_size, generator=None):
        self.lengths, self.batch_size, self.generator = lengths, batch_size, generator

    def __len__(self):
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        shuffled = torch.randperm(len(self.lengths), generator=self.generator).tolist()
        by_length = sorted(shuffled, key=self.lengths.__getitem__)
        chunks = [by_length[k:k + self.batch_size]
                  for k in range(0, len(by_length), self.batch_size)]
        yield from (chunks[k] for k in torch.randperm(len(chunks), generator=self.generator))


walks = RandomWalks(120, transform=lambda seq: seq * 1.0)
train_set, val_set = random_split(walks, [0.75, 0.25], generator=torch.Generator().manual_seed(1))
print("split:", len(train_set), len(val_set))
sampler = SimilarLengths([walks.lengths[i] for i in train_set.indices], 8,
                         generator=torch.Generator().manual_seed(2))
train_loader = DataLoader(train_set, batch_sampler=sampler, collate_fn=pad_batch)
val_loader = DataLoader(val_set, batch_size=10, shuffle=False, collate_fn=pad_batch)
bucket_spreads = []
for _, lengths, _ in train_loader:
    bucket_spreads.append(int(lengths.max() - lengths.min()))


class BiLSTMScorer(nn.Module):
    def __init__(self, n_in=3, hidden=16):
        super().__init__()
        self.rnn = nn.LSTM(n_in, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, 1)

    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        seq_out, (h_n, _) = self.rnn(packed)
        _, unpacked_lengths = pad_packed_sequence(seq_out, batch_first=True)
        assert torch.equal(unpacked_lengths, lengths)
        both_directions = torch.cat([h_n[0], h_n[1]], dim=1)  # forward and backward final states
        return self.out(both_directions).squeeze(1)


net = BiLSTMScorer()
adamw = torch.optim.AdamW(net.parameters(), lr=0.02, weight_decay=0.01)
bce = nn.BCEWithLogitsLoss()


def validation_loss():
    net.eval()
    summed, count = 0.0, 0
    with torch.no_grad():
        for padded, lengths, targets in val_loader:
            summed += bce(net(padded, lengths), targets).item() * len(targets)
            count += len(targets)
    return summed / count


val_losses = [validation_loss()]
for _ in range(6):
    net.train()
    for padded, lengths, targets in train_loader:
        adamw.zero_grad()
        bce(net(padded, lengths), targets).backward()
        adamw.step()
    val_losses.append(validation_loss())
print("validation:", " ".join(f"{v:.4f}" for v in val_losses))

# default_collate on its own: dict fields batched, tuples zipped, NumPy arrays stacked
merged = default_collate([{"v": torch.full((2,), 3.0), "n": 4, "pair": (0.5, "left")},
                          {"v": torch.arange(2.0), "n": 7, "pair": (1.5, "right")}])
collated = (merged["v"].tolist(), merged["n"].tolist(), merged["pair"][0].tolist(),
            merged["pair"][1])
np_batch = default_collate([np.arange(4), np.arange(4) ** 2])
print(collated, type(np_batch).__name__, np_batch.dtype)


class Span(IterableDataset):
    """The integers lo..hi-1, streamed (single process: no worker info)."""

    def __init__(self, lo, hi):
        super().__init__()
        self.lo, self.hi = lo, hi

    def __iter__(self):
        assert get_worker_info() is None
        yield from range(self.lo, self.hi)


iterable_batches = [b.tolist() for b in DataLoader(Span(5, 16), batch_size=4)]
iterable_drop_last = [b.tolist() for b in DataLoader(Span(5, 16), batch_size=4, drop_last=True)]

# samplers on their own
weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0], num_samples=4, replacement=True))
subset_random = sorted(SubsetRandomSampler([2, 3, 9, 11]))
batch_sampler = list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False))
joined = ConcatDataset([Subset(walks, [3]), Subset(walks, [8, 9])])
joined_targets = [joined[k]["label"] for k in range(len(joined))]


def seeded_order(seed):
    loader = DataLoader(range(8), batch_size=4, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    return [b.tolist() for b in loader]


shuffled_a, shuffled_b = seeded_order(5), seeded_order(5)
print(weighted, subset_random, batch_sampler, joined_targets, shuffled_a)
