"""Building blocks and convolutional nets, written for these tests in the way the d2l.ai book
(Dive into Deep Learning, chapters 6-8) commonly writes its PyTorch code (modelled on the API
usage of that book, not a copy of it), trained with the d2l-style classes of d2l_lib.py next to
this file. It exercises:

- custom modules: a hand-rolled Sequential (``add_module``, ``children``), a module with a
  constant tensor, a reused layer and Python control flow, nested Sequentials;
- parameter access (``state_dict``, ``named_parameters``, ``.grad is None``), a layer shared
  twice in one Sequential, ``apply`` with ``nn.init.normal_/zeros_/constant_/xavier_uniform_/
  uniform_`` and ``.data`` edits, ``UninitializedParameter`` of lazy layers;
- custom layers (centering, a Linear on ``.data``), ``torch.save``/``torch.load`` of a tensor,
  a list, a dict and a ``state_dict`` (in a temporary directory);
- 2-D cross-correlation by hand, learning an edge kernel with ``nn.LazyConv2d`` by hand-written
  SGD on ``weight.data``;
- LeNet (``LazyConv2d``, ``AvgPool2d``, ``Sigmoid``), batch norm by hand (mode from
  ``torch.is_grad_enabled``) and with ``LazyBatchNorm2d``/``LazyBatchNorm1d``, residual blocks,
  a tiny ResNet (``MaxPool2d``, ``AdaptiveAvgPool2d``, ``add_module``) and a grouped-conv
  ResNeXt block; fixed-weight losses, gradients and running statistics (compared with torch).
Images are scikit-learn's 8x8 digits resized to 16x16 (3 epochs).
"""
import math
import os
import tempfile

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F

import d2l_lib as d2l

torch.manual_seed(0)
results = {}
EPOCHS = 3
scratch_dir = tempfile.mkdtemp()


def metrics_of(model):
    return {curve: float(pts[-1].y) for curve, pts in model.board.data.items()}


def is_linear(m):
    return type(m) is nn.Linear


# ----------------------------------------------------------------------------- modules
inputs = torch.rand(2, 20)
results["sequential_shape"] = tuple(
    nn.Sequential(nn.LazyLinear(64), nn.ReLU(), nn.LazyLinear(10))(inputs).shape)


class TwoLayer(nn.Module):
    def __init__(self, hidden=64, out=10):
        super().__init__()
        self.hidden = nn.LazyLinear(hidden)
        self.output = nn.LazyLinear(out)

    def forward(self, x):
        h = F.relu(self.hidden(x))
        return self.output(h)


results["mlp_shape"] = tuple(TwoLayer()(inputs).shape)


class Chain(nn.Module):
    """Runs its children in the order they were registered."""
    def __init__(self, *layers):
        super().__init__()
        for position, layer in enumerate(layers):
            self.add_module(str(position), layer)

    def forward(self, x):
        for child in self.children():
            x = child(x)
        return x


chain = Chain(nn.LazyLinear(32), nn.ReLU(), nn.LazyLinear(10))
results["my_sequential"] = (tuple(chain(inputs).shape), [n for n, _ in chain.named_children()])


class Shrinker(nn.Module):
    """A constant (non-parameter) mixing matrix, one linear layer used twice, and a loop that
    halves the activations until their absolute sum is at most 1."""
    def __init__(self):
        super().__init__()
        self.mix = torch.rand((20, 20))
        self.proj = nn.LazyLinear(20)

    def forward(self, x):
        h = F.relu(self.proj(x) @ self.mix + 1)
        h = self.proj(h)
        while h.abs().sum() > 1:
            h /= 2
        return h.sum()


shrink = Shrinker()
results["fixed_hidden"] = (shrink(inputs).abs().item(), len(list(shrink.parameters())))


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.LazyLinear(48), nn.ReLU(), nn.LazyLinear(24), nn.ReLU())
        self.top = nn.LazyLinear(12)

    def forward(self, x):
        return self.top(self.body(x))


