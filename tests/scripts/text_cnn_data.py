# ruff: noqa: N812 (the usual F alias)
"""Sentence classification with convolutional networks and a bag of embeddings, written for
these tests the way public PyTorch text-classification code writes it (Kim-2014 CNN sentence
classifiers, character-aware CNNs with highway layers, fastText-style bag models and their
``torch.utils.data`` plumbing; not a copy of any of them):

- a vocabulary built by hand: ``collections.Counter`` over a tokenised training split,
  ``<pad>``/``<unk>`` specials, ``min_freq``, unknown words mapped to ``<unk>``; a character
  vocabulary the same way;
- a map-style ``Dataset`` of id tensors, an ``IterableDataset`` that shards itself with
  ``get_worker_info()`` (``None`` in the main process; the shards of a made-up worker set
  cover the stream; two real worker processes each collate their half), ``random_split`` by
  fractions with a seeded ``Generator``, ``ConcatDataset`` of two corpora
  (``cumulative_sizes``, negative indices, ``Dataset.__add__``), ``Subset``;
- samplers: a length-bucketing batch sampler (``Sampler[list[int]]`` subclass, ``randperm``
  with a ``Generator``, ``set_epoch``), a sorting ``Sampler[int]`` under
  ``BatchSampler(drop_last)``, ``SubsetRandomSampler`` and ``WeightedRandomSampler``
  (class-balancing weights, with and without replacement) with a ``Generator``,
  ``RandomSampler`` through ``DataLoader(shuffle=True, generator=...)``, a generator shared
  between passes;
- a ``collate_fn`` that pads with ``nn.utils.rnn.pad_sequence(batch_first=True,
  padding_value=PAD)`` up to the widest filter (``padding_side="left"`` too), one that pads
  words and then reviews for the character model, one building ``EmbeddingBag`` offsets with
  ``cumsum``; ``default_collate`` on dicts, tuples, NumPy arrays and scalars and strings;
  ``DataLoader(drop_last=True, generator=g, shuffle=True)`` reproducibility;
- Kim's CNN in both of its usual forms: ``nn.Conv2d(1, C, (k, D))`` + ``F.max_pool1d`` over
  the whole length, and ``nn.ModuleList`` of ``nn.Conv1d`` + ``max(dim=2)``; the
  multichannel variant (vectors read from a word2vec-format text file with NumPy, a static
  ``nn.Embedding.from_pretrained(freeze=True)`` channel and a fine-tuned one sharing the
  loaded tensor), ``padding_idx``, dropout, the max-norm constraint with ``renorm_``, a few
  ``Adadelta`` steps, ``Adam``; the error a review shorter than a filter raises;
- a character-aware CNN (Kim et al. 2016: ``Conv1d`` widths over each word's characters,
  ``AdaptiveMaxPool1d``, highway layers with a sigmoid gate biased to -2, max over the words
  with ``masked_fill(-inf)``), ``Adam``, ``clip_grad_norm_``;
- ``nn.EmbeddingBag`` with ``offsets``, ``per_sample_weights`` (``mode="sum"``, idf
  weights), ``"mean"`` and ``"max"``, ``padding_idx``, ``include_last_offset``, empty bags,
  2-D input, ``EmbeddingBag.from_pretrained(freeze=False)``, the error for per-sample weights
  with ``"mean"``; ``SGD`` with ``StepLR`` over the weighted sampler; ``sparse=True`` with
  ``SparseAdam`` for the table and ``Adam`` for the classifier.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import collections
import io
import math
import random

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pad_sequence
from jitgrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                                Sampler, Subset, SubsetRandomSampler, WeightedRandomSampler,
                                default_collate, get_worker_info, random_split)

torch.manual_seed(0)
fixed_results = {}
recorded_orders = {}

# ---------------------------------------------------------------------------- corpus

POSITIVE = ["good", "great", "love", "excellent", "fun", "wonderful", "best", "enjoyed"]
NEGATIVE = ["bad", "awful", "hate", "boring", "worst", "terrible", "dull", "waste"]
NEUTRAL = ["the", "movie", "film", "plot", "actors", "was", "a", "it", "and", "story", "this",
           "really", "very", "of", "is", "ending", "cast", "scenes"]


def make_review(rng, label):
    """A review of 4 to 14 tokens whose sentiment words mostly agree with ``label``."""
    length = rng.randint(4, 14)
    words = [rng.choice(NEUTRAL) for _ in range(length)]
    major, minor = (POSITIVE, NEGATIVE) if label == 1 else (NEGATIVE, POSITIVE)
    n_major = rng.randint(1, 3)
    slots = rng.sample(range(length), k=min(length, n_major + 1))
    for s in slots[:n_major]:
        words[s] = rng.choice(major)
    if rng.random() < 0.3 and len(slots) > n_major:
        words[slots[n_major]] = rng.choice(minor)
    if rng.random() < 0.15:  # a typo: a word the vocabulary will not keep
        words[rng.randrange(length)] = "zz" + "".join(rng.choice("qxjv") for _ in range(3))
    return " ".join(words)


py_rng = random.Random(1234)
# an imbalanced corpus: about two positive reviews for one negative
corpus = []
for _ in range(160):
    label = 1 if py_rng.random() < 0.68 else 0
    corpus.append((make_review(py_rng, label), label))


def tokenize(text):
    return text.lower().split()


# ----------------------------------------------------------------- split and vocabulary

split_gen = torch.Generator().manual_seed(42)
train_part, valid_part = random_split(corpus, [0.8, 0.2], generator=split_gen)
recorded_orders["split_train"] = list(train_part.indices)
recorded_orders["split_valid"] = list(valid_part.indices)

PAD, UNK = "<pad>", "<unk>"


class Vocab:
    """Token <-> id, most frequent first (ties alphabetically), specials at the front."""

    def __init__(self, counter, min_freq=1, specials=(PAD, UNK)):
        self.itos = list(specials)
        kept = [(w, c) for w, c in counter.items() if c >= min_freq and w not in specials]
        kept.sort(key=lambda wc: (-wc[1], wc[0]))
        self.itos += [w for w, _ in kept]
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.unk_index = self.stoi[UNK]

    def __len__(self):
        return len(self.itos)

    def __getitem__(self, token):
        return self.stoi.get(token, self.unk_index)

    def lookup_indices(self, tokens):
        return [self[t] for t in tokens]


word_counts = collections.Counter()
for text, _ in train_part:
    word_counts.update(tokenize(text))
vocab = Vocab(word_counts, min_freq=2)
PAD_IDX = vocab[PAD]
vocab_all = Vocab(word_counts, min_freq=1)  # (the typos kept: for the min_freq test)

char_counts = collections.Counter()
for text, _ in train_part:
    char_counts.update(text)
char_vocab = Vocab(char_counts, min_freq=1)

# ---------------------------------------------------------------------- data sets


class ReviewDataset(Dataset):
    """(token ids, label) pairs: the ids as a LongTensor, the label as an int."""

    def __init__(self, pairs, vocab):
        self.pairs = list(pairs)
        self.vocab = vocab
        self.lengths = [len(tokenize(t)) for t, _ in self.pairs]

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, idx):
        text, label = self.pairs[idx]
        ids = torch.tensor(self.vocab.lookup_indices(tokenize(text)), dtype=torch.long)
        return ids, label


class CharReviewDataset(ReviewDataset):
    """(a list of character-id tensors, one per word; label)."""

    def __getitem__(self, idx):
        text, label = self.pairs[idx]
        words = [torch.tensor([char_vocab[c] for c in w], dtype=torch.long)
                 for w in tokenize(text)]
        return words, label


class ReviewStream(IterableDataset):
    """The reviews as a stream; each worker reads its own contiguous shard."""

    def __init__(self, pairs, vocab, worker=None):
        self.pairs = list(pairs)
        self.vocab = vocab
        self.worker = worker  # (id, count): stands in for get_worker_info() in tests

    def shard_bounds(self):
        info = get_worker_info()
        if info is None and self.worker is None:
            return 0, len(self.pairs)
        worker_id, num_workers = (info.id, info.num_workers) if info is not None \
            else self.worker
        per_worker = int(math.ceil(len(self.pairs) / float(num_workers)))
        start = worker_id * per_worker
        return start, min(start + per_worker, len(self.pairs))

    def __iter__(self):
        start, end = self.shard_bounds()
        for text, label in self.pairs[start:end]:
            yield torch.tensor(self.vocab.lookup_indices(tokenize(text))), label


train_set = ReviewDataset(train_part, vocab)
valid_set = ReviewDataset(valid_part, vocab)
train_labels = [label for _, label in train_set.pairs]

MAX_WIDTH = 4  # the widest convolution


def pad_collate(batch):
    """Pads a list of (ids, label) to the batch's longest review (at least MAX_WIDTH)."""
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(list(seqs), batch_first=True, padding_value=PAD_IDX)
    if padded.size(1) < MAX_WIDTH:
        padded = F.pad(padded, (0, MAX_WIDTH - padded.size(1)), value=PAD_IDX)
    return padded, lengths, torch.tensor(labels, dtype=torch.long)


