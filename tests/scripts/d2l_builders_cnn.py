# ruff: noqa: A001, B006, B007, B008, B010, B020, C408, C416, E401, E402, E501, E701, E711, E721, E731, F401, F811, F841, I001, N801, N802, N803, N806, N807, N812, UP004, UP008, UP031, UP032, UP034
# (d2l.ai's code as is)
"""d2l.ai (Dive into Deep Learning, PyTorch), chapters 6-8: layers and modules (MySequential,
FixedHiddenMLP's control flow, nesting), parameter management (state_dict, shared layers),
initialization (apply with normal_/constant_/xavier_uniform_/uniform_, editing .data), lazy
initialization, custom layers, file I/O (torch.save/load of tensors, lists, dicts and a
state_dict), 2-D cross-correlation from scratch and learning a kernel with LazyConv2d, LeNet,
batch normalization from scratch (is_grad_enabled for the mode) and with LazyBatchNorm2d/1d,
the ResNet Residual block, a small ResNet and a ResNeXt block.

Changes: the d2l package is not installed, so its classes these sections use come from
d2l_lib.py next to this file (d2l/torch.py written out once for the d2l ports, ProgressBoard
without matplotlib); Fashion-MNIST is a download, so
sklearn's bundled 8x8 digits resized to 16x16 stand in (3 epochs: too few for the
sigmoid LeNet without batch norm to leave chance, in torch too); the ResNet
is smaller (b1 with 16 channels, stages ((1, 16), (1, 32)) instead of ResNet-18); files go to a
temporary directory.
"""
import os
import tempfile
import math

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
workdir = tempfile.mkdtemp()
_cwd = os.getcwd()
MAX_EPOCHS = 3  # (10 in the book)

def val_metrics(model):
    """The last validation points the board kept (the plot's last values)."""
    return {k: float(v[-1].y) for k, v in model.board.data.items()}

# -----------------------------------------------------------------------------
# 6.1 Layers and Modules
net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
X = torch.rand(2, 20)
results['sequential_shape'] = tuple(net(X).shape)

class MLP(nn.Module):
    def __init__(self):
        # Call the constructor of the parent class nn.Module to perform
        # the necessary initialization
        super().__init__()
        self.hidden = nn.LazyLinear(256)
        self.out = nn.LazyLinear(10)

    # Define the forward propagation of the model, that is, how to return the
    # required model output based on the input X
    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))

net = MLP()
results['mlp_shape'] = tuple(net(X).shape)

class MySequential(nn.Module):
    def __init__(self, *args):
        super().__init__()
        for idx, module in enumerate(args):
            self.add_module(str(idx), module)

    def forward(self, X):
        for module in self.children():
            X = module(X)
        return X

net = MySequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
results['my_sequential'] = (tuple(net(X).shape), [n for n, _ in net.named_children()])

class FixedHiddenMLP(nn.Module):
    def __init__(self):
        super().__init__()
        # Random weight parameters that will not compute gradients and
        # therefore keep constant during training
        self.rand_weight = torch.rand((20, 20))
        self.linear = nn.LazyLinear(20)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        # Reuse the fully connected layer. This is equivalent to sharing
        # parameters with two fully connected layers
        X = self.linear(X)
        # Control flow
        while X.abs().sum() > 1:
            X /= 2
        return X.sum()

net = FixedHiddenMLP()
results['fixed_hidden'] = (net(X).abs().item(), len(list(net.parameters())))

class NestMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(64), nn.ReLU(),
                                 nn.LazyLinear(32), nn.ReLU())
        self.linear = nn.LazyLinear(16)

    def forward(self, X):
        return self.linear(self.net(X))

chimera = nn.Sequential(NestMLP(), nn.LazyLinear(20), FixedHiddenMLP())
results['chimera'] = (tuple(chimera(X).shape), [n for n, _ in chimera.named_parameters()])

# -----------------------------------------------------------------------------
# 6.2 Parameter Management
net = nn.Sequential(nn.LazyLinear(8),
                    nn.ReLU(),
                    nn.LazyLinear(1))
