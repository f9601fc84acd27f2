# ruff: noqa: B006
# (list defaults for ignore= / tokens= / reserved_tokens=, as the d2l-style interface has them;
# none of them is mutated)
"""A small "d2l" helper package for the d2l-style scripts in this folder, written for these tests
in the way the d2l.ai book's library (d2l/torch.py) is commonly written (modelled on the API
usage of that library, not a copy of it). The scripts import it as ``import d2l_lib as d2l``.

It exercises: an ``nn.Module`` base class with a Lightning-like training_step/validation_step,
``configure_optimizers`` (SGD, Adam), a Trainer with gradient clipping by hand-computed norm
(``p.grad[:] *= c`` under ``no_grad``), TensorDataset/DataLoader, ``F.cross_entropy`` with
``reduction='none'``, ``F.interpolate`` (bilinear), a token vocabulary, a generated tiny
English-French corpus with padding and valid lengths, a GRU encoder initialised through
``nn.GRU._flat_weights_names``, a greedy decoding loop, BLEU, and framework-neutral aliases
(``d2l.reshape``, ``d2l.astype``, ...).

It imports jitgrad under the torch name like the scripts; the tests' torch run applies the same
import swap to this file (test_user_scripts_b27.scripts_library). No matplotlib: the progress
board only keeps its averaged points. Data are offline: scikit-learn's 8x8 digits stand in for
Fashion-MNIST and a seeded generator writes the sentence pairs.
"""
import collections
import inspect
import math
import random

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F

# ----------------------------------------------------------------------------- tensor aliases
# (the book's code calls these instead of tensor methods, so one text runs on several frameworks)
ones, ones_like = torch.ones, torch.ones_like
zeros, zeros_like = torch.zeros, torch.zeros_like
tensor, arange = torch.tensor, torch.arange
exp, log, tanh, sigmoid = torch.exp, torch.log, torch.tanh, torch.sigmoid
normal, rand, randn = torch.normal, torch.rand, torch.randn
matmul, concat, stack = torch.matmul, torch.cat, torch.stack
int32, int64, float32 = torch.int32, torch.int64, torch.float32


def _method(name):
    """An alias that forwards to the tensor method ``name``."""
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


reshape, to, size = _method("reshape"), _method("to"), _method("numel")
reduce_sum, reduce_mean, argmax = _method("sum"), _method("mean"), _method("argmax")
astype, transpose, expand_dims = _method("type"), _method("t"), _method("unsqueeze")
swapaxes, repeat = _method("swapaxes"), _method("repeat")
numpy = lambda x, *args, **kwargs: x.detach().numpy(*args, **kwargs)


def cpu():
    return torch.device("cpu")


def gpu(i=0):
    return torch.device(f"cuda:{i}")


def num_gpus():
    return torch.cuda.device_count()


def try_gpu(i=0):
    """The i-th GPU when there is one, else the CPU."""
    return gpu(i) if num_gpus() > i else cpu()


def check_len(a, n):
    assert len(a) == n, f"length {len(a)}, expected {n}"


def check_shape(a, shape):
    assert a.shape == shape, f"shape {a.shape}, expected {shape}"


def add_to_class(cls):
    """Decorator: attach the decorated function to ``cls`` as a method (the book builds its
    classes up over several sections this way)."""
    def attach(fn):
        setattr(cls, fn.__name__, fn)
    return attach


# ----------------------------------------------------------------------------- base classes
class HyperParameters:
    def save_hyperparameters(self, ignore=[]):
        """Store the calling ``__init__``'s arguments as attributes (and in ``self.hparams``)."""
        caller = dict(inspect.currentframe().f_back.f_locals)
        skip = {"self", *ignore}
        self.hparams = {name: value for name, value in caller.items()
                        if name not in skip and not name.startswith("_")}
        for name, value in self.hparams.items():
            setattr(self, name, value)


Point = collections.namedtuple("Point", "x y")


