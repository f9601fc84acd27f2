"""Written for these tests in the way sequence-to-sequence translation code for PyTorch is
commonly written (modelled on the API usage of the PyTorch tutorial "Language Translation with
nn.Transformer", not a copy of it): a toy German -> English translator over ``nn.Transformer``.

Exercised: a sinusoidal position table kept with ``register_buffer`` (a buffer: in the
state_dict, not a parameter) and added under ``nn.Dropout``; ``nn.Embedding`` scaled by
sqrt(d_model); ``nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
dim_feedforward, dropout)`` called with a bool source mask, a float causal target mask of -inf
(made with ``masked_fill`` over ``triu``, checked against
``nn.Transformer.generate_square_subsequent_mask``) and bool key-padding masks (torch warns about
the mismatched mask types; jitgrad must too), and its ``encoder``/``decoder`` called on their own
for greedy decoding with a bool causal mask; ``nn.init.xavier_uniform_`` on the matrices;
``nn.CrossEntropyLoss(ignore_index=PAD)``; ``torch.optim.Adam`` with betas=(0.9, 0.98) and
eps=1e-9; ``pad_sequence`` (sequence-first) in a ``DataLoader``'s collate function; train/eval
epochs under ``model.train()``/``model.eval()`` and ``torch.no_grad()``; greedy decoding with
``torch.cat`` and ``max(dim=...).indices``.

The corpus is synthetic (nothing is downloaded): a sentence is 2-5 German number words, its
translation the English words in reverse order, so the model must learn a word map and the
attention that reverses the order. The vocabularies list the special tokens first, then the words
by falling count (ties alphabetical); unknown words map to <unk>.

Sections marked "(recorded)" keep the per-epoch losses for the tests. The section marked "(added)"
runs a fixed-weight model (weights drawn by NumPy, dropout 0: jitgrad's random numbers are not
torch's) on six training pairs: its masks, logits, losses, gradients, two Adam steps, the encoder's
memory and a greedy translation, to compare with the same script on torch.
"""

import math
import time
from collections import Counter

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn.utils.rnn import pad_sequence
from jitgrad.utils.data import DataLoader

torch.manual_seed(0)

# ------------------------------------------------------------------------------- the corpus