X = torch.rand(size=(2, 4))
net(X).shape
results['state_dict_keys'] = list(net[2].state_dict().keys())
results['bias_type'] = type(net[2].bias).__name__
results['grad_is_none'] = net[2].weight.grad == None
results['named_shapes'] = [(name, tuple(param.shape)) for name, param in net.named_parameters()]

# We need to give the shared layer a name so that we can refer to its
# parameters
shared = nn.LazyLinear(8)
net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(),
                    shared, nn.ReLU(),
                    shared, nn.ReLU(),
                    nn.LazyLinear(1))
net(X)
# Check whether the parameters are the same
print(net[2].weight.data[0] == net[4].weight.data[0])
net[2].weight.data[0, 0] = 100
# Make sure that they are actually the same object rather than just having the
# same value
print(net[2].weight.data[0] == net[4].weight.data[0])
results['shared'] = ((net[2].weight.data[0] == net[4].weight.data[0]).all().item(),
                     net[4].weight[0, 0].item(), len(list(net.parameters())))

# -----------------------------------------------------------------------------
# 6.3 Parameter Initialization
net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
X = torch.rand(size=(2, 4))
net(X).shape

def init_normal(module):
    if type(module) == nn.Linear:
        nn.init.normal_(module.weight, mean=0, std=0.01)
        nn.init.zeros_(module.bias)

net.apply(init_normal)
results['init_normal'] = (net[0].weight.data.abs().max().item(), net[0].bias.data[0].item())

def init_constant(module):
    if type(module) == nn.Linear:
        nn.init.constant_(module.weight, 1)
        nn.init.zeros_(module.bias)

net.apply(init_constant)
results['init_constant'] = (net[0].weight.data[0].tolist(), net[0].bias.data[0].item())

def init_xavier(module):
    if type(module) == nn.Linear:
        nn.init.xavier_uniform_(module.weight)

def init_42(module):
    if type(module) == nn.Linear:
        nn.init.constant_(module.weight, 42)

net[0].apply(init_xavier)
net[2].apply(init_42)
print(net[0].weight.data[0])
print(net[2].weight.data)
results['init_xavier_42'] = (net[0].weight.data.abs().max().item() <= math.sqrt(6 / 12),
                             net[2].weight.data.tolist())

def my_init(module):
    if type(module) == nn.Linear:
        print("Init", *[(name, param.shape)
                        for name, param in module.named_parameters()][0])
        nn.init.uniform_(module.weight, -10, 10)
        module.weight.data *= module.weight.data.abs() >= 5

net.apply(my_init)
w = net[0].weight[:2]
results['my_init'] = bool(((w == 0) | (w.abs() >= 5)).all())
net[0].weight.data[:] += 1
net[0].weight.data[0, 0] = 42
results['edited'] = (net[0].weight.data[0, 0].item(), net[0].weight.requires_grad)

# -----------------------------------------------------------------------------
# 6.4 Lazy Initialization
net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
results['uninitialized'] = type(net[0].weight).__name__
X = torch.rand(2, 20)
net(X)
results['lazy_shape'] = (tuple(net[0].weight.shape), type(net[0]).__name__)

# -----------------------------------------------------------------------------
# 6.5 Custom Layers
class CenteredLayer(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, X):
        return X - X.mean()

layer = CenteredLayer()
results['centered'] = layer(d2l.tensor([1.0, 2, 3, 4, 5])).tolist()
net = nn.Sequential(nn.LazyLinear(128), CenteredLayer())
Y = net(d2l.rand(4, 8))
results['centered_mean'] = Y.mean().item()

class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units,))

    def forward(self, X):
        linear = torch.matmul(X, self.weight.data) + self.bias.data
        return F.relu(linear)

linear = MyLinear(5, 3)
results['my_linear'] = (tuple(linear.weight.shape), tuple(linear(torch.rand(2, 5)).shape))
net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
results['my_linear_net'] = tuple(net(torch.rand(2, 64)).shape)

