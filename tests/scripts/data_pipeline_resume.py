# ruff: noqa: N812 (the usual F alias)
"""A data pipeline and a resumable training loop, written for these tests the way training
scripts commonly write their ``torch.utils.data`` and checkpointing code (not a copy of any):

- a map-style ``Dataset`` of variable-length token sequences returning dicts (with a token
  dropout augmentation drawn from the global generator), a ``collate_fn`` padding them with
  ``pad_sequence`` and returning lengths and a mask, ``default_collate`` of dicts, tuples,
  namedtuples, NumPy arrays and scalars, an ``IterableDataset`` sharding itself with
  ``get_worker_info()`` and a ``ChainDataset`` of two;
- ``random_split`` by fractions and by counts with a seeded ``Generator``, ``Subset``,
  ``ConcatDataset``; the samplers ``RandomSampler`` (with replacement, ``num_samples``),
  ``SequentialSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``, ``BatchSampler``
  (``drop_last``), a length-bucketing batch sampler with ``set_epoch`` and a resumable state;
  ``DataLoader(shuffle=True, generator=g, drop_last=True)`` and ``batch_sampler=``;
- training with AdamW under ``OneCycleLR`` (stepped per batch), a checkpoint at an epoch
  boundary (model, optimizer, scheduler, epoch, ``get_rng_state()``, the loader generator's
  ``get_state()``) through ``io.BytesIO``, loaded into fresh objects with
  ``torch.load(weights_only=True)``: the resumed run equals the uninterrupted one bit for bit;
- SGD with Nesterov momentum under ``ReduceLROnPlateau`` over the bucketing sampler, a
  checkpoint in the middle of an epoch written to a temporary file, resumed the same way.

Sections marked "(recorded)" keep what the tests compare with the same script on torch.
"""
import collections
import io
import math
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pad_sequence
from jitgrad.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                IterableDataset, RandomSampler, Sampler, SequentialSampler,
                                Subset, SubsetRandomSampler, WeightedRandomSampler,
                                default_collate, get_worker_info, random_split)

torch.manual_seed(0)
fixed_results = {}
orders = {}  # sampler and loader orders (recorded: lists of ints)

PAD, UNK, VOCAB, N_CLASSES = 0, 1, 14, 3
COUNTED = (2, 3, 4)  # the label is the most frequent of these tokens


def dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


# ------------------------------------------------------------------------------- data sets


class TokenSequences(Dataset):
    """Sequences of 4 to 18 tokens; the label says which of tokens 2, 3, 4 occurs most often.

    With ``augment``, distractor tokens are replaced by UNK at random (``torch.rand``, so
    the global generator's state decides the batches' contents)."""

    def __init__(self, n, seed, augment=False, p_unk=0.15):
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(4, 19, (n,), generator=g)
        self.samples = [torch.randint(2, VOCAB, (int(length),), generator=g)
                        for length in lengths]
        counts = torch.stack([torch.stack([(s == k).sum() for k in COUNTED])
                              for s in self.samples])
        self.labels = counts.argmax(dim=1).tolist()
        self.augment, self.p_unk = augment, p_unk

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        tokens = self.samples[idx]
        if self.augment:
            drop = (torch.rand(tokens.shape) < self.p_unk) & (tokens > max(COUNTED))
            tokens = tokens.masked_fill(drop, UNK)
        return {"tokens": tokens, "label": self.labels[idx], "length": len(tokens),
                "index": idx}

    def lengths(self):
        return [len(s) for s in self.samples]


def pad_collate(batch):
    """Pads a list of samples to the batch's longest sequence."""
    tokens = [item["tokens"] for item in batch]
    lengths = torch.tensor([len(t) for t in tokens], dtype=torch.long)
    padded = pad_sequence(tokens, batch_first=True, padding_value=PAD)
    mask = torch.arange(padded.size(1))[None, :] < lengths[:, None]
    return {"tokens": padded, "lengths": lengths, "mask": mask,
            "labels": torch.tensor([item["label"] for item in batch]),
            "index": torch.as_tensor([item["index"] for item in batch])}


