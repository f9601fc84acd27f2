# ruff: noqa: E402, E501, F841, N801, UP004, UP008, UP010, W191 (tutorial code as is)
"""pytorch/tutorials beginner_source/blitz/{tensor_tutorial,autograd_tutorial,
neural_networks_tutorial}.py (the 60 Minute Blitz, its older stored version): tensor
creation (empty, zeros of long, new_ones, randn_like with a dtype), the ``out=`` addition and
add_, views, the NumPy bridge in both directions (shared memory); autograd on x + 2, the
requires_grad_ flag, the doubling loop on ``y.data.norm()`` and backward with a vector,
no_grad; LeNet with num_flat_features, backward with random gradients, MSELoss against an
integer ``arange`` target, following grad_fn.next_functions, one SGD step.

Added for the test: the results are recorded, and a fixed-weight LeNet (weights from
linspace) whose loss and gradients must equal torch's."""
from __future__ import print_function

import jitgrad as torch

torch.manual_seed(0)

# ------------------------------------------------------------- tensor_tutorial
x = torch.empty(5, 3)
print(x)

x = torch.rand(5, 3)
print(x)

x = torch.zeros(5, 3, dtype=torch.long)
print(x)
zeros_long = (x.dtype, x.tolist())

x = torch.tensor([5.5, 3])
print(x)

x = x.new_ones(5, 3, dtype=torch.double)      # new_* methods take in sizes
print(x)
new_ones = (x.dtype, tuple(x.shape))

x = torch.randn_like(x, dtype=torch.float)    # override dtype!
print(x)                                      # result has the same size

print(x.size())
size_is_tuple = isinstance(x.size(), tuple) and x.size() == (5, 3)

y = torch.rand(5, 3)
print(x + y)

print(torch.add(x, y))

result = torch.empty(5, 3)
torch.add(x, y, out=result)
print(result)
out_add_equal = torch.equal(result, x + y)

# adds x to y
before = y.clone()
y.add_(x)
print(y)
inplace_add_equal = torch.equal(y, before + x)

print(x[:, 1])
column = x[:, 1].shape

x = torch.randn(4, 4)
y = x.view(16)
z = x.view(-1, 8)  # the size -1 is inferred from other dimensions
print(x.size(), y.size(), z.size())
view_sizes = (x.size(), y.size(), z.size())

x = torch.randn(1)
print(x)
print(x.item())
item_type = type(x.item())

a = torch.ones(5)
print(a)

b = a.numpy()
print(b)

a.add_(1)
print(a)
print(b)
numpy_shares = b.tolist()

import numpy as np
a = np.ones(5)
b = torch.from_numpy(a)
np.add(a, 1, out=a)
print(a)
print(b)
from_numpy_shares = (b.tolist(), b.dtype)

if torch.cuda.is_available():
    device = torch.device("cuda")          # a CUDA device object
    y = torch.ones_like(x, device=device)  # directly create a tensor on GPU
    x = x.to(device)                       # or just use strings ``.to("cuda")``
    z = x + y
    print(z)
    print(z.to("cpu", torch.double))       # ``.to`` can also change dtype together!

# ----------------------------------------------------------- autograd_tutorial
x = torch.ones(2, 2, requires_grad=True)
print(x)

y = x + 2
print(y)

print(y.grad_fn)
y_grad_fn = y.grad_fn.name()

z = y * y * 3
out = z.mean()

print(z, out)
z_out = (z.grad_fn.name(), out.grad_fn.name(), out.item())

a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
b_grad_fn = b.grad_fn.name()

out.backward()

print(x.grad)
x_grad = x.grad.tolist()  # "You should have got a matrix of 4.5"

x = torch.randn(3, requires_grad=True)

y = x * 2
doublings = 1
while y.data.norm() < 1000:
    y = y * 2
    doublings += 1

print(y)

gradients = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(gradients)

print(x.grad)
vector_grad_ok = torch.allclose(x.grad, gradients * 2 ** doublings)

print(x.requires_grad)
print((x ** 2).requires_grad)

with torch.no_grad():
	print((x ** 2).requires_grad)
	no_grad_requires = (x ** 2).requires_grad

# ---------------------------------------------------- neural_networks_tutorial
import jitgrad.nn as nn
import jitgrad.nn.functional as F


class Net(nn.Module):

    def __init__(self):
        super(Net, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square convolution
        # kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        # an affine operation: y = Wx + b
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        # Max pooling over a (2, 2) window
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        # If the size is a square you can only specify a single number
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

    def num_flat_features(self, x):
        size = x.size()[1:]  # all dimensions except the batch dimension
        num_features = 1
        for s in size:
            num_features *= s
        return num_features


net = Net()
print(net)
net_repr = repr(net)

params = list(net.parameters())
print(len(params))
print(params[0].size())  # conv1's .weight
param_shapes = [tuple(p.size()) for p in params]

input = torch.randn(1, 1, 32, 32)
out = net(input)
print(out)

net.zero_grad()
out.backward(torch.randn(1, 10))
random_backward_grads = all(p.grad is not None for p in net.parameters())

output = net(input)
target = torch.arange(1, 11)  # a dummy target, for example
target = target.view(1, -1)  # make it the same shape as output
criterion = nn.MSELoss()

loss = criterion(output, target)
print(loss)

print(loss.grad_fn)  # MSELoss
print(loss.grad_fn.next_functions[0][0])  # Linear
print(loss.grad_fn.next_functions[0][0].next_functions[0][0])  # ReLU
chain = [loss.grad_fn.name(), loss.grad_fn.next_functions[0][0].name(),
         loss.grad_fn.next_functions[0][0].next_functions[0][0].name()]

net.zero_grad()     # zeroes the gradient buffers of all parameters

print('conv1.bias.grad before backward')
print(net.conv1.bias.grad)
bias_grad_before = net.conv1.bias.grad

loss.backward()

print('conv1.bias.grad after backward')
print(net.conv1.bias.grad)
bias_grad_after = net.conv1.bias.grad.clone()

learning_rate = 0.01
manual = {n: (f.data - f.grad.data * learning_rate) for n, f in net.named_parameters()}

import jitgrad.optim as optim

# create your optimizer
optimizer = optim.SGD(net.parameters(), lr=0.01)

# in your training loop:
optimizer.zero_grad()   # zero the gradient buffers
output = net(input)
loss = criterion(output, target)
loss.backward()
optimizer.step()    # Does the update
sgd_equals_manual = all(torch.allclose(p, manual[n]) for n, p in net.named_parameters())
optimizer = optim.SGD(net.parameters(), lr=0.001)
sgd_losses = []
for _ in range(20):
    optimizer.zero_grad()
    loss = criterion(net(input), target)
    loss.backward()
    optimizer.step()
    sgd_losses.append(loss.item())

# (fixed weights, so that torch's run of this script computes the same numbers)
fixed = Net()
with torch.no_grad():
    for i, p in enumerate(fixed.parameters()):
        p.copy_(torch.linspace(-0.05, 0.05, p.numel()).view_as(p) * (-1) ** i)
fixed_input = torch.linspace(-1, 1, 1024).view(1, 1, 32, 32).cos()
fixed_loss = criterion(fixed(fixed_input), target)
fixed_loss.backward()
fixed_result = {"loss": fixed_loss.item(), "out": fixed(fixed_input).detach()}
fixed_result.update({n: p.grad.clone() for n, p in fixed.named_parameters()})
