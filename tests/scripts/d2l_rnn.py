# ruff: noqa: A001, B006, B007, B008, B010, B020, C408, C416, E401, E402, E501, E701, E711, E721, E731, E741, F401, F811, F841, I001, N801, N802, N803, N806, N807, N812, UP004, UP008, UP031, UP032, UP034
# (d2l.ai's code as is)
"""d2l.ai (Dive into Deep Learning, PyTorch), chapters 9-10: text to sequence data (Vocab,
character tokens, the language-model minibatches), an RNN from scratch (one_hot inputs, a
Python loop over time steps, gradient clipping in the Trainer, greedy predict) and with nn.RNN,
GRU and LSTM from scratch and with nn.GRU / nn.LSTM.

Changes: the d2l package is not installed, so its classes these sections use come from
d2l_lib.py next to this file (d2l/torch.py written out once for the d2l ports, ProgressBoard
without matplotlib; Vocab, check_len and check_shape live there, as chapter 11 uses them too);
The Time Machine is a download,
so generated sentences in its words stand in (2000 training subsequences of 16 steps, 4 epochs
instead of 100 and 50).
"""
import re
import random

import numpy as np
import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F

# -----------------------------------------------------------------------------
# the d2l package's code these sections use (d2l/torch.py, written out once in d2l_lib.py next
# to this file: the user has no d2l package), imported as the book imports its package
import d2l_lib as d2l

torch.manual_seed(0)
results = {}
NUM_EPOCHS = 4  # (100 and 50 in the book)

def val_metrics(model):
    """The last points the board kept (the plot's last values)."""
    return {k: float(v[-1].y) for k, v in model.board.data.items()}

# -----------------------------------------------------------------------------
# 9.2 Converting Raw Text into Sequence Data
class TimeMachine(d2l.DataModule): #@save
    """The Time Machine dataset."""
    def _download(self):
        # (H. G. Wells' book is a download: generated sentences in its words stand in)
        rng = random.Random(0)
        words = ("the time traveller for so it will be convenient to speak of him was expounding "
                 "a recondite matter to us his grey eyes shone and twinkled").split()
        return "\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(5, 12))).capitalize() + "."
                         for _ in range(400))

@d2l.add_to_class(TimeMachine)  #@save
def _preprocess(self, text):
    return re.sub('[^A-Za-z]+', ' ', text).lower()

@d2l.add_to_class(TimeMachine)  #@save
def _tokenize(self, text):
    return list(text)

# (Vocab, #@save, is in d2l_lib.py: 10.5's machine-translation data uses it too)
Vocab = d2l.Vocab

@d2l.add_to_class(TimeMachine)  #@save
def build(self, raw_text, vocab=None):
    tokens = self._tokenize(self._preprocess(raw_text))
    if vocab is None: vocab = Vocab(tokens)
    corpus = [vocab[token] for token in tokens]
    return corpus, vocab

# 9.3 Language Models: the dataset's minibatches of subsequences
@d2l.add_to_class(TimeMachine)  #@save
def __init__(self, batch_size, num_steps, num_train=10000, num_val=5000):
    super(TimeMachine, self).__init__()
    self.save_hyperparameters()
    corpus, self.vocab = self.build(self._download())
    array = d2l.tensor([corpus[i:i+num_steps+1]
                        for i in range(len(corpus)-num_steps)])
    self.X, self.Y = array[:,:-1], array[:,1:]

@d2l.add_to_class(TimeMachine)  #@save
def get_dataloader(self, train):
    idx = slice(0, self.num_train) if train else slice(
        self.num_train, self.num_train + self.num_val)
    return self.get_tensorloader([self.X, self.Y], train, idx)

d2l.TimeMachine = TimeMachine
data = TimeMachine(batch_size=256, num_steps=16, num_train=2000, num_val=500)
raw_text = data._download()
text = data._preprocess(raw_text)
tokens = data._tokenize(text)
vocab = Vocab(tokens)
indices = vocab[tokens[:10]]
results['words'] = (indices, vocab.to_tokens(indices))
corpus, vocab = data.build(raw_text)
words = text.split()
word_vocab = Vocab(words)
bigram_tokens = ['--'.join(pair) for pair in zip(words[:-1], words[1:])]
bigram_vocab = Vocab(bigram_tokens)
results['vocab'] = (len(corpus), len(vocab), word_vocab.token_freqs[:3], len(bigram_vocab))
X, Y = next(iter(data.train_dataloader()))
results['batch'] = (tuple(X.shape), bool((X[:, 1:] == Y[:, :-1]).all()))