def bag_collate(batch):
    """Concatenates the reviews into one 1-D tensor with the offsets of each bag."""
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths[:-1]]).cumsum(dim=0)
    return torch.cat(seqs), offsets, torch.tensor(labels)


def char_collate(batch):
    """(B, words, chars): every word padded to the batch's longest word, every review to its
    longest review (whole words of padding)."""
    reviews, labels = zip(*batch)
    words = pad_sequence([w for review in reviews for w in review], batch_first=True,
                         padding_value=PAD_IDX)
    per_review = torch.split(words, [len(r) for r in reviews])
    chars = pad_sequence(list(per_review), batch_first=True, padding_value=PAD_IDX)
    return chars, torch.tensor([len(r) for r in reviews]), torch.tensor(labels)


# ------------------------------------------------------------------------- samplers


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of reviews of similar length: shuffle, cut into pools of ``pool`` batches, sort
    each pool by length, batch it, shuffle the batches."""

    def __init__(self, lengths, batch_size, pool=4, drop_last=False, seed=0):
        self.lengths = lengths
        self.batch_size = batch_size
        self.pool = pool
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=g).tolist()
        size = self.batch_size * self.pool
        batches = []
        for start in range(0, len(order), size):
            chunk = sorted(order[start:start + size], key=lambda i: self.lengths[i])
            for b in range(0, len(chunk), self.batch_size):
                batch = chunk[b:b + self.batch_size]
                if len(batch) == self.batch_size or not self.drop_last:
                    batches.append(batch)
        for j in torch.randperm(len(batches), generator=g).tolist():
            yield batches[j]

    def __len__(self):
        if self.drop_last:
            return sum((min(self.batch_size * self.pool, len(self.lengths) - s))
                       // self.batch_size
                       for s in range(0, len(self.lengths), self.batch_size * self.pool))
        return sum(math.ceil(min(self.batch_size * self.pool, len(self.lengths) - s)
                             / self.batch_size)
                   for s in range(0, len(self.lengths), self.batch_size * self.pool))


class SortedSampler(Sampler[int]):
    """Indices from the shortest review to the longest (stable)."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __iter__(self):
        return iter(sorted(range(len(self.lengths)), key=lambda i: self.lengths[i]))

    def __len__(self):
        return len(self.lengths)