# -----------------------------------------------------------------------------
# 6.6 File I/O (in a temporary directory)
os.chdir(workdir)
x = torch.arange(4)
torch.save(x, 'x-file')
x2 = torch.load('x-file')
y = torch.zeros(4)
torch.save([x, y],'x-files')
x2, y2 = torch.load('x-files')
mydict = {'x': x, 'y': y}
torch.save(mydict, 'mydict')
mydict2 = torch.load('mydict')
results['file_io'] = (x2.tolist(), y2.tolist(), sorted(mydict2))

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.LazyLinear(256)
        self.output = nn.LazyLinear(10)

    def forward(self, x):
        return self.output(F.relu(self.hidden(x)))

net = MLP()
X = torch.randn(size=(2, 20))
Y = net(X)
torch.save(net.state_dict(), 'mlp.params')
clone = MLP()
clone.load_state_dict(torch.load('mlp.params'))
clone.eval()
Y_clone = clone(X)
results['clone_equal'] = bool((Y_clone == Y).all())
os.chdir(_cwd)

# -----------------------------------------------------------------------------
# 7.2 Convolutions for Images
def corr2d(X, K):  #@save
    """Compute 2D cross-correlation."""
    h, w = K.shape
    Y = d2l.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = d2l.reduce_sum((X[i: i + h, j: j + w] * K))
    return Y

X = d2l.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
K = d2l.tensor([[0.0, 1.0], [2.0, 3.0]])
results['corr2d'] = corr2d(X, K).tolist()

class Conv2D(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(kernel_size))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return corr2d(x, self.weight) + self.bias

X = d2l.ones((6, 8))
X[:, 2:6] = 0
K = d2l.tensor([[1.0, -1.0]])
Y = corr2d(X, K)
results['edges'] = (Y.tolist(), corr2d(d2l.transpose(X), K).abs().sum().item())
results['own_conv2d'] = tuple(Conv2D((1, 2))(X).shape)

# Construct a two-dimensional convolutional layer with 1 output channel and a
# kernel of shape (1, 2). For the sake of simplicity, we ignore the bias here
conv2d = nn.LazyConv2d(1, kernel_size=(1, 2), bias=False)

# The two-dimensional convolutional layer uses four-dimensional input and
# output in the format of (example, channel, height, width), where the batch
# size (number of examples in the batch) and the number of channels are both 1
X = X.reshape((1, 1, 6, 8))
Y = Y.reshape((1, 1, 6, 7))
lr = 3e-2  # Learning rate

conv_losses = []
for i in range(10):
    Y_hat = conv2d(X)
    l = (Y_hat - Y) ** 2
    conv2d.zero_grad()
    l.sum().backward()
    # Update the kernel
    conv2d.weight.data[:] -= lr * conv2d.weight.grad
    if (i + 1) % 2 == 0:
        print(f'epoch {i + 1}, loss {l.sum():.3f}')
        conv_losses.append(l.sum().item())
results['learned_kernel'] = d2l.reshape(conv2d.weight.data, (1, 2)).tolist()
results['conv_losses'] = conv_losses

# -----------------------------------------------------------------------------
# 7.6 LeNet (digits resized to 16x16 in place of Fashion-MNIST's 28x28)
def init_cnn(module):  #@save
    """Initialize weights for CNNs."""
    if type(module) == nn.Linear or type(module) == nn.Conv2d:
        nn.init.xavier_uniform_(module.weight)

d2l.init_cnn = init_cnn

class LeNet(d2l.Classifier):  #@save
    """The LeNet-5 model."""
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5, padding=2), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.LazyLinear(120), nn.Sigmoid(),
            nn.LazyLinear(84), nn.Sigmoid(),
            nn.LazyLinear(num_classes))

model = LeNet()
model.layer_summary((1, 1, 28, 28))
results['lenet_summary'] = [tuple(p.shape) for p in model.parameters()]
trainer = d2l.Trainer(max_epochs=MAX_EPOCHS, num_gpus=1)
data = d2l.FashionMNIST(batch_size=128, resize=(16, 16))
model = LeNet(lr=0.1)
model.apply_init([next(iter(data.get_dataloader(True)))[0]], init_cnn)
trainer.fit(model, data)
results['lenet'] = val_metrics(model)

