"""Recurrent nets, written for these tests in the way yunjey's pytorch-tutorial
(02-intermediate, the RNN / bidirectional RNN / language-model examples) is commonly written
(modelled on the API usage of that tutorial, not a copy of it):

- digit images read as sequences of 8 rows by a two-layer ``nn.LSTM(batch_first=True)``, one-
  and two-way, started from explicit zero ``(h0, c0)`` and classified from ``out[:, -1, :]``;
- a word-level LSTM language model on a small generated text: a vocabulary class, a corpus
  filled into ``torch.LongTensor(n)`` item by item and folded into batch rows, truncated BPTT
  with detached states, ``clip_grad_norm_``, then sampling with ``torch.multinomial`` and
  ``fill_``;
- for the torch comparison: each model with set weights, its loss and gradients on a fixed
  batch.
"""
import os
import random
import tempfile

import numpy as np
from vision_standin import standin

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn.utils import clip_grad_norm_

torch.manual_seed(0)
random.seed(0)
vision = standin(600, 300)
scratch = tempfile.mkdtemp(prefix="recurrent_")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ROWS = COLS = 8
results = {}


# --- digits as row sequences ---------------------------------------------------------------------
class RowReader(nn.Module):
    """Reads an image top to bottom and classifies it from the final step's features."""

    def __init__(self, n_hidden=32, n_layers=2, n_classes=10, both_ways=False):
        super().__init__()
        self.n_hidden, self.n_layers = n_hidden, n_layers
        self.directions = 2 if both_ways else 1
        if both_ways:
            self.rnn = nn.LSTM(COLS, n_hidden, n_layers, batch_first=True, bidirectional=True)
        else:
            self.rnn = nn.LSTM(COLS, n_hidden, n_layers, batch_first=True)
        self.out = nn.Linear(n_hidden * self.directions, n_classes)

    def forward(self, rows):
        shape = (self.n_layers * self.directions, rows.size(0), self.n_hidden)
        start = (torch.zeros(*shape).to(device), torch.zeros(*shape).to(device))
        seq, _ = self.rnn(rows, start)
        return self.out(seq[:, -1, :])


train_set = vision.datasets.MNIST(root="data", train=True,
                                  transform=vision.transforms.ToTensor(), download=True)
test_set = vision.datasets.MNIST(root="data", train=False,
                                 transform=vision.transforms.ToTensor())
train_loader = torch.utils.data.DataLoader(dataset=train_set, batch_size=100, shuffle=True)
test_loader = torch.utils.data.DataLoader(dataset=test_set, batch_size=100, shuffle=False)