class ProgressBoard(HyperParameters):
    """Collects (x, y) points per curve, averaging every ``every_n`` of them; it draws nothing."""
    def __init__(self, xlabel=None, ylabel=None, xlim=None, ylim=None, xscale="linear",
                 yscale="linear", display=True):
        self.xlabel, self.ylabel, self.xlim, self.ylim = xlabel, ylabel, xlim, ylim
        self.xscale, self.yscale, self.display = xscale, yscale, display
        self.pending = collections.defaultdict(list)
        self.data = collections.OrderedDict()

    def draw(self, x: float, y, label: str, every_n: int = 1) -> None:
        waiting = self.pending[label]
        curve = self.data.setdefault(label, [])
        waiting.append(Point(x, y))
        if len(waiting) == every_n:
            xs, ys = zip(*waiting)
            curve.append(Point(sum(xs) / every_n, sum(ys) / every_n))
            waiting.clear()


class Module(nn.Module, HyperParameters):
    """A model that knows its loss, its optimizer and how to report progress."""
    def __init__(self, plot_train_per_epoch: int = 2, plot_valid_per_epoch: int = 1):
        super().__init__()
        self.plot_train_per_epoch = plot_train_per_epoch
        self.plot_valid_per_epoch = plot_valid_per_epoch
        self.board = ProgressBoard(xlabel="epoch")

    def loss(self, y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("a Module subclass defines its loss")

    def forward(self, X):
        assert hasattr(self, "net"), "subclasses set self.net or override forward"
        return self.net(X)

    def plot(self, key: str, value: torch.Tensor, train: bool) -> None:
        t = self.trainer
        if train:
            x = t.train_batch_idx / t.num_train_batches
            every = t.num_train_batches / self.plot_train_per_epoch
        else:
            x = t.epoch + 1
            every = t.num_val_batches / self.plot_valid_per_epoch
        prefix = "train_" if train else "val_"
        self.board.draw(x, numpy(to(value, cpu())), prefix + key, every_n=int(every))

    def training_step(self, batch: list) -> torch.Tensor:
        *inputs, target = batch
        loss = self.loss(self(*inputs), target)
        self.plot("loss", loss, train=True)
        return loss

    def validation_step(self, batch: list) -> None:
        *inputs, target = batch
        self.plot("loss", self.loss(self(*inputs), target), train=False)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), self.lr)

    def apply_init(self, inputs: list, init=None) -> None:
        """Run one batch through (materialising lazy layers), then apply ``init``."""
        self.forward(*inputs)
        if init is not None:
            self.net.apply(init)


class Classifier(Module):
    def validation_step(self, batch: list) -> None:
        *inputs, target = batch
        logits = self(*inputs)
        self.plot("loss", self.loss(logits, target), train=False)
        self.plot("acc", self.accuracy(logits, target), train=False)

    def accuracy(self, Y_hat: torch.Tensor, Y: torch.Tensor, averaged: bool = True):
        flat = reshape(Y_hat, (-1, Y_hat.shape[-1]))
        guess = astype(argmax(flat, axis=1), Y.dtype)
        hits = astype(guess == reshape(Y, -1), float32)
        return reduce_mean(hits) if averaged else hits

    def loss(self, Y_hat: torch.Tensor, Y: torch.Tensor, averaged: bool = True):
        logits = reshape(Y_hat, (-1, Y_hat.shape[-1]))
        return F.cross_entropy(logits, reshape(Y, (-1,)),
                               reduction="mean" if averaged else "none")

    def layer_summary(self, X_shape: tuple) -> None:
        X = randn(*X_shape)
        for layer in self.net:
            X = layer(X)
            print(f"{type(layer).__name__:>16} -> {tuple(X.shape)}")


class DataModule(HyperParameters):
    def __init__(self, root: str = "../data", num_workers: int = 4):
        self.root, self.num_workers = root, num_workers

    def get_dataloader(self, train: bool):
        raise NotImplementedError("a DataModule subclass builds its loaders")

    def train_dataloader(self):
        return self.get_dataloader(True)

    def val_dataloader(self):
        return self.get_dataloader(False)

    def get_tensorloader(self, tensors, train: bool, indices=slice(None)):
        picked = [t[indices] for t in tensors]
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*picked),
                                           self.batch_size, shuffle=train)


