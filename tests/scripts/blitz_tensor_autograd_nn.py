"""Tensors, autograd and a first conv net, written for these tests in the way PyTorch's
"60 Minute Blitz" is commonly written (modelled on the API usage of that tutorial, not a copy
of it):

- ``empty``, ``rand``, ``zeros(dtype=torch.long)``, ``tensor``, ``new_ones(dtype=
  torch.double)``, ``randn_like(dtype=torch.float)``, ``size()``; ``+``, ``torch.add`` (also
  ``out=``), ``add_``; slicing, ``view`` (with -1), ``item``; the NumPy bridge both ways; the
  cuda-only ``ones_like(device=)`` / ``.to("cpu", torch.double)``;
- autograd: ``requires_grad=True``, ``grad_fn``, ``mean``, ``requires_grad_``, ``backward()``,
  a doubling loop on ``y.data.norm()`` and ``backward(v)``, ``no_grad``;
- a LeNet-style ``nn.Module`` (``Conv2d``, ``F.max_pool2d`` with a tuple and an int window,
  ``view(-1, n)``), ``parameters()``, ``zero_grad``, ``backward(torch.randn(1, 10))``,
  ``nn.MSELoss`` against an integer ``arange`` target, ``grad_fn.next_functions``, the SGD
  rule by hand (``p.data``, ``p.grad.data``) against ``optim.SGD``;
- a fixed-weight copy (weights from ``linspace``) whose loss and gradients equal torch's.
"""
import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(0)

# ---- tensors
print(torch.empty(5, 3), torch.rand(5, 3))
counts = torch.zeros(5, 3, dtype=torch.long)
zeros_long = (counts.dtype, counts.tolist())
pair = torch.tensor([2.5, 7])
wide = pair.new_ones(5, 3, dtype=torch.double)
new_ones = (wide.dtype, tuple(wide.shape))
noise = torch.randn_like(wide, dtype=torch.float)
size_is_tuple = isinstance(noise.size(), tuple) and noise.size() == (5, 3)

other = torch.rand(5, 3)
summed = torch.empty(5, 3)
torch.add(noise, other, out=summed)
out_add_equal = torch.equal(summed, noise + other) and torch.equal(summed,
                                                                   torch.add(noise, other))
expected = other.clone() + noise
other.add_(noise)
inplace_add_equal = torch.equal(other, expected)
print(noise[:, 1])

square = torch.randn(4, 4)
view_sizes = (square.size(), square.view(16).size(), square.view(-1, 8).size())
scalar = torch.randn(1)
item_type = type(scalar.item())

ones_t = torch.ones(5)
ones_np = ones_t.numpy()
ones_t.add_(1)  # visible through the array too
numpy_shares = ones_np.tolist()
arr = np.ones(5)
wrapped = torch.from_numpy(arr)
np.add(arr, 1, out=arr)  # visible through the tensor
from_numpy_shares = (wrapped.tolist(), wrapped.dtype)

if torch.cuda.is_available():
    gpu = torch.device("cuda")
    on_gpu = scalar.to(gpu) + torch.ones_like(scalar, device=gpu)
    print(on_gpu.to("cpu", torch.double))

# ---- autograd
leaf = torch.ones(2, 2, requires_grad=True)
shifted = leaf + 2
y_grad_fn = shifted.grad_fn.name()
cube = shifted * shifted * 3
avg = cube.mean()
z_out = (cube.grad_fn.name(), avg.grad_fn.name(), avg.item())

ratio = torch.randn(2, 2)
ratio = (ratio * 3) / (ratio - 1)
print("tracked before:", ratio.requires_grad)
ratio.requires_grad_(True)
b_grad_fn = (ratio * ratio).sum().grad_fn.name()

avg.backward()
x_grad = leaf.grad.tolist()  # d(mean(3 (x+2)^2))/dx = 6 (x+2) / 4 = 4.5

start = torch.randn(3, requires_grad=True)
grown = start * 2
times = 1
while grown.data.norm() < 1000:
    grown = grown * 2
    times += 1
weights_v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
grown.backward(weights_v)
vector_grad_ok = torch.allclose(start.grad, weights_v * 2 ** times)
print((start ** 2).requires_grad)
with torch.no_grad():
    no_grad_requires = (start ** 2).requires_grad


# ---- a LeNet-style network
class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5)  # 1 channel in, 6 maps, 5x5 kernels
        self.c2 = nn.Conv2d(6, 16, 5)
        self.d1 = nn.Linear(16 * 5 * 5, 120)
        self.d2 = nn.Linear(120, 84)
        self.d3 = nn.Linear(84, 10)

    @staticmethod
    def flat_size(t):
        n = 1
        for d in t.size()[1:]:  # everything but the batch
            n *= d
        return n

    def forward(self, img):
        h = F.max_pool2d(F.relu(self.c1(img)), (2, 2))
        h = F.max_pool2d(F.relu(self.c2(h)), 2)  # a square window can be one number
        h = h.view(-1, self.flat_size(h))
        return self.d3(F.relu(self.d2(F.relu(self.d1(h)))))


net = LeNet()
net_repr = repr(net)
print(net_repr)
params = [*net.parameters()]
param_shapes = [tuple(w.size()) for w in params]

image = torch.randn(1, 1, 32, 32)
net.zero_grad()
net(image).backward(torch.randn(1, 10))
random_backward_grads = all(p.grad is not None for p in params)

goal = torch.arange(1, 11).view(1, -1)  # an integer target of the output's shape
mse = nn.MSELoss()
loss = mse(net(image), goal)
step_back = loss.grad_fn.next_functions[0][0]
chain = [loss.grad_fn.name(), step_back.name(), step_back.next_functions[0][0].name()]

net.zero_grad()
bias_grad_before = net.c1.bias.grad
loss.backward()
bias_grad_after = net.c1.bias.grad.clone()

LR = 0.01
by_hand = {name: p.data - LR * p.grad.data for name, p in net.named_parameters()}
sgd = optim.SGD(net.parameters(), lr=LR)
sgd.zero_grad()
mse(net(image), goal).backward()
sgd.step()
sgd_equals_manual = all(torch.allclose(p, by_hand[name]) for name, p in net.named_parameters())

sgd = optim.SGD(net.parameters(), lr=LR / 10)
sgd_losses = []
for _ in range(20):
    sgd.zero_grad()
    step_loss = mse(net(image), goal)
    step_loss.backward()
    sgd.step()
    sgd_losses.append(step_loss.item())
print(sgd_losses[0], sgd_losses[-1])

# ---- fixed weights: the same numbers under both libraries
fixed = LeNet()
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        sign = 1 if k % 2 == 0 else -1
        p.copy_(sign * torch.linspace(-0.05, 0.05, p.numel()).view_as(p))
probe = torch.linspace(-1, 1, 32 * 32).view(1, 1, 32, 32).cos()
fixed_loss = mse(fixed(probe), goal)
fixed_loss.backward()
fixed_result = {"loss": fixed_loss.item(), "out": fixed(probe).detach()}
for name, p in fixed.named_parameters():
    fixed_result[name] = p.grad.clone()