# -----------------------------------------------------------------------------
# 8.5 Batch Normalization
def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    # Use is_grad_enabled to determine whether we are in training mode
    if not torch.is_grad_enabled():
        # In prediction mode, use mean and variance obtained by moving average
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2:
            # When using a fully connected layer, calculate the mean and
            # variance on the feature dimension
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            # When using a two-dimensional convolutional layer, calculate the
            # mean and variance on the channel dimension (axis=1). Here we
            # need to maintain the shape of X, so that the broadcasting
            # operation can be carried out later
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        # In training mode, the current mean and variance are used
        X_hat = (X - mean) / torch.sqrt(var + eps)
        # Update the mean and variance using moving average
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta  # Scale and shift
    return Y, moving_mean.data, moving_var.data

class BatchNorm(nn.Module):
    # num_features: the number of outputs for a fully connected layer or the
    # number of output channels for a convolutional layer. num_dims: 2 for a
    # fully connected layer and 4 for a convolutional layer
    def __init__(self, num_features, num_dims):
        super().__init__()
        if num_dims == 2:
            shape = (1, num_features)
        else:
            shape = (1, num_features, 1, 1)
        # The scale parameter and the shift parameter (model parameters) are
        # initialized to 1 and 0, respectively
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        # The variables that are not model parameters are initialized to 0 and
        # 1
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        # If X is not on the main memory, copy moving_mean and moving_var to
        # the device where X is located
        if self.moving_mean.device != X.device:
            self.moving_mean = self.moving_mean.to(X.device)
            self.moving_var = self.moving_var.to(X.device)
        # Save the updated moving_mean and moving_var
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, self.gamma, self.beta, self.moving_mean,
            self.moving_var, eps=1e-5, momentum=0.1)
        return Y

class BNLeNetScratch(d2l.Classifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5), BatchNorm(6, num_dims=4),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), BatchNorm(16, num_dims=4),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(), nn.LazyLinear(120),
            BatchNorm(120, num_dims=2), nn.Sigmoid(), nn.LazyLinear(84),
            BatchNorm(84, num_dims=2), nn.Sigmoid(),
            nn.LazyLinear(num_classes))

trainer = d2l.Trainer(max_epochs=MAX_EPOCHS, num_gpus=1)
data = d2l.FashionMNIST(batch_size=128, resize=(16, 16))
model = BNLeNetScratch(lr=0.1)
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
results['bn_scratch'] = val_metrics(model)
results['bn_gamma_beta'] = (tuple(model.net[1].gamma.reshape((-1,)).shape),
                            model.net[1].moving_var.reshape((-1,)).tolist())

class BNLeNet(d2l.Classifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5), nn.LazyBatchNorm2d(),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), nn.LazyBatchNorm2d(),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(), nn.LazyLinear(120), nn.LazyBatchNorm1d(),
            nn.Sigmoid(), nn.LazyLinear(84), nn.LazyBatchNorm1d(),
            nn.Sigmoid(), nn.LazyLinear(num_classes))

trainer = d2l.Trainer(max_epochs=MAX_EPOCHS, num_gpus=1)
data = d2l.FashionMNIST(batch_size=128, resize=(16, 16))
model = BNLeNet(lr=0.1)
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
results['bn_concise'] = val_metrics(model)

# -----------------------------------------------------------------------------
# 8.6 Residual Networks (a tiny one: 16 channels in b1, two stages of one block)
class Residual(nn.Module):  #@save
    """The Residual block of ResNet models."""
    def __init__(self, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1,
                                   stride=strides)
        self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1,
                                       stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)

blk = Residual(3)
X = d2l.randn(4, 3, 6, 6)
results['residual_shapes'] = [tuple(blk(X).shape)]
blk = Residual(6, use_1x1conv=True, strides=2)
results['residual_shapes'].append(tuple(blk(X).shape))