def fit_and_score(net, epochs=5, lr=0.01):
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    history = []
    for epoch in range(epochs):
        for img, label in train_loader:
            img, label = img.reshape(-1, ROWS, COLS).to(device), label.to(device)
            loss = loss_fn(net(img), label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(loss.item())
        print(f"epoch {epoch + 1}: {history[-1]:.4f}")
    net.eval()
    hit = count = 0
    with torch.no_grad():
        for img, label in test_loader:
            img, label = img.reshape(-1, ROWS, COLS).to(device), label.to(device)
            _, pick = torch.max(net(img).data, 1)
            count += label.size(0)
            hit += (pick == label).sum().item()
    return {"losses": history, "accuracy": 100 * hit / count}


for key, two_way in (("rnn", False), ("birnn", True)):
    reader = RowReader(both_ways=two_way).to(device)
    results[key] = fit_and_score(reader)
    print(key, "accuracy", results[key]["accuracy"])
    torch.save(reader.state_dict(), os.path.join(scratch, f"{key}.pt"))


# --- a word-level language model ---------------------------------------------------------------
class Vocab:
    def __init__(self):
        self.index, self.words = {}, []

    def add(self, word):
        if word not in self.index:
            self.index[word] = len(self.words)
            self.words.append(word)
        return self.index[word]

    def __len__(self):
        return len(self.words)


def read_corpus(path, vocab, n_rows):
    with open(path) as f:
        lines = [line.split() + ["<eos>"] for line in f]
    n_tokens = sum(len(words) for words in lines)
    ids = torch.LongTensor(n_tokens)
    pos = 0
    for words in lines:
        for w in words:
            ids[pos] = vocab.add(w)
            pos += 1
    usable = ids.size(0) // n_rows * n_rows
    return ids[:usable].view(n_rows, -1)


text_rng = random.Random(7)
text_path = os.path.join(scratch, "story.txt")
with open(text_path, "w") as f:
    for _ in range(160):
        who = text_rng.choice(["my sister", "our teacher", "a farmer"])
        does = text_rng.choice(["grows", "cooks", "paints"])
        what = text_rng.choice(["red apples", "fresh bread", "old boats"])
        f.write(f"{who} {does} {what}\n")

N_ROWS, SEQ, EMB, HID, LAYERS = 20, 10, 32, 64, 1
vocab = Vocab()
ids = read_corpus(text_path, vocab, N_ROWS)
vocab_size = len(vocab)


class WordLSTM(nn.Module):
    def __init__(self, n_words):
        super().__init__()
        self.emb = nn.Embedding(n_words, EMB)
        self.rnn = nn.LSTM(EMB, HID, LAYERS, batch_first=True)
        self.proj = nn.Linear(HID, n_words)

    def forward(self, tokens, state):
        seq, (h, c) = self.rnn(self.emb(tokens), state)
        flat = seq.reshape(seq.size(0) * seq.size(1), seq.size(2))
        return self.proj(flat), (h, c)


def zero_state(rows):
    return (torch.zeros(LAYERS, rows, HID).to(device), torch.zeros(LAYERS, rows, HID).to(device))


lm = WordLSTM(vocab_size).to(device)
lm_opt = torch.optim.Adam(lm.parameters(), lr=0.01)
xent = nn.CrossEntropyLoss()
lm_losses = []
for epoch in range(5):
    state = zero_state(N_ROWS)
    for start in range(0, ids.size(1) - SEQ, SEQ):
        x = ids[:, start:start + SEQ].to(device)
        y = ids[:, start + 1:start + 1 + SEQ].to(device)
        state = [s.detach() for s in state]  # cut the graph at the window's edge
        logits, state = lm(x, state)
        loss = xent(logits, y.reshape(-1))
        lm_opt.zero_grad()
        loss.backward()
        clip_grad_norm_(lm.parameters(), 0.5)
        lm_opt.step()
        lm_losses.append(loss.item())
    print(f"lm epoch {epoch + 1}: perplexity {np.exp(lm_losses[-1]):.2f}")

generated = []
with torch.no_grad():
    state = zero_state(1)
    token = torch.multinomial(torch.ones(vocab_size), num_samples=1).unsqueeze(1).to(device)
    for _ in range(40):
        logits, state = lm(token, state)
        next_id = torch.multinomial(logits.exp(), num_samples=1).item()
        token.fill_(next_id)
        generated.append(vocab.words[next_id])
with open(os.path.join(scratch, "generated.txt"), "w") as f:
    f.write(" ".join(generated).replace(" <eos> ", "\n"))
results["lm"] = {"losses": lm_losses, "vocab_size": vocab_size, "ids_shape": tuple(ids.shape),
                 "sampled": generated}
torch.save(lm.state_dict(), os.path.join(scratch, "lm.pt"))


# --- set weights, one forward/backward each, for the comparison with torch --------------------
def loss_and_grads(net, x, y):
    with torch.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 0.3)).view_as(p)
                    / 4)
    net.train()
    net.zero_grad()
    loss = nn.CrossEntropyLoss()(net(x), y)
    loss.backward()
    return {"loss": loss.item(), **{n: p.grad.tolist() for n, p in net.named_parameters()}}


class LMFromZero(nn.Module):
    """The language model on one window from a zero state, as a one-input module."""

    def __init__(self):
        super().__init__()
        self.lm = WordLSTM(vocab_size)

    def forward(self, x):
        return self.lm(x, zero_state(x.size(0)))[0]


probe = torch.stack([test_set[i][0] for i in range(16)]).reshape(-1, ROWS, COLS)
probe_labels = torch.tensor([test_set[i][1] for i in range(16)])
fixed_results = {
    "rnn": loss_and_grads(RowReader(), probe, probe_labels),
    "birnn": loss_and_grads(RowReader(both_ways=True), probe, probe_labels),
    "lm": loss_and_grads(LMFromZero(), ids[:, :SEQ], ids[:, 1:SEQ + 1].reshape(-1)),
}