mixed = nn.Sequential(Tower(), nn.LazyLinear(20), Shrinker())
results["chimera"] = (tuple(mixed(inputs).shape), [n for n, _ in mixed.named_parameters()])

# ----------------------------------------------------------------------------- parameters
four = torch.rand(size=(2, 4))
small = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
small(four)
last = small[2]
results["state_dict_keys"] = list(last.state_dict())
results["bias_type"] = type(last.bias).__name__
results["grad_is_none"] = last.weight.grad is None
results["named_shapes"] = [(n, tuple(p.shape)) for n, p in small.named_parameters()]

tied = nn.LazyLinear(8)  # (one object, used at positions 2 and 4)
stack = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), tied, nn.ReLU(), tied, nn.ReLU(),
                      nn.LazyLinear(1))
stack(four)
stack[2].weight.data[0, 0] = 100  # (an edit through one position shows at the other)
same_row = stack[2].weight.data[0] == stack[4].weight.data[0]
print("tied rows equal:", same_row)
results["shared"] = (same_row.all().item(), stack[4].weight[0, 0].item(),
                     len(list(stack.parameters())))

# ----------------------------------------------------------------------------- initialisation
small = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
small(four)


def gaussian_init(m):
    if is_linear(m):
        nn.init.normal_(m.weight, mean=0, std=0.01)
        nn.init.zeros_(m.bias)


def ones_init(m):
    if is_linear(m):
        nn.init.constant_(m.weight, 1)
        nn.init.zeros_(m.bias)


small.apply(gaussian_init)
first = small[0]
results["init_normal"] = (first.weight.data.abs().max().item(), first.bias.data[0].item())
small.apply(ones_init)
results["init_constant"] = (first.weight.data[0].tolist(), first.bias.data[0].item())

small[0].apply(lambda m: nn.init.xavier_uniform_(m.weight) if is_linear(m) else None)
small[2].apply(lambda m: nn.init.constant_(m.weight, 42) if is_linear(m) else None)
bound = math.sqrt(6 / (4 + 8))  # (xavier's uniform bound for fan_in 4, fan_out 8)
results["init_xavier_42"] = (first.weight.data.abs().max().item() <= bound,
                             small[2].weight.data.tolist())


def sparse_uniform(m):
    """U(-10, 10), then zero the entries smaller than 5 in magnitude."""
    if is_linear(m):
        name, shape = next((n, p.shape) for n, p in m.named_parameters())
        print("init", name, shape)
        nn.init.uniform_(m.weight, -10, 10)
        m.weight.data *= m.weight.data.abs() >= 5


small.apply(sparse_uniform)
rows = small[0].weight[:2]
results["my_init"] = bool(((rows == 0) | (rows.abs() >= 5)).all())
small[0].weight.data[:] += 1
small[0].weight.data[0, 0] = 42
results["edited"] = (small[0].weight.data[0, 0].item(), small[0].weight.requires_grad)

lazy = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
results["uninitialized"] = type(lazy[0].weight).__name__
lazy(torch.rand(2, 20))
results["lazy_shape"] = (tuple(lazy[0].weight.shape), type(lazy[0]).__name__)


# ----------------------------------------------------------------------------- custom layers
class Center(nn.Module):
    def forward(self, x):
        return x - x.mean()


results["centered"] = Center()(d2l.tensor([1.0, 2, 3, 4, 5])).tolist()
results["centered_mean"] = nn.Sequential(nn.LazyLinear(32), Center())(d2l.rand(4, 8)).mean().item()


class ReluDense(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out))
        self.bias = nn.Parameter(torch.randn(n_out,))

    def forward(self, x):
        return F.relu(torch.matmul(x, self.weight.data) + self.bias.data)


dense = ReluDense(5, 3)
results["my_linear"] = (tuple(dense.weight.shape), tuple(dense(torch.rand(2, 5)).shape))
results["my_linear_net"] = tuple(
    nn.Sequential(ReluDense(64, 8), ReluDense(8, 1))(torch.rand(2, 64)).shape)

