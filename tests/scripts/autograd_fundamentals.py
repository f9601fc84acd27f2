"""How autograd records and replays computations, written for these tests in the way the PyTorch
introductory ("introyt") tutorials commonly write torch code (modelled on the API usage of the
tutorial "The Fundamentals of Autograd", not a copy of it):

- a linspace leaf through cos, scaling and a shift: printed tensors, grad_fn, the
  next_functions chain, backward of the sum, ``.grad`` of a non-leaf (None), two plots;
- a two-layer model: gradients before/after backward, one SGD step checked by hand, gradients
  accumulating over five more backwards, zero_grad leaving None;
- requires_grad switched off on a leaf, torch.no_grad as a context and as a decorator, detach
  sharing storage, the in-place-on-a-leaf RuntimeError (torch.sin_);
- torch.autograd.profiler.profile over a loop of mul and div (key_averages, counts);
- backward of a non-scalar (its error, then with a vector), autograd.functional's jacobian,
  vjp, jvp, hessian and hvp.

matplotlib is not installed: a tiny recorder stands in for plt.plot.
"""
import math

import numpy as np

import jitgrad as torch


class plt:  # noqa: N801  (named as the matplotlib.pyplot module it stands in for)
    plotted = []

    @staticmethod
    def plot(x, y):
        plt.plotted.append((np.asarray(x), np.asarray(y)))


det = {}

# --- a graph of four operations
theta = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
wave = torch.cos(theta)
plt.plot(theta.detach(), wave.detach())
scaled = 3 * wave
shifted = scaled - 1
total = shifted.sum()
for t in (theta, wave, scaled, shifted, total):
    print(t, t.grad_fn)
det["prints"] = [(t.tolist(), t.requires_grad, t.grad_fn and t.grad_fn.name())
                 for t in (theta, wave, scaled, shifted, total)]

print(shifted.grad_fn.next_functions)
print(shifted.grad_fn.next_functions[0][0].next_functions)
steps, node = [], shifted.grad_fn
while node is not None:
    parents = node.next_functions
    steps.append((node.name(), [p.name() if p is not None else None for p, _ in parents]))
    node = parents[0][0] if parents else None
det["chain"] = steps
det["a_grad_fn"] = theta.grad_fn  # a leaf: None

total.backward()
plt.plot(theta.detach(), theta.grad.detach())
det["a_grad"] = theta.grad.tolist()  # d(3 cos t - 1)/dt = -3 sin t
det["c_grad"] = scaled.grad  # not a leaf: no .grad kept

# --- gradients of a small model
N, D_IN, D_HID, D_OUT = 8, 200, 50, 4


class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(D_IN, D_HID)
        self.act = torch.nn.ReLU()
        self.out = torch.nn.Linear(D_HID, D_OUT)

    def forward(self, x):
        return self.out(self.act(self.hidden(x)))


x_in = torch.randn(N, D_IN, requires_grad=False)
target = torch.randn(N, D_OUT, requires_grad=False)
mlp = TwoLayer()
sgd = torch.optim.SGD(mlp.parameters(), lr=0.001)
w = mlp.out.weight
grad_before = w.grad

err = (target - mlp(x_in)).pow(2).sum()
err.backward()
before = w[0][0:10].clone()
one_grad = w.grad[0][0:10].clone()
sgd.step()
step_ok = torch.allclose(w[0][0:10], before - 0.001 * one_grad)

for _ in range(5):  # no zero_grad: the gradients add up
    (target - mlp(x_in)).pow(2).sum().backward()
accumulated = w.grad[0][0:10].clone()
sgd.zero_grad()
grad_after_zero = w.grad

# --- switching tracking off
leaf = torch.ones(2, 2, requires_grad=True)
tracked = 5 * leaf
leaf.requires_grad = False
untracked = 5 * leaf
det["requires_grad_flag"] = (repr(tracked), repr(untracked))

p = torch.ones(2, 2, requires_grad=True) * 4
q = torch.ones(2, 2, requires_grad=True) * 5
with_grad = p - q
with torch.no_grad():
    without = p - q
after = p * q
det["no_grad"] = [repr(t) for t in (with_grad, without, after)]


def combine(u, v):
    return u * v


@torch.no_grad()
def combine_untracked(u, v):
    return u * v


det["no_grad_decorator"] = (repr(combine(p, q)), repr(combine_untracked(p, q)))

src = torch.rand(4, requires_grad=True)
copy = src.detach()
det["detach"] = (src.requires_grad, copy.requires_grad, copy.data_ptr() == src.data_ptr())

try:
    torch.sin_(torch.linspace(0., 1., steps=5, requires_grad=True))
except RuntimeError as err_:
    det["in_place_leaf_error"] = str(err_)

# --- profiling
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
on_gpu = device.type == "cuda"
m1 = torch.randn(3, 2, requires_grad=True)
m2 = torch.rand(3, 2, requires_grad=True)
acc = torch.ones(3, 2, requires_grad=True)
with torch.autograd.profiler.profile(use_cuda=on_gpu) as prof:
    for _ in range(1000):
        acc = (acc * m2) / m1
print(prof.key_averages().table(sort_by="self_cpu_time_total"))
profiled = {row.key: row.count for row in prof.key_averages()}


# --- non-scalar outputs
def triple_until_big(t):
    out = t * 3
    while out.data.norm() < 500:
        out = out * 3
    return out


start = torch.randn(3, requires_grad=True)
grown = triple_until_big(start)
try:
    grown.backward()
except RuntimeError as err_:
    det["non_scalar_error"] = str(err_)
weights = torch.tensor([1.0, 0.01, 0.5], dtype=torch.float)
grown.backward(weights)
vector_backward_ok = torch.allclose(start.grad, weights * (grown / start).detach())


def mix(u, v):
    return 4 * u.exp() - 2 * v


one = (torch.rand(1), torch.rand(1))
jac1 = torch.autograd.functional.jacobian(mix, one)
jac1_ok = torch.allclose(jac1[0], 4 * one[0].exp().view(1, 1)) and jac1[1].item() == -2.0
three = (torch.rand(3), torch.rand(3))
jac3 = torch.autograd.functional.jacobian(mix, three)
jac3_ok = torch.allclose(jac3[0], torch.diag(4 * three[0].exp())) and \
    torch.equal(jac3[1], -2 * torch.eye(3))

point = torch.randn(3)
vjp_result = torch.autograd.functional.vjp(triple_until_big, point, v=weights)
vjp_ok = torch.allclose(vjp_result[1], weights * (vjp_result[0] / point))


def bumpy(t):
    return (t.sin() * t.cos().exp()).sum()


# the functional API at fixed points, for the torch comparison
at = torch.tensor([0.3, -1.5, 1.2])
det["jacobian"] = [t.tolist() for t in torch.autograd.functional.jacobian(mix, (at, at))]
det["hessian"] = torch.autograd.functional.hessian(bumpy, at).tolist()
det["vjp"] = [t.tolist() for t in torch.autograd.functional.vjp(triple_until_big, at, v=weights)]
det["jvp"] = [t.tolist() for t in torch.autograd.functional.jvp(triple_until_big, at, v=weights)]
det["hvp"] = [t.tolist() for t in torch.autograd.functional.hvp(bumpy, at, v=weights)]
