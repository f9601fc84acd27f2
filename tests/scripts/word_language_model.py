"""Word-level language models (tied-weight LSTM, GRU, plain RNNs and a causal Transformer
encoder) on a toy corpus, written for these tests in the way pytorch/examples'
word_language_model is commonly written (modelled on the API usage of pytorch/examples'
word_language_model, not a copy of it):

- a vocabulary/corpus builder producing ``torch.tensor(ids).type(torch.int64)`` pieces joined by
  ``torch.cat``; batching with ``narrow``/``view``/``t``/``contiguous``; bptt slices;
- ``nn.Embedding``, ``getattr(nn, "LSTM"/"GRU")`` and ``nn.RNN(nonlinearity=...)`` with
  inter-layer dropout, ``new_zeros`` hidden states, weight tying (``decoder.weight =
  encoder.weight``) and its ValueError, ``nn.init.uniform_``/``zeros_``, ``flatten_parameters``;
- a model subclassing ``nn.Transformer`` that uses only its ``encoder`` with a
  ``log(tril(ones))`` mask, a sinusoidal encoding kept by ``register_buffer``;
- a hand-written SGD step ``p.data.add_(p.grad, alpha=-lr)`` after
  ``nn.utils.clip_grad_norm_``, ``nn.NLLLoss`` on ``log_softmax``, lr annealing;
- whole models saved with ``torch.save(model, f)`` into open files and reloaded
  (``weights_only=False``, ``map_location``), then sampled word by word with
  ``torch.multinomial`` (``fill_`` for the RNN, ``torch.cat`` growth for the Transformer);
- fixed-weight forwards and one clipped training step per model kind, to compare with torch.
"""
import math
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F


class Vocab:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def index(self, word):
        if word not in self.word2idx:
            self.word2idx[word] = len(self.idx2word)
            self.idx2word.append(word)
        return self.word2idx[word]

    def __len__(self):
        return len(self.word2idx)


class Corpus:
    def __init__(self, train, valid, test):
        self.dictionary = Vocab()
        self.train, self.valid, self.test = (self._encode(part) for part in (train, valid, test))

    def _encode(self, lines):
        pieces = []
        for line in lines:
            ids = [self.dictionary.index(w) for w in line.split() + ["<eos>"]]
            pieces.append(torch.tensor(ids).type(torch.int64))
        return torch.cat(pieces)


RECURRENT = {"LSTM": None, "GRU": None, "RNN_TANH": "tanh", "RNN_RELU": "relu"}


class RecurrentLM(nn.Module):
    def __init__(self, cell, vocab, emb, hid, layers, dropout=0.5, tie_weights=False):
        super().__init__()
        if cell not in RECURRENT:
            raise ValueError(f"unknown recurrent cell {cell!r}")
        self.cell, self.vocab, self.hid, self.layers = cell, vocab, hid, layers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, emb)
        if RECURRENT[cell] is None:
            self.rnn = getattr(nn, cell)(emb, hid, layers, dropout=dropout)
        else:
            self.rnn = nn.RNN(emb, hid, layers, nonlinearity=RECURRENT[cell], dropout=dropout)
        self.decoder = nn.Linear(hid, vocab)
        if tie_weights:
            if hid != emb:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight  # one Parameter, two uses
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, tokens, state):
        seq, state = self.rnn(self.drop(self.encoder(tokens)), state)
        logits = self.decoder(self.drop(seq)).view(-1, self.vocab)
        return F.log_softmax(logits, dim=1), state

    def init_hidden(self, batch):
        ref = next(self.parameters())
        zeros = [ref.new_zeros(self.layers, batch, self.hid) for _ in range(2)]
        return tuple(zeros) if self.cell == "LSTM" else zeros[0]


