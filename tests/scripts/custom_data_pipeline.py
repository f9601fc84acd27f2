# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Datasets & DataLoaders: a custom Dataset, collate_fn with padding, a bucketing Sampler,
BatchSampler, IterableDataset, default_collate of dicts, and a packed LSTM over the batches."""
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


class SequenceDataset(Dataset):
    """Variable-length sequences; the label: is the sum of the sequence positive?"""

    def __init__(self, n, transform=None, target_transform=None):
        g = torch.Generator().manual_seed(7)
        self.lengths = torch.randint(2, 9, (n,), generator=g).tolist()
        self.seqs = [torch.randn(length, 3, generator=g) for length in self.lengths]
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, idx):
        seq = self.seqs[idx]
        label = int(seq[:, 0].sum() > 0)
        if self.transform:
            seq = self.transform(seq)
        if self.target_transform:
            label = self.target_transform(label)
        return {"seq": seq, "label": label, "length": len(seq)}


def collate_fn(batch):
    seqs = [item["seq"] for item in batch]
    lengths = torch.tensor([item["length"] for item in batch])
    labels = torch.tensor([item["label"] for item in batch], dtype=torch.float32)
    padded = pad_sequence(seqs, batch_first=True, padding_value=0.0)
    return padded, lengths, labels


class BucketSampler(Sampler):
    """Yields indices so that each batch holds sequences of similar length."""

    def __init__(self, lengths, batch_size, generator=None):
        self.lengths = lengths
        self.batch_size = batch_size
        self.generator = generator

    def __iter__(self):
        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()
        order.sort(key=lambda i: self.lengths[i])
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for j in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[j]

    def __len__(self):
        return math.ceil(len(self.lengths) / self.batch_size)


dataset = SequenceDataset(120, transform=lambda s: s * 1.0)
train_set, val_set = random_split(dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(1))
print(len(train_set), len(val_set))
train_lengths = [dataset.lengths[i] for i in train_set.indices]
train_loader = DataLoader(train_set, batch_sampler=BucketSampler(train_lengths, 8,
                                                                 torch.Generator().manual_seed(2)),
                          collate_fn=collate_fn)
val_loader = DataLoader(val_set, batch_size=10, shuffle=False, collate_fn=collate_fn)
bucket_spreads = [int(lengths.max() - lengths.min()) for _, lengths, _ in train_loader]


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 16, batch_first=True, bidirectional=True)
        self.head = nn.Linear(32, 1)

    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        packed_out, (h, c) = self.lstm(packed)
        out, out_lengths = pad_packed_sequence(packed_out, batch_first=True)
        assert torch.equal(out_lengths, lengths)
        return self.head(torch.cat([h[0], h[1]], dim=1)).squeeze(1)


model = LSTMClassifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.01)
loss_fn = nn.BCEWithLogitsLoss()


def val_loss():
    model.eval()
    with torch.no_grad():
        total, n = 0.0, 0
        for padded, lengths, labels in val_loader:
            total += loss_fn(model(padded, lengths), labels).item() * len(labels)
            n += len(labels)
    return total / n


val_losses = [val_loss()]
for epoch in range(6):
    model.train()
    for padded, lengths, labels in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(padded, lengths), labels)
        loss.backward()
        optimizer.step()
    val_losses.append(val_loss())
print("val losses", [round(v, 4) for v in val_losses])

# default_collate of dicts of tensors and numbers
item_batch = default_collate([{"a": torch.ones(2), "b": 1, "c": (1.5, "x")},
                              {"a": torch.zeros(2), "b": 2, "c": (2.5, "y")}])
collated = (item_batch["a"].tolist(), item_batch["b"].tolist(), item_batch["c"][0].tolist(),
            item_batch["c"][1])
np_batch = default_collate([np.arange(3), np.arange(3) * 2])
print(collated, type(np_batch).__name__, np_batch.dtype)


# an IterableDataset; get_worker_info() is None in the main process
class Countdown(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        assert worker_info is None
        return iter(range(self.start, self.end))


iterable_batches = [b.tolist() for b in DataLoader(Countdown(3, 10), batch_size=3)]
iterable_drop_last = [b.tolist() for b in DataLoader(Countdown(3, 10), batch_size=3,
                                                     drop_last=True)]

# samplers
weighted = list(WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], num_samples=5, replacement=True))
subset_random = sorted(SubsetRandomSampler([1, 4, 6]))
batch_sampler = list(BatchSampler(SequentialSampler(range(10)), batch_size=4, drop_last=False))
concat = ConcatDataset([Subset(dataset, [0, 1]), Subset(dataset, [5])])
concat_labels = [concat[i]["label"] for i in range(len(concat))]
shuffled_a = [b.tolist() for b in DataLoader(range(8), batch_size=4, shuffle=True,
                                             generator=torch.Generator().manual_seed(5))]
shuffled_b = [b.tolist() for b in DataLoader(range(8), batch_size=4, shuffle=True,
                                             generator=torch.Generator().manual_seed(5))]
print(weighted, subset_random, batch_sampler, shuffled_a)