bucket_sampler = BucketBatchSampler(train_set.lengths, batch_size=16, pool=3, seed=5)
bucket_batches = list(bucket_sampler)
recorded_orders["bucket_epoch0"] = bucket_batches
bucket_sampler.set_epoch(1)
recorded_orders["bucket_epoch1"] = list(bucket_sampler)
bucket_sampler.set_epoch(0)
bucket_spread = max(max(train_set.lengths[i] for i in b) - min(train_set.lengths[i] for i in b)
                    for b in bucket_batches)
bucket_len = len(bucket_sampler)
bucket_drop_len = len(BucketBatchSampler(train_set.lengths, 20, pool=3, drop_last=True))
bucket_drop_count = len(list(BucketBatchSampler(train_set.lengths, 20, pool=3,
                                                drop_last=True)))
bucket_keep_len = len(BucketBatchSampler(train_set.lengths, 20, pool=3))
bucket_keep_count = len(list(BucketBatchSampler(train_set.lengths, 20, pool=3)))

sorted_batches = list(BatchSampler(SortedSampler(valid_set.lengths), batch_size=5,
                                   drop_last=True))
sorted_batches_keep = list(BatchSampler(SortedSampler(valid_set.lengths), batch_size=5,
                                        drop_last=False))
recorded_orders["sorted_batches"] = sorted_batches

# the validation reviews in a random order, then only the first half of them
subset_gen = torch.Generator().manual_seed(11)
half = list(range(0, len(valid_set), 2))
subset_sampler = SubsetRandomSampler(half, generator=subset_gen)
recorded_orders["subset_epoch0"] = list(subset_sampler)
recorded_orders["subset_epoch1"] = list(subset_sampler)

# class balancing: each label drawn as often as the other
class_count = collections.Counter(train_labels)
sample_weights = [1.0 / class_count[label] for label in train_labels]
weighted_gen = torch.Generator().manual_seed(3)
weighted_sampler = WeightedRandomSampler(sample_weights, num_samples=len(train_labels),
                                         replacement=True, generator=weighted_gen)
weighted_draws = list(weighted_sampler)
recorded_orders["weighted"] = weighted_draws
balanced_fraction = sum(train_labels[i] for i in weighted_draws) / len(weighted_draws)
natural_fraction = sum(train_labels) / len(train_labels)
no_replacement = list(WeightedRandomSampler(sample_weights, num_samples=20, replacement=False,
                                            generator=torch.Generator().manual_seed(3)))
recorded_orders["weighted_no_replacement"] = no_replacement

# ------------------------------------------------------------- loaders, reproducibility


def loader_order(seed, epochs=2, drop_last=True):
    g = torch.Generator()
    g.manual_seed(seed)
    loader = DataLoader(train_set, batch_size=24, shuffle=True, drop_last=drop_last,
                        generator=g, collate_fn=pad_collate)
    out = []
    for _ in range(epochs):
        out.append([batch[2].tolist() + [tuple(batch[0].shape)] for batch in loader])
    return out, len(loader)


order_a, loader_len = loader_order(7)
order_b, _ = loader_order(7)
order_c, _ = loader_order(8)
same_seed_same_order = order_a == order_b
other_seed_other_order = order_a != order_c
epochs_differ = order_a[0] != order_a[1]
_, loader_len_keep = loader_order(7, epochs=1, drop_last=False)
recorded_orders["loader_seed7"] = order_a


def padding_fraction(loader):
    """The share of padding tokens in the loader's batches."""
    pads = total = 0
    for x, lengths, _ in loader:
        pads += x.numel() - lengths.sum().item()
        total += x.numel()
    return pads / total


