"""A GRU encoder-decoder with additive attention on a toy token-mapping task, written for these
tests in the way PyTorch's "NLP from scratch" translation tutorial is commonly written
(modelled on the API usage of that tutorial, not a copy of it):

- padded id arrays built through ``torch.zeros(...).numpy()``, ``torch.LongTensor``,
  ``TensorDataset`` + ``RandomSampler`` + ``DataLoader(sampler=...)``
- ``nn.Embedding``, ``nn.GRU(batch_first=True)``, ``nn.Dropout``; additive (Bahdanau-style)
  attention with ``torch.tanh``, ``F.softmax`` and ``torch.bmm``
- a decoder loop started from ``torch.empty(...).fill_``, teacher forcing in training,
  greedy ``topk`` decoding otherwise; ``F.log_softmax`` + ``nn.NLLLoss``, two Adam optimizers
"""
import random

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad import optim
from jitgrad.utils.data import DataLoader, RandomSampler, TensorDataset

torch.manual_seed(0)
random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
device = torch.device("cpu")  # (small enough for the CPU; keeps runs comparable)

START, STOP = 0, 1
MAX_LENGTH = 6  # up to 5 tokens and STOP
VOCAB = 12  # real tokens are 2..11


def mirror(tok):
    """The task: every token t becomes 13 - t (2 <-> 11, 3 <-> 10, ...), order kept."""
    return VOCAB + 1 - tok


def toy_pairs(count):
    out = []
    for _ in range(count):
        src = [random.randint(2, VOCAB - 1) for _ in range(random.randint(2, MAX_LENGTH - 1))]
        out.append((src, [mirror(t) for t in src]))
    return out


def to_loader(pairs, batch_size):
    src_ids = torch.zeros((len(pairs), MAX_LENGTH), dtype=torch.long).numpy()
    tgt_ids = torch.zeros((len(pairs), MAX_LENGTH), dtype=torch.long).numpy()
    for row, (src, tgt) in enumerate(pairs):
        src_ids[row, :len(src) + 1] = src + [STOP]
        tgt_ids[row, :len(tgt) + 1] = tgt + [STOP]
    data = TensorDataset(torch.LongTensor(src_ids).to(device), torch.LongTensor(tgt_ids).to(device))
    return DataLoader(data, sampler=RandomSampler(data), batch_size=batch_size)


class Encoder(nn.Module):
    def __init__(self, vocab, dim, p_drop=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.drop = nn.Dropout(p_drop)
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, ids):
        return self.rnn(self.drop(self.embed(ids)))  # (states (B, T, dim), last (1, B, dim))


class AdditiveAttention(nn.Module):
    """score(q, k) = v . tanh(W q + U k), normalised over the source positions."""

    def __init__(self, dim):
        super().__init__()
        self.w_query = nn.Linear(dim, dim)
        self.w_key = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, 1)

    def forward(self, query, keys):  # query (B, 1, dim), keys (B, T, dim)
        energy = self.v(torch.tanh(self.w_query(query) + self.w_key(keys)))  # (B, T, 1)
        weights = F.softmax(energy.squeeze(2).unsqueeze(1), dim=-1)  # (B, 1, T)
        return torch.bmm(weights, keys), weights


class Decoder(nn.Module):
    def __init__(self, dim, vocab, p_drop=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.drop = nn.Dropout(p_drop)
        self.attend = AdditiveAttention(dim)
        self.rnn = nn.GRU(2 * dim, dim, batch_first=True)
        self.proj = nn.Linear(dim, vocab)

    def step(self, tok, h, memory):
        ctx, weights = self.attend(h.permute(1, 0, 2), memory)
        rnn_in = torch.cat((self.drop(self.embed(tok)), ctx), dim=2)
        out, h = self.rnn(rnn_in, h)
        return self.proj(out), h, weights

    def forward(self, memory, h, teacher=None):
        tok = torch.empty(memory.size(0), 1, dtype=torch.long, device=device).fill_(START)
        logits, maps = [], []
        for t in range(MAX_LENGTH):
            scores, h, weights = self.step(tok, h, memory)
            logits.append(scores)
            maps.append(weights)
            if teacher is None:  # feed back our own best guess
                tok = scores.topk(1)[1].squeeze(-1).detach()
            else:  # feed the right token
                tok = teacher[:, t].unsqueeze(1)
        return F.log_softmax(torch.cat(logits, dim=1), dim=-1), h, torch.cat(maps, dim=1)


def fit(loader, enc, dec, epochs, lr):
    opt_enc, opt_dec = optim.Adam(enc.parameters(), lr=lr), optim.Adam(dec.parameters(), lr=lr)
    nll = nn.NLLLoss()
    history = []
    for _ in range(epochs):
        total = 0.0
        for src, tgt in loader:
            opt_enc.zero_grad()
            opt_dec.zero_grad()
            memory, last = enc(src)
            logp, _, _ = dec(memory, last, teacher=tgt)
            loss = nll(logp.view(-1, logp.size(-1)), tgt.view(-1))
            loss.backward()
            opt_enc.step()
            opt_dec.step()
            total += loss.item()
        history.append(total / len(loader))
    return history


def translate(enc, dec, src):
    with torch.no_grad():
        ids = torch.tensor(src + [STOP], dtype=torch.long, device=device).view(1, -1)
        memory, last = enc(ids)
        logp, _, maps = dec(memory, last)
    result = []
    for tok in logp.topk(1)[1].squeeze():
        if tok.item() == STOP:
            break
        result.append(tok.item())
    return result, maps


pairs = toy_pairs(64)
loader = to_loader(pairs, batch_size=16)
encoder = Encoder(VOCAB, 32).to(device)
decoder = Decoder(32, VOCAB).to(device)
losses = fit(loader, encoder, decoder, epochs=30, lr=0.01)
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
encoder.eval()
decoder.eval()
output, attn = translate(encoder, decoder, pairs[0][0])
attention_shape = tuple(attn.shape)
print(pairs[0], "->", output, attention_shape)
