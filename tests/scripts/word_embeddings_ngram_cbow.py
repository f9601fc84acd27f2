"""Word embeddings learnt by a trigram language model and by a CBOW model, written for these tests
in the way the PyTorch NLP tutorials commonly write torch code (modelled on the API usage of the
tutorial "Word Embeddings: Encoding Lexical Semantics", not a copy of it):

- an nn.Embedding lookup of a torch.LongTensor wrapped in autograd.Variable;
- a trigram model (Embedding -> view((1, -1)) -> Linear -> relu -> Linear -> log_softmax) trained
  with nn.NLLLoss and optim.SGD, the epoch loss summed into torch.Tensor([0]) with ``+= loss.data``;
- a continuous bag-of-words model (embeddings summed with sum(dim=0, keepdim=True));
- a CBOW run from sin/cos weights written with copy_, SGD with momentum, for the torch comparison.
"""
import jitgrad as torch
import jitgrad.autograd as autograd
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(3)

# --- a two-word lookup table
greeting = {"hello": 0, "world": 1}
table = nn.Embedding(2, 5)
row = table(autograd.Variable(torch.LongTensor([greeting["hello"]])))
hello_is_row_0 = torch.equal(row[0], table.weight[0])

DIM = 10

# --- trigram language model on a short text of our own
story = """the old lighthouse keeper climbed the winding stairs every night and lit the lamp
so that the fishing boats could find their way home through the fog. in the morning he wrote
the weather in his book and fed the gulls that waited on the rail. one winter the storm broke
the glass of the lamp and the keeper carried a lantern up the stairs instead. the boats saw the
small light and came home safe, and the village brought him bread and a new glass in the spring.
he kept the old glass on his table to remember the beauty of that night.""".split()

vocab = sorted(set(story))
index = {w: i for i, w in enumerate(vocab)}
examples = [((story[k - 2], story[k - 1]), story[k]) for k in range(2, len(story))]


class TrigramLM(nn.Module):
    def __init__(self, n_words, dim, context=2, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(n_words, dim)
        self.hidden = nn.Linear(context * dim, hidden)
        self.out = nn.Linear(hidden, n_words)

    def forward(self, ids):
        h = F.relu(self.hidden(self.embed(ids).view((1, -1))))
        return F.log_softmax(self.out(h), dim=1)


def as_ids(words):
    return autograd.Variable(torch.LongTensor([index[w] for w in words]))


nll = nn.NLLLoss()
lm = TrigramLM(len(vocab), DIM)
sgd = optim.SGD(lm.parameters(), lr=0.001)
epoch_totals = []
for _ in range(10):
    running = torch.Tensor([0])
    for (w1, w2), nxt in examples:
        lm.zero_grad()
        loss = nll(lm(as_ids([w1, w2])), autograd.Variable(torch.LongTensor([index[nxt]])))
        loss.backward()
        sgd.step()
        running += loss.data
    epoch_totals.append(running)
ngram_losses = [t.item() for t in epoch_totals]
print("trigram epoch losses:", ngram_losses)
beauty_embedding_shape = tuple(lm.embed.weight[index["beauty"]].shape)

# --- CBOW: predict a word from the two words on each side
text = """a recipe is a list of steps that turns simple things into a meal.
the cook reads each step and changes the food a little at a time.
good cooks repeat the steps they trust and change the steps that fail.
in the end a recipe is a small program that people run with their hands.""".split()
words = sorted(set(text))
word_id = {w: i for i, w in enumerate(words)}
id_word = dict(enumerate(words))
windows = [([text[k - 2], text[k - 1], text[k + 1], text[k + 2]], text[k])
           for k in range(2, len(text) - 2)]


class CBOW(nn.Module):
    def __init__(self, n_words, dim):
        super().__init__()
        self.embed = nn.Embedding(n_words, dim)
        self.proj = nn.Linear(dim, n_words)

    def forward(self, ids):
        bag = self.embed(ids).sum(dim=0, keepdim=True)
        return F.log_softmax(self.proj(bag), dim=1)


def context_ids(ctx):
    return autograd.Variable(torch.LongTensor([word_id[w] for w in ctx]))


def cbow_epoch(net, opt):
    seen = []
    for ctx, centre in windows:
        net.zero_grad()
        loss = nll(net(context_ids(ctx)), torch.LongTensor([word_id[centre]]))
        loss.backward()
        opt.step()
        seen.append(loss.item())
    return seen


cbow = CBOW(len(words), DIM)
opt = optim.SGD(cbow.parameters(), lr=0.05)
cbow_losses = [sum(cbow_epoch(cbow, opt)) / len(windows) for _ in range(30)]
with torch.no_grad():
    hits = [id_word[cbow(context_ids(ctx)).argmax(1).item()] == centre for ctx, centre in windows]
cbow_accuracy = sum(hits) / len(hits)
print("CBOW:", cbow_losses[0], "->", cbow_losses[-1], "accuracy", cbow_accuracy)

# --- deterministic CBOW for the comparison with torch
det = CBOW(len(words), DIM)
n = len(words) * DIM
with torch.no_grad():
    det.embed.weight.copy_(torch.sin(torch.arange(n, dtype=torch.float32)).view(len(words), -1))
    det.proj.weight.copy_(torch.cos(torch.arange(n, dtype=torch.float32)).view(len(words), -1) / 3)
    det.proj.bias.zero_()
det_opt = optim.SGD(det.parameters(), lr=0.05, momentum=0.9)
fixed_losses = []
for _ in range(3):
    fixed_losses += cbow_epoch(det, det_opt)
