"""A character-level RNN that makes up surnames for a given language, written for these tests in
the way the PyTorch intermediate tutorials commonly write torch code (modelled on the API usage
of the tutorial "Generating Names with a Character-Level RNN", not a copy of it):

- accents stripped with unicodedata; one-hot language / letter tensors filled by item assignment,
  targets as torch.LongTensor, everything wrapped in autograd.Variable;
- a cell of three nn.Linear layers over torch.cat'ed inputs, nn.Dropout and nn.LogSoftmax(dim=1);
- a hand-written SGD step with the deprecated ``p.data.add_(-lr, p.grad.data)`` overload, the
  loss summed step by step into ``0`` with nn.NLLLoss on unsqueeze_'d targets;
- greedy sampling with topk under torch.no_grad() after eval();
- three hand-written steps from sin-valued weights, for the torch comparison.

Small built-in name lists stand in for a download.
"""
import math
import random
import string
import time
import unicodedata

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.autograd import Variable

torch.manual_seed(0)
random.seed(3)

ALPHABET = string.ascii_letters + " .,;'-"
EOS = len(ALPHABET)
N_SYMBOLS = len(ALPHABET) + 1


def plain(text):
    """Drop the accents (the combining marks NFD splits off) and anything not in ALPHABET."""
    parts = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in parts if unicodedata.category(ch) != "Mn" and ch in ALPHABET)


ascii_example = plain("Ó'Nèal")

names_by_language = {
    "Russian": ["Volkov", "Popov", "Kuznetsov", "Morozov", "Orlov", "Belov"],
    "Italian": ["Rossi", "Bianchi", "Ricci", "Marino", "Greco", "Conti"],
    "Czech": ["Novák", "Dvořák", "Černý", "Procházka", "Kučera", "Veselý"],
    "Chinese": ["Li", "Wang", "Liu", "Yang", "Zhao", "Wu"],
}
names_by_language = {lang: [plain(n) for n in names] for lang, names in names_by_language.items()}
languages = list(names_by_language)
print(len(languages), "languages:", languages, "-", ascii_example)


def language_vector(lang):
    v = torch.zeros(1, len(languages))
    v[0][languages.index(lang)] = 1
    return v


def letters_matrix(word):
    m = torch.zeros(len(word), 1, N_SYMBOLS)
    for pos, ch in enumerate(word):
        m[pos][0][ALPHABET.find(ch)] = 1
    return m


def next_letters(word):
    return torch.LongTensor([ALPHABET.find(ch) for ch in word[1:]] + [EOS])


class NameCell(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.n_hidden = n_hidden
        width = len(languages) + n_in + n_hidden
        self.to_hidden = nn.Linear(width, n_hidden)
        self.to_out = nn.Linear(width, n_out)
        self.mix = nn.Linear(n_hidden + n_out, n_out)
        self.drop = nn.Dropout(0.1)
        self.log_probs = nn.LogSoftmax(dim=1)

    def forward(self, lang, letter, hidden):
        joined = torch.cat((lang, letter, hidden), 1)
        new_hidden = self.to_hidden(joined)
        out = self.mix(torch.cat((new_hidden, self.to_out(joined)), 1))
        return self.log_probs(self.drop(out)), new_hidden

    def blank(self):
        return Variable(torch.zeros(1, self.n_hidden))


nll = nn.NLLLoss()
LR = 0.01


def sgd_step(net, lang, letters, targets):
    targets.unsqueeze_(-1)
    h = net.blank()
    net.zero_grad()
    loss = 0
    for pos in range(letters.size()[0]):
        out, h = net(lang, letters[pos], h)
        loss += nll(out, targets[pos])
    loss.backward()
    for p in net.parameters():
        p.data.add_(-LR, p.grad.data)
    return loss.item() / letters.size()[0]


def random_example():
    lang = random.choice(languages)
    name = random.choice(names_by_language[lang])
    return (Variable(language_vector(lang)), Variable(letters_matrix(name)),
            Variable(next_letters(name)))


def elapsed(t0):
    secs = time.time() - t0
    mins = math.floor(secs / 60)
    return f"{mins}m {int(secs - 60 * mins)}s"


model = NameCell(N_SYMBOLS, 128, N_SYMBOLS)
all_losses, window = [], []
t0 = time.time()
for it in range(1, 601):
    window.append(sgd_step(model, *random_example()))
    if it % 50 == 0:
        all_losses.append(sum(window) / len(window))
        window = []
    if it % 200 == 0:
        print(f"{elapsed(t0)}  iteration {it}  loss {all_losses[-1]:.4f}")


def generate(net, lang, first, limit=20):
    with torch.no_grad():
        h = net.blank()
        name, x = first, letters_matrix(first)
        for _ in range(limit):
            out, h = net(language_vector(lang), x[0], h)
            _, top = out.topk(1)
            k = top[0][0]
            if k == EOS:
                break
            name += ALPHABET[k]
            x = letters_matrix(ALPHABET[k])
        return name


model.eval()  # no dropout: greedy sampling is deterministic
sampled = {lang: [generate(model, lang, s) for s in starts]
           for lang, starts in (("Russian", "RUS"), ("Chinese", "CHI"))}
print(sampled, generate(model, "Italian", "B"), generate(model, "Czech", "N"))

# three hand-written steps from fixed weights, for the torch comparison
ref = NameCell(N_SYMBOLS, 16, N_SYMBOLS)
ref.eval()
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 4)
fixed_losses = [sgd_step(ref, Variable(language_vector("Italian")),
                         Variable(letters_matrix("Greco")), Variable(next_letters("Greco")))
                for _ in range(3)]
fixed_weights = {name: p.tolist() for name, p in ref.named_parameters()}
