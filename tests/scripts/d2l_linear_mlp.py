# ruff: noqa: A001, B006, B007, B008, B010, B020, C408, C416, E401, E402, E501, E701, E731, F401, F811, F841, I001, N801, N802, N803, N806, N812, UP004, UP008, UP031, UP032, UP034
# (d2l.ai's code as is)
"""d2l.ai (Dive into Deep Learning, PyTorch), chapters 3-5: synthetic regression data, linear
regression from scratch (own SGD, `param -= lr * param.grad` under no_grad) and concise
(LazyLinear, MSELoss), weight decay from scratch and with SGD param groups, softmax regression
from scratch (fancy-index cross entropy) and concise, the MLP from scratch (nn.Parameter,
torch.max ReLU) and concise, dropout from scratch and with nn.Dropout, all trained by d2l's
Module / DataModule / Trainer classes.

Changes: the d2l package is not installed, so its classes these sections use come from
d2l_lib.py next to this file (d2l/torch.py written out once for the d2l ports, ProgressBoard
without matplotlib); Fashion-MNIST is a download, so
sklearn's bundled 8x8 digits stand in (d2l.FashionMNIST -> Digits, num_inputs 784 -> 64).
"""

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

def val_metrics(model):
    """The last validation points the board kept (the plot's last values)."""
    return {k: float(v[-1].y) for k, v in model.board.data.items()}

# -----------------------------------------------------------------------------
# 3.3 Synthetic Regression Data
class SyntheticRegressionData(d2l.DataModule):  #@save
    """Synthetic data for linear regression."""
    def __init__(self, w, b, noise=0.01, num_train=1000, num_val=1000,
                 batch_size=32):
        super().__init__()
        self.save_hyperparameters()
        n = num_train + num_val
        self.X = d2l.randn(n, len(w))
        noise = d2l.randn(n, 1) * noise
        self.y = d2l.matmul(self.X, d2l.reshape(w, (-1, 1))) + b + noise

@d2l.add_to_class(SyntheticRegressionData)  #@save
def get_dataloader(self, train):
    i = slice(0, self.num_train) if train else slice(self.num_train, None)
    return self.get_tensorloader((self.X, self.y), train, i)

d2l.SyntheticRegressionData = SyntheticRegressionData
data = SyntheticRegressionData(w=torch.tensor([2, -3.4]), b=4.2)
X, y = next(iter(data.train_dataloader()))
print('X shape:', X.shape, '\ny shape:', y.shape)
results['batch_shapes'] = (tuple(X.shape), tuple(y.shape))
results['num_batches'] = len(data.train_dataloader())

