"""Character-level language models, written for these tests in the way the d2l.ai book
(Dive into Deep Learning, chapters 9-10) commonly writes its PyTorch code (modelled on the API
usage of that book, not a copy of it), on the small d2l-style package d2l_lib.py next to this
file. It exercises:

- a DataModule built up with ``@d2l.add_to_class``: a generated text, character tokens, Vocab,
  overlapping subsequences as ``d2l.tensor`` rows, TensorDataset/DataLoader batches;
- ``F.one_hot`` inputs, a vanilla RNN, a GRU and an LSTM cell written with ``nn.Parameter``,
  ``matmul``, ``tanh``/``sigmoid`` and a Python loop over time steps (``check_len``,
  ``check_shape``);
- the same models with ``nn.RNN``, ``nn.GRU``, ``nn.LSTM`` and an ``nn.LazyLinear`` head
  (``swapaxes`` back to batch-major);
- training through d2l.Trainer with gradient clipping (perplexity plotted as ``exp(loss)``),
  greedy generation from a prompt, and a fixed-weight loss/gradient check against torch.
"""
import random
import re

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F

import d2l_lib as d2l

torch.manual_seed(0)
results = {}
EPOCHS = 4
HIDDEN = 32
PROMPT = "it has"


def last_points(model):
    """The newest averaged value of every curve on the model's board."""
    return {name: float(points[-1].y) for name, points in model.board.data.items()}


# ----------------------------------------------------------------------------- the data
LEXICON = ("a quiet river winds past the old mill where children fish for silver trout each "
           "morning and the baker hums while dough rises by the lamp").split()


class RiverText(d2l.DataModule):
    """Random sentences over LEXICON, cut into (input, next-character) windows."""
    def __init__(self, batch_size: int, num_steps: int, num_train=2000, num_val=500):
        super().__init__()
        self.save_hyperparameters()
        ids, self.vocab = self.build(self._download())
        windows = [ids[start:start + num_steps + 1] for start in range(len(ids) - num_steps)]
        rows = d2l.tensor(windows)
        self.X, self.Y = rows[:, :-1], rows[:, 1:]

    def _download(self):
        rng = random.Random(7)
        lines = []
        for _ in range(420):
            sentence = " ".join(rng.choice(LEXICON) for _ in range(rng.randint(4, 11)))
            lines.append(sentence[0].upper() + sentence[1:] + ".")
        return "\n".join(lines)


@d2l.add_to_class(RiverText)
def _preprocess(self, text: str) -> str:
    return re.sub(r"[^a-z]+", " ", text.lower())


@d2l.add_to_class(RiverText)
def _tokenize(self, text: str) -> list:
    return [ch for ch in text]


@d2l.add_to_class(RiverText)
def build(self, raw_text: str, vocab=None):
    chars = self._tokenize(self._preprocess(raw_text))
    if vocab is None:
        vocab = d2l.Vocab(chars)
    return [vocab[ch] for ch in chars], vocab


@d2l.add_to_class(RiverText)
def get_dataloader(self, train: bool):
    lo, hi = (0, self.num_train) if train else (self.num_train, self.num_train + self.num_val)
    return self.get_tensorloader([self.X, self.Y], train, slice(lo, hi))


data = RiverText(batch_size=256, num_steps=16, num_train=2000, num_val=500)
raw = data._download()
chars = data._tokenize(data._preprocess(raw))
char_vocab = d2l.Vocab(chars)
first_ids = char_vocab[chars[:10]]
results["words"] = (first_ids, char_vocab.to_tokens(first_ids))
corpus, _ = data.build(raw)
word_list = data._preprocess(raw).split()
pairs = [f"{a}--{b}" for a, b in zip(word_list, word_list[1:])]
results["vocab"] = (len(corpus), len(data.vocab), d2l.Vocab(word_list).token_freqs[:3],
                    len(d2l.Vocab(pairs)))
xb, yb = next(iter(data.train_dataloader()))
results["batch"] = (tuple(xb.shape), bool((xb[:, 1:] == yb[:, :-1]).all()))
results["one_hot"] = F.one_hot(torch.tensor([0, 2]), 5).tolist()
V = len(data.vocab)


# ----------------------------------------------------------------------------- cells by hand
def gate_params(n_in, n_hidden, sigma):
    """(input weight, recurrent weight, bias) of one gate."""
    return (nn.Parameter(d2l.randn(n_in, n_hidden) * sigma),
            nn.Parameter(d2l.randn(n_hidden, n_hidden) * sigma),
            nn.Parameter(d2l.zeros(n_hidden)))


def affine(X, H, W_x, W_h, b):
    return d2l.matmul(X, W_x) + d2l.matmul(H, W_h) + b


