# ruff: noqa: B007, E402, E501, E731, F841, N801, N802, N803, N806, UP004, UP006, UP008, UP031, UP032, UP035
# (tutorial code as is)
"""pytorch/tutorials beginner_source/transformer_tutorial.py: language modeling with
nn.TransformerEncoder (sequence-first, sinusoidal PositionalEncoding as a buffer), batchify and
get_batch over bptt chunks, SGD at lr 5.0 with clip_grad_norm_ and StepLR(step_size=1.0),
the best model's state_dict saved to a TemporaryDirectory and loaded back.

WikiText-2 and torchtext are downloads: a tiny corpus of generated sentences, torchtext's
basic_english tokenizer (written out) and a vocabulary built the same way stand in for them;
the model is smaller (emsize 32)."""
import math
import os
import random
import re
from tempfile import TemporaryDirectory
from typing import Tuple

import jitgrad as torch
from jitgrad import nn, Tensor
from jitgrad.nn import TransformerEncoder, TransformerEncoderLayer
from jitgrad.utils.data import dataset

torch.manual_seed(0)
random.seed(0)


class TransformerModel(nn.Module):

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int,
                 nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


# ---- torchtext's WikiText2, basic_english tokenizer and vocab, stood in for ----
SUBJECTS = ["the cat", "a dog", "the model", "my friend", "the teacher"]
VERBS = ["sees", "likes", "trains", "reads", "finds"]
OBJECTS = ["the ball", "a book", "the data", "an apple", "the garden"]


def WikiText2(split=None):
    def lines(n, seed):
        rng = random.Random(seed)
        return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} ." for _ in range(n)]
    splits = {'train': lines(2000, 1), 'valid': lines(200, 2), 'test': lines(200, 3)}
    return splits[split] if split else (splits['train'], splits['valid'], splits['test'])


def get_tokenizer(name):
    assert name == 'basic_english'
    return lambda line: re.sub(r"([.,!?'])", r" \1 ", line.lower()).split()


def build_vocab_from_iterator(iterator, specials):
    itos = list(specials) + sorted({tok for tokens in iterator for tok in tokens})
    stoi = {t: i for i, t in enumerate(itos)}

    class Vocab:
        default = None

        def __len__(self):
            return len(itos)

        def __getitem__(self, token):
            return stoi.get(token, self.default)

        def __call__(self, tokens):
            return [stoi.get(t, self.default) for t in tokens]

        def set_default_index(self, index):
            self.default = index
    return Vocab()


train_iter = WikiText2(split='train')
tokenizer = get_tokenizer('basic_english')
vocab = build_vocab_from_iterator(map(tokenizer, train_iter), specials=['<unk>'])
vocab.set_default_index(vocab['<unk>'])


def data_process(raw_text_iter: dataset.IterableDataset) -> Tensor:
    """Converts raw text into a flat Tensor."""
    data = [torch.tensor(vocab(tokenizer(item)), dtype=torch.long) for item in raw_text_iter]
    return torch.cat(tuple(filter(lambda t: t.numel() > 0, data)))


# ``train_iter`` was "consumed" by the process of building the vocab,
# so we have to create it again
train_iter, val_iter, test_iter = WikiText2()
train_data = data_process(train_iter)
val_data = data_process(val_iter)
test_data = data_process(test_iter)

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


def batchify(data: Tensor, bsz: int) -> Tensor:
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


batch_size = 20
eval_batch_size = 10
train_data = batchify(train_data, batch_size)  # shape ``[seq_len, batch_size]``
val_data = batchify(val_data, eval_batch_size)
test_data = batchify(test_data, eval_batch_size)

bptt = 35


def get_batch(source: Tensor, i: int) -> Tuple[Tensor, Tensor]:
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].reshape(-1)
    return data, target