# -----------------------------------------------------------------------------
# 3.4 Linear Regression Implementation from Scratch
class LinearRegressionScratch(d2l.Module):  #@save
    """The linear regression model implemented from scratch."""
    def __init__(self, num_inputs, lr, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.w = d2l.normal(0, sigma, (num_inputs, 1), requires_grad=True)
        self.b = d2l.zeros(1, requires_grad=True)

@d2l.add_to_class(LinearRegressionScratch)  #@save
def forward(self, X):
    return d2l.matmul(X, self.w) + self.b

@d2l.add_to_class(LinearRegressionScratch)  #@save
def loss(self, y_hat, y):
    l = (y_hat - y) ** 2 / 2
    return d2l.reduce_mean(l)

class SGD(d2l.HyperParameters):  #@save
    """Minibatch stochastic gradient descent."""
    def __init__(self, params, lr):
        self.save_hyperparameters()

    def step(self):
        for param in self.params:
            param -= self.lr * param.grad

    def zero_grad(self):
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()

@d2l.add_to_class(LinearRegressionScratch)  #@save
def configure_optimizers(self):
    return SGD([self.w, self.b], self.lr)

d2l.LinearRegressionScratch, d2l.SGD = LinearRegressionScratch, SGD
model = LinearRegressionScratch(2, lr=0.03)
data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
trainer = d2l.Trainer(max_epochs=3)
trainer.fit(model, data)
with torch.no_grad():
    print(f'error in estimating w: {data.w - d2l.reshape(model.w, data.w.shape)}')
    print(f'error in estimating b: {data.b - model.b}')
    results['scratch_errors'] = ((data.w - d2l.reshape(model.w, data.w.shape)).abs().max().item(),
                                 abs(data.b - model.b.item()))
results['scratch_val_loss'] = val_metrics(model)['val_loss']

# -----------------------------------------------------------------------------
# 3.5 Concise Implementation of Linear Regression
class LinearRegression(d2l.Module):  #@save
    """The linear regression model implemented with high-level APIs."""
    def __init__(self, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.LazyLinear(1)
        self.net.weight.data.normal_(0, 0.01)
        self.net.bias.data.fill_(0)

@d2l.add_to_class(LinearRegression)  #@save
def forward(self, X):
    return self.net(X)

@d2l.add_to_class(LinearRegression)  #@save
def loss(self, y_hat, y):
    fn = nn.MSELoss()
    return fn(y_hat, y)

@d2l.add_to_class(LinearRegression)  #@save
def configure_optimizers(self):
    return torch.optim.SGD(self.parameters(), self.lr)

d2l.LinearRegression = LinearRegression
model = LinearRegression(lr=0.03)
data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
trainer = d2l.Trainer(max_epochs=3)
trainer.fit(model, data)

@d2l.add_to_class(LinearRegression)  #@save
def get_w_b(self):
    return (self.net.weight.data, self.net.bias.data)
w, b = model.get_w_b()
print(f'error in estimating w: {data.w - d2l.reshape(w, data.w.shape)}')
print(f'error in estimating b: {data.b - b}')
results['concise_errors'] = ((data.w - d2l.reshape(w, data.w.shape)).abs().max().item(),
                             (data.b - b).abs().item())

# -----------------------------------------------------------------------------
# 3.7 Weight Decay
class Data(d2l.DataModule):
    def __init__(self, num_train, num_val, num_inputs, batch_size):
        self.save_hyperparameters()
        n = num_train + num_val
        self.X = d2l.randn(n, num_inputs)
        noise = d2l.randn(n, 1) * 0.01
        w, b = d2l.ones((num_inputs, 1)) * 0.01, 0.05
        self.y = d2l.matmul(self.X, w) + b + noise

    def get_dataloader(self, train):
        i = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader([self.X, self.y], train, i)

def l2_penalty(w):
    return d2l.reduce_sum(w**2) / 2

class WeightDecayScratch(d2l.LinearRegressionScratch):
    def __init__(self, num_inputs, lambd, lr, sigma=0.01):
        super().__init__(num_inputs, lr, sigma)
        self.save_hyperparameters()

    def loss(self, y_hat, y):
        return (super().loss(y_hat, y) +
                self.lambd * l2_penalty(self.w))

data = Data(num_train=20, num_val=100, num_inputs=200, batch_size=5)
trainer = d2l.Trainer(max_epochs=10)

def train_scratch(lambd):
    model = WeightDecayScratch(num_inputs=200, lambd=lambd, lr=0.01)
    model.board.yscale='log'
    trainer.fit(model, data)
    print('L2 norm of w:', float(l2_penalty(model.w)))
    results[f'weight_decay_scratch_{lambd}'] = (float(l2_penalty(model.w)), val_metrics(model))

train_scratch(0)
train_scratch(3)

class WeightDecay(d2l.LinearRegression):
    def __init__(self, wd, lr):
        super().__init__(lr)
        self.save_hyperparameters()
        self.wd = wd

    def configure_optimizers(self):
        return torch.optim.SGD([
            {'params': self.net.weight, 'weight_decay': self.wd},
            {'params': self.net.bias}], lr=self.lr)

model = WeightDecay(wd=3, lr=0.01)
model.board.yscale='log'
trainer.fit(model, data)
print('L2 norm of w:', float(l2_penalty(model.get_w_b()[0])))
results['weight_decay_concise'] = float(l2_penalty(model.get_w_b()[0]))

# -----------------------------------------------------------------------------
# 4.4 Softmax Regression Implementation from Scratch (digits in place of Fashion-MNIST)
X = d2l.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
results['keepdims_sums'] = (d2l.reduce_sum(X, 0, keepdims=True).tolist(),
                            d2l.reduce_sum(X, 1, keepdims=True).tolist())

def softmax(X):
    X_exp = d2l.exp(X)
    partition = d2l.reduce_sum(X_exp, 1, keepdims=True)
    return X_exp / partition  # The broadcasting mechanism is applied here

X = d2l.rand((2, 5))
X_prob = softmax(X)
results['softmax_row_sums'] = d2l.reduce_sum(X_prob, 1).tolist()

class SoftmaxRegressionScratch(d2l.Classifier):
    def __init__(self, num_inputs, num_outputs, lr, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W = torch.normal(0, sigma, size=(num_inputs, num_outputs),
                              requires_grad=True)
        self.b = torch.zeros(num_outputs, requires_grad=True)

    def parameters(self):
        return [self.W, self.b]

@d2l.add_to_class(SoftmaxRegressionScratch)
def forward(self, X):
    X = d2l.reshape(X, (-1, self.W.shape[0]))
    return softmax(d2l.matmul(X, self.W) + self.b)

y = d2l.tensor([0, 2])
y_hat = d2l.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
results['picked'] = y_hat[[0, 1], y].tolist()

def cross_entropy(y_hat, y):
    return -d2l.reduce_mean(d2l.log(y_hat[list(range(len(y_hat))), y]))

results['cross_entropy'] = cross_entropy(y_hat, y).item()

@d2l.add_to_class(SoftmaxRegressionScratch)
def loss(self, y_hat, y):
    return cross_entropy(y_hat, y)

data = d2l.FashionMNIST(batch_size=256)
model = SoftmaxRegressionScratch(num_inputs=64, num_outputs=10, lr=0.1)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
results['softmax_scratch'] = val_metrics(model)

X, y = next(iter(data.val_dataloader()))
preds = d2l.argmax(model(X), axis=1)
wrong = d2l.astype(preds, y.dtype) != y
X, y, preds = X[wrong], y[wrong], preds[wrong]
labels = [a+'\n'+b for a, b in zip(
    data.text_labels(y), data.text_labels(preds))]
results['wrong_labels'] = (len(labels), tuple(X.shape[1:]))

# -----------------------------------------------------------------------------
# 4.5 Concise Implementation of Softmax Regression
class SoftmaxRegression(d2l.Classifier):  #@save
    """The softmax regression model."""
    def __init__(self, num_outputs, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Flatten(),
                                 nn.LazyLinear(num_outputs))

    def forward(self, X):
        return self.net(X)

data = d2l.FashionMNIST(batch_size=256)
model = SoftmaxRegression(num_outputs=10, lr=0.1)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
results['softmax_concise'] = val_metrics(model)

# -----------------------------------------------------------------------------
# 5.2 Implementation of Multilayer Perceptrons
class MLPScratch(d2l.Classifier):
    def __init__(self, num_inputs, num_outputs, num_hiddens, lr, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W1 = nn.Parameter(torch.randn(num_inputs, num_hiddens) * sigma)
        self.b1 = nn.Parameter(torch.zeros(num_hiddens))
        self.W2 = nn.Parameter(torch.randn(num_hiddens, num_outputs) * sigma)
        self.b2 = nn.Parameter(torch.zeros(num_outputs))

def relu(X):
    a = torch.zeros_like(X)
    return torch.max(X, a)

@d2l.add_to_class(MLPScratch)
def forward(self, X):
    X = d2l.reshape(X, (-1, self.num_inputs))
    H = relu(d2l.matmul(X, self.W1) + self.b1)
    return d2l.matmul(H, self.W2) + self.b2

model = MLPScratch(num_inputs=64, num_outputs=10, num_hiddens=256, lr=0.1)
data = d2l.FashionMNIST(batch_size=256)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
results['mlp_scratch'] = val_metrics(model)

class MLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Flatten(), nn.LazyLinear(num_hiddens),
                                 nn.ReLU(), nn.LazyLinear(num_outputs))

model = MLP(num_outputs=10, num_hiddens=256, lr=0.1)
trainer.fit(model, data)
results['mlp_concise'] = val_metrics(model)

# -----------------------------------------------------------------------------
# 5.6 Dropout
def dropout_layer(X, dropout):
    assert 0 <= dropout <= 1
    if dropout == 1: return torch.zeros_like(X)
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)

X = torch.arange(16, dtype = torch.float32).reshape((2, 8))
print('dropout_p = 0:', dropout_layer(X, 0))
print('dropout_p = 0.5:', dropout_layer(X, 0.5))
print('dropout_p = 1:', dropout_layer(X, 1))
results['dropout_half'] = dropout_layer(X, 0.5)
results['dropout_ends'] = (dropout_layer(X, 0).tolist(), dropout_layer(X, 1).tolist())

class DropoutMLPScratch(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2,
                 dropout_1, dropout_2, lr):
        super().__init__()
        self.save_hyperparameters()
        self.lin1 = nn.LazyLinear(num_hiddens_1)
        self.lin2 = nn.LazyLinear(num_hiddens_2)
        self.lin3 = nn.LazyLinear(num_outputs)
        self.relu = nn.ReLU()

    def forward(self, X):
        H1 = self.relu(self.lin1(X.reshape((X.shape[0], -1))))
        if self.training:
            H1 = dropout_layer(H1, self.dropout_1)
        H2 = self.relu(self.lin2(H1))
        if self.training:
            H2 = dropout_layer(H2, self.dropout_2)
        return self.lin3(H2)

hparams = {'num_outputs':10, 'num_hiddens_1':256, 'num_hiddens_2':256,
           'dropout_1':0.5, 'dropout_2':0.5, 'lr':0.1}
model = DropoutMLPScratch(**hparams)
data = d2l.FashionMNIST(batch_size=256)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
results['dropout_scratch'] = val_metrics(model)

class DropoutMLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2,
                 dropout_1, dropout_2, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Flatten(), nn.LazyLinear(num_hiddens_1), nn.ReLU(),
            nn.Dropout(dropout_1), nn.LazyLinear(num_hiddens_2), nn.ReLU(),
            nn.Dropout(dropout_2), nn.LazyLinear(num_outputs))

model = DropoutMLP(**hparams)
trainer.fit(model, data)
results['dropout_concise'] = val_metrics(model)
results['lazy_shapes'] = [tuple(p.shape) for p in model.parameters()]

# -----------------------------------------------------------------------------
# a deterministic part to compare with torch: the concise MLP with fixed weights, its loss,
# accuracy and gradients on the first validation batch
fixed = MLP(num_outputs=10, num_hiddens=16, lr=0.1)
Xv, yv = next(iter(data.val_dataloader()))
fixed(Xv)  # (materializes the lazy layers)
with torch.no_grad():
    for k, (name, p) in enumerate(fixed.named_parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
fixed_loss = fixed.loss(fixed(Xv), yv)
fixed_loss.backward()
fixed_result = {"loss": fixed_loss.item(), "acc": fixed.accuracy(fixed(Xv), yv).item(),
                "per_example": fixed.loss(fixed(Xv), yv, averaged=False).tolist(),
                **{n: p.grad.tolist() for n, p in fixed.named_parameters()}}