full_set = TokenSequences(480, seed=11)
augmented_set = TokenSequences(480, seed=11, augment=True)
split_gen = torch.Generator().manual_seed(0)
train_set, val_set, test_set = random_split(full_set, [0.75, 0.15, 0.10], generator=split_gen)
# the same permutation over the augmented copy (a Subset of it with the train indices)
train_augmented = Subset(augmented_set, train_set.indices)

# ------------------------------------------------------ collate, splits, samplers (recorded)

sample = full_set[5]
collated = pad_collate([full_set[i] for i in range(4)])
fixed_results["pad_collate"] = {k: v for k, v in collated.items()}
fixed_results["pad_left"] = pad_sequence([full_set[i]["tokens"] for i in range(3)],
                                         batch_first=True, padding_value=-1,
                                         padding_side="left")
fixed_results["pad_time_major"] = pad_sequence([full_set[i]["tokens"] for i in range(3)])
collate_max_length = int(collated["lengths"].max())
collate_mask_sums = collated["mask"].sum(dim=1)

Point = collections.namedtuple("Point", ["xy", "weight"])
raw_samples = [
    {"image": np.arange(6, dtype=np.float32).reshape(2, 3) * i, "label": i, "score": 0.5 * i,
     "name": f"sample{i}", "pair": (i, torch.full((2,), float(i))), "flag": i % 2 == 0,
     "point": Point(torch.tensor([i, -i]), np.float64(i) / 4), "count": np.int64(3 * i)}
    for i in range(3)]
batch = default_collate(raw_samples)
fixed_results["default_collate"] = {
    "image": batch["image"], "label": batch["label"], "score": batch["score"],
    "pair_0": batch["pair"][0], "pair_1": batch["pair"][1], "flag": batch["flag"],
    "point_xy": batch["point"].xy, "point_weight": batch["point"].weight,
    "count": batch["count"]}
collate_structure = {
    "names": batch["name"], "pair_type": type(batch["pair"]).__name__,
    "point_type": type(batch["point"]).__name__,
    "dtypes": {k: dtype_name(v) for k, v in fixed_results["default_collate"].items()},
    "tuple_batch": [type(b).__name__ for b in default_collate([(1, 2.0), (3, 4.0)])],
    "numpy_tuple": [dtype_name(b) for b in default_collate(
        [(np.ones(2), np.int32(1)), (np.zeros(2), np.int32(2))])],
}

# splits by fraction and by count, Subset and ConcatDataset
split_sizes = [len(s) for s in (train_set, val_set, test_set)]
orders["split_val"] = list(val_set.indices)
orders["split_test"] = list(test_set.indices)
count_splits = random_split(range(37), [20, 10, 7], generator=torch.Generator().manual_seed(3))
orders["count_splits"] = [list(s) for s in count_splits]
odd_fraction = random_split(range(10), [0.33, 0.33, 0.34],
                            generator=torch.Generator().manual_seed(4))
orders["odd_fraction"] = [list(s) for s in odd_fraction]
held_out = ConcatDataset([val_set, test_set])
concat_lookup = {"len": len(held_out), "cumulative": list(held_out.cumulative_sizes),
                 "first_of_second": held_out[len(val_set)]["index"],
                 "last": held_out[-1]["index"], "sum_of_two": len(val_set + test_set)}
assert concat_lookup["first_of_second"] == test_set.indices[0]


def seeded(seed):
    return torch.Generator().manual_seed(seed)


orders["random_replacement"] = list(RandomSampler(range(10), replacement=True, num_samples=40,
                                                  generator=seeded(1)))
orders["random_num_samples"] = list(RandomSampler(range(7), num_samples=17,
                                                  generator=seeded(2)))
torch.manual_seed(3)
orders["random_default_gen"] = [list(RandomSampler(range(6))) for _ in range(2)]
orders["sequential"] = list(SequentialSampler(range(5)))
subset_sampler = SubsetRandomSampler([3, 5, 7, 11, 13], generator=seeded(4))
orders["subset_random"] = [list(subset_sampler) for _ in range(2)]
orders["weighted"] = list(WeightedRandomSampler([0.1, 0.9, 0.4, 0.0, 2.0], 12,
                                                generator=seeded(5)))
orders["weighted_no_replacement"] = list(WeightedRandomSampler(
    torch.tensor([0.1, 0.9, 0.4, 0.0, 2.0, 1.0]), 4, replacement=False, generator=seeded(6)))
