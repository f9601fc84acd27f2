"""Linear models, softmax classifiers, MLPs and dropout, written for these tests in the way the
d2l.ai book (Dive into Deep Learning, chapters 3-5) commonly writes its PyTorch code (modelled
on the API usage of that book, not a copy of it), trained with the d2l-style Module /
DataModule / Trainer of d2l_lib.py next to this file. It exercises:

- a synthetic regression DataModule (``d2l.randn``, ``matmul``, TensorDataset batches);
- a hand-written linear regression (``d2l.normal(..., requires_grad=True)``) with a hand-written
  SGD (``param -= lr * param.grad`` under no_grad, ``grad.zero_()``), and the same with
  ``nn.LazyLinear`` (``weight.data.normal_``/``bias.data.fill_`` before it materialises),
  ``nn.MSELoss`` and ``torch.optim.SGD``;
- an L2 penalty by hand and as an SGD param-group ``weight_decay``;
- softmax and cross-entropy by hand (``keepdims`` sums, fancy indexing ``y_hat[rows, y]``), a
  classifier that overrides ``parameters()``, the concise ``Flatten`` + ``LazyLinear`` one;
- MLPs with ``nn.Parameter`` and an elementwise ``torch.max`` ReLU, and with ``nn.Sequential``;
- dropout by hand (``rand(shape) > p``, ``.float()``, ``self.training``) and ``nn.Dropout``;
- a fixed-weight MLP's loss, accuracy, per-example losses and gradients (compared with torch).
Images are scikit-learn's 8x8 digits (d2l.FashionMNIST in d2l_lib), so 64 inputs.
"""
import jitgrad as torch
from jitgrad import nn

import d2l_lib as d2l

torch.manual_seed(0)
results = {}
DIGIT_EPOCHS = 10


def final_metrics(model):
    """Last averaged value of each curve the model plotted (train_loss, val_loss, val_acc)."""
    return {curve: float(pts[-1].y) for curve, pts in model.board.data.items()}