ntokens = len(vocab)  # size of vocabulary
emsize = 32  # embedding dimension (200 in the tutorial)
d_hid = 32  # dimension of the feedforward network model in ``nn.TransformerEncoder``
nlayers = 2  # number of ``nn.TransformerEncoderLayer`` in ``nn.TransformerEncoder``
nhead = 2  # number of heads in ``nn.MultiheadAttention``
dropout = 0.2  # dropout probability
model = TransformerModel(ntokens, emsize, nhead, d_hid, nlayers, dropout).to(device)

import time

criterion = nn.CrossEntropyLoss()
lr = 5.0  # learning rate
optimizer = torch.optim.SGD(model.parameters(), lr=lr)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
train_losses = []


def train(model: nn.Module) -> None:
    model.train()  # turn on train mode
    total_loss = 0.
    log_interval = 10  # (200 in the tutorial)
    start_time = time.time()

    num_batches = len(train_data) // bptt
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        output = model(data)
        output_flat = output.view(-1, ntokens)
        loss = criterion(output_flat, targets)

        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()

        total_loss += loss.item()
        train_losses.append(loss.item())
        if batch % log_interval == 0 and batch > 0:
            lr = scheduler.get_last_lr()[0]
            ms_per_batch = (time.time() - start_time) * 1000 / log_interval
            cur_loss = total_loss / log_interval
            ppl = math.exp(cur_loss)
            print(f'| epoch {epoch:3d} | {batch:5d}/{num_batches:5d} batches | '
                  f'lr {lr:02.2f} | ms/batch {ms_per_batch:5.2f} | '
                  f'loss {cur_loss:5.2f} | ppl {ppl:8.2f}')
            total_loss = 0
            start_time = time.time()


def evaluate(model: nn.Module, eval_data: Tensor) -> float:
    model.eval()  # turn on evaluation mode
    total_loss = 0.
    with torch.no_grad():
        for i in range(0, eval_data.size(0) - 1, bptt):
            data, targets = get_batch(eval_data, i)
            seq_len = data.size(0)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            total_loss += seq_len * criterion(output_flat, targets).item()
    return total_loss / (len(eval_data) - 1)


best_val_loss = float('inf')
epochs = 3
val_losses, lrs = [], []

with TemporaryDirectory() as tempdir:
    best_model_params_path = os.path.join(tempdir, "best_model_params.pt")

    for epoch in range(1, epochs + 1):
        epoch_start_time = time.time()
        train(model)
        val_loss = evaluate(model, val_data)
        val_ppl = math.exp(val_loss)
        elapsed = time.time() - epoch_start_time
        print('-' * 89)
        print(f'| end of epoch {epoch:3d} | time: {elapsed:5.2f}s | '
              f'valid loss {val_loss:5.2f} | valid ppl {val_ppl:8.2f}')
        print('-' * 89)
        val_losses.append(val_loss)

        if val_loss < best_val_loss:
            best_val_loss = val_loss
            torch.save(model.state_dict(), best_model_params_path)

        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    model.load_state_dict(torch.load(best_model_params_path))  # load best model states

test_loss = evaluate(model, test_data)
test_ppl = math.exp(test_loss)
print('=' * 89)
print(f'| End of training | test loss {test_loss:5.2f} | '
      f'test ppl {test_ppl:8.2f}')
print('=' * 89)

# a deterministic part to compare with torch: the model in eval mode with fixed weights, on the
# first test batch, and the gradients of its loss
fixed = TransformerModel(ntokens, 16, 2, 24, 2, 0.0)
with torch.no_grad():
    for k, (name, p) in enumerate(fixed.named_parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
fixed.eval()
data, targets = get_batch(test_data, 0)
fixed_loss = criterion(fixed(data[:12]).view(-1, ntokens), get_batch(test_data, 0)[0][1:13].reshape(-1))
fixed_loss.backward()
fixed_result = {"loss": fixed_loss.item(), "data": data.tolist(),
                **{n: p.grad.tolist() for n, p in fixed.named_parameters()}}
