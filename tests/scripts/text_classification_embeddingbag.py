"""Headline topic classification with ``nn.EmbeddingBag``, written for these tests in the way
PyTorch's "Text classification with the torchtext library" tutorial is commonly written
(modelled on the API usage of that tutorial, not a copy of it; no torchtext: a tiny word
index stands in for its vocab):

- a generated corpus (``torch.Generator`` draws), a ``collate_fn`` that concatenates token ids
  and builds ``offsets`` with ``cumsum``, ``DataLoader`` over a plain list
- ``nn.EmbeddingBag(sparse=False)`` + ``nn.Linear`` initialised with ``uniform_``/``zero_``,
  ``CrossEntropyLoss``, SGD with a large LR, ``clip_grad_norm_``, ``StepLR`` stepped when the
  validation accuracy drops, ``get_last_lr``, ``random_split`` by counts
- ``EmbeddingBag.from_pretrained`` modes (sum, mean, max), ``per_sample_weights``, 2-d input,
  ``padding_idx``, ``include_last_offset`` (compared with torch)
"""
import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader
from jitgrad.utils.data.dataset import random_split

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

TOPIC_WORDS = [["pitch", "coach", "league", "score"],  # label 1: sport
               ["shares", "profit", "trade", "fund"],  # 2: business
               ["laptop", "app", "server", "data"],  # 3: tech
               ["election", "senate", "treaty", "policy"]]  # 4: politics
COMMON = ["the", "a", "for", "at", "after", "big", "late", "report"]
rng = torch.Generator().manual_seed(1)


def pick(words):
    return words[int(torch.randint(0, len(words), (1,), generator=rng))]


def headline():
    """(label 1..4, text): 4 to 8 words, each a topic word with probability 1/2."""
    topic = int(torch.randint(0, 4, (1,), generator=rng))
    length = int(torch.randint(4, 9, (1,), generator=rng))
    words = [pick(TOPIC_WORDS[topic]) if torch.rand(1, generator=rng).item() < 0.5
             else pick(COMMON) for _ in range(length)]
    return topic + 1, " ".join(words)


corpus = [headline() for _ in range(240)]
index = {w: i for i, w in enumerate(["<unk>", *sorted({*sum(TOPIC_WORDS, []), *COMMON})])}


def encode(text):
    return [index.get(w, 0) for w in text.split()]


def to_bags(samples):
    """A batch as (labels 0..3, all token ids, start offset of each sample)."""
    labels = torch.tensor([lab - 1 for lab, _ in samples], dtype=torch.int64)
    pieces = [torch.tensor(encode(text), dtype=torch.int64) for _, text in samples]
    starts = torch.tensor([0] + [p.size(0) for p in pieces[:-1]]).cumsum(dim=0)
    return labels.to(device), torch.cat(pieces).to(device), starts.to(device)


class BagOfWords(nn.Module):
    def __init__(self, n_words, dim, n_labels):
        super().__init__()
        self.bag = nn.EmbeddingBag(n_words, dim, sparse=False)
        self.classify = nn.Linear(dim, n_labels)
        for w in (self.bag.weight, self.classify.weight):
            w.data.uniform_(-0.5, 0.5)
        self.classify.bias.data.zero_()

    def forward(self, ids, starts):
        return self.classify(self.bag(ids, starts))


model = BagOfWords(len(index), 16, len({lab for lab, _ in corpus})).to(device)
ce = torch.nn.CrossEntropyLoss()
sgd = torch.optim.SGD(model.parameters(), lr=5)
decay = torch.optim.lr_scheduler.StepLR(sgd, 1.0, gamma=0.1)


def accuracy(loader):
    model.eval()
    right = seen = 0
    with torch.no_grad():
        for labels, ids, starts in loader:
            right += (model(ids, starts).argmax(1) == labels).sum().item()
            seen += labels.size(0)
    return right / seen


def train_epoch(loader):
    model.train()
    for labels, ids, starts in loader:
        sgd.zero_grad()
        ce(model(ids, starts), labels).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        sgd.step()


train_part, valid_part = random_split(corpus[:200], [190, 10])
loaders = [DataLoader(part, batch_size=8, shuffle=True, collate_fn=to_bags)
           for part in (train_part, valid_part, corpus[200:])]
train_loader, valid_loader, test_loader = loaders
accuracy_before = accuracy(test_loader)
best_valid = None
for epoch in range(8):
    train_epoch(train_loader)
    valid_acc = accuracy(valid_loader)
    if best_valid is not None and valid_acc < best_valid:
        decay.step()  # validation got worse: lower the LR tenfold
    else:
        best_valid = valid_acc
    print(f"epoch {epoch}: valid accuracy {valid_acc:.2f}, lr {decay.get_last_lr()[0]}")
accu_test = accuracy(test_loader)
print(f"test accuracy {accu_test:.3f} (before training {accuracy_before:.3f})")

with torch.no_grad():
    scores = model(torch.tensor(encode("the coach praised the league score")), torch.tensor([0]))
prediction = scores.argmax(1).item() + 1
print("predicted topic label:", prediction)

# EmbeddingBag variants on a fixed table (compared with torch)
table = torch.arange(30, dtype=torch.float32).view(10, 3) / 10
ids = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
starts = torch.tensor([0, 5, 5])  # three bags, the middle one empty
bag_results = {mode: nn.EmbeddingBag.from_pretrained(table, mode=mode, freeze=False)(
    ids, starts).tolist() for mode in ("sum", "mean", "max")}
summing = nn.EmbeddingBag.from_pretrained(table, mode="sum")
bag_results["per_sample_weights"] = summing(ids, starts,
                                            per_sample_weights=torch.linspace(0.5, 2.0, 8)).tolist()
bag_results["2d"] = nn.EmbeddingBag.from_pretrained(table, mode="mean")(ids.view(4, 2)).tolist()
bag_results["padding_idx"] = nn.EmbeddingBag.from_pretrained(table, mode="mean", padding_idx=1)(
    ids, starts).tolist()
bag_results["include_last_offset"] = nn.EmbeddingBag.from_pretrained(
    table, mode="sum", include_last_offset=True)(ids, torch.tensor([0, 2, 8])).tolist()