class_counts = torch.bincount(torch.tensor([full_set.labels[i] for i in train_set.indices]),
                              minlength=N_CLASSES)
class_weights = 1.0 / class_counts.double()
balanced = WeightedRandomSampler(class_weights[[full_set.labels[i] for i in train_set.indices]],
                                 num_samples=len(train_set), generator=seeded(7))
balanced_labels = torch.tensor([full_set.labels[train_set.indices[i]] for i in balanced])
fixed_results["class_counts"] = class_counts
fixed_results["balanced_counts"] = torch.bincount(balanced_labels, minlength=N_CLASSES)
orders["batch_keep"] = list(BatchSampler(SequentialSampler(range(10)), 4, drop_last=False))
orders["batch_drop"] = list(BatchSampler(SequentialSampler(range(10)), 4, drop_last=True))
orders["batch_random"] = list(BatchSampler(RandomSampler(range(9), generator=seeded(8)), 2,
                                           drop_last=False))
batch_sampler_lens = [len(BatchSampler(range(10), 4, drop_last=d)) for d in (False, True)]

# a shuffling loader with its own generator: two epochs, and the same orders again after
# restoring the generator's state
loader_gen = seeded(9)
toy_loader = DataLoader(range(10), batch_size=3, shuffle=True, generator=loader_gen,
                        drop_last=True)
toy_state = loader_gen.get_state()
orders["loader_epochs"] = [[b.tolist() for b in toy_loader] for _ in range(2)]
loader_gen.set_state(toy_state)
orders["loader_epochs_replayed"] = [[b.tolist() for b in toy_loader] for _ in range(2)]
toy_loader_len = len(toy_loader)
# without a generator the loader draws from the global one: manual_seed replays it
torch.manual_seed(10)
orders["loader_global"] = [b.tolist() for b in DataLoader(range(8), batch_size=4,
                                                           shuffle=True)]
fixed_results["global_after_loader"] = torch.rand(2)
# even an unshuffled loader's iter() draws from the global generator (its workers' base seed)
before_iter = torch.get_rng_state()
_ = iter(DataLoader(range(4), batch_size=2))
iter_draws_global = not torch.equal(torch.get_rng_state(), before_iter)
before_iter = torch.get_rng_state()
_ = iter(DataLoader(range(4), batch_size=2, generator=seeded(0)))
iter_with_generator_keeps_global = torch.equal(torch.get_rng_state(), before_iter)


# ------------------------------------------------------------- an IterableDataset (recorded)


class SquaresStream(IterableDataset):
    """Dicts {"x": [i, i * i], "i": i} for i in [start, end), split among loader workers."""

    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        worker = get_worker_info()
        if worker is None:  # loading in the main process: the whole range
            lo, hi = self.start, self.end
        else:
            per_worker = int(math.ceil((self.end - self.start) / worker.num_workers))
            lo = self.start + worker.id * per_worker
            hi = min(lo + per_worker, self.end)
        for i in range(lo, hi):
            yield {"x": torch.tensor([i, i * i], dtype=torch.float32), "i": i}

    def __len__(self):
        return self.end - self.start


stream = ChainDataset([SquaresStream(0, 5), SquaresStream(10, 13)])
stream_loader = DataLoader(stream, batch_size=3)
stream_batches = list(stream_loader)
fixed_results["stream_x"] = torch.cat([b["x"] for b in stream_batches])
orders["stream_i"] = [b["i"].tolist() for b in stream_batches]
orders["stream_drop_last"] = [b["i"].tolist() for b in DataLoader(
    SquaresStream(0, 5) + SquaresStream(10, 13), batch_size=3, drop_last=True)]
stream_lens = [len(stream_loader), len(DataLoader(stream, batch_size=3, drop_last=True))]
worker_info_main = get_worker_info()


