"""A bidirectional-LSTM + CRF entity tagger, written for these tests in the way the PyTorch NLP
tutorials commonly write torch code (modelled on the API usage of the tutorial "Advanced: Making
Dynamic Decisions and the Bi-LSTM CRF", not a copy of it):

- emissions from nn.Embedding + a bidirectional nn.LSTM (random (h0, c0) by torch.randn) +
  nn.Linear; an nn.Parameter transition matrix whose rows/columns are set through ``.data``;
- the CRF partition function by the forward algorithm, tag by tag, with a hand-written
  log-sum-exp (torch.max(v, 1), view/expand, torch.log(torch.sum(torch.exp(...)))),
  torch.full start vectors, torch.cat of view(1) pieces;
- the gold path's score indexed by tag tensors, Viterbi decoding with back-pointers;
- training the NLL with optim.SGD(weight_decay=...), then a structured-perceptron loss;
- the NLL, its gradients and a decoding under cos-valued weights, for the torch comparison.
"""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.optim as optim

torch.manual_seed(4)

BEGIN, END = "<s>", "</s>"
LABELS = {"B": 0, "I": 1, "O": 2, BEGIN: 3, END: 4}
NEG = -10000.

sentences = [
    ("yesterday the city of new york opened a museum near central park".split(),
     "O O O O B I O O O O B I".split()),
    ("mount everest lies in nepal".split(), "B I O O B".split()),
]
vocab = {}
for words, _ in sentences:
    for w in words:
        vocab.setdefault(w, len(vocab))


def ids(items, table):
    return torch.tensor([table[t] for t in items], dtype=torch.long)


def as_float(t):
    return t.view(-1).data.tolist()[0]


def best_index(row):
    _, where = torch.max(row, 1)
    return where.item()


def stable_lse(row):
    """log(sum(exp(row))) of a (1, n) row, shifted by its largest entry."""
    top = row[0, best_index(row)]
    shifted = row - top.view(1, -1).expand(1, row.size()[1])
    return top + torch.log(torch.sum(torch.exp(shifted)))


class CRFTagger(nn.Module):
    def __init__(self, n_words, labels, emb=5, hid=4):
        super().__init__()
        self.labels = labels
        self.n = len(labels)
        self.half = hid // 2
        self.embed = nn.Embedding(n_words, emb)
        self.encoder = nn.LSTM(emb, self.half, num_layers=1, bidirectional=True)
        self.emit = nn.Linear(hid, self.n)
        # trans[to, from]: nothing moves into BEGIN, nothing leaves END
        self.trans = nn.Parameter(torch.randn(self.n, self.n))
        self.trans.data[labels[BEGIN], :] = NEG
        self.trans.data[:, labels[END]] = NEG

    def initial_state(self):
        return torch.randn(2, 1, self.half), torch.randn(2, 1, self.half)

    def emissions(self, word_ids):
        n = len(word_ids)
        out, _ = self.encoder(self.embed(word_ids).view(n, 1, -1), self.initial_state())
        return self.emit(out.view(n, 2 * self.half))

    def start_row(self):
        row = torch.full((1, self.n), NEG)
        row[0][self.labels[BEGIN]] = 0.
        return row

    def log_partition(self, em):
        alpha = self.start_row()
        for scores in em:
            nxt = []
            for j in range(self.n):
                cand = alpha + self.trans[j].view(1, -1) + scores[j].view(1, -1).expand(1, self.n)
                nxt.append(stable_lse(cand).view(1))
            alpha = torch.cat(nxt).view(1, -1)
        return stable_lse(alpha + self.trans[self.labels[END]])

    def path_score(self, em, tags):
        path = torch.cat([torch.tensor([self.labels[BEGIN]], dtype=torch.long), tags])
        total = torch.zeros(1)
        for t, scores in enumerate(em):
            total = total + self.trans[path[t + 1], path[t]] + scores[path[t + 1]]
        return total + self.trans[self.labels[END], path[-1]]

    def viterbi(self, em):
        delta = self.start_row()
        pointers = []
        for scores in em:
            here, best = [], []
            for j in range(self.n):
                cand = delta + self.trans[j]
                k = best_index(cand)
                best.append(k)
                here.append(cand[0][k].view(1))
            delta = (torch.cat(here) + scores).view(1, -1)
            pointers.append(best)
        final = delta + self.trans[self.labels[END]]
        k = best_index(final)
        score = final[0][k]
        path = [k]
        for best in pointers[::-1]:
            k = best[k]
            path.append(k)
        assert path.pop() == self.labels[BEGIN]
        return score, path[::-1]

    def nll(self, word_ids, tags):
        em = self.emissions(word_ids)
        return self.log_partition(em) - self.path_score(em, tags)

    def forward(self, word_ids):
        return self.viterbi(self.emissions(word_ids))


crf = CRFTagger(len(vocab), LABELS)
opt = optim.SGD(crf.parameters(), lr=0.05, weight_decay=1e-4)
with torch.no_grad():
    print("before:", crf(ids(sentences[0][0], vocab)))

nll_per_epoch = []
for _ in range(60):
    epoch = 0.0
    for words, tags in sentences:
        crf.zero_grad()
        loss = crf.nll(ids(words, vocab), ids(tags, LABELS))
        loss.backward()
        opt.step()
        epoch += as_float(loss)
    nll_per_epoch.append(epoch)

with torch.no_grad():
    decoded_after = [crf(ids(words, vocab))[1] for words, _ in sentences]
gold = [[LABELS[t] for t in tags] for _, tags in sentences]
print("after:", decoded_after, "gold:", gold)

# structured perceptron: the best path's score above the gold one's
torch.manual_seed(6)
perc = CRFTagger(len(vocab), LABELS)
opt = optim.SGD(perc.parameters(), lr=0.01)
perceptron_losses = []
for _ in range(40):
    epoch = 0.0
    for words, tags in sentences:
        perc.zero_grad()
        em = perc.emissions(ids(words, vocab))
        margin = perc.viterbi(em)[0] - perc.path_score(em, ids(tags, LABELS))
        margin.backward()
        opt.step()
        epoch += margin.item()
    perceptron_losses.append(epoch)
print("perceptron:", perceptron_losses[0], "->", perceptron_losses[-1])

# fixed weights and state, for the torch comparison
ref = CRFTagger(len(vocab), LABELS)
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=2):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p))
ref.initial_state = lambda: (torch.full((2, 1, 2), 0.1), torch.full((2, 1, 2), -0.2))
ref_nll = ref.nll(ids(sentences[1][0], vocab), ids(sentences[1][1], LABELS))
ref_nll.backward()
fixed_result = {"nll": ref_nll.item(), **{k: p.grad.tolist() for k, p in ref.named_parameters()}}
with torch.no_grad():
    fixed_score, fixed_path = ref(ids(sentences[0][0], vocab))