# -----------------------------------------------------------------------------
# 9.5 Recurrent Neural Network Implementation from Scratch
class RNNScratch(d2l.Module):  #@save
    """The RNN model implemented from scratch."""
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W_xh = nn.Parameter(
            d2l.randn(num_inputs, num_hiddens) * sigma)
        self.W_hh = nn.Parameter(
            d2l.randn(num_hiddens, num_hiddens) * sigma)
        self.b_h = nn.Parameter(d2l.zeros(num_hiddens))

@d2l.add_to_class(RNNScratch)  #@save
def forward(self, inputs, state=None):
    if state is None:
        # Initial state with shape: (batch_size, num_hiddens)
        state = d2l.zeros((inputs.shape[1], self.num_hiddens),
                          device=inputs.device)
    else:
        state, = state
    outputs = []
    for X in inputs:  # Shape of inputs: (num_steps, batch_size, num_inputs)
        state = d2l.tanh(d2l.matmul(X, self.W_xh) +
                         d2l.matmul(state, self.W_hh) + self.b_h)
        outputs.append(state)
    return outputs, state

batch_size, num_inputs, num_hiddens, num_steps = 2, 16, 32, 100
rnn = RNNScratch(num_inputs, num_hiddens)
X = d2l.ones((num_steps, batch_size, num_inputs))
outputs, state = rnn(X)

# (check_len and check_shape, #@save, are in d2l_lib.py: chapter 11 uses them too)
check_len, check_shape = d2l.check_len, d2l.check_shape

check_len(outputs, num_steps)
check_shape(outputs[0], (batch_size, num_hiddens))
check_shape(state, (batch_size, num_hiddens))