# ----------------------------------------------------------------------------- files
here = os.getcwd()
os.chdir(scratch_dir)
try:
    counts, blank = torch.arange(4), torch.zeros(4)
    torch.save(counts, "counts.pt")
    assert torch.equal(torch.load("counts.pt"), counts)
    torch.save([counts, blank], "pair.pt")
    counts_back, blank_back = torch.load("pair.pt")
    torch.save({"x": counts, "y": blank}, "named.pt")
    named = torch.load("named.pt")
    results["file_io"] = (counts_back.tolist(), blank_back.tolist(), sorted(named))

    original = TwoLayer(hidden=32)
    probe_in = torch.randn(size=(2, 20))
    expected = original(probe_in)
    torch.save(original.state_dict(), "two_layer.params")
    copy = TwoLayer(hidden=32)
    copy.load_state_dict(torch.load("two_layer.params"))
    copy.eval()
    results["clone_equal"] = bool((copy(probe_in) == expected).all())
finally:
    os.chdir(here)


# ----------------------------------------------------------------------------- convolution
def xcorr(X, K):
    """Valid 2-D cross-correlation of a matrix with a kernel, one output entry at a time."""
    kh, kw = K.shape
    out = d2l.zeros((X.shape[0] - kh + 1, X.shape[1] - kw + 1))
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[r, c] = d2l.reduce_sum(X[r:r + kh, c:c + kw] * K)
    return out


results["corr2d"] = xcorr(d2l.reshape(d2l.arange(9.0), (3, 3)),
                          d2l.tensor([[0.0, 1.0], [2.0, 3.0]])).tolist()


class HandConv(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.rand(shape)), nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return xcorr(x, self.weight) + self.bias


stripes = d2l.ones((6, 8))
stripes[:, 2:6] = 0
edge_kernel = d2l.tensor([[1.0, -1.0]])
edges = xcorr(stripes, edge_kernel)
results["edges"] = (edges.tolist(), xcorr(d2l.transpose(stripes), edge_kernel).abs().sum().item())
results["own_conv2d"] = tuple(HandConv((1, 2))(stripes).shape)

learner = nn.LazyConv2d(1, kernel_size=(1, 2), bias=False)
image, target = stripes.reshape((1, 1, 6, 8)), edges.reshape((1, 1, 6, 7))
conv_losses = []
for step in range(1, 11):
    sq_err = ((learner(image) - target) ** 2).sum()
    learner.zero_grad()
    sq_err.backward()
    learner.weight.data[:] -= 0.03 * learner.weight.grad
    if step % 2 == 0:
        print(f"step {step}: squared error {sq_err:.3f}")
        conv_losses.append(sq_err.item())
results["learned_kernel"] = d2l.reshape(learner.weight.data, (1, 2)).tolist()
results["conv_losses"] = conv_losses


# ----------------------------------------------------------------------------- LeNet
def xavier_cnn(m):
    if type(m) in (nn.Linear, nn.Conv2d):
        nn.init.xavier_uniform_(m.weight)


d2l.init_cnn = xavier_cnn


def sig_pool():
    return [nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2)]


class LeNet5(d2l.Classifier):
    def __init__(self, lr: float = 0.1, num_classes: int = 10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5, padding=2), *sig_pool(),
            nn.LazyConv2d(16, kernel_size=5), *sig_pool(), nn.Flatten(),
            nn.LazyLinear(120), nn.Sigmoid(), nn.LazyLinear(84), nn.Sigmoid(),
            nn.LazyLinear(num_classes))


lenet = LeNet5()
lenet.layer_summary((1, 1, 28, 28))
results["lenet_summary"] = [tuple(p.shape) for p in lenet.parameters()]
digits = d2l.FashionMNIST(batch_size=128, resize=(16, 16))


def train(model, init=xavier_cnn):
    first_batch = next(iter(digits.get_dataloader(True)))[0]
    model.apply_init([first_batch], init)
    d2l.Trainer(max_epochs=EPOCHS, num_gpus=1).fit(model, digits)
    return metrics_of(model)


results["lenet"] = train(LeNet5(lr=0.1))


