# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Text classification with nn.EmbeddingBag + offsets and a collate_fn (AG_NEWS-like toy data)."""
import time

import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader
from jitgrad.utils.data.dataset import random_split

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# toy corpus: the label is decided by which "topic words" appear
topics = [["ball", "goal", "team", "match"], ["stock", "market", "price", "bank"],
          ["chip", "software", "robot", "code"], ["war", "vote", "minister", "law"]]
filler = ["the", "a", "of", "in", "on", "today", "new", "says"]
g = torch.Generator().manual_seed(1)


def make_example():
    label = int(torch.randint(0, 4, (1,), generator=g))
    n = int(torch.randint(4, 9, (1,), generator=g))
    words = []
    for _ in range(n):
        if torch.rand(1, generator=g).item() < 0.5:
            words.append(topics[label][int(torch.randint(0, 4, (1,), generator=g))])
        else:
            words.append(filler[int(torch.randint(0, len(filler), (1,), generator=g))])
    return label + 1, " ".join(words)


train_iter = [make_example() for _ in range(240)]
vocab_list = ["<unk>"] + sorted({w for ws in topics for w in ws} | set(filler))
stoi = {w: i for i, w in enumerate(vocab_list)}


def tokenizer(text):
    return text.split()


def vocab(tokens):
    return [stoi.get(t, 0) for t in tokens]


def text_pipeline(x):
    return vocab(tokenizer(x))


def label_pipeline(x):
    return int(x) - 1


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


dataloader = DataLoader(train_iter, batch_size=8, shuffle=False, collate_fn=collate_batch)


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


num_class = len(set([label for (label, text) in train_iter]))
vocab_size = len(vocab_list)
emsize = 16
model = TextClassificationModel(vocab_size, emsize, num_class).to(device)


def train(dataloader):
    model.train()
    total_acc, total_count = 0, 0
    log_interval = 10
    start_time = time.time()
    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        if idx % log_interval == 0 and idx > 0:
            elapsed = time.time() - start_time
            total_acc, total_count = 0, 0
            start_time = time.time()
    return elapsed


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0
    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


EPOCHS = 8
LR = 5
BATCH_SIZE = 8
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
total_accu = None
train_dataset = train_iter[:200]
test_dataset = train_iter[200:]
num_train = int(len(train_dataset) * 0.95)
split_train_, split_valid_ = random_split(
    train_dataset, [num_train, len(train_dataset) - num_train]
)
train_dataloader = DataLoader(split_train_, batch_size=BATCH_SIZE, shuffle=True,
                              collate_fn=collate_batch)
valid_dataloader = DataLoader(split_valid_, batch_size=BATCH_SIZE, shuffle=True,
                              collate_fn=collate_batch)
test_dataloader = DataLoader(test_dataset, batch_size=BATCH_SIZE, shuffle=True,
                             collate_fn=collate_batch)
accuracy_before = evaluate(test_dataloader)
lrs = []
for epoch in range(1, EPOCHS + 1):
    epoch_start_time = time.time()
    train(train_dataloader)
    accu_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    lrs.append(scheduler.get_last_lr()[0])
    print(f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start_time:5.2f}s | "
          f"valid accuracy {accu_val:8.3f} ")
accu_test = evaluate(test_dataloader)
print("test accuracy {:8.3f}".format(accu_test))

ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


prediction = predict("the team scored a goal in the match", text_pipeline)
print("This is a %s news" % ag_news_label[prediction])

# deterministic parts to compare with torch: EmbeddingBag modes with fixed weights
weight = torch.arange(30, dtype=torch.float32).view(10, 3) / 10
bag_input = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
bag_offsets = torch.tensor([0, 4, 4])  # the second bag is empty
bag_results = {}
for mode in ("sum", "mean", "max"):
    bag = nn.EmbeddingBag.from_pretrained(weight, mode=mode, freeze=False)
    bag_results[mode] = bag(bag_input, bag_offsets).tolist()
psw = torch.linspace(0.5, 2.0, 8)
bag = nn.EmbeddingBag.from_pretrained(weight, mode="sum")
bag_results["per_sample_weights"] = bag(bag_input, bag_offsets, per_sample_weights=psw).tolist()
bag_results["2d"] = nn.EmbeddingBag.from_pretrained(weight, mode="mean")(
    bag_input.view(2, 4)).tolist()
bag_results["padding_idx"] = nn.EmbeddingBag.from_pretrained(
    weight, mode="mean", padding_idx=4)(bag_input, bag_offsets).tolist()
bag_results["include_last_offset"] = nn.EmbeddingBag.from_pretrained(
    weight, mode="sum", include_last_offset=True)(bag_input, torch.tensor([0, 3, 8])).tolist()