bucket_padding = padding_fraction(DataLoader(train_set, batch_sampler=bucket_sampler,
                                             collate_fn=pad_collate))
random_padding = padding_fraction(DataLoader(train_set, batch_size=16, shuffle=True,
                                             collate_fn=pad_collate))

# a generator shared with the loader: each pass draws the workers' base seed from it first
shared = torch.Generator().manual_seed(21)
shared_loader = DataLoader(list(range(10)), batch_size=4, shuffle=True, generator=shared)
recorded_orders["shared_pass0"] = [b.tolist() for b in shared_loader]
recorded_orders["shared_pass1"] = [b.tolist() for b in shared_loader]
recorded_orders["shared_state_after"] = int(torch.randint(0, 10**6, (1,), generator=shared))

# ConcatDataset: the training reviews and a few hand-written ones
extra_reviews = [("a great great film", 1), ("boring and dull", 0), ("the worst plot", 0),
                 ("love love love it", 1)]
extra_set = ReviewDataset(extra_reviews, vocab)
combined = ConcatDataset([train_set, extra_set])
combined_sizes = list(combined.cumulative_sizes)
combined_last = combined[-1]
combined_boundary = (combined[len(train_set) - 1][1], combined[len(train_set)][1])
added = train_set + extra_set  # (Dataset.__add__)
combined_len_add = len(added)
subset_of_combined = Subset(combined, [0, len(train_set) + 1])
subset_items = [subset_of_combined[i][1] for i in range(len(subset_of_combined))]

# the stream: one main-process pass, and the shards four workers would read
stream = ReviewStream(valid_part, vocab)
worker_info_main = get_worker_info()
stream_batches = [labels.tolist() for _, _, labels in
                  DataLoader(stream, batch_size=8, collate_fn=pad_collate)]
shard_lengths = [len(list(ReviewStream(valid_part, vocab, worker=(w, 4)))) for w in range(4)]
stream_labels = [label for _, label in stream]
sharded_labels = [label for w in range(4) for _, label in ReviewStream(valid_part, vocab,
                                                                       worker=(w, 4))]
# two worker processes: each reads its half of the stream and collates it, the batches
# alternate between them
worker_batches = [(tuple(x.shape), labels.tolist()) for x, _, labels in
                  DataLoader(stream, batch_size=4, num_workers=2, collate_fn=pad_collate)]


class FeatureDataset(Dataset):
    """NumPy features in a dict, as a preprocessing script hands them over."""

    def __init__(self, pairs):
        self.pairs = pairs

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, idx):
        text, label = self.pairs[idx]
        tokens = tokenize(text)
        counts = np.zeros(4, dtype=np.float32)
        counts[0] = sum(t in POSITIVE for t in tokens)
        counts[1] = sum(t in NEGATIVE for t in tokens)
        counts[2] = len(tokens)
        counts[3] = sum(t not in vocab.stoi for t in tokens)
        return {"features": counts, "label": label, "meta": (idx, np.float64(len(text))),
                "text": text}


features_batch = next(iter(DataLoader(FeatureDataset(train_set.pairs), batch_size=6)))
collated_by_hand = default_collate([FeatureDataset(train_set.pairs)[i] for i in range(6)])
feature_types = {k: type(v).__name__ for k, v in features_batch.items()}
fixed_results["collated_features"] = features_batch["features"]
fixed_results["collated_meta_idx"] = features_batch["meta"][0]
fixed_results["collated_meta_len"] = features_batch["meta"][1]
collated_dtypes = (features_batch["features"].dtype, features_batch["label"].dtype,
                   features_batch["meta"][1].dtype)
nested = default_collate([(np.arange(3), {"w": 1.5}), (np.arange(3) + 3, {"w": 2.5})])
fixed_results["nested_array"] = nested[0]
fixed_results["nested_float"] = nested[1]["w"]

# ---------------------------------------------------------------------------- models


class KimCNN(nn.Module):
    """Kim (2014): embeddings, filters of several widths over whole words, max over time."""

    def __init__(self, vocab_size, embed_dim, n_filters, widths, n_classes, dropout=0.5,
                 pretrained=None, mode="rand"):
        super().__init__()
        self.mode = mode
        if pretrained is None:
            self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_IDX)
        else:
            self.embedding = nn.Embedding.from_pretrained(pretrained, freeze=(mode == "static"),
                                                          padding_idx=PAD_IDX)
        channels = 1
        if mode == "multichannel":
            self.static = nn.Embedding.from_pretrained(pretrained.clone(), freeze=True,
                                                       padding_idx=PAD_IDX)
            channels = 2
        self.convs = nn.ModuleList([nn.Conv2d(channels, n_filters, (k, embed_dim))
                                    for k in widths])
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(len(widths) * n_filters, n_classes)

    def forward(self, x):
        emb = self.embedding(x).unsqueeze(1)  # (B, 1, T, D)
        if self.mode == "multichannel":
            emb = torch.cat([emb, self.static(x).unsqueeze(1)], dim=1)
        conved = [F.relu(conv(emb)).squeeze(3) for conv in self.convs]  # (B, C, T - k + 1)
        pooled = [F.max_pool1d(c, c.size(2)).squeeze(2) for c in conved]
        return self.fc(self.dropout(torch.cat(pooled, 1)))