class ResNet(d2l.Classifier):
    def b1(self):
        return nn.Sequential(
            nn.LazyConv2d(16, kernel_size=7, stride=2, padding=3),
            nn.LazyBatchNorm2d(), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1))

@d2l.add_to_class(ResNet)
def block(self, num_residuals, num_channels, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(num_channels, use_1x1conv=True, strides=2))
        else:
            blk.append(Residual(num_channels))
    return nn.Sequential(*blk)

@d2l.add_to_class(ResNet)
def __init__(self, arch, lr=0.1, num_classes=10):
    super(ResNet, self).__init__()
    self.save_hyperparameters()
    self.net = nn.Sequential(self.b1())
    for i, b in enumerate(arch):
        self.net.add_module(f'b{i+2}', self.block(*b, first_block=(i==0)))
    self.net.add_module('last', nn.Sequential(
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.LazyLinear(num_classes)))
    self.net.apply(d2l.init_cnn)

class TinyResNet(ResNet):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__(((1, 16), (1, 32)), lr, num_classes)

TinyResNet().layer_summary((1, 1, 16, 16))
model = TinyResNet(lr=0.05)
trainer = d2l.Trainer(max_epochs=MAX_EPOCHS, num_gpus=1)
data = d2l.FashionMNIST(batch_size=128, resize=(16, 16))
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
results['resnet'] = val_metrics(model)
results['resnet_children'] = [n for n, _ in model.net.named_children()]

class ResNeXtBlock(nn.Module):  #@save
    """The ResNeXt block."""
    def __init__(self, num_channels, groups, bot_mul, use_1x1conv=False,
                 strides=1):
        super().__init__()
        bot_channels = int(round(num_channels * bot_mul))
        self.conv1 = nn.LazyConv2d(bot_channels, kernel_size=1, stride=1)
        self.conv2 = nn.LazyConv2d(bot_channels, kernel_size=3,
                                   stride=strides, padding=1,
                                   groups=bot_channels//groups)
        self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1, stride=1)
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()
        self.bn3 = nn.LazyBatchNorm2d()
        if use_1x1conv:
            self.conv4 = nn.LazyConv2d(num_channels, kernel_size=1,
                                       stride=strides)
            self.bn4 = nn.LazyBatchNorm2d()
        else:
            self.conv4 = None

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = F.relu(self.bn2(self.conv2(Y)))
        Y = self.bn3(self.conv3(Y))
        if self.conv4:
            X = self.bn4(self.conv4(X))
        return F.relu(Y + X)

blk = ResNeXtBlock(32, 16, 1)
X = d2l.randn(4, 32, 12, 12)
results['resnext_shape'] = tuple(blk(X).shape)

# -----------------------------------------------------------------------------
# a deterministic part to compare with torch: the scratch and concise batch-norm LeNets and a
# tiny ResNet with fixed weights on the first validation batch: loss and gradients, then the
# running statistics after that training-mode step, then eval-mode logits
fixed_results = {}
Xv, yv = next(iter(data.val_dataloader()))
for name, cls in [("bn_scratch", BNLeNetScratch), ("bn_concise", BNLeNet), ("resnet", TinyResNet)]:
    fixed = cls(lr=0.1)
    fixed(Xv)  # (materializes the lazy layers)
    with torch.no_grad():
        for k, (pname, p) in enumerate(fixed.named_parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
    for m in fixed.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
        if isinstance(m, BatchNorm):
            m.moving_mean, m.moving_var = torch.zeros_like(m.moving_mean), torch.ones_like(m.moving_var)
    loss = fixed.loss(fixed(Xv), yv)
    loss.backward()
    fixed.eval()
    with torch.no_grad():
        eval_logits = fixed(Xv[:8])
    fixed_results[name] = {"loss": loss.item(), "eval_logits": eval_logits.tolist(),
                           **{n: p.grad.tolist() for n, p in fixed.named_parameters()},
                           **{n: b.tolist() for n, b in fixed.named_buffers()}}