GERMAN = ["null", "eins", "zwei", "drei", "vier", "fuenf", "sechs", "sieben", "acht", "neun"]
ENGLISH = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def number_pairs(count, seed):
    """``count`` (german, english) sentence pairs; the English reads the digits backwards."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        digits = rng.integers(0, 10, size=int(rng.integers(2, 6)))
        pairs.append((" ".join(GERMAN[d] for d in digits),
                      " ".join(ENGLISH[d] for d in digits[::-1])))
    return pairs


train_pairs = number_pairs(384, seed=10)
valid_pairs = number_pairs(64, seed=11)

SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]
UNK, PAD, BOS, EOS = range(4)


class WordVocab:
    """Word <-> id tables built from whitespace-split sentences."""

    def __init__(self, sentences):
        counts = Counter(word for line in sentences for word in line.split())
        ranked = sorted((w for w in counts if w not in SPECIALS), key=lambda w: (-counts[w], w))
        self.words = SPECIALS + ranked
        self.ids = {word: i for i, word in enumerate(self.words)}

    def __len__(self):
        return len(self.words)

    def encode(self, words):
        return [self.ids.get(word, UNK) for word in words]

    def decode(self, ids):
        return [self.words[int(i)] for i in ids]


src_vocab = WordVocab(de for de, _ in train_pairs)
tgt_vocab = WordVocab(en for _, en in train_pairs)


def sentence_ids(text, vocab):
    """One sentence as a 1-d int64 tensor: <bos>, the word ids, <eos>."""
    ids = torch.tensor(vocab.encode(text.split()), dtype=torch.long)
    return torch.cat([torch.tensor([BOS]), ids, torch.tensor([EOS])])


def collate_pairs(batch):
    """A list of (german, english) pairs -> two (seq, batch) id tensors padded with <pad>."""
    sources = [sentence_ids(de, src_vocab) for de, _ in batch]
    targets = [sentence_ids(en, tgt_vocab) for _, en in batch]
    return pad_sequence(sources, padding_value=PAD), pad_sequence(targets, padding_value=PAD)


# ---------------------------------------------------------------------------------- masks


def future_positions(n):
    """(n, n) bool: True where a query would look at a later position."""
    return torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


def causal_mask(n):
    """The float form of ``future_positions``: -inf where attention is forbidden, 0 elsewhere."""
    return torch.zeros(n, n).masked_fill(future_positions(n), float("-inf"))


def make_masks(src, tgt):
    """The attention masks for a (seq, batch) source and target: a bool source mask that hides
    nothing, the causal target mask, and (batch, seq) masks of the padding."""
    n_src, n_tgt = src.shape[0], tgt.shape[0]
    src_mask = torch.zeros(n_src, n_src, dtype=torch.bool)
    return src_mask, causal_mask(n_tgt), (src == PAD).t(), (tgt == PAD).t()


# ---------------------------------------------------------------------------------- model


class SinusoidalPositions(nn.Module):
    """Adds a fixed table of sines (even features) and cosines (odd ones) to (seq, batch, dim)."""

    def __init__(self, dim, dropout, max_len=5000):
        super().__init__()
        where = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        rates = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        table = torch.zeros(max_len, 1, dim)
        table[:, 0, 0::2] = torch.sin(where * rates)
        table[:, 0, 1::2] = torch.cos(where * rates)
        self.register_buffer("table", table)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(x + self.table[:x.size(0)])


class NumberTranslator(nn.Module):
    def __init__(self, n_src, n_tgt, d_model, nhead, layers, d_ff, dropout):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.src_embed = nn.Embedding(n_src, d_model)
        self.tgt_embed = nn.Embedding(n_tgt, d_model)
        self.positions = SinusoidalPositions(d_model, dropout)
        self.core = nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=layers,
                                   num_decoder_layers=layers, dim_feedforward=d_ff,
                                   dropout=dropout)
        self.head = nn.Linear(d_model, n_tgt)

    def embed_src(self, src):
        return self.positions(self.src_embed(src) * self.scale)

    def embed_tgt(self, tgt):
        return self.positions(self.tgt_embed(tgt) * self.scale)

    def forward(self, src, tgt, src_mask, tgt_mask, src_pad, tgt_pad):
        hidden = self.core(self.embed_src(src), self.embed_tgt(tgt), src_mask=src_mask,
                           tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                           tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.head(hidden)

    def encode(self, src, src_mask):
        return self.core.encoder(self.embed_src(src), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.core.decoder(self.embed_tgt(tgt), memory, tgt_mask)


def build_model(d_model, nhead, layers, d_ff, dropout):
    model = NumberTranslator(len(src_vocab), len(tgt_vocab), d_model, nhead, layers, d_ff,
                             dropout)
    for weight in model.parameters():
        if weight.dim() > 1:
            nn.init.xavier_uniform_(weight)
    return model


model = build_model(d_model=32, nhead=4, layers=2, d_ff=64, dropout=0.1)
criterion = nn.CrossEntropyLoss(ignore_index=PAD)
optimizer = torch.optim.Adam(model.parameters(), lr=0.002, betas=(0.9, 0.98), eps=1e-9)


def batch_loss(net, src, tgt):
    """Teacher forcing: the target without its last token in, the target shifted by one out."""
    tgt_in, tgt_out = tgt[:-1], tgt[1:]
    logits = net(src, tgt_in, *make_masks(src, tgt_in))
    return criterion(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1)), logits


def run_epoch(net, pairs, opt=None):
    """The mean batch loss over ``pairs``; a training epoch when given an optimizer."""
    net.train(opt is not None)
    total, batches = 0.0, 0
    with torch.set_grad_enabled(opt is not None):
        for src, tgt in DataLoader(pairs, batch_size=32, collate_fn=collate_pairs):
            loss, _ = batch_loss(net, src, tgt)
            if opt is not None:
                opt.zero_grad()
                loss.backward()
                opt.step()
            total, batches = total + loss.item(), batches + 1
    return total / batches


train_losses, val_losses = [], []  # (recorded)
for epoch in range(14):
    began = time.perf_counter()
    train_losses.append(run_epoch(model, train_pairs, optimizer))
    val_losses.append(run_epoch(model, valid_pairs))
    print(f"epoch {epoch + 1}: train {train_losses[-1]:.3f}, valid {val_losses[-1]:.3f} "
          f"({time.perf_counter() - began:.2f}s)")


# ------------------------------------------------------------------------------ decoding


def greedy_decode(net, src, src_mask, max_len, start_id):
    """Grows a (len, 1) target from ``start_id`` by the most likely next word until <eos>."""
    memory = net.encode(src, src_mask)
    out = torch.full((1, 1), start_id, dtype=torch.long)
    while out.shape[0] < max_len:
        hidden = net.decode(out, memory, future_positions(out.shape[0]))
        next_id = net.head(hidden[-1]).max(dim=-1).indices.item()
        out = torch.cat([out, torch.full((1, 1), next_id, dtype=torch.long)], dim=0)
        if next_id == EOS:
            break
    return out


def translate(net, sentence):
    net.eval()
    src = sentence_ids(sentence, src_vocab).view(-1, 1)
    src_mask = torch.zeros(src.shape[0], src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        ids = greedy_decode(net, src, src_mask, src.shape[0] + 5, BOS).flatten().tolist()
    return " ".join(w for w in tgt_vocab.decode(ids) if w not in SPECIALS)


translation = translate(model, "drei sieben eins neun")  # (recorded)
print(translation)

# (added) the fixed-weight model on six training pairs, compared with torch's
fixed = build_model(d_model=16, nhead=2, layers=1, d_ff=32, dropout=0.0)
draw = np.random.default_rng(0)
with torch.no_grad():
    for weight in fixed.parameters():
        weight.copy_(torch.tensor(draw.normal(0.0, 0.3, tuple(weight.shape)),
                                  dtype=torch.float32))
fixed_opt = torch.optim.Adam(fixed.parameters(), lr=0.01, betas=(0.9, 0.98), eps=1e-9)
fixed_src, fixed_tgt = collate_pairs(train_pairs[:6])
names = ("src_mask", "tgt_mask", "src_padding_mask", "tgt_padding_mask")
fixed_results = {"masks": dict(zip(names, make_masks(fixed_src, fixed_tgt[:-1]))),
                 "losses": []}
fixed_results["masks"]["library_causal"] = nn.Transformer.generate_square_subsequent_mask(5)
for step in range(2):
    fixed_opt.zero_grad()
    loss, logits = batch_loss(fixed, fixed_src, fixed_tgt)
    loss.backward()
    if step == 0:
        fixed_results["logits"] = logits.detach().clone()
        fixed_results["grads"] = {n: w.grad.clone() for n, w in fixed.named_parameters()}
    fixed_opt.step()
    fixed_results["losses"].append(loss.item())
fixed_results["params"] = {n: w.detach().clone() for n, w in fixed.named_parameters()}
probe = sentence_ids(valid_pairs[0][0], src_vocab).view(-1, 1)
with torch.no_grad():
    fixed_results["memory"] = fixed.encode(probe, torch.zeros(len(probe), len(probe)).bool())
fixed_results["translation"] = translate(fixed, valid_pairs[0][0])