class TextCNN1d(nn.Module):
    """The same model as most repositories now write it: Conv1d over the embedding dim."""

    def __init__(self, vocab_size, embed_dim, n_filters, widths, n_classes, dropout=0.5):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_IDX)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, n_filters, k) for k in widths])
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(len(widths) * n_filters, n_classes)

    def forward(self, x):
        emb = self.embedding(x).permute(0, 2, 1)  # (B, D, T)
        pooled = [torch.relu(conv(emb)).max(dim=2)[0] for conv in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, dim=1)))


class Highway(nn.Module):
    """y = t * relu(W x) + (1 - t) * x with t = sigmoid(W_t x + b_t), b_t starting at -2."""

    def __init__(self, size, n_layers=2, gate_bias=-2.0):
        super().__init__()
        self.proj = nn.ModuleList([nn.Linear(size, size) for _ in range(n_layers)])
        self.gate = nn.ModuleList([nn.Linear(size, size) for _ in range(n_layers)])
        for g in self.gate:
            g.bias.data.fill_(gate_bias)

    def forward(self, x):
        for proj, gate in zip(self.proj, self.gate):
            t = torch.sigmoid(gate(x))
            x = t * F.relu(proj(x)) + (1 - t) * x
        return x


class CharCNN(nn.Module):
    """Character-aware word vectors (Kim et al. 2016): each word's characters -> Conv1d of
    several widths -> max over the word -> highway layers; then max over the review's
    words (padding words masked out) -> classes."""

    def __init__(self, n_chars, char_dim=8, filters=((3, 12), (5, 12)), n_classes=2,
                 dropout=0.2):
        super().__init__()
        self.embedding = nn.Embedding(n_chars, char_dim, padding_idx=PAD_IDX)
        self.convs = nn.ModuleList([nn.Conv1d(char_dim, n, k, padding=k // 2)
                                    for k, n in filters])
        self.pool = nn.AdaptiveMaxPool1d(1)
        size = sum(n for _, n in filters)
        self.highway = Highway(size)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(size, n_classes)

    def forward(self, chars):
        batch, n_words, n_chars = chars.shape
        emb = self.embedding(chars.view(batch * n_words, n_chars)).transpose(1, 2)
        feats = torch.cat([self.pool(torch.tanh(conv(emb))).flatten(1) for conv in self.convs],
                          dim=1)
        words = self.highway(feats).view(batch, n_words, -1)
        is_word = (chars != PAD_IDX).any(dim=-1)
        words = words.masked_fill(~is_word.unsqueeze(-1), float("-inf"))
        return self.fc(self.dropout(words.max(dim=1).values))


class BagClassifier(nn.Module):
    """fastText-style: one EmbeddingBag and a linear layer, as in the torchtext tutorial."""

    def __init__(self, vocab_size, embed_dim, n_classes, mode="sum", sparse=False):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode=mode, padding_idx=PAD_IDX,
                                         sparse=sparse)
        self.fc = nn.Linear(embed_dim, n_classes)
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets, per_sample_weights=None):
        return self.fc(self.embedding(text, offsets, per_sample_weights=per_sample_weights))


def grads_of(model):
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


# --------------------------------------------------- fixed weights: Kim CNN (recorded)

fixed_batch = pad_collate([valid_set[i] for i in range(6)])
fixed_x, fixed_lengths, fixed_y = fixed_batch
fixed_results["fixed_x"] = fixed_x
fixed_results["left_padded"] = pad_sequence([valid_set[i][0] for i in range(6)],
                                            batch_first=True, padding_value=PAD_IDX,
                                            padding_side="left")
EMBED, FILTERS, WIDTHS = 12, 6, (2, 3, 4)

# "pretrained" vectors in word2vec's text format (a header, then a word and its values per
# line), read the way GloVe/word2vec loaders read them; words without a vector get Kim's
# U(-0.25, 0.25), the padding row zeros
torch.manual_seed(1)
table = torch.randn(len(vocab_all), EMBED) * 0.5
lines = [w + " " + " ".join(f"{v:.4f}" for v in row.tolist())
         for w, row in zip(vocab_all.itos[2:], table[2:]) if not w.startswith("zz")]
vectors_file = io.StringIO(f"{len(lines)} {EMBED}\n" + "\n".join(lines) + "\n")
n_vectors, dim = map(int, vectors_file.readline().split())
found = {}
for line in vectors_file:
    word, *values = line.rstrip().split(" ")
    found[word] = np.asarray(values, dtype="float32")
pretrained = torch.empty(len(vocab), EMBED).uniform_(-0.25, 0.25)
n_found = 0
for word, idx in vocab.stoi.items():
    if word in found:
        pretrained[idx] = torch.from_numpy(found[word])
        n_found += 1
