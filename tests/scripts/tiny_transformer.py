"""A next-token model over a cyclic token stream with ``nn.TransformerEncoder``, written for
these tests in the way PyTorch's "Language modeling with nn.Transformer" tutorial is commonly
written (modelled on the API usage of that tutorial, not a copy of it):

- sinusoidal positions in a ``register_buffer`` (strided slice assignment), ``nn.Dropout(p=)``
- ``TransformerEncoderLayer``/``TransformerEncoder`` in the (seq, batch, dim) layout with
  ``nn.Transformer.generate_square_subsequent_mask``; ``nn.Embedding`` scaled by sqrt(d)
- streams cut into columns (``view(...).t().contiguous()``), bptt windows, SGD with
  ``clip_grad_norm_`` and ``StepLR``/``get_last_lr``, the best state_dict saved and reloaded
- a fixed-weight ``batch_first``/``norm_first`` encoder with ``is_causal`` and a key padding
  mask (``enable_nested_tensor=False``), compared with torch
"""
import math
import os
from tempfile import TemporaryDirectory

import jitgrad as torch
from jitgrad import Tensor, nn
from jitgrad.nn import TransformerEncoder, TransformerEncoderLayer

torch.manual_seed(0)
device = torch.device('cpu')


class SinusoidalPositions(nn.Module):
    """Adds sin/cos position codes (even/odd features) to a (seq, batch, dim) input."""

    def __init__(self, dim: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.drop = nn.Dropout(p=dropout)
        pos = torch.arange(max_len).unsqueeze(1)
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2) / dim)
        table = torch.zeros(max_len, 1, dim)
        table[:, 0, 0::2] = torch.sin(pos * freq)
        table[:, 0, 1::2] = torch.cos(pos * freq)
        self.register_buffer('pe', table)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(x + self.pe[:x.size(0)])


class NextToken(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, ff: int, layers: int,
                 dropout: float = 0.5):
        super().__init__()
        self.dim = dim
        self.tok = nn.Embedding(vocab, dim)
        self.pos = SinusoidalPositions(dim, dropout)
        self.body = TransformerEncoder(TransformerEncoderLayer(dim, heads, ff, dropout), layers)
        self.head = nn.Linear(dim, vocab)
        for w in (self.tok.weight, self.head.weight):
            w.data.uniform_(-0.1, 0.1)
        self.head.bias.data.zero_()

    def forward(self, ids: Tensor, causal: Tensor = None) -> Tensor:
        """ids (seq, batch) -> logits (seq, batch, vocab)."""
        if causal is None:
            causal = nn.Transformer.generate_square_subsequent_mask(len(ids)).to(device)
        h = self.pos(self.tok(ids) * math.sqrt(self.dim))
        return self.head(self.body(h, causal))


VOCAB = 11
cycle = torch.tensor([4, 9, 1, 7, 3, 10, 2, 8, 5, 6])  # each token has one successor


def columns(stream: Tensor, n_cols: int) -> Tensor:
    """Cut a 1-d stream into n_cols equal pieces, side by side: (rows, n_cols)."""
    rows = stream.size(0) // n_cols
    return stream[:rows * n_cols].view(n_cols, rows).t().contiguous().to(device)


train_cols = columns(cycle.repeat(40), 8)
val_cols = columns(cycle.roll(3).repeat(8), 4)
WINDOW = 7


def window(cols: Tensor, start: int):
    n = min(WINDOW, len(cols) - 1 - start)
    return cols[start:start + n], cols[start + 1:start + 1 + n].reshape(-1)


model = NextToken(VOCAB, dim=32, heads=2, ff=64, layers=2, dropout=0.1).to(device)
xent = nn.CrossEntropyLoss()
sgd = torch.optim.SGD(model.parameters(), lr=0.5)
decay = torch.optim.lr_scheduler.StepLR(sgd, 1.0, gamma=0.95)


def train_epoch() -> float:
    model.train()
    losses = []
    for start in range(0, train_cols.size(0) - 1, WINDOW):
        ids, nxt = window(train_cols, start)
        loss = xent(model(ids).view(-1, VOCAB), nxt)
        sgd.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        sgd.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def val_loss() -> float:
    """The mean next-token loss over the validation stream (weighted by window length)."""
    model.eval()
    summed = 0.0
    with torch.no_grad():
        for start in range(0, val_cols.size(0) - 1, WINDOW):
            ids, nxt = window(val_cols, start)
            summed += len(ids) * xent(model(ids).view(-1, VOCAB), nxt).item()
    return summed / (len(val_cols) - 1)


val_losses = []
best_val_loss = math.inf
with TemporaryDirectory() as tmp:
    best_file = os.path.join(tmp, "best.pt")
    for epoch in range(6):
        train_loss = train_epoch()
        val_losses.append(val_loss())
        print(f"epoch {epoch}: train {train_loss:.3f}, valid {val_losses[-1]:.3f} "
              f"(ppl {math.exp(val_losses[-1]):.2f}), lr {decay.get_last_lr()[0]:.4f}")
        if val_losses[-1] < best_val_loss:
            best_val_loss = val_losses[-1]
            torch.save(model.state_dict(), best_file)
        decay.step()
    model.load_state_dict(torch.load(best_file))
reloaded_val_loss = val_loss()
print("best", best_val_loss, "after reloading", reloaded_val_loss)

# the mask, a few position rows and a formula-weight encoder (compared with torch)
mask = nn.Transformer.generate_square_subsequent_mask(4)
pe_rows = SinusoidalPositions(6, dropout=0.0, max_len=5).pe[:, 0].tolist()
encoder = TransformerEncoder(TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                     norm_first=True),
                             2, enable_nested_tensor=False)
with torch.no_grad():
    for k, w in enumerate(encoder.parameters()):
        w.copy_(0.3 * torch.cos(0.7 * torch.arange(w.numel(), dtype=torch.float32) + k).view_as(w))
encoder.eval()
x = torch.sin(torch.arange(80, dtype=torch.float32)).view(2, 5, 8)
padding = torch.tensor([[False] * 4 + [True], [False] * 5])  # the first sequence's last slot
fixed_out = encoder(x, mask=nn.Transformer.generate_square_subsequent_mask(5), is_causal=True,
                    src_key_padding_mask=padding).tolist()