class RNNLMScratch(d2l.Classifier):  #@save
    """The RNN-based language model implemented from scratch."""
    def __init__(self, rnn, vocab_size, lr=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.init_params()

    def init_params(self):
        self.W_hq = nn.Parameter(
            d2l.randn(
                self.rnn.num_hiddens, self.vocab_size) * self.rnn.sigma)
        self.b_q = nn.Parameter(d2l.zeros(self.vocab_size))

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('ppl', d2l.exp(l), train=True)
        return l

    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('ppl', d2l.exp(l), train=False)

results['one_hot'] = F.one_hot(torch.tensor([0, 2]), 5).tolist()

@d2l.add_to_class(RNNLMScratch)  #@save
def one_hot(self, X):
    # Output shape: (num_steps, batch_size, vocab_size)
    return F.one_hot(X.T, self.vocab_size).type(torch.float32)

@d2l.add_to_class(RNNLMScratch)  #@save
def output_layer(self, rnn_outputs):
    outputs = [d2l.matmul(H, self.W_hq) + self.b_q for H in rnn_outputs]
    return d2l.stack(outputs, 1)

@d2l.add_to_class(RNNLMScratch)  #@save
def forward(self, X, state=None):
    embs = self.one_hot(X)
    rnn_outputs, _ = self.rnn(embs, state)
    return self.output_layer(rnn_outputs)

model = RNNLMScratch(rnn, num_inputs)
outputs = model(d2l.ones((batch_size, num_steps), dtype=d2l.int64))
check_shape(outputs, (batch_size, num_steps, num_inputs))

@d2l.add_to_class(RNNLMScratch)  #@save
def predict(self, prefix, num_preds, vocab, device=None):
    state, outputs = None, [vocab[prefix[0]]]
    for i in range(len(prefix) + num_preds - 1):
        X = d2l.tensor([[outputs[-1]]], device=device)
        embs = self.one_hot(X)
        rnn_outputs, state = self.rnn(embs, state)
        if i < len(prefix) - 1:  # Warm-up period
            outputs.append(vocab[prefix[i + 1]])
        else:  # Predict num_preds steps
            Y = self.output_layer(rnn_outputs)
            outputs.append(int(d2l.reshape(d2l.argmax(Y, axis=2), 1)))
    return ''.join([vocab.idx_to_token[i] for i in outputs])

d2l.RNNLMScratch = RNNLMScratch
rnn = RNNScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = RNNLMScratch(rnn, vocab_size=len(data.vocab), lr=1)
trainer = d2l.Trainer(max_epochs=NUM_EPOCHS, gradient_clip_val=1, num_gpus=1)
trainer.fit(model, data)
results['rnn_scratch'] = (val_metrics(model), model.predict('it has', 20, data.vocab, d2l.try_gpu()))

# -----------------------------------------------------------------------------
# 9.6 Concise Implementation of Recurrent Neural Networks
class RNN(d2l.Module):  #@save
    """The RNN model implemented with high-level APIs."""
    def __init__(self, num_inputs, num_hiddens):
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.RNN(num_inputs, num_hiddens)

    def forward(self, inputs, H=None):
        return self.rnn(inputs, H)

class RNNLM(d2l.RNNLMScratch):  #@save
    """The RNN-based language model implemented with high-level APIs."""
    def init_params(self):
        self.linear = nn.LazyLinear(self.vocab_size)

    def output_layer(self, hiddens):
        return d2l.swapaxes(self.linear(hiddens), 0, 1)

d2l.RNN, d2l.RNNLM = RNN, RNNLM
rnn = RNN(num_inputs=len(data.vocab), num_hiddens=32)
model = RNNLM(rnn, vocab_size=len(data.vocab), lr=1)
results['untrained_prediction'] = model.predict('it has', 20, data.vocab)
trainer = d2l.Trainer(max_epochs=NUM_EPOCHS, gradient_clip_val=1, num_gpus=1)
trainer.fit(model, data)
results['rnn_concise'] = (val_metrics(model), model.predict('it has', 20, data.vocab, d2l.try_gpu()))

# -----------------------------------------------------------------------------
# 10.2 Gated Recurrent Units (GRU)
class GRUScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()

        init_weight = lambda *shape: nn.Parameter(d2l.randn(*shape) * sigma)
        triple = lambda: (init_weight(num_inputs, num_hiddens),
                          init_weight(num_hiddens, num_hiddens),
                          nn.Parameter(d2l.zeros(num_hiddens)))

        self.W_xz, self.W_hz, self.b_z = triple()  # Update gate
        self.W_xr, self.W_hr, self.b_r = triple()  # Reset gate
        self.W_xh, self.W_hh, self.b_h = triple()  # Candidate hidden state

@d2l.add_to_class(GRUScratch)
def forward(self, inputs, H=None):
    if H is None:
        # Initial state with shape: (batch_size, num_hiddens)
        H = d2l.zeros((inputs.shape[1], self.num_hiddens),
                      device=inputs.device)
    outputs = []
    for X in inputs:
        Z = d2l.sigmoid(d2l.matmul(X, self.W_xz) +
                        d2l.matmul(H, self.W_hz) + self.b_z)
        R = d2l.sigmoid(d2l.matmul(X, self.W_xr) +
                        d2l.matmul(H, self.W_hr) + self.b_r)
        H_tilde = d2l.tanh(d2l.matmul(X, self.W_xh) +
                           d2l.matmul(R * H, self.W_hh) + self.b_h)
        H = Z * H + (1 - Z) * H_tilde
        outputs.append(H)
    return outputs, H

gru = GRUScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLMScratch(gru, vocab_size=len(data.vocab), lr=4)
trainer = d2l.Trainer(max_epochs=NUM_EPOCHS, gradient_clip_val=1, num_gpus=1)
trainer.fit(model, data)
results['gru_scratch'] = val_metrics(model)

class GRU(d2l.RNN):
    def __init__(self, num_inputs, num_hiddens):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.GRU(num_inputs, num_hiddens)

gru = GRU(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLM(gru, vocab_size=len(data.vocab), lr=4)
trainer.fit(model, data)
results['gru_concise'] = (val_metrics(model), model.predict('it has', 20, data.vocab, d2l.try_gpu()))

# -----------------------------------------------------------------------------
# 10.1 Long Short-Term Memory (LSTM)
class LSTMScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()

        init_weight = lambda *shape: nn.Parameter(d2l.randn(*shape) * sigma)
        triple = lambda: (init_weight(num_inputs, num_hiddens),
                          init_weight(num_hiddens, num_hiddens),
                          nn.Parameter(d2l.zeros(num_hiddens)))

        self.W_xi, self.W_hi, self.b_i = triple()  # Input gate
        self.W_xf, self.W_hf, self.b_f = triple()  # Forget gate
        self.W_xo, self.W_ho, self.b_o = triple()  # Output gate
        self.W_xc, self.W_hc, self.b_c = triple()  # Input node

@d2l.add_to_class(LSTMScratch)
def forward(self, inputs, H_C=None):
    if H_C is None:
        # Initial state with shape: (batch_size, num_hiddens)
        H = d2l.zeros((inputs.shape[1], self.num_hiddens),
                      device=inputs.device)
        C = d2l.zeros((inputs.shape[1], self.num_hiddens),
                      device=inputs.device)
    else:
        H, C = H_C
    outputs = []
    for X in inputs:
        I = d2l.sigmoid(d2l.matmul(X, self.W_xi) +
                        d2l.matmul(H, self.W_hi) + self.b_i)
        F = d2l.sigmoid(d2l.matmul(X, self.W_xf) +
                        d2l.matmul(H, self.W_hf) + self.b_f)
        O = d2l.sigmoid(d2l.matmul(X, self.W_xo) +
                        d2l.matmul(H, self.W_ho) + self.b_o)
        C_tilde = d2l.tanh(d2l.matmul(X, self.W_xc) +
                           d2l.matmul(H, self.W_hc) + self.b_c)
        C = F * C + I * C_tilde
        H = O * d2l.tanh(C)
        outputs.append(H)
    return outputs, (H, C)

lstm = LSTMScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLMScratch(lstm, vocab_size=len(data.vocab), lr=4)
trainer = d2l.Trainer(max_epochs=NUM_EPOCHS, gradient_clip_val=1, num_gpus=1)
trainer.fit(model, data)
results['lstm_scratch'] = val_metrics(model)

class LSTM(d2l.RNN):
    def __init__(self, num_inputs, num_hiddens):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.LSTM(num_inputs, num_hiddens)

    def forward(self, inputs, H_C=None):
        return self.rnn(inputs, H_C)

lstm = LSTM(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLM(lstm, vocab_size=len(data.vocab), lr=4)
trainer.fit(model, data)
results['lstm_concise'] = (val_metrics(model), model.predict('it has', 20, data.vocab, d2l.try_gpu()))

# -----------------------------------------------------------------------------
# a deterministic part to compare with torch: each language model with fixed weights on the
# first validation batch: loss and gradients (with d2l's clip_gradients applied), and a
# greedy prediction
fixed_results = {}
Xv, Yv = next(iter(data.val_dataloader()))
Xv, Yv = Xv[:8], Yv[:8]
V = len(data.vocab)
for name, make in [("rnn_scratch", lambda: RNNLMScratch(RNNScratch(V, 16), V)),
                   ("rnn", lambda: RNNLM(RNN(V, 16), V)),
                   ("gru_scratch", lambda: RNNLMScratch(GRUScratch(V, 16), V)),
                   ("gru", lambda: RNNLM(GRU(V, 16), V)),
                   ("lstm_scratch", lambda: RNNLMScratch(LSTMScratch(V, 16), V)),
                   ("lstm", lambda: RNNLM(LSTM(V, 16), V))]:
    fixed = make()
    fixed(Xv)  # (materializes the lazy layer)
    with torch.no_grad():
        for k, (pname, p) in enumerate(fixed.named_parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
    loss = fixed.loss(fixed(Xv), Yv)
    loss.backward()
    with torch.no_grad():
        d2l.Trainer.clip_gradients(None, 1.0, fixed)
    fixed_results[name] = {"loss": loss.item(), "prediction": fixed.predict('it has', 10, data.vocab),
                           **{n: p.grad.tolist() for n, p in fixed.named_parameters()}}