# ----------------------------------------------------------------------------- regression data
class LineData(d2l.DataModule):
    """y = X w + b + Gaussian noise; the first ``num_train`` rows train, the rest validate."""
    def __init__(self, w, b, noise=0.01, num_train=1000, num_val=1000, batch_size=32):
        super().__init__()
        self.save_hyperparameters()
        rows = num_train + num_val
        self.X = d2l.randn(rows, len(w))
        self.y = d2l.matmul(self.X, d2l.reshape(w, (-1, 1))) + b + d2l.randn(rows, 1) * noise

    def get_dataloader(self, train: bool):
        part = slice(None, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader((self.X, self.y), train, part)


TRUE_W, TRUE_B = d2l.tensor([1.5, -2.5]), 3.0
line = LineData(TRUE_W, TRUE_B)
xb, yb = next(iter(line.train_dataloader()))
print("one batch:", tuple(xb.shape), tuple(yb.shape))
results["batch_shapes"] = (tuple(xb.shape), tuple(yb.shape))
results["num_batches"] = len(line.train_dataloader())


# ----------------------------------------------------------------------------- linear, by hand
class PlainSGD(d2l.HyperParameters):
    """Minibatch SGD over a list of leaf tensors."""
    def __init__(self, params: list, lr: float):
        self.save_hyperparameters()

    def step(self):
        for p in self.params:
            p -= self.lr * p.grad

    def zero_grad(self):
        for p in self.params:
            if p.grad is not None:
                p.grad.zero_()


class HandLinear(d2l.Module):
    def __init__(self, num_inputs: int, lr: float, sigma: float = 0.01):
        super().__init__()
        self.lr = lr
        self.w = d2l.normal(0, sigma, (num_inputs, 1), requires_grad=True)
        self.b = d2l.zeros((1,), requires_grad=True)

    def forward(self, X):
        return self.b + d2l.matmul(X, self.w)

    def loss(self, pred, target):
        return d2l.reduce_mean(0.5 * (pred - target) ** 2)

    def configure_optimizers(self) -> PlainSGD:
        return PlainSGD([self.w, self.b], self.lr)


def fit(model, data, epochs):
    trainer = d2l.Trainer(max_epochs=epochs)
    trainer.fit(model, data)
    return trainer


hand = HandLinear(2, lr=0.03)
fit(hand, LineData(TRUE_W, TRUE_B), 3)
with torch.no_grad():
    w_err = TRUE_W - d2l.reshape(hand.w, TRUE_W.shape)
    print(f"w error {w_err}, b error {TRUE_B - hand.b}")
    results["scratch_errors"] = (w_err.abs().max().item(), abs(TRUE_B - hand.b.item()))
results["scratch_val_loss"] = final_metrics(hand)["val_loss"]


# ----------------------------------------------------------------------------- linear, concise
class TorchLinear(d2l.Module):
    def __init__(self, lr: float):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.LazyLinear(out_features=1)
        self.net.weight.data.normal_(0, 0.01)  # (no effect before materialising, as in torch)
        self.net.bias.data.fill_(0.0)

    def loss(self, pred, target):
        return nn.MSELoss()(pred, target)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        params = list(self.parameters())
        return torch.optim.SGD(params, self.lr)


@d2l.add_to_class(TorchLinear)
def get_w_b(self):
    return self.net.weight.data, self.net.bias.data


concise = TorchLinear(lr=0.03)
fit(concise, LineData(TRUE_W, TRUE_B), 3)
w_hat, b_hat = concise.get_w_b()
results["concise_errors"] = ((TRUE_W - d2l.reshape(w_hat, TRUE_W.shape)).abs().max().item(),
                             (TRUE_B - b_hat).abs().item())


# ----------------------------------------------------------------------------- weight decay
class WideData(d2l.DataModule):
    """Few samples of many features: easy to overfit. True weights 0.01, bias 0.05."""
    def __init__(self, num_train: int, num_val: int, num_inputs: int, batch_size: int):
        self.num_train, self.batch_size = num_train, batch_size
        rows = num_train + num_val
        self.X = d2l.randn(rows, num_inputs)
        noise = 0.01 * d2l.randn(rows, 1)
        self.y = d2l.matmul(self.X, 0.01 * d2l.ones((num_inputs, 1))) + 0.05 + noise

    def get_dataloader(self, train: bool):
        part = slice(None, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader([self.X, self.y], train, part)


def half_sq_norm(w):
    return d2l.reduce_sum(w * w) / 2


class RidgeByHand(HandLinear):
    def __init__(self, num_inputs: int, lambd: float, lr: float):
        super().__init__(num_inputs, lr)
        self.lambd = lambd

    def loss(self, pred, target):
        return super().loss(pred, target) + self.lambd * half_sq_norm(self.w)


wide = WideData(num_train=20, num_val=100, num_inputs=200, batch_size=5)
wd_trainer = d2l.Trainer(max_epochs=10)
for lambd in (0, 3):
    ridge = RidgeByHand(200, lambd=lambd, lr=0.01)
    ridge.board.yscale = "log"
    wd_trainer.fit(ridge, wide)
    norm = float(half_sq_norm(ridge.w))  # (of a tensor that requires grad: torch warns)
    print(f"lambda {lambd}: half squared norm of w {norm:.5f}")
    results[f"weight_decay_scratch_{lambd}"] = (norm, final_metrics(ridge))


class RidgeSGD(TorchLinear):
    def __init__(self, wd: float, lr: float):
        super().__init__(lr)
        self.wd = wd

    def configure_optimizers(self) -> torch.optim.Optimizer:
        groups = [{"params": self.net.weight, "weight_decay": self.wd}, {"params": self.net.bias}]
        return torch.optim.SGD(groups, lr=self.lr)


ridge = RidgeSGD(wd=3, lr=0.01)
ridge.board.yscale = "log"
wd_trainer.fit(ridge, wide)
results["weight_decay_concise"] = float(half_sq_norm(ridge.get_w_b()[0]))

# ----------------------------------------------------------------------------- softmax by hand
M = d2l.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
results["keepdims_sums"] = (d2l.reduce_sum(M, 0, keepdims=True).tolist(),
                            d2l.reduce_sum(M, 1, keepdims=True).tolist())


def softmax(logits):
    e = d2l.exp(logits)
    return e / d2l.reduce_sum(e, 1, keepdims=True)  # (broadcast over each row)


results["softmax_row_sums"] = d2l.reduce_sum(softmax(d2l.rand((2, 5))), 1).tolist()

probs = d2l.tensor([[0.7, 0.1, 0.2], [0.5, 0.25, 0.25]])
labels = d2l.tensor([1, 0])
results["picked"] = probs[[0, 1], labels].tolist()


def nll(p, y):
    """Mean negative log of each row's probability for its label."""
    rows = list(range(len(p)))
    return -d2l.reduce_mean(d2l.log(p[rows, y]))


results["cross_entropy"] = nll(probs, labels).item()


class HandSoftmax(d2l.Classifier):
    def __init__(self, num_inputs: int, num_outputs: int, lr: float, sigma: float = 0.01):
        super().__init__()
        self.lr = lr
        self.W = torch.normal(0, sigma, size=(num_inputs, num_outputs), requires_grad=True)
        self.b = torch.zeros((num_outputs,), requires_grad=True)

    def parameters(self):  # (plain tensors, not nn.Parameters: list them for the optimizer)
        return [self.W, self.b]

    def forward(self, X):
        flat = d2l.reshape(X, (-1, self.W.shape[0]))
        return softmax(d2l.matmul(flat, self.W) + self.b)

    def loss(self, probs, labels):
        return nll(probs, labels)


digits = d2l.FashionMNIST(batch_size=256)
classifier = HandSoftmax(64, 10, lr=0.1)
fit(classifier, digits, DIGIT_EPOCHS)
results["softmax_scratch"] = final_metrics(classifier)

images, truth = next(iter(digits.val_dataloader()))
guess = d2l.argmax(classifier(images), axis=1)
missed = d2l.astype(guess, truth.dtype) != truth
captions = [f"true {t} / said {g}" for t, g in zip(digits.text_labels(truth[missed]),
                                                    digits.text_labels(guess[missed]))]
results["wrong_labels"] = (len(captions), tuple(images[missed].shape[1:]))


class LazySoftmax(d2l.Classifier):
    def __init__(self, num_outputs: int, lr: float):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Flatten(), nn.LazyLinear(num_outputs))


classifier = LazySoftmax(10, lr=0.1)
fit(classifier, digits, DIGIT_EPOCHS)
results["softmax_concise"] = final_metrics(classifier)


# ----------------------------------------------------------------------------- MLPs
def relu(X):
    return torch.max(X, torch.zeros_like(X))


class HandMLP(d2l.Classifier):
    def __init__(self, num_inputs: int, num_outputs: int, num_hiddens: int, lr: float,
                 sigma: float = 0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W1 = nn.Parameter(sigma * torch.randn(num_inputs, num_hiddens))
        self.b1 = nn.Parameter(torch.zeros((num_hiddens,)))
        self.W2 = nn.Parameter(sigma * torch.randn(num_hiddens, num_outputs))
        self.b2 = nn.Parameter(torch.zeros((num_outputs,)))

    def forward(self, X):
        H = relu(d2l.matmul(d2l.reshape(X, (-1, self.num_inputs)), self.W1) + self.b1)
        return self.b2 + d2l.matmul(H, self.W2)


mlp = HandMLP(64, 10, 256, lr=0.1)
mlp_trainer = fit(mlp, digits, DIGIT_EPOCHS)
results["mlp_scratch"] = final_metrics(mlp)


class SeqMLP(d2l.Classifier):
    def __init__(self, num_outputs: int, num_hiddens: int, lr: float):
        super().__init__()
        self.lr = lr
        hidden = nn.LazyLinear(num_hiddens)
        self.net = nn.Sequential(nn.Flatten(), hidden, nn.ReLU(), nn.LazyLinear(num_outputs))


mlp = SeqMLP(10, 256, lr=0.1)
mlp_trainer.fit(mlp, digits)
results["mlp_concise"] = final_metrics(mlp)


# ----------------------------------------------------------------------------- dropout
def drop(X, p):
    """Inverted dropout: zero each entry with probability p, scale the rest by 1 / (1 - p)."""
    assert 0 <= p <= 1
    if p == 1:
        return torch.zeros_like(X)
    keep = (torch.rand(X.shape) > p).float()
    return keep * X / (1.0 - p)


drop_in = torch.arange(16, dtype=torch.float32).reshape((2, 8))
for p in (0, 0.5, 1):
    print(f"p={p}:", drop(drop_in, p))
results["dropout_half"] = drop(drop_in, 0.5)
results["dropout_ends"] = (drop(drop_in, 0).tolist(), drop(drop_in, 1).tolist())


class HandDropoutMLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2, dropout_1, dropout_2, lr):
        super().__init__()
        self.dropout_1, self.dropout_2, self.lr = dropout_1, dropout_2, lr
        self.hidden = nn.ModuleList([nn.LazyLinear(num_hiddens_1), nn.LazyLinear(num_hiddens_2)])
        self.head = nn.LazyLinear(num_outputs)
        self.act = nn.ReLU()

    def forward(self, X):
        H = X.reshape((X.shape[0], -1))
        for layer, p in zip(self.hidden, (self.dropout_1, self.dropout_2)):
            H = self.act(layer(H))
            if self.training:
                H = drop(H, p)
        return self.head(H)


sizes = dict(num_outputs=10, num_hiddens_1=256, num_hiddens_2=256, dropout_1=0.5,
             dropout_2=0.5, lr=0.1)
net = HandDropoutMLP(**sizes)
drop_trainer = fit(net, digits, DIGIT_EPOCHS)
results["dropout_scratch"] = final_metrics(net)


class SeqDropoutMLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2, dropout_1, dropout_2, lr):
        super().__init__()
        self.save_hyperparameters()
        layers = [nn.Flatten()]
        for width, p in ((num_hiddens_1, dropout_1), (num_hiddens_2, dropout_2)):
            layers += [nn.LazyLinear(width), nn.ReLU(), nn.Dropout(p)]
        self.net = nn.Sequential(*layers, nn.LazyLinear(num_outputs))


net = SeqDropoutMLP(**sizes)
drop_trainer.fit(net, digits)
results["dropout_concise"] = final_metrics(net)
results["lazy_shapes"] = [tuple(p.shape) for p in net.parameters()]

# ----------------------------------------------------------------------------- fixed weights
# a small SeqMLP with deterministic weights on one validation batch: loss, accuracy,
# per-example losses and gradients (the tests compare them with torch's)
probe = SeqMLP(10, 16, lr=0.1)
xv, yv = next(iter(digits.val_dataloader()))
probe(xv)  # (the lazy layers take their input size)
with torch.no_grad():
    for k, (_, p) in enumerate(probe.named_parameters(), start=1):
        p.copy_(torch.cos(0.9 * k * torch.arange(p.numel(), dtype=torch.float32)).view_as(p) / 4)
probe_loss = probe.loss(probe(xv), yv)
probe_loss.backward()
fixed_result = {"loss": probe_loss.item(), "acc": probe.accuracy(probe(xv), yv).item(),
                "per_example": probe.loss(probe(xv), yv, averaged=False).tolist(),
                **{n: p.grad.tolist() for n, p in probe.named_parameters()}}