pretrained[PAD_IDX] = 0.0
fixed_results["pretrained"] = pretrained.clone()

torch.manual_seed(2)
kim2d = KimCNN(len(vocab), EMBED, FILTERS, WIDTHS, 2)
kim2d.eval()
logits2d = kim2d(fixed_x)
loss2d = F.cross_entropy(logits2d, fixed_y)
loss2d.backward()
fixed_results["kim2d_logits"] = logits2d.detach()
fixed_results["kim2d_grads"] = grads_of(kim2d)
pad_row_grad = kim2d.embedding.weight.grad[PAD_IDX].abs().sum().item()

# the Conv1d model with the Conv2d model's weights gives the same logits
kim1d = TextCNN1d(len(vocab), EMBED, FILTERS, WIDTHS, 2)
with torch.no_grad():
    kim1d.embedding.weight.copy_(kim2d.embedding.weight)
    for c1, c2 in zip(kim1d.convs, kim2d.convs):
        c1.weight.copy_(c2.weight.squeeze(1).permute(0, 2, 1))
        c1.bias.copy_(c2.bias)
    kim1d.fc.load_state_dict(kim2d.fc.state_dict())
kim1d.eval()
logits1d = kim1d(fixed_x)
conv_forms_difference = (logits1d - logits2d).abs().max().item()
F.cross_entropy(logits1d, fixed_y).backward()
conv1d_weight_grad_difference = max(
    (c1.weight.grad - c2.weight.grad.squeeze(1).permute(0, 2, 1)).abs().max().item()
    for c1, c2 in zip(kim1d.convs, kim2d.convs))

# dropout in training mode, drawn from the seeded default generator
kim1d.train()
torch.manual_seed(3)
fixed_results["kim1d_train_logits"] = kim1d(fixed_x).detach()

# a review shorter than the widest filter: why pad_collate pads up to MAX_WIDTH. Repositories
# that pool with a kernel fixed by a maximum sentence length fail the same way.
short = torch.tensor([[vocab["great"], vocab["fun"]]])
try:
    kim1d(short)
    short_conv_error = None
except RuntimeError as err:
    short_conv_error = str(err)
try:
    F.max_pool1d(torch.relu(kim1d.convs[0](kim1d.embedding(short).permute(0, 2, 1))), 3)
    short_pool_error = None
except RuntimeError as err:
    short_pool_error = str(err)

# a few of Kim's Adadelta steps from these weights, dropout on (recorded)
adadelta = torch.optim.Adadelta(kim1d.parameters(), lr=1.0, rho=0.95, eps=1e-6)
adadelta_losses = []
for _ in range(3):
    adadelta.zero_grad()
    loss = F.cross_entropy(kim1d(fixed_x), fixed_y)
    loss.backward()
    adadelta.step()
    adadelta_losses.append(loss.item())
fixed_results["adadelta_losses"] = torch.tensor(adadelta_losses)
fixed_results["adadelta_fc"] = kim1d.fc.weight.detach().clone()
fixed_results["adadelta_state"] = adadelta.state[kim1d.fc.weight]["acc_delta"].clone()

# multichannel: the static channel's vectors stay where they are
torch.manual_seed(4)
kim_multi = KimCNN(len(vocab), EMBED, FILTERS, WIDTHS, 2, pretrained=pretrained,
                   mode="multichannel")
kim_multi.eval()
multi_logits = kim_multi(fixed_x)
F.cross_entropy(multi_logits, fixed_y).backward()
fixed_results["multi_logits"] = multi_logits.detach()
fixed_results["multi_grads"] = grads_of(kim_multi)
static_requires_grad = kim_multi.static.weight.requires_grad
static_has_grad = kim_multi.static.weight.grad is not None
nonstatic_requires_grad = kim_multi.embedding.weight.requires_grad
multi_param_names = [n for n, p in kim_multi.named_parameters() if p.requires_grad]

# --------------------------------------------------- fixed weights: char CNN (recorded)

char_set = CharReviewDataset(train_part, vocab)
char_batch = char_collate([char_set[i] for i in range(5)])
torch.manual_seed(5)
char_model = CharCNN(len(char_vocab))
char_model.eval()
char_logits = char_model(char_batch[0])
F.cross_entropy(char_logits, char_batch[2]).backward()
fixed_results["char_logits"] = char_logits.detach()
fixed_results["char_grads"] = grads_of(char_model)
gate_open = torch.sigmoid(char_model.highway.gate[0].bias).mean().item()
fixed_results["highway_identity"] = Highway(4, gate_bias=-30.0)(torch.ones(2, 4)).detach()

# ---------------------------------------------- fixed weights: EmbeddingBag (recorded)

bag_text, bag_offsets, bag_labels = bag_collate([valid_set[i] for i in range(5)])
fixed_results["bag_offsets"] = bag_offsets
idf = torch.ones(len(vocab), dtype=torch.float)
doc_freq = collections.Counter()
for text, _ in train_set.pairs:
    doc_freq.update(set(tokenize(text)))
