"""A bag-of-words language detector (French vs English), written for these tests in the way the
PyTorch NLP tutorials commonly write torch code (modelled on the API usage of the tutorial
"Deep Learning with PyTorch", not a copy of it):

- nn.Linear on an autograd.Variable, checked against ``x @ W.t() + b``;
- F.relu against clamp(min=0); F.softmax / F.log_softmax over dim 0;
- a one-layer log-softmax classifier trained with nn.NLLLoss and optim.SGD, vectors built with
  torch.zeros, item assignment and view(1, -1), targets as torch.LongTensor;
- next(model.parameters()) column reads before and after training;
- a zero-initialised copy of the training, deterministic, for the torch comparison.
"""
import jitgrad as torch
import jitgrad.autograd as autograd
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(7)

# --- a few building blocks first
proj = nn.Linear(4, 6)
x = autograd.Variable(torch.randn(3, 4))
y = proj(x)
print("projected:", y.shape)
affine_ok = torch.allclose(y, x @ proj.weight.t() + proj.bias)

z = autograd.Variable(torch.randn(3, 3))
relu_ok = torch.equal(F.relu(z), z.clamp(min=0))

scores = autograd.Variable(torch.randn(6))
probs = F.softmax(scores, dim=0)
print(probs, F.log_softmax(scores, dim=0))
softmax_sum = probs.sum().item()

# --- the corpus: label 0 is French, label 1 is English
LANGS = {"FRENCH": 0, "ENGLISH": 1}
train_set = [
    ("je ne sais pas ce que tu veux".split(), "FRENCH"),
    ("where is the train station please".split(), "ENGLISH"),
    ("nous allons manger chez toi ce soir".split(), "FRENCH"),
    ("i do not know what you want".split(), "ENGLISH"),
]
eval_set = [
    ("tu veux manger ce soir".split(), "FRENCH"),
    ("what do you know".split(), "ENGLISH"),
]

vocab = {}
for words, _lang in train_set + eval_set:
    for w in words:
        vocab.setdefault(w, len(vocab))


def bag_of_words(words):
    counts = torch.zeros(len(vocab))
    for w in words:
        counts[vocab[w]] += 1
    return counts.view(1, -1)


def label_tensor(lang):
    return torch.LongTensor([LANGS[lang]])


class LanguageDetector(nn.Module):
    def __init__(self, n_words, n_langs):
        super().__init__()
        self.scorer = nn.Linear(n_words, n_langs)

    def forward(self, counts):
        return F.log_softmax(self.scorer(counts), dim=1)


def train(net, epochs=100, lr=0.1):
    criterion = nn.NLLLoss()
    opt = optim.SGD(net.parameters(), lr=lr)
    for _ in range(epochs):
        for words, lang in train_set:
            net.zero_grad()
            out = net(autograd.Variable(bag_of_words(words)))
            criterion(out, autograd.Variable(label_tensor(lang))).backward()
            opt.step()


detector = LanguageDetector(len(vocab), len(LANGS))
probe = vocab["veux"]  # a French word of both sets
word_before = next(detector.parameters())[:, probe].tolist()
train(detector)
word_after = next(detector.parameters())[:, probe].tolist()

with torch.no_grad():
    test_predictions = [detector(bag_of_words(words)).argmax(1).item() for words, _ in eval_set]
print("predicted:", test_predictions, "weights of 'veux':", word_before, "->", word_after)

# the same training from all-zero weights: no randomness, so torch must agree
zeroed = LanguageDetector(len(vocab), len(LANGS))
with torch.no_grad():
    for p in zeroed.parameters():
        p.zero_()
train(zeroed)
fixed_weights = [p.tolist() for p in zeroed.parameters()]