class VanillaRNN(d2l.Module):
    def __init__(self, num_inputs: int, num_hiddens: int, sigma: float = 0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W_xh, self.W_hh, self.b_h = gate_params(num_inputs, num_hiddens, sigma)

    def forward(self, inputs: torch.Tensor, state=None):
        # inputs: (time, batch, features); state: None or a 1-tuple (H,)
        H = (d2l.zeros((inputs.shape[1], self.num_hiddens), device=inputs.device)
             if state is None else state[0])
        hs = []
        for X in inputs:
            H = d2l.tanh(affine(X, H, self.W_xh, self.W_hh, self.b_h))
            hs.append(H)
        return hs, H


class GatedRNN(d2l.Module):
    def __init__(self, num_inputs: int, num_hiddens: int, sigma: float = 0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W_xz, self.W_hz, self.b_z = gate_params(num_inputs, num_hiddens, sigma)
        self.W_xr, self.W_hr, self.b_r = gate_params(num_inputs, num_hiddens, sigma)
        self.W_xh, self.W_hh, self.b_h = gate_params(num_inputs, num_hiddens, sigma)

    def forward(self, inputs: torch.Tensor, H=None):
        if H is None:
            H = d2l.zeros((inputs.shape[1], self.num_hiddens), device=inputs.device)
        hs = []
        for X in inputs:
            update = d2l.sigmoid(affine(X, H, self.W_xz, self.W_hz, self.b_z))
            reset = d2l.sigmoid(affine(X, H, self.W_xr, self.W_hr, self.b_r))
            candidate = d2l.tanh(affine(X, reset * H, self.W_xh, self.W_hh, self.b_h))
            H = update * H + (1 - update) * candidate
            hs.append(H)
        return hs, H


class MemoryRNN(d2l.Module):
    def __init__(self, num_inputs: int, num_hiddens: int, sigma: float = 0.01):
        super().__init__()
        self.save_hyperparameters()
        for gate in "ifoc":
            W_x, W_h, b = gate_params(num_inputs, num_hiddens, sigma)
            setattr(self, f"W_x{gate}", W_x)
            setattr(self, f"W_h{gate}", W_h)
            setattr(self, f"b_{gate}", b)

    def gate(self, name, X, H):
        W_x, W_h, b = (getattr(self, f"{p}{name}") for p in ("W_x", "W_h", "b_"))
        return affine(X, H, W_x, W_h, b)

    def forward(self, inputs: torch.Tensor, H_C=None):
        if H_C is None:
            shape = (inputs.shape[1], self.num_hiddens)
            H_C = (d2l.zeros(shape, device=inputs.device), d2l.zeros(shape, device=inputs.device))
        H, C = H_C
        hs = []
        for X in inputs:
            I = d2l.sigmoid(self.gate("i", X, H))
            Fg = d2l.sigmoid(self.gate("f", X, H))
            O = d2l.sigmoid(self.gate("o", X, H))
            C = Fg * C + I * d2l.tanh(self.gate("c", X, H))
            H = O * d2l.tanh(C)
            hs.append(H)
        return hs, (H, C)


steps, batch, feats = 100, 2, 16
hs, last = VanillaRNN(feats, HIDDEN)(d2l.ones((steps, batch, feats)))
d2l.check_len(hs, steps)
d2l.check_shape(hs[0], (batch, HIDDEN))
d2l.check_shape(last, (batch, HIDDEN))


# ----------------------------------------------------------------------------- language model
class CharLM(d2l.Classifier):
    """One-hot characters -> recurrent cell -> per-step logits over the vocabulary."""
    def __init__(self, rnn: d2l.Module, vocab_size: int, lr: float = 0.01):
        super().__init__()
        self.save_hyperparameters()
        self.init_params()

    def init_params(self):
        self.W_hq = nn.Parameter(d2l.randn(self.rnn.num_hiddens, self.vocab_size) * self.rnn.sigma)
        self.b_q = nn.Parameter(d2l.zeros(self.W_hq.shape[1]))

    def training_step(self, batch: list) -> torch.Tensor:
        loss = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("ppl", d2l.exp(loss), train=True)
        return loss

    def validation_step(self, batch: list) -> None:
        self.plot("ppl", d2l.exp(self.loss(self(*batch[:-1]), batch[-1])), train=False)

    def one_hot(self, X):  # (batch, time) -> (time, batch, vocab)
        return F.one_hot(X.T, num_classes=self.vocab_size).type(torch.float32)

    def output_layer(self, hs):
        return d2l.stack([d2l.matmul(H, self.W_hq) + self.b_q for H in hs], 1)

    def forward(self, X: torch.Tensor, state=None):
        hs, _ = self.rnn(self.one_hot(X), state)
        return self.output_layer(hs)

    def predict(self, prefix: str, num_preds: int, vocab: d2l.Vocab, device=None) -> str:
        """Feed the prompt, then append ``num_preds`` greedy characters."""
        ids, state = [vocab[prefix[0]]], None
        for t in range(len(prefix) - 1 + num_preds):
            hs, state = self.rnn(self.one_hot(d2l.tensor([[ids[-1]]], device=device)), state)
            if t + 1 < len(prefix):
                ids.append(vocab[prefix[t + 1]])
            else:
                best = d2l.argmax(self.output_layer(hs), axis=2)
                ids.append(int(d2l.reshape(best, 1)))
        return "".join(vocab.idx_to_token[i] for i in ids)


probe = CharLM(VanillaRNN(feats, HIDDEN), feats)
d2l.check_shape(probe(d2l.ones((batch, steps), dtype=d2l.int64)), (batch, steps, feats))


def fit(model, trainer=None):
    trainer = trainer or d2l.Trainer(max_epochs=EPOCHS, gradient_clip_val=1, num_gpus=1)
    trainer.fit(model, data)
    return trainer


model = CharLM(VanillaRNN(V, HIDDEN), vocab_size=V, lr=1)
fit(model)
results["rnn_scratch"] = (last_points(model), model.predict(PROMPT, 20, data.vocab, d2l.try_gpu()))


# ----------------------------------------------------------------------------- nn.* versions
class TorchRNN(d2l.Module):
    def __init__(self, num_inputs: int, num_hiddens: int, cell=nn.RNN):
        super().__init__()
        self.save_hyperparameters()
        self.rnn = cell(num_inputs, num_hiddens)

    def forward(self, inputs: torch.Tensor, H=None):
        return self.rnn(inputs, H)


class TorchCharLM(CharLM):
    def init_params(self):
        self.linear = nn.LazyLinear(out_features=self.vocab_size)

    def output_layer(self, hs):  # hs: (time, batch, hidden)
        return d2l.swapaxes(self.linear(hs), 0, 1)


model = TorchCharLM(TorchRNN(V, HIDDEN), vocab_size=V, lr=1)
results["untrained_prediction"] = model.predict(PROMPT, 20, data.vocab)
fit(model)
results["rnn_concise"] = (last_points(model), model.predict(PROMPT, 20, data.vocab, d2l.try_gpu()))

model = CharLM(GatedRNN(V, HIDDEN), vocab_size=V, lr=4)
shared_trainer = fit(model)
results["gru_scratch"] = last_points(model)

model = TorchCharLM(TorchRNN(V, HIDDEN, cell=nn.GRU), vocab_size=V, lr=4)
fit(model, shared_trainer)  # (a Trainer can fit another model)
results["gru_concise"] = (last_points(model), model.predict(PROMPT, 20, data.vocab, d2l.try_gpu()))

model = CharLM(MemoryRNN(V, HIDDEN), vocab_size=V, lr=4)
shared_trainer = fit(model)
results["lstm_scratch"] = last_points(model)


class TorchLSTM(TorchRNN):
    def __init__(self, num_inputs: int, num_hiddens: int):
        super().__init__(num_inputs, num_hiddens, cell=nn.LSTM)

    def forward(self, inputs: torch.Tensor, H_C=None):  # (the state is an (h, c) pair)
        out, (H, C) = self.rnn(inputs, H_C)
        return out, (H, C)


model = TorchCharLM(TorchLSTM(V, HIDDEN), vocab_size=V, lr=4)
fit(model, shared_trainer)
results["lstm_concise"] = (last_points(model), model.predict(PROMPT, 20, data.vocab, d2l.try_gpu()))

# ----------------------------------------------------------------------------- fixed weights
# every model with deterministic weights on 8 validation windows: the loss, the gradients after
# the Trainer's clipping, and a greedy continuation (compared with torch by the tests)
fixed_results = {}
xv, yv = next(iter(data.val_dataloader()))
xv, yv = xv[:8], yv[:8]
clipper = d2l.Trainer(max_epochs=0)
builders = {
    "rnn_scratch": lambda: CharLM(VanillaRNN(V, 16), V),
    "rnn": lambda: TorchCharLM(TorchRNN(V, 16), V),
    "gru_scratch": lambda: CharLM(GatedRNN(V, 16), V),
    "gru": lambda: TorchCharLM(TorchRNN(V, 16, cell=nn.GRU), V),
    "lstm_scratch": lambda: CharLM(MemoryRNN(V, 16), V),
    "lstm": lambda: TorchCharLM(TorchLSTM(V, 16), V),
}
for name, build_model in builders.items():
    net = build_model()
    net(xv)  # (LazyLinear gets its shape)
    with torch.no_grad():
        for k, (_, p) in enumerate(net.named_parameters(), start=1):
            wave = torch.arange(p.numel(), dtype=torch.float32) * (0.7 * k)
            p.copy_(torch.cos(wave).view_as(p) / 4)
    loss = net.loss(net(xv), yv)
    loss.backward()
    with torch.no_grad():
        clipper.clip_gradients(1.0, net)
    fixed_results[name] = {"loss": loss.item(), "prediction": net.predict(PROMPT, 10, data.vocab),
                           **{n: p.grad.tolist() for n, p in net.named_parameters()}}