for word, df in doc_freq.items():
    if word in vocab.stoi:
        idf[vocab[word]] = math.log(len(train_set) / (1 + df)) + 1.0
psw = idf[bag_text]
bag_weights = torch.randn(len(vocab), 6, generator=torch.Generator().manual_seed(9))
bag_outputs, bag_grads = {}, {}
for mode in ("sum", "mean", "max"):
    bag = nn.EmbeddingBag.from_pretrained(bag_weights.clone(), freeze=False, mode=mode,
                                          padding_idx=PAD_IDX)
    weights = psw if mode == "sum" else None
    out = bag(bag_text, bag_offsets, per_sample_weights=weights)
    (out * torch.linspace(-1, 1, 6)).sum().backward()
    bag_outputs[mode] = out.detach()
    bag_grads[mode] = bag.weight.grad.clone()
fixed_results["bag_outputs"] = bag_outputs
fixed_results["bag_grads"] = bag_grads

# the same bags as a padded 2-D batch (no offsets): padding_idx leaves the pads out
padded_bags = pad_collate([valid_set[i] for i in range(5)])[0]
bag2d = {}
for mode in ("sum", "mean", "max"):
    bag = nn.EmbeddingBag.from_pretrained(bag_weights, mode=mode, padding_idx=PAD_IDX)
    bag2d[mode] = bag(padded_bags)
bag2d_difference = max((bag2d[m] - bag_outputs[m]).abs().max().item()
                       for m in ("sum", "mean", "max") if m != "sum")
sum_unweighted = nn.EmbeddingBag.from_pretrained(bag_weights, mode="sum",
                                                 padding_idx=PAD_IDX)(bag_text, bag_offsets)
bag2d_sum_difference = (bag2d["sum"] - sum_unweighted).abs().max().item()

# an empty bag, include_last_offset, per-sample weights by hand
last = nn.EmbeddingBag.from_pretrained(bag_weights, mode="sum", include_last_offset=True)
ends = torch.cat([bag_offsets, torch.tensor([len(bag_text)])])
with_last = last(bag_text, ends, per_sample_weights=psw)
fixed_results["include_last_offset"] = with_last
empty_offsets = torch.tensor([0, 3, 3, 7])
for mode in ("sum", "mean", "max"):
    fixed_results[f"empty_bag_{mode}"] = nn.EmbeddingBag.from_pretrained(
        bag_weights, mode=mode)(bag_text[:9], empty_offsets)
by_hand = torch.stack([(bag_weights[bag_text[s:e]] * psw[s:e, None]).sum(0)
                       for s, e in zip(ends[:-1].tolist(), ends[1:].tolist())])
psw_by_hand_difference = (by_hand - bag_outputs["sum"]).abs().max().item()
try:
    nn.EmbeddingBag(len(vocab), 4, mode="mean")(bag_text, bag_offsets, per_sample_weights=psw)
    psw_mean_error = None
except NotImplementedError as err:
    psw_mean_error = str(err)

# ------------------------------------------------------------------------- training


def evaluate(model, loader, bag=False):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in loader:
            if bag:
                text, offsets, labels = batch
                logits = model(text, offsets)
            else:
                x, _, labels = batch
                logits = model(x)
            correct += (logits.argmax(1) == labels).sum().item()
            total += labels.numel()
    model.train()
    return correct / total


valid_loader = DataLoader(valid_set, batch_size=32, collate_fn=pad_collate)

# Kim CNN, multichannel, Adam, a max-norm constraint on the output layer's rows (Kim's is
# 3, for 300 features; this one has 18)
MAX_NORM = 0.6
torch.manual_seed(10)
kim = KimCNN(len(vocab), EMBED, FILTERS, WIDTHS, 2, dropout=0.3, pretrained=pretrained,
             mode="multichannel")
kim_optimizer = torch.optim.Adam([p for p in kim.parameters() if p.requires_grad], lr=2e-2)
train_loader = DataLoader(train_set, batch_sampler=bucket_sampler, collate_fn=pad_collate)
kim_losses, kim_accuracy_before = [], evaluate(kim, valid_loader)
static_before = kim.static.weight.clone()
kim_epochs = 6
for epoch in range(kim_epochs):
    bucket_sampler.set_epoch(epoch)
    for x, _, y in train_loader:
        kim_optimizer.zero_grad()
        loss = F.cross_entropy(kim(x), y)
        loss.backward()
        kim_optimizer.step()
        with torch.no_grad():
            kim.fc.weight.renorm_(2, 0, MAX_NORM)
        kim_losses.append(loss.item())
kim_accuracy = evaluate(kim, valid_loader)
fc_row_norms = kim.fc.weight.detach().norm(dim=1)
static_unchanged = torch.equal(static_before, kim.static.weight)
# from_pretrained wraps the tensor it is given: fine-tuning updated ``pretrained`` itself
pretrained_shared = torch.equal(pretrained, kim.embedding.weight)
pretrained_moved = not torch.equal(pretrained, fixed_results["pretrained"])
pad_row_after = kim.embedding.weight[PAD_IDX].abs().sum().item()