class Trainer(HyperParameters):
    def __init__(self, max_epochs: int, num_gpus: int = 0, gradient_clip_val: float = 0):
        self.max_epochs, self.gradient_clip_val = max_epochs, gradient_clip_val
        self.num_gpus = num_gpus
        available = globals()["num_gpus"]()
        self.gpus = [gpu(i) for i in range(min(num_gpus, available))]

    def prepare_data(self, data: DataModule) -> None:
        self.train_dataloader, self.val_dataloader = data.train_dataloader(), data.val_dataloader()
        self.num_train_batches = len(self.train_dataloader)
        self.num_val_batches = 0 if self.val_dataloader is None else len(self.val_dataloader)

    def prepare_model(self, model: Module) -> None:
        model.trainer = self
        model.board.xlim = (0, self.max_epochs)
        if self.gpus:
            model.to(self.gpus[0])
        self.model = model

    def prepare_batch(self, batch: list) -> list:
        return [to(t, self.gpus[0]) for t in batch] if self.gpus else batch

    def fit(self, model: Module, data: DataModule) -> None:
        self.prepare_data(data)
        self.prepare_model(model)
        self.optim = self.model.configure_optimizers()
        self.epoch = self.train_batch_idx = self.val_batch_idx = 0
        for epoch in range(self.max_epochs):
            self.epoch = epoch
            self.fit_epoch()

    def fit_epoch(self):
        self.model.train()
        for raw in self.train_dataloader:
            loss = self.model.training_step(self.prepare_batch(raw))
            self.optim.zero_grad()
            with torch.no_grad():  # (backward still records: autograd ignores no_grad there)
                loss.backward()
                if self.gradient_clip_val > 0:
                    self.clip_gradients(self.gradient_clip_val, model=self.model)
                self.optim.step()
            self.train_batch_idx += 1
        if self.val_dataloader is not None:
            self.model.eval()
            with torch.no_grad():
                for raw in self.val_dataloader:
                    self.model.validation_step(self.prepare_batch(raw))
                    self.val_batch_idx += 1

    def clip_gradients(self, grad_clip_val: float, model: nn.Module) -> None:
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        total = torch.sqrt(sum(torch.sum(g ** 2) for g in grads))
        if total > grad_clip_val:
            for g in grads:
                g[:] *= grad_clip_val / total


# ----------------------------------------------------------------------------- image data
class Digits(DataModule):  # (d2l.FashionMNIST's interface)
    """scikit-learn's 8x8 digits as (1, 8, 8) images in [0, 1], optionally resized
    (bilinear); 1500 for training, the rest for validation. Stands in for Fashion-MNIST."""
    def __init__(self, batch_size: int = 64, resize: tuple = (8, 8)):
        super().__init__()
        self.batch_size, self.resize = batch_size, resize
        from sklearn.datasets import load_digits
        bunch = load_digits()
        images = torch.tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16
        if list(resize) != [8, 8]:
            images = F.interpolate(images, size=resize, mode="bilinear", align_corners=False)
        labels = torch.tensor(bunch.target)
        self.train = torch.utils.data.TensorDataset(images[:1500], labels[:1500])
        self.val = torch.utils.data.TensorDataset(images[1500:], labels[1500:])

    def text_labels(self, indices) -> list:
        return [f"{int(i)}" for i in indices]

    def get_dataloader(self, train: bool):
        return torch.utils.data.DataLoader(self.train if train else self.val, self.batch_size,
                                           shuffle=train, num_workers=0)


FashionMNIST = Digits


# ----------------------------------------------------------------------------- text
class Vocab:
    """Token <-> index maps; tokens rarer than ``min_freq`` map to '<unk>'. Indices follow
    the sorted token strings; ``token_freqs`` lists (token, count) by falling count."""
    def __init__(self, tokens: list = [], min_freq: int = 0, reserved_tokens: list = []):
        if tokens and type(tokens[0]) is list:
            tokens = [tok for line in tokens for tok in line]
        counts = collections.Counter(tokens)
        self.token_freqs = sorted(counts.items(), key=lambda item: item[1], reverse=True)
        kept = {tok for tok, n in self.token_freqs if n >= min_freq}
        self.idx_to_token = sorted(kept | {"<unk>", *reserved_tokens})
        self.token_to_idx = {tok: i for i, tok in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.token_to_idx)

    def __getitem__(self, tokens):
        if isinstance(tokens, (list, tuple)):
            return [self[tok] for tok in tokens]
        unk = self.unk
        return self.token_to_idx.get(tokens, unk)

    def to_tokens(self, indices):
        table = self.idx_to_token
        if hasattr(indices, "__len__") and len(indices) > 1:
            return [table[int(i)] for i in indices]
        return table[indices]

    @property
    def unk(self):
        return self.token_to_idx["<unk>"]