def sinusoid_table(length, width):
    pos = torch.arange(0, length, dtype=torch.float).unsqueeze(1)
    freq = torch.exp(torch.arange(0, width, 2).float() * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table.unsqueeze(0).transpose(0, 1)  # (length, 1, width)


class AddPositions(nn.Module):
    def __init__(self, width, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("pe", sinusoid_table(max_len, width))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


def causal_mask(n):
    """0 on and below the diagonal, -inf above: log of a lower-triangular matrix of ones."""
    return torch.log(torch.tril(torch.ones(n, n)))


class CausalTransformerLM(nn.Transformer):
    def __init__(self, vocab, emb, heads, ff, layers, dropout=0.5):
        super().__init__(d_model=emb, nhead=heads, dim_feedforward=ff, num_encoder_layers=layers)
        self.model_type = "Transformer"
        self.width = emb
        self.src_mask = None
        self.pos_encoder = AddPositions(emb, dropout)
        self.input_emb = nn.Embedding(vocab, emb)
        self.decoder = nn.Linear(emb, vocab)
        nn.init.uniform_(self.input_emb.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, tokens, has_mask=True):
        if not has_mask:
            self.src_mask = None
        elif self.src_mask is None or self.src_mask.size(0) != len(tokens):
            self.src_mask = causal_mask(len(tokens)).to(tokens.device)
        h = self.pos_encoder(self.input_emb(tokens) * math.sqrt(self.width))
        return F.log_softmax(self.decoder(self.encoder(h, mask=self.src_mask)), dim=-1)


def batchify(ids, columns):
    usable = ids.size(0) // columns * columns
    return ids.narrow(0, 0, usable).view(columns, -1).t().contiguous().to(device)


def detach_state(state):
    if isinstance(state, torch.Tensor):
        return state.detach()
    return tuple(detach_state(s) for s in state)


def window(source, start, bptt=6):
    n = min(bptt, len(source) - 1 - start)
    return source[start:start + n], source[start + 1:start + 1 + n].view(-1)


def run_model(net, tokens, state):
    if state is None:  # the Transformer carries no state between windows
        return net(tokens).view(-1, ntokens), None
    out, state = net(tokens, state)
    return out, detach_state(state)


def evaluate(net, source):
    net.eval()
    state = None if isinstance(net, CausalTransformerLM) else net.init_hidden(EVAL_BATCH)
    total = 0.0
    with torch.no_grad():
        for start in range(0, source.size(0) - 1, BPTT):
            x, y = window(source, start)
            out, state = run_model(net, x, state)
            total += len(x) * nll(out, y).item()
    return total / (len(source) - 1)


def train_epoch(net, lr):
    net.train()
    state = None if isinstance(net, CausalTransformerLM) else net.init_hidden(BATCH)
    losses = []
    for start in range(0, train_data.size(0) - 1, BPTT):
        x, y = window(train_data, start)
        net.zero_grad()
        out, state = run_model(net, x, state)
        loss = nll(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), CLIP)
        for p in net.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    return sum(losses) / len(losses)


torch.manual_seed(1111)
device = torch.device("cpu")
EMB = HID = 16
LAYERS, HEADS, DROPOUT, CLIP, BPTT, BATCH, EVAL_BATCH, EPOCHS = 2, 2, 0.2, 0.25, 6, 4, 2, 8

lines = ["the cat sat on the mat", "a dog ran in the park", "the bird sang a song",
         "my cat likes the warm mat"]
corpus = Corpus(train=lines * 6, valid=lines * 2, test=lines[::-1] * 2)
ntokens = len(corpus.dictionary)
train_data = batchify(corpus.train, BATCH)
val_data = batchify(corpus.valid, EVAL_BATCH)
test_data = batchify(corpus.test, EVAL_BATCH)
nll = nn.NLLLoss()
workdir = tempfile.mkdtemp()

results = {}
for kind, lr, tie in (("LSTM", 5, True), ("GRU", 5, False), ("Transformer", 1.0, False)):
    torch.manual_seed(1111)
    if kind == "Transformer":
        net = CausalTransformerLM(ntokens, EMB, HEADS, HID, LAYERS, DROPOUT).to(device)
    else:
        net = RecurrentLM(kind, ntokens, EMB, HID, LAYERS, DROPOUT, tie).to(device)
    path = os.path.join(workdir, f"{kind}.pt")
    record = {"first_val": evaluate(net, val_data), "train_losses": [], "val_losses": []}
    best = None
    for epoch in range(1, EPOCHS + 1):
        record["train_losses"].append(train_epoch(net, lr))
        v = evaluate(net, val_data)
        record["val_losses"].append(v)
        print(f"{kind} epoch {epoch}: valid loss {v:.3f}, ppl {math.exp(v):.2f}")
        if best is None or v < best:
            best = v
            with open(path, "wb") as fh:
                torch.save(net, fh)
        else:
            lr /= 4.0  # no progress: anneal
    with open(path, "rb") as fh:
        net = torch.load(fh, weights_only=False)
    if kind != "Transformer":
        net.rnn.flatten_parameters()
    test_loss = evaluate(net, test_data)
    record.update(best_val_loss=best, test_loss=test_loss, test_ppl=math.exp(test_loss), lr=lr)
    results[kind] = record

tied_lm = RecurrentLM("LSTM", ntokens, 16, 16, 2, tie_weights=True)
tied_same_object = tied_lm.decoder.weight is tied_lm.encoder.weight
tied_param_count = sum(1 for _ in tied_lm.parameters())
try:
    RecurrentLM("LSTM", ntokens, 16, 8, 2, tie_weights=True)
except ValueError as err:
    tie_error = str(err)


def sample_words(ckpt, n_words=30, temperature=1.0):
    """Reload a saved whole model and let it write n_words words, 20 to a line."""
    torch.manual_seed(1111)
    with open(ckpt, "rb") as fh:
        net = torch.load(fh, map_location=device, weights_only=False)
    net.eval()
    causal = getattr(net, "model_type", None) == "Transformer"
    state = None if causal else net.init_hidden(1)
    tokens = torch.randint(ntokens, (1, 1), dtype=torch.long).to(device)
    words = []
    with torch.no_grad():
        for _ in range(n_words):
            if causal:
                scores = net(tokens, False)[-1].squeeze()
            else:
                scores, state = net(tokens, state)
                scores = scores.squeeze()
            weights = scores.div(temperature).exp().cpu()
            pick = torch.multinomial(weights, 1)[0]
            if causal:
                tokens = torch.cat([tokens, torch.Tensor([[pick]]).long().to(device)], 0)
            else:
                tokens.fill_(pick)
            words.append(corpus.dictionary.idx2word[pick])
    text = " ".join(words[:20]) + "\n" + " ".join(words[20:]) + " "
    return net, tokens, text


generated = {}
for kind in ("LSTM", "Transformer"):
    txt_path = os.path.join(workdir, f"{kind}.txt")
    _, last_tokens, text = sample_words(os.path.join(workdir, f"{kind}.pt"))
    with open(txt_path, "w") as fh:
        fh.write(text)
    with open(txt_path) as fh:
        generated[kind] = fh.read()
    print(generated[kind])
transformer_input_shape = tuple(last_tokens.shape)
reloaded_lstm = sample_words(os.path.join(workdir, "LSTM.pt"))[0]
loaded_tied_shared = reloaded_lstm.decoder.weight is reloaded_lstm.encoder.weight

# ---- fixed weights: a forward per model kind and one clipped SGD step ----
fixed_results, fixed_steps = {}, {}
toks = torch.tensor([[1, 2], [3, 4], [5, 6], [0, 1]])
nexts = torch.tensor([2, 3, 4, 5, 6, 0, 1, 2])
for kind in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU", "Transformer"):
    if kind == "Transformer":
        lm = CausalTransformerLM(7, 8, 2, 12, 1, dropout=0.0)
    else:
        lm = RecurrentLM(kind, 7, 8, 8, 2, dropout=0.0, tie_weights=True)
    with torch.no_grad():
        for j, (_, w) in enumerate(lm.named_parameters()):
            w.copy_(torch.cos(torch.arange(w.numel(), dtype=torch.float32) * 0.37 + j)
                    .view_as(w) * 0.4)
    lm.eval()
    if kind == "Transformer":
        fixed_results[kind] = lm(toks).tolist()
    else:
        out, hid = lm(toks, lm.init_hidden(2))
        hid = detach_state(hid)
        hid = [h.tolist() for h in hid] if isinstance(hid, tuple) else hid.tolist()
        fixed_results[kind] = (out.tolist(), hid)
    # train mode with every dropout off (nn.Transformer's own layers default to 0.1); the
    # tied weight's gradient adds the embedding's and the output layer's parts
    lm.train()
    for m in lm.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        elif isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
    lm.zero_grad()
    if kind == "Transformer":
        step_loss = nn.NLLLoss()(lm(toks).view(-1, 7), nexts)
    else:
        step_loss = nn.NLLLoss()(lm(toks, lm.init_hidden(2))[0], nexts)
    step_loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(lm.parameters(), 0.05)
    for w in lm.parameters():
        w.data.add_(w.grad, alpha=-20)
    fixed_steps[kind] = (step_loss.item(), norm.item(),
                         {n: w.tolist() for n, w in lm.named_parameters()})
fixed_mask = causal_mask(4).tolist()
batchified = batchify(torch.arange(26), 4).tolist()