# ----------------------------------------------------------------------------- batch norm
def bn_forward(X, gamma, beta, running_mean, running_var, eps, momentum):
    """Batch norm by hand: batch statistics (and updated running ones) while autograd is on,
    the running statistics otherwise. Returns (Y, new running mean, new running var)."""
    if torch.is_grad_enabled():
        assert X.dim() in (2, 4)
        axes = 0 if X.dim() == 2 else (0, 2, 3)
        mu = X.mean(dim=axes, keepdim=X.dim() == 4)
        var = ((X - mu) ** 2).mean(dim=axes, keepdim=X.dim() == 4)
        X_hat = (X - mu) / torch.sqrt(var + eps)
        running_mean = momentum * mu + (1.0 - momentum) * running_mean
        running_var = momentum * var + (1.0 - momentum) * running_var
    else:
        X_hat = (X - running_mean) / torch.sqrt(running_var + eps)
    return gamma * X_hat + beta, running_mean.data, running_var.data


class HandBatchNorm(nn.Module):
    def __init__(self, num_features: int, num_dims: int):
        super().__init__()
        shape = (1, num_features, 1, 1) if num_dims == 4 else (1, num_features)
        self.gamma, self.beta = nn.Parameter(torch.ones(shape)), nn.Parameter(torch.zeros(shape))
        self.moving_mean, self.moving_var = torch.zeros(shape), torch.ones(shape)

    def forward(self, X):
        if X.device != self.moving_mean.device:
            self.moving_mean, self.moving_var = (self.moving_mean.to(X.device),
                                                 self.moving_var.to(X.device))
        Y, self.moving_mean, self.moving_var = bn_forward(
            X, self.gamma, self.beta, self.moving_mean, self.moving_var, eps=1e-5, momentum=0.1)
        return Y


def bn_lenet_layers(norm, num_classes):
    """LeNet without padding, a norm layer after every conv/linear but the last."""
    def pool():
        return nn.AvgPool2d(kernel_size=2, stride=2)
    return [nn.LazyConv2d(6, kernel_size=5), norm(6, 4), nn.Sigmoid(), pool(),
            nn.LazyConv2d(16, kernel_size=5), norm(16, 4), nn.Sigmoid(), pool(), nn.Flatten(),
            nn.LazyLinear(120), norm(120, 2), nn.Sigmoid(),
            nn.LazyLinear(84), norm(84, 2), nn.Sigmoid(), nn.LazyLinear(num_classes)]