_PHRASES = {  # English -> French, the tiny corpus MTFraEng samples from
    "go .": "va !", "i lost .": "j'ai perdu .", "he's calm .": "il est calme .",
    "i'm home .": "je suis chez moi .", "i won !": "j'ai gagné !",
    "we lost .": "nous avons perdu .", "he's home .": "il est chez lui .",
    "i'm calm .": "je suis calme .", "we won !": "nous avons gagné !",
    "go home .": "rentre chez toi .",
}


class MTFraEng(DataModule):
    """Tab-separated English/French pairs -> padded index arrays of ``num_steps`` tokens:
    (source, decoder input starting with <bos>, source valid length, decoder target)."""
    def __init__(self, batch_size: int, num_steps: int = 9, num_train: int = 512,
                 num_val: int = 128):
        super().__init__()
        self.batch_size, self.num_steps = batch_size, num_steps
        self.num_train, self.num_val = num_train, num_val
        self.arrays, self.src_vocab, self.tgt_vocab = self._build_arrays(self._download())

    def _download(self):
        rng = random.Random(0)
        pairs = list(_PHRASES.items())
        return "\n".join(f"{en}\t{fr}" for en, fr in (rng.choice(pairs) for _ in range(640)))

    def _preprocess(self, text: str) -> str:
        text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
        chars = []
        for i, ch in enumerate(text):
            if ch in ",.!?" and i > 0 and text[i - 1] != " ":
                chars.append(" ")
            chars.append(ch)
        return "".join(chars)

    def _tokenize(self, text: str, max_examples=None):
        src, tgt = [], []
        for n, line in enumerate(text.split("\n")):
            if max_examples and n > max_examples:
                break
            fields = line.split("\t")
            if len(fields) != 2:
                continue
            en, fr = (f"{field} <eos>".split() for field in fields)
            src.append(en)
            tgt.append(fr)
        return src, tgt

    def _to_array(self, sentences, vocab, is_tgt):
        n = self.num_steps
        fitted = [s[:n] + ["<pad>"] * (n - len(s)) for s in sentences]
        if is_tgt:
            fitted = [["<bos>", *s] for s in fitted]
        if vocab is None:
            vocab = Vocab(fitted, min_freq=2)
        array = tensor([vocab[s] for s in fitted])
        valid_len = reduce_sum(astype(array != vocab["<pad>"], int32), 1)
        return array, vocab, valid_len  # (valid_len counts the non-<pad> tokens)

    def _build_arrays(self, raw_text: str, src_vocab=None, tgt_vocab=None):
        src, tgt = self._tokenize(self._preprocess(raw_text), self.num_train + self.num_val)
        src_array, src_vocab, src_len = self._to_array(src, src_vocab, False)
        tgt_array, tgt_vocab, _ = self._to_array(tgt, tgt_vocab, True)
        arrays = (src_array, tgt_array[:, :-1], src_len, tgt_array[:, 1:])
        return arrays, src_vocab, tgt_vocab

    def get_dataloader(self, train: bool):
        cut = self.num_train
        return self.get_tensorloader(self.arrays, train,
                                     slice(0, cut) if train else slice(cut, None))

    def build(self, src_sentences: list, tgt_sentences: list):
        """Arrays for new sentence pairs, with the training vocabularies."""
        text = "\n".join(f"{s}\t{t}" for s, t in zip(src_sentences, tgt_sentences))
        return self._build_arrays(text, self.src_vocab, self.tgt_vocab)[0]


