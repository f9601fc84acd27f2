# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Language modeling with nn.TransformerEncoder: positional encoding, square subsequent masks."""
import math
import os
from tempfile import TemporaryDirectory

import jitgrad as torch
from jitgrad import Tensor, nn
from jitgrad.nn import TransformerEncoder, TransformerEncoderLayer

torch.manual_seed(0)
device = torch.device('cpu')


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
        """
        Arguments:
            src: Tensor, shape ``[seq_len, batch_size]``
            src_mask: Tensor, shape ``[seq_len, seq_len]``

        Returns:
            output Tensor of shape ``[seq_len, batch_size, ntoken]``
        """
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(device)
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
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


# a toy corpus: a repeating token pattern the model can learn
ntokens = 11
pattern = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
train_data_flat = pattern.repeat(40)
val_data_flat = pattern.roll(3).repeat(8)


def batchify(data: Tensor, bsz: int) -> Tensor:
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


batch_size = 8
eval_batch_size = 4
train_data = batchify(train_data_flat, batch_size)  # shape ``[seq_len, batch_size]``
val_data = batchify(val_data_flat, eval_batch_size)
bptt = 7


def get_batch(source: Tensor, i: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


emsize = 32
d_hid = 64
nlayers = 2
nhead = 2
dropout = 0.1
model = TransformerModel(ntokens, emsize, nhead, d_hid, nlayers, dropout).to(device)

criterion = nn.CrossEntropyLoss()
lr = 0.5  # learning rate
optimizer = torch.optim.SGD(model.parameters(), lr=lr)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)


def train(model: nn.Module) -> None:
    model.train()  # turn on train mode
    total_loss = 0.
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
    return total_loss / num_batches


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
epochs = 6
val_losses = []
with TemporaryDirectory() as tempdir:
    best_model_params_path = os.path.join(tempdir, "best_model_params.pt")
    for epoch in range(1, epochs + 1):
        train(model)
        val_loss = evaluate(model, val_data)
        val_losses.append(val_loss)
        ppl = math.exp(val_loss)
        print(f'| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | '
              f'valid ppl {ppl:8.2f} | lr {scheduler.get_last_lr()[0]:.3f}')
        if val_loss < best_val_loss:
            best_val_loss = val_loss
            torch.save(model.state_dict(), best_model_params_path)
        scheduler.step()
    model.load_state_dict(torch.load(best_model_params_path))  # load best model states
reloaded_val_loss = evaluate(model, val_data)
print(f'best {best_val_loss:.4f} reloaded {reloaded_val_loss:.4f}')

# deterministic parts to compare with torch: the mask, the encoding, a fixed-weight encoder
mask = nn.Transformer.generate_square_subsequent_mask(4)
pe_rows = PositionalEncoding(6, dropout=0.0, max_len=5).pe[:, 0].tolist()
fixed_layer = TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True)
fixed = TransformerEncoder(fixed_layer, 2, enable_nested_tensor=False)
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + k).view_as(p)
                * 0.3)
fixed.eval()
src = torch.sin(torch.arange(2 * 5 * 8, dtype=torch.float32)).view(2, 5, 8)
pad = torch.tensor([[False, False, False, False, True], [False, False, False, False, False]])
fixed_out = fixed(src, mask=nn.Transformer.generate_square_subsequent_mask(5), is_causal=True,
                  src_key_padding_mask=pad).tolist()
