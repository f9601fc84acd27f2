# ruff: noqa: B007, E402, E501, E731, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""pytorch/tutorials beginner_source/introyt/autogradyt_tutorial.py: grad_fn chains and
next_functions, backward on a sum, gradients of a tiny model through one SGD step and their
accumulation, requires_grad / no_grad (also as a decorator) / detach, the in-place-on-leaf
error, torch.autograd.profiler, backward with a vector, and autograd.functional's jacobian
and vjp.

matplotlib is not installed here: its plt.plot calls are recorded by a small stand-in that
turns the tensors into NumPy arrays, as matplotlib does."""
import jitgrad as torch

import math

import numpy as np


class plt:  # (stand-in for matplotlib.pyplot)
    plotted = []

    @staticmethod
    def plot(x, y):
        plt.plotted.append((np.asarray(x), np.asarray(y)))


det = {}

a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
print(a)

b = torch.sin(a)
plt.plot(a.detach(), b.detach())

print(b)

c = 2 * b
print(c)

d = c + 1
print(d)

out = d.sum()
print(out)
det["prints"] = [(t.tolist(), t.requires_grad, t.grad_fn and t.grad_fn.name()) for t in (a, b, c, d, out)]

print('d:')
print(d.grad_fn)
print(d.grad_fn.next_functions)
print(d.grad_fn.next_functions[0][0].next_functions)
print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions)
print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions)
print('\nc:')
print(c.grad_fn)
print('\nb:')
print(b.grad_fn)
print('\na:')
print(a.grad_fn)
chain, fn = [], d.grad_fn
while fn is not None:
    chain.append((fn.name(), [None if f is None else f.name() for f, _ in fn.next_functions]))
    fn = fn.next_functions[0][0] if fn.next_functions else None
det["chain"] = chain
det["a_grad_fn"] = a.grad_fn

out.backward()
print(a.grad)
plt.plot(a.detach(), a.grad.detach())
det["a_grad"] = a.grad.tolist()
det["c_grad"] = c.grad

BATCH_SIZE = 16
DIM_IN = 1000
HIDDEN_SIZE = 100
DIM_OUT = 10


class TinyModel(torch.nn.Module):

    def __init__(self):
        super(TinyModel, self).__init__()

        self.layer1 = torch.nn.Linear(1000, 100)
        self.relu = torch.nn.ReLU()
        self.layer2 = torch.nn.Linear(100, 10)

    def forward(self, x):
        x = self.layer1(x)
        x = self.relu(x)
        x = self.layer2(x)
        return x


some_input = torch.randn(BATCH_SIZE, DIM_IN, requires_grad=False)
ideal_output = torch.randn(BATCH_SIZE, DIM_OUT, requires_grad=False)

model = TinyModel()

print(model.layer2.weight[0][0:10])  # just a small slice
print(model.layer2.weight.grad)
grad_before = model.layer2.weight.grad

optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

prediction = model(some_input)

loss = (ideal_output - prediction).pow(2).sum()
print(loss)

loss.backward()
print(model.layer2.weight[0][0:10])
print(model.layer2.weight.grad[0][0:10])
w_before_step = model.layer2.weight[0][0:10].clone()
one_grad = model.layer2.weight.grad[0][0:10].clone()

optimizer.step()
print(model.layer2.weight[0][0:10])
print(model.layer2.weight.grad[0][0:10])
step_ok = torch.allclose(model.layer2.weight[0][0:10], w_before_step - 0.001 * one_grad)

print(model.layer2.weight.grad[0][0:10])

for i in range(0, 5):
    prediction = model(some_input)
    loss = (ideal_output - prediction).pow(2).sum()
    loss.backward()

print(model.layer2.weight.grad[0][0:10])
accumulated = model.layer2.weight.grad[0][0:10].clone()

optimizer.zero_grad()

print(model.layer2.weight.grad[0][0:10] if model.layer2.weight.grad is not None else None)
grad_after_zero = model.layer2.weight.grad

a = torch.ones(2, 3, requires_grad=True)
print(a)

b1 = 2 * a
print(b1)

a.requires_grad = False
b2 = 2 * a
print(b2)
det["requires_grad_flag"] = (repr(b1), repr(b2))

a = torch.ones(2, 3, requires_grad=True) * 2
b = torch.ones(2, 3, requires_grad=True) * 3

c1 = a + b
print(c1)

with torch.no_grad():
    c2 = a + b

print(c2)

c3 = a * b
print(c3)
det["no_grad"] = [repr(t) for t in (c1, c2, c3)]


def add_tensors1(x, y):
    return x + y


@torch.no_grad()
def add_tensors2(x, y):
    return x + y


a = torch.ones(2, 3, requires_grad=True) * 2
b = torch.ones(2, 3, requires_grad=True) * 3

c1 = add_tensors1(a, b)
print(c1)

c2 = add_tensors2(a, b)
print(c2)
det["no_grad_decorator"] = (repr(c1), repr(c2))

x = torch.rand(5, requires_grad=True)
y = x.detach()

print(x)
print(y)
det["detach"] = (x.requires_grad, y.requires_grad, y.data_ptr() == x.data_ptr())

try:
    a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
    torch.sin_(a)
except RuntimeError as e:
    det["in_place_leaf_error"] = str(e)

device = torch.device('cpu')
run_on_gpu = False
if torch.cuda.is_available():
    device = torch.device('cuda')
    run_on_gpu = True

x = torch.randn(2, 3, requires_grad=True)
y = torch.rand(2, 3, requires_grad=True)
z = torch.ones(2, 3, requires_grad=True)

with torch.autograd.profiler.profile(use_cuda=run_on_gpu) as prf:
    for _ in range(1000):
        z = (z / x) * y

print(prf.key_averages().table(sort_by='self_cpu_time_total'))
profiled = {e.key: e.count for e in prf.key_averages()}

x = torch.randn(3, requires_grad=True)

y = x * 2
while y.data.norm() < 1000:
    y = y * 2

print(y)

try:
    y.backward()
except RuntimeError as e:
    det["non_scalar_error"] = str(e)

v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)  # stand-in for gradients
y.backward(v)

print(x.grad)
doubling_factor = (y / x).detach()
vector_backward_ok = torch.allclose(x.grad, v * doubling_factor)


def exp_adder(x, y):
    return 2 * x.exp() + 3 * y


inputs = (torch.rand(1), torch.rand(1))  # arguments for the function
print(inputs)
jac1 = torch.autograd.functional.jacobian(exp_adder, inputs)
print(jac1)
jac1_ok = torch.allclose(jac1[0], 2 * inputs[0].exp().view(1, 1)) and jac1[1].item() == 3.0

inputs = (torch.rand(3), torch.rand(3))  # arguments for the function
print(inputs)
jac3 = torch.autograd.functional.jacobian(exp_adder, inputs)
print(jac3)
jac3_ok = torch.allclose(jac3[0], torch.diag(2 * inputs[0].exp())) and \
    torch.equal(jac3[1], 3 * torch.eye(3))


def do_some_doubling(x):
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    return y


inputs = torch.randn(3)
my_gradients = torch.tensor([0.1, 1.0, 0.0001])
vjp_result = torch.autograd.functional.vjp(do_some_doubling, inputs, v=my_gradients)
print(vjp_result)
vjp_ok = torch.allclose(vjp_result[1], my_gradients * (vjp_result[0] / inputs))

# deterministic parts to compare with torch: the functional API at fixed inputs
fixed_x = torch.tensor([0.5, -1.0, 2.0])
det["jacobian"] = [t.tolist() for t in torch.autograd.functional.jacobian(exp_adder, (fixed_x, fixed_x))]
det["hessian"] = torch.autograd.functional.hessian(lambda t: (t.exp() * t.sin()).sum(), fixed_x).tolist()
det["vjp"] = [t.tolist() for t in torch.autograd.functional.vjp(do_some_doubling, fixed_x, v=my_gradients)]
det["jvp"] = [t.tolist() for t in torch.autograd.functional.jvp(do_some_doubling, fixed_x, v=my_gradients)]
det["hvp"] = [t.tolist() for t in torch.autograd.functional.hvp(lambda t: (t.exp() * t.sin()).sum(), fixed_x, v=my_gradients)]