def bleu(pred_seq, label_seq, k):
    """BLEU of one predicted sentence against one reference, n-grams up to ``k``."""
    pred, label = pred_seq.split(" "), label_seq.split(" ")
    score = math.exp(min(0.0, 1 - len(label) / len(pred)))
    for n in range(1, min(k, len(pred)) + 1):
        ref_grams = collections.Counter(
            " ".join(label[i:i + n]) for i in range(len(label) - n + 1))
        matched = 0
        for i in range(len(pred) - n + 1):
            gram = " ".join(pred[i:i + n])
            if ref_grams[gram] > 0:
                ref_grams[gram] -= 1
                matched += 1
        score *= (matched / (len(pred) - n + 1)) ** (0.5 ** n)
    return score


# ----------------------------------------------------------------------------- seq2seq
class Encoder(nn.Module):
    """Encoder interface: forward(X, *args) -> whatever the decoder's init_state takes."""
    def forward(self, X, *args):
        raise NotImplementedError("an Encoder subclass defines forward")


class Decoder(nn.Module):
    """Decoder interface: init_state from the encoder's outputs, then forward(X, state)."""
    def init_state(self, enc_outputs, *args):
        raise NotImplementedError("a Decoder subclass defines init_state")

    def forward(self, X, state):
        raise NotImplementedError("a Decoder subclass defines forward")


class EncoderDecoder(Classifier):
    def __init__(self, encoder: Encoder, decoder: Decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src, dec_input, *args):
        state = self.decoder.init_state(self.encoder(src, *args), *args)
        return self.decoder(dec_input, state)[0]

    def predict_step(self, batch, device, num_steps, save_attention_weights=False):
        """Greedy decoding: feed back the argmax token ``num_steps`` times."""
        src, tgt, src_valid_len, _ = (to(t, device) for t in batch)
        state = self.decoder.init_state(self.encoder(src, src_valid_len), src_valid_len)
        token = expand_dims(tgt[:, 0], 1)
        steps, weights = [], []
        while len(steps) < num_steps:
            Y, state = self.decoder(token, state)
            token = argmax(Y, 2)
            steps.append(token)
            if save_attention_weights:
                weights.append(self.decoder.attention_weights)
        return concat(steps, 1), weights


def init_seq2seq(module):
    """Xavier-uniform weights for Linear layers and for every weight matrix of a GRU."""
    if type(module) is nn.Linear:
        nn.init.xavier_uniform_(module.weight, gain=1.0)
    elif type(module) is nn.GRU:
        for name in module._flat_weights_names:
            if "weight" in name:
                nn.init.xavier_uniform_(module._parameters[name])


class GRU(Module):
    def __init__(self, num_inputs: int, num_hiddens: int, num_layers: int, dropout=0):
        super().__init__()
        self.num_inputs, self.num_hiddens = num_inputs, num_hiddens
        self.num_layers, self.dropout = num_layers, dropout
        self.rnn = nn.GRU(num_inputs, num_hiddens, num_layers, dropout=dropout)

    def forward(self, inputs, H=None):  # (H None: zero initial states)
        out, H = self.rnn(inputs, H)
        return out, H


class Seq2SeqEncoder(Encoder):
    """Embedding + multilayer GRU over time-major tokens: returns (outputs, final states)."""
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=embed_size)
        self.rnn = GRU(embed_size, num_hiddens, num_layers, dropout)
        self.apply(init_seq2seq)

    def forward(self, X, *args):
        time_major = astype(transpose(X), int64)  # (num_steps, batch)
        return self.rnn(self.embedding(time_major))


class Seq2Seq(EncoderDecoder):
    """Encoder-decoder trained with Adam on a cross-entropy that ignores padded targets."""
    def __init__(self, encoder: Encoder, decoder: Decoder, tgt_pad: int, lr: float):
        super().__init__(encoder, decoder)
        self.tgt_pad, self.lr = tgt_pad, lr

    def validation_step(self, batch: list) -> None:
        *inputs, target = batch
        self.plot("loss", self.loss(self(*inputs), target), train=False)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), self.lr)

    def loss(self, Y_hat: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        per_token = super().loss(Y_hat, Y, averaged=False)
        keep = astype(reshape(Y, -1) != self.tgt_pad, float32)
        return reduce_sum(per_token * keep) / reduce_sum(keep)