# char CNN, Adam, gradient clipping, shuffled loader with its own generator
torch.manual_seed(11)
char_model = CharCNN(len(char_vocab))
char_optimizer = torch.optim.Adam(char_model.parameters(), lr=2e-2)
char_loader = DataLoader(char_set, batch_size=8, shuffle=True, drop_last=True,
                         generator=torch.Generator().manual_seed(12), collate_fn=char_collate)
char_losses, char_norms = [], []
char_epochs = 6
for _epoch in range(char_epochs):
    for x, _, y in char_loader:
        char_optimizer.zero_grad()
        loss = F.cross_entropy(char_model(x), y)
        loss.backward()
        char_norms.append(nn.utils.clip_grad_norm_(char_model.parameters(), 1.0).item())
        char_optimizer.step()
        char_losses.append(loss.item())
char_valid = DataLoader(CharReviewDataset(valid_part, vocab), batch_size=32,
                        collate_fn=char_collate)
char_accuracy = evaluate(char_model, char_valid)

# bag model: class-balanced draws, per-sample idf weights, SGD with StepLR
torch.manual_seed(13)
bag_model = BagClassifier(len(vocab), 16, 2, mode="sum")
bag_optimizer = torch.optim.SGD(bag_model.parameters(), lr=0.2)
bag_scheduler = torch.optim.lr_scheduler.StepLR(bag_optimizer, step_size=2, gamma=0.5)
bag_loader = DataLoader(train_set, batch_size=16, sampler=weighted_sampler,
                        collate_fn=bag_collate)
bag_losses, bag_lrs = [], []
for _epoch in range(5):
    for text, offsets, labels in bag_loader:
        bag_optimizer.zero_grad()
        logits = bag_model(text, offsets, per_sample_weights=idf[text])
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        bag_optimizer.step()
        bag_losses.append(loss.item())
    bag_lrs.append(bag_scheduler.get_last_lr()[0])
    bag_scheduler.step()
bag_valid = DataLoader(valid_set, batch_size=32, collate_fn=bag_collate)
bag_model.eval()
with torch.no_grad():
    bag_correct = sum((bag_model(t, o, per_sample_weights=idf[t]).argmax(1) == y).sum().item()
                      for t, o, y in bag_valid)
bag_accuracy = bag_correct / len(valid_set)

# the same with sparse embedding gradients: SparseAdam for the table, Adam for the rest
torch.manual_seed(14)
sparse_model = BagClassifier(len(vocab), 16, 2, mode="mean", sparse=True)
sparse_optimizers = [torch.optim.SparseAdam(list(sparse_model.embedding.parameters()), lr=0.05),
                     torch.optim.Adam(sparse_model.fc.parameters(), lr=0.05)]
sparse_loader = DataLoader(train_set, batch_size=16, shuffle=True, collate_fn=bag_collate,
                           generator=torch.Generator().manual_seed(15))
sparse_losses, sparse_grad_layouts = [], set()
for _epoch in range(4):
    for text, offsets, labels in sparse_loader:
        for opt in sparse_optimizers:
            opt.zero_grad()
        loss = F.cross_entropy(sparse_model(text, offsets), labels)
        loss.backward()
        sparse_grad_layouts.add(sparse_model.embedding.weight.grad.layout)
        for opt in sparse_optimizers:
            opt.step()
        sparse_losses.append(loss.item())
sparse_accuracy = evaluate(sparse_model, bag_valid, bag=True)


def predict(model, text):
    model.eval()
    ids = torch.tensor([vocab.lookup_indices(tokenize(text))])
    if ids.size(1) < MAX_WIDTH:
        ids = F.pad(ids, (0, MAX_WIDTH - ids.size(1)), value=PAD_IDX)
    with torch.no_grad():
        return model(ids).softmax(-1)[0, 1].item()


happy = predict(kim, "a wonderful film and the cast was great")
sad = predict(kim, "the plot was dull and the ending was awful")

print(f"vocab {len(vocab)} (all {len(vocab_all)}), chars {len(char_vocab)}")
print(f"kim losses {kim_losses[0]:.3f} -> {np.mean(kim_losses[-5:]):.3f}, "
      f"accuracy {kim_accuracy_before:.2f} -> {kim_accuracy:.2f}")
print(f"char losses {char_losses[0]:.3f} -> {np.mean(char_losses[-5:]):.3f}, "
      f"accuracy {char_accuracy:.2f}")
print(f"bag losses {bag_losses[0]:.3f} -> {np.mean(bag_losses[-5:]):.3f}, "
      f"accuracy {bag_accuracy:.2f}, lrs {bag_lrs}")
print(f"sparse bag losses {sparse_losses[0]:.3f} -> {np.mean(sparse_losses[-5:]):.3f}, "
      f"accuracy {sparse_accuracy:.2f}")
print(f"happy {happy:.3f}, sad {sad:.3f}")