class HandBNLeNet(d2l.Classifier):
    def __init__(self, lr: float = 0.1, num_classes: int = 10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(*bn_lenet_layers(HandBatchNorm, num_classes))


def lazy_bn(num_features, num_dims):
    return nn.LazyBatchNorm2d() if num_dims == 4 else nn.LazyBatchNorm1d()


class LazyBNLeNet(d2l.Classifier):
    def __init__(self, lr: float = 0.1, num_classes: int = 10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(*bn_lenet_layers(lazy_bn, num_classes))


model = HandBNLeNet(lr=0.1)
results["bn_scratch"] = train(model, d2l.init_cnn)
norm1 = model.net[1]
results["bn_gamma_beta"] = (tuple(norm1.gamma.reshape((-1,)).shape),
                            norm1.moving_var.reshape((-1,)).tolist())
results["bn_concise"] = train(LazyBNLeNet(lr=0.1), d2l.init_cnn)


# ----------------------------------------------------------------------------- ResNet
class ResBlock(nn.Module):
    """Two 3x3 conv + batch-norm layers and a skip (a strided 1x1 conv when shapes change)."""
    def __init__(self, channels, project=False, stride=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(channels, kernel_size=3, padding=1, stride=stride)
        self.conv2 = nn.LazyConv2d(channels, kernel_size=3, padding=1)
        self.skip = nn.LazyConv2d(channels, kernel_size=1, stride=stride) if project else None
        self.bn1, self.bn2 = nn.LazyBatchNorm2d(), nn.LazyBatchNorm2d()

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        y += x if self.skip is None else self.skip(x)
        return F.relu(y)


cube = d2l.randn(4, 3, 6, 6)
results["residual_shapes"] = [tuple(ResBlock(3)(cube).shape),
                              tuple(ResBlock(6, project=True, stride=2)(cube).shape)]


class SmallResNet(d2l.Classifier):
    def __init__(self, stages=((1, 16), (1, 32)), lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(self.stem())
        for k, (depth, channels) in enumerate(stages):
            self.net.add_module(f"b{k + 2}", self.stage(depth, channels, downsample=k > 0))
        head = nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.LazyLinear(num_classes))
        self.net.add_module("last", head)
        self.net.apply(xavier_cnn)

    def stem(self):
        conv = nn.LazyConv2d(16, kernel_size=7, stride=2, padding=3)
        pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        return nn.Sequential(conv, nn.LazyBatchNorm2d(), nn.ReLU(), pool)


@d2l.add_to_class(SmallResNet)
def stage(self, depth, channels, downsample):
    blocks = [ResBlock(channels, project=True, stride=2) if downsample and i == 0
              else ResBlock(channels) for i in range(depth)]
    return nn.Sequential(*blocks)


SmallResNet().layer_summary((1, 1, 16, 16))
model = SmallResNet(lr=0.05)
results["resnet"] = train(model, d2l.init_cnn)
results["resnet_children"] = [n for n, _ in model.net.named_children()]


class GroupedBlock(nn.Module):
    """Bottleneck 1x1 -> grouped 3x3 -> 1x1, with batch norms and a skip."""
    def __init__(self, channels, groups, bottleneck, project=False, stride=1):
        super().__init__()
        inner = int(round(channels * bottleneck))
        self.reduce = nn.LazyConv2d(inner, kernel_size=1, stride=1)
        self.spatial = nn.LazyConv2d(inner, kernel_size=3, stride=stride, padding=1,
                                     groups=inner // groups)
        self.expand = nn.LazyConv2d(channels, kernel_size=1, stride=1)
        self.norms = nn.ModuleList([nn.LazyBatchNorm2d() for _ in range(3)])
        self.shortcut = (nn.Sequential(nn.LazyConv2d(channels, kernel_size=1, stride=stride),
                                       nn.LazyBatchNorm2d()) if project else None)

    def forward(self, x):
        y = F.relu(self.norms[0](self.reduce(x)))
        y = F.relu(self.norms[1](self.spatial(y)))
        y = self.norms[2](self.expand(y))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)))


results["resnext_shape"] = tuple(GroupedBlock(32, 16, 1)(d2l.randn(4, 32, 12, 12)).shape)

# ----------------------------------------------------------------------------- fixed weights
# the two batch-norm LeNets and the small ResNet with deterministic weights on one validation
# batch: training-mode loss and gradients, the running statistics that step left, eval logits
fixed_results = {}
xv, yv = next(iter(digits.val_dataloader()))
for name, cls in {"bn_scratch": HandBNLeNet, "bn_concise": LazyBNLeNet,
                  "resnet": SmallResNet}.items():
    net = cls(lr=0.1)
    net(xv)  # (materialise the lazy layers)
    with torch.no_grad():
        for k, (_, p) in enumerate(net.named_parameters(), start=1):
            p.copy_(torch.cos(0.6 * k * torch.arange(p.numel(), dtype=torch.float32))
                    .view_as(p) / 4)
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):  # (the nn.BatchNorm*d)
            m.reset_running_stats()
        elif isinstance(m, HandBatchNorm):
            m.moving_mean = torch.zeros_like(m.moving_mean)
            m.moving_var = torch.ones_like(m.moving_var)
    loss = net.loss(net(xv), yv)
    loss.backward()
    net.eval()
    with torch.no_grad():
        logits = net(xv[:8])
    fixed_results[name] = {"loss": loss.item(), "eval_logits": logits.tolist(),
                           **{n: p.grad.tolist() for n, p in net.named_parameters()},
                           **{n: b.tolist() for n, b in net.named_buffers()}}