# ------------------------------------------------------------------- the bucketing sampler


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar length: a seeded permutation per epoch cut into buckets of
    ``bucket_size``, each sorted by length (longest first) and cut into batches, then the
    batches shuffled. ``set_epoch`` picks the epoch's permutation; ``state_dict`` records how
    many batches of the epoch were consumed, so that a resumed run skips them."""

    def __init__(self, lengths, batch_size, bucket_size, seed=0, drop_last=False):
        self.lengths = list(lengths)
        self.batch_size, self.bucket_size = batch_size, bucket_size
        self.seed, self.drop_last = seed, drop_last
        self.epoch, self.start_batch = 0, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def _epoch_batches(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=g)
        batches = []
        for bucket in order.split(self.bucket_size):
            lengths = torch.tensor([self.lengths[i] for i in bucket.tolist()])
            by_length = bucket[torch.argsort(lengths, descending=True, stable=True)]
            batches.extend(b.tolist() for b in by_length.split(self.batch_size))
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        return [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]

    def __iter__(self):
        batches = self._epoch_batches()
        start, self.start_batch = self.start_batch, 0
        yield from batches[start:]

    def __len__(self):
        return len(self._epoch_batches())

    def state_dict(self):
        return {"epoch": self.epoch, "start_batch": self.start_batch}

    def load_state_dict(self, state):
        self.epoch, self.start_batch = state["epoch"], state["start_batch"]


bucket_probe = BucketBatchSampler([len(s) for s in full_set.samples[:40]], 4, 12, seed=5)
orders["bucket_epoch0"] = list(bucket_probe)
bucket_probe.set_epoch(1)
orders["bucket_epoch1"] = list(bucket_probe)
bucket_spread = max(max(bucket_probe.lengths[i] for i in b) - min(bucket_probe.lengths[i]
                                                                  for i in b)
                    for b in orders["bucket_epoch1"])

# ------------------------------------------------------------------------------- the model


class BagOfTokens(nn.Module):
    """Embeddings (dropout), masked mean and max pooling over time, a two-layer head."""

    def __init__(self, vocab=VOCAB, dim=24, hidden=48, n_classes=N_CLASSES, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Sequential(nn.Linear(2 * dim, hidden), nn.GELU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, n_classes))

    def forward(self, tokens, mask):
        x = self.dropout(self.embed(tokens))
        m = mask.unsqueeze(-1)
        mean = (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
        peak = x.masked_fill(~m, float("-inf")).amax(dim=1)
        return self.head(torch.cat([mean, peak], dim=-1))


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total, correct, count = 0.0, 0, 0
    for batch in loader:
        logits = model(batch["tokens"], batch["mask"])
        total += F.cross_entropy(logits, batch["labels"], reduction="sum").item()
        correct += (logits.argmax(dim=-1) == batch["labels"]).sum().item()
        count += len(batch["labels"])
    model.train()
    return total / count, correct / count


val_loader = DataLoader(val_set, batch_size=64, collate_fn=pad_collate)
torch.manual_seed(1)
probe_model = BagOfTokens()
probe_model.eval()
with torch.no_grad():
    fixed_results["probe_logits"] = probe_model(collated["tokens"], collated["mask"])
fixed_results["probe_val"] = torch.tensor(evaluate(probe_model, val_loader))

# ----------------------------------------------- run 1: AdamW + OneCycleLR, epoch checkpoint

EPOCHS, RESUME_AFTER, BATCH = 4, 2, 16


def build_run(init_seed):
    """A fresh model, optimizer, scheduler and shuffling loader (with its own generator)."""
    torch.manual_seed(init_seed)
    model = BagOfTokens()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(1234)
    loader = DataLoader(train_augmented, batch_size=BATCH, shuffle=True, generator=generator,
                        drop_last=True, collate_fn=pad_collate)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=EPOCHS,
                                                    steps_per_epoch=len(loader),
                                                    pct_start=0.25)
    return model, optimizer, scheduler, loader, generator


def train_one_epoch(model, optimizer, scheduler, loader, log):
    model.train()
    for batch in loader:
        logits = model(batch["tokens"], batch["mask"])
        loss = F.cross_entropy(logits, batch["labels"], label_smoothing=0.05)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        log["losses"].append(loss.item())
        log["batches"].append(batch["index"].tolist())
        log["lrs"].append(scheduler.get_last_lr()[0])


def new_log():
    return {"losses": [], "batches": [], "lrs": [], "val": []}


# uninterrupted
model, optimizer, scheduler, loader, generator = build_run(42)
torch.manual_seed(7)
straight = new_log()
for epoch in range(EPOCHS):
    train_one_epoch(model, optimizer, scheduler, loader, straight)
    straight["val"].append(evaluate(model, val_loader))
    print(f"epoch {epoch}: train loss {straight['losses'][-1]:.4f}, "
          f"val loss {straight['val'][-1][0]:.4f}, accuracy {straight['val'][-1][1]:.3f}")
straight_state = {k: v.clone() for k, v in model.state_dict().items()}
straight_rng = torch.get_rng_state()
steps_per_epoch = len(loader)

# interrupted after RESUME_AFTER epochs
model, optimizer, scheduler, loader, generator = build_run(42)
torch.manual_seed(7)
resumed = new_log()
for epoch in range(RESUME_AFTER):
    train_one_epoch(model, optimizer, scheduler, loader, resumed)
    resumed["val"].append(evaluate(model, val_loader))
    print(f"epoch {epoch}: train loss {resumed['losses'][-1]:.4f}, "
          f"val loss {resumed['val'][-1][0]:.4f}, accuracy {resumed['val'][-1][1]:.3f}")
buffer = io.BytesIO()
torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "rng_state": torch.get_rng_state(),
            "loader_generator": generator.get_state(), "log": resumed}, buffer)
del model, optimizer, scheduler, loader, generator

# a new process would start here: fresh objects (another init), then the checkpoint
model, optimizer, scheduler, loader, generator = build_run(999)
buffer.seek(0)
checkpoint = torch.load(buffer, weights_only=True)
model.load_state_dict(checkpoint["model"])
optimizer.load_state_dict(checkpoint["optimizer"])
scheduler.load_state_dict(checkpoint["scheduler"])
torch.set_rng_state(checkpoint["rng_state"])
generator.set_state(checkpoint["loader_generator"])
resumed = checkpoint["log"]
for epoch in range(checkpoint["epoch"] + 1, EPOCHS):
    train_one_epoch(model, optimizer, scheduler, loader, resumed)
    resumed["val"].append(evaluate(model, val_loader))
    print(f"epoch {epoch}: train loss {resumed['losses'][-1]:.4f}, "
          f"val loss {resumed['val'][-1][0]:.4f}, accuracy {resumed['val'][-1][1]:.3f}")
resumed_state = model.state_dict()
run1_identical = {
    "losses": resumed["losses"] == straight["losses"],
    "batches": resumed["batches"] == straight["batches"],
    "lrs": resumed["lrs"] == straight["lrs"],
    "val": resumed["val"] == straight["val"],
    "weights": all(torch.equal(resumed_state[k], straight_state[k]) for k in straight_state),
    "rng": torch.equal(torch.get_rng_state(), straight_rng),
}
checkpoint_structure = {
    "top": sorted(checkpoint),
    "optimizer": sorted(checkpoint["optimizer"]),
    "optimizer_state_keys": sorted(checkpoint["optimizer"]["state"]),
    "optimizer_group": sorted(checkpoint["optimizer"]["param_groups"][0]),
    "adam_state": sorted(checkpoint["optimizer"]["state"][0]),
    "onecycle": sorted(checkpoint["scheduler"]),
    "onecycle_step": checkpoint["scheduler"]["last_epoch"],
    "model": list(checkpoint["model"]),
    "rng_dtype": dtype_name(checkpoint["rng_state"]),
    "loader_generator_dtype": dtype_name(checkpoint["loader_generator"]),
}

# ------------------------------------- run 2: SGD + ReduceLROnPlateau, a mid-epoch checkpoint

EPOCHS2, STOP_EPOCH, STOP_STEP = 4, 1, 7
bucket_lengths = [len(full_set.samples[i]) for i in train_set.indices]


def build_run2(init_seed):
    torch.manual_seed(init_seed)
    model = BagOfTokens(dropout=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                           patience=0, threshold=1e-3)
    sampler = BucketBatchSampler(bucket_lengths, batch_size=12, bucket_size=60, seed=100,
                                 drop_last=True)
    # (a loader draws a seed for its workers at each iter(), from its generator or else from
    # the global one: its own generator keeps the global state of a mid-epoch checkpoint)
    loader = DataLoader(train_augmented, batch_sampler=sampler, collate_fn=pad_collate,
                        generator=torch.Generator().manual_seed(77))
    return model, optimizer, scheduler, sampler, loader


def run2(stop_at=None, resume_from=None):
    """Trains EPOCHS2 epochs; returns early with a checkpoint path at ``stop_at`` (epoch,
    step), or starts from the checkpoint at ``resume_from``."""
    model, optimizer, scheduler, sampler, loader = build_run2(555 if resume_from else 21)
    log, first_epoch = new_log(), 0
    log["pad_widths"], log["lr_per_epoch"] = [], []
    if resume_from is None:
        torch.manual_seed(8)
    else:
        state = torch.load(resume_from, weights_only=True, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        sampler.load_state_dict(state["sampler"])
        torch.set_rng_state(state["rng_state"])
        log, first_epoch = state["log"], state["epoch"]
    for epoch in range(first_epoch, EPOCHS2):
        sampler.set_epoch(epoch)
        model.train()
        step = sampler.start_batch
        for batch in loader:
            logits = model(batch["tokens"], batch["mask"])
            loss = F.cross_entropy(logits, batch["labels"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            log["losses"].append(loss.item())
            log["batches"].append(batch["index"].tolist())
            log["pad_widths"].append(batch["tokens"].shape[1])
            if stop_at == (epoch, step):
                path = os.path.join(workdir, "mid_epoch.pt")
                sampler.start_batch = step
                torch.save({"epoch": epoch, "model": model.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(),
                            "sampler": sampler.state_dict(),
                            "rng_state": torch.get_rng_state(), "log": log}, path)
                return path, None
        val_loss, val_acc = evaluate(model, val_loader)
        scheduler.step(val_loss)
        log["val"].append((val_loss, val_acc))
        log["lr_per_epoch"].append(optimizer.param_groups[0]["lr"])
    return log, model


with tempfile.TemporaryDirectory() as workdir:
    straight2, straight2_model = run2()
    path, _ = run2(stop_at=(STOP_EPOCH, STOP_STEP))
    mid_epoch = torch.load(path, weights_only=True)
    resumed2, resumed2_model = run2(resume_from=path)
run2_identical = {
    key: resumed2[key] == straight2[key]
    for key in ("losses", "batches", "pad_widths", "val", "lr_per_epoch")}
run2_identical["weights"] = all(
    torch.equal(a, b) for a, b in zip(resumed2_model.parameters(),
                                      straight2_model.parameters()))
checkpoint_structure["mid_epoch"] = sorted(mid_epoch)
checkpoint_structure["plateau"] = sorted(mid_epoch["scheduler"])
# the schedulers' and optimizers' states as saved (recorded: plain Python values)
scheduler_states = {"onecycle": checkpoint["scheduler"], "plateau": mid_epoch["scheduler"],
                    "sampler": mid_epoch["sampler"],
                    "adamw_groups": [{k: v for k, v in group.items()}
                                     for group in checkpoint["optimizer"]["param_groups"]],
                    "sgd_groups": mid_epoch["optimizer"]["param_groups"]}

# the gradients and weights after one step, on fixed seeds (recorded)
model, optimizer, scheduler, loader, generator = build_run(42)
torch.manual_seed(7)
one_step = next(iter(loader))
loss = F.cross_entropy(model(one_step["tokens"], one_step["mask"]), one_step["labels"],
                       label_smoothing=0.05)
loss.backward()
fixed_results["first_step_grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
optimizer.step()
fixed_results["first_step_weights"] = {n: p.detach().clone()
                                       for n, p in model.named_parameters()}

final_val_loss, final_val_acc = straight["val"][-1]
print(f"run 1: loss {np.mean(straight['losses'][:steps_per_epoch]):.3f} -> "
      f"{np.mean(straight['losses'][-steps_per_epoch:]):.3f}, val acc {final_val_acc:.3f}, "
      f"identical after resume: {run1_identical}")
print(f"run 2: val {straight2['val'][0][0]:.3f} -> {straight2['val'][-1][0]:.3f}, lrs "
      f"{straight2['lr_per_epoch']}, identical after resume: {run2_identical}")
