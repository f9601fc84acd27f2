"""An LSTM part-of-speech tagger, with and without character features, written for these tests in
the way the PyTorch NLP tutorials commonly write torch code (modelled on the API usage of the
tutorial "Sequence Models and Long Short-Term Memory Networks", not a copy of it):

- nn.LSTM fed one step at a time with an explicit (h, c) state, then the whole sequence at once
  (torch.cat + view), the last output equal to h_n;
- a tagger (Embedding -> LSTM -> Linear -> F.log_softmax without ``dim``) that keeps its hidden
  state on the module, inputs as autograd.Variable(torch.LongTensor(...)), nn.NLLLoss, optim.SGD;
- a second tagger that concatenates each word's character-LSTM h_n (torch.stack, torch.cat);
- a run from sin-valued weights written with copy_/view_as, for the torch comparison (losses
  and the last gradients).
"""
import jitgrad as torch
import jitgrad.autograd as autograd
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(2)

# --- the LSTM on its own: 4 steps of 2 features into a 4-unit state
cell = nn.LSTM(2, 4)
steps = [autograd.Variable(torch.randn((1, 2))) for _ in range(4)]
state = (autograd.Variable(torch.randn(1, 1, 4)), autograd.Variable(torch.randn((1, 1, 4))))
for x in steps:
    y, state = cell(x.view(1, 1, -1), state)
stepped = (y, state)

seq = torch.cat(steps).view(len(steps), 1, -1)
y, (h_n, c_n) = cell(seq, (autograd.Variable(torch.zeros(1, 1, 4)),
                           autograd.Variable(torch.zeros((1, 1, 4)))))
whole_sequence = (y.tolist(), h_n.tolist(), c_n.tolist())
last_slice_is_hidden = torch.equal(y[-1], h_n[0])

# --- tagging: 0 determiner, 1 noun, 2 verb
TAGS = {"DET": 0, "NN": 1, "V": 2}
corpus = [
    ("A cat chased the mouse".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("Children like the park".split(), ["NN", "V", "DET", "NN"]),
]
vocab = {}
letters = {}
for words, _ in corpus:
    for w in words:
        vocab.setdefault(w, len(vocab))
        for ch in w:
            letters.setdefault(ch, len(letters))


def to_ids(items, table):
    return autograd.Variable(torch.LongTensor([table[t] for t in items]))


class Tagger(nn.Module):
    def __init__(self, n_words, n_tags, emb=6, hid=6):
        super().__init__()
        self.hid = hid
        self.emb = nn.Embedding(n_words, emb)
        self.rnn = nn.LSTM(emb, hid)
        self.head = nn.Linear(hid, n_tags)
        self.state = self.fresh_state()

    def fresh_state(self):
        # (num_layers, batch, hidden)
        return (autograd.Variable(torch.zeros(1, 1, self.hid)),
                autograd.Variable(torch.zeros(1, 1, self.hid)))

    def forward(self, ids):
        n = len(ids)
        out, self.state = self.rnn(self.emb(ids).view(n, 1, -1), self.state)
        return F.log_softmax(self.head(out.view(n, -1)))


def fit(net, epochs, opt, record):
    nll = nn.NLLLoss()
    for _ in range(epochs):
        for words, tags in corpus:
            net.zero_grad()
            net.state = net.fresh_state()
            loss = nll(net(to_ids(words, vocab)), to_ids(tags, TAGS))
            loss.backward()
            opt.step()
            record.append(loss.item())


tagger = Tagger(len(vocab), len(TAGS))
scores_before = tagger(to_ids(corpus[0][0], vocab)).tolist()
losses = []
fit(tagger, 300, optim.SGD(tagger.parameters(), lr=0.1), losses)
tagger.state = tagger.fresh_state()  # (a sentence starts from a zero state, as in training)
scores = tagger(to_ids(corpus[0][0], vocab))
scores_after = scores.tolist()
predicted_tags = scores.argmax(1).tolist()
print("tags of the first sentence:", predicted_tags)


# --- words plus their spelling
class SpellingTagger(nn.Module):
    def __init__(self, n_words, n_letters, n_tags, emb=6, letter_emb=3, letter_hid=3, hid=6):
        super().__init__()
        self.emb = nn.Embedding(n_words, emb)
        self.letter_emb = nn.Embedding(n_letters, letter_emb)
        self.speller = nn.LSTM(letter_emb, letter_hid)
        self.rnn = nn.LSTM(emb + letter_hid, hid)
        self.head = nn.Linear(hid, n_tags)

    def spell(self, word):
        chars = self.letter_emb(to_ids(word, letters)).view(len(word), 1, -1)
        _, (h_last, _) = self.speller(chars)
        return h_last.view(-1)

    def forward(self, ids, words):
        feats = torch.cat([self.emb(ids), torch.stack([self.spell(w) for w in words])], dim=1)
        out, _ = self.rnn(feats.view(len(words), 1, -1))
        return F.log_softmax(self.head(out.view(len(words), -1)), dim=1)


speller = SpellingTagger(len(vocab), len(letters), len(TAGS))
sgd = optim.SGD(speller.parameters(), lr=0.1)
nll = nn.NLLLoss()
char_losses = []
for _ in range(300):
    epoch = []
    for words, tags in corpus:
        speller.zero_grad()
        loss = nll(speller(to_ids(words, vocab), words), to_ids(tags, TAGS))
        loss.backward()
        sgd.step()
        epoch.append(loss.item())
    char_losses.append(sum(epoch) / len(epoch))
with torch.no_grad():
    char_predicted = [speller(to_ids(w, vocab), w).argmax(1).tolist() for w, _ in corpus]
print("spelling tagger:", char_losses[0], "->", char_losses[-1], char_predicted)

# --- deterministic weights for the torch comparison
ref = Tagger(len(vocab), len(TAGS))
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 2)
fixed_losses = []
fit(ref, 20, optim.SGD(ref.parameters(), lr=0.1), fixed_losses)
fixed_grads = {name: p.grad.tolist() for name, p in ref.named_parameters()}
