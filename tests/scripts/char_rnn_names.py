"""Which language a surname comes from, read one character at a time, written for these tests
in the way PyTorch's character-level RNN name classifier is commonly written (modelled on the
API usage of that tutorial, not a copy of it):

- one-hot letters built by index assignment into ``torch.zeros``, ``size()``
- a hand-made recurrent cell (``torch.cat`` of input and state, two ``nn.Linear``,
  ``nn.LogSoftmax``), ``topk``, ``nn.NLLLoss`` and updates with ``p.data.add_(..., alpha=)``
- ``nn.RNN`` on the same task with ``F.log_softmax``/``F.nll_loss``, Adam, ``clip_grad_norm_``
- a two-layer ``batch_first`` tanh ``nn.RNN`` with weights set from ``named_parameters``
"""
import random
import string

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)
random.seed(0)

ALPHABET = string.ascii_letters + " .,;'"
N_CHARS = len(ALPHABET)
SURNAMES = {
    "English": ["Walker", "Hughes", "Clarke", "Baker", "Turner", "Fletcher"],
    "Italian": ["Conti", "Greco", "Marino", "Gallo", "Costa", "Fontana"],
    "Japanese": ["Kato", "Yamamoto", "Nakamura", "Kobayashi", "Yoshida", "Inoue"],
}
LANGS = list(SURNAMES)
HIDDEN = 32


def one_hot_char(ch):
    vec = torch.zeros(1, N_CHARS)
    vec[0][ALPHABET.find(ch)] = 1
    return vec


def encode(word):
    """(len(word), 1, N_CHARS): one one-hot row per character."""
    seq = torch.zeros(len(word), 1, N_CHARS)
    for pos, ch in enumerate(word):
        seq[pos][0][ALPHABET.find(ch)] = 1
    return seq


print(one_hot_char("K"), encode("Kato").size())


class ElmanCell(nn.Module):
    """state' = W_s [x; state], log-probs = log_softmax(W_o [x; state])."""

    def __init__(self, n_in, n_state, n_out):
        super().__init__()
        self.n_state = n_state
        self.to_state = nn.Linear(n_in + n_state, n_state)
        self.to_out = nn.Linear(n_in + n_state, n_out)
        self.log_probs = nn.LogSoftmax(dim=1)

    def forward(self, x, state):
        both = torch.cat((x, state), 1)
        return self.log_probs(self.to_out(both)), self.to_state(both)

    def blank_state(self):
        return torch.zeros(1, self.n_state)


def best_lang(log_probs):
    _, idx = log_probs.topk(1)
    k = idx[0].item()
    return LANGS[k], k


cell = ElmanCell(N_CHARS, HIDDEN, len(LANGS))
out, _ = cell(encode("Kowalski")[0], cell.blank_state())
print(out, best_lang(out))


def read_word(seq):
    state = cell.blank_state()
    for t in range(seq.size()[0]):
        out, state = cell(seq[t], state)
    return out


nll = nn.NLLLoss()


def average_loss():
    with torch.no_grad():
        losses = [nll(read_word(encode(w)), torch.tensor([k]))
                  for k, lang in enumerate(LANGS) for w in SURNAMES[lang]]
    return sum(loss.item() for loss in losses) / len(losses)


manual_before = average_loss()
step_size = 0.005
for _ in range(300):
    lang = random.choice(LANGS)
    word = random.choice(SURNAMES[lang])
    label = torch.tensor([LANGS.index(lang)], dtype=torch.long)
    cell.zero_grad()
    nll(read_word(encode(word)), label).backward()
    for p in cell.parameters():  # plain SGD, written out
        p.data.add_(p.grad.data, alpha=-step_size)
manual_after = average_loss()
print("hand-made cell, mean loss:", manual_before, "->", manual_after)


class SurnameRNN(nn.Module):
    def __init__(self, n_in, n_state, n_out):
        super().__init__()
        self.rnn = nn.RNN(n_in, n_state)
        self.classify = nn.Linear(n_state, n_out)

    def forward(self, seq):
        _, last = self.rnn(seq)  # last: (1, batch, n_state)
        return F.log_softmax(self.classify(last[0]), dim=1)


net = SurnameRNN(N_CHARS, HIDDEN, len(LANGS))
adam = torch.optim.Adam(net.parameters(), lr=0.01)
dataset = [(encode(w), torch.tensor([k])) for k, lang in enumerate(LANGS) for w in SURNAMES[lang]]
nn_rnn_losses = []
for _ in range(15):
    net.train()
    random.shuffle(dataset)
    running = 0.0
    for seq, label in dataset:
        adam.zero_grad()
        loss = F.nll_loss(net(seq), label)
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 3)
        adam.step()
        running += loss.item()
    nn_rnn_losses.append(running / len(dataset))
net.eval()
with torch.no_grad():
    hits = [net(seq).argmax(1).item() == label.item() for seq, label in dataset]
nn_rnn_accuracy = sum(hits) / len(hits)
print("nn.RNN losses", nn_rnn_losses[0], "->", nn_rnn_losses[-1], "accuracy", nn_rnn_accuracy)

# nn.RNN with weights set by formula (deterministic: compared with torch)
stack = nn.RNN(4, 3, num_layers=2, nonlinearity="tanh", batch_first=True)
with torch.no_grad():
    for k, (_, w) in enumerate(stack.named_parameters(), start=1):
        w.copy_(torch.linspace(-0.5, 0.5, w.numel()).view_as(w) * k / 4)
waves = torch.sin(torch.arange(40, dtype=torch.float32)).view(2, 5, 4)
seq_out, last_h = stack(waves)
fixed_result = (seq_out.tolist(), last_h.tolist())
