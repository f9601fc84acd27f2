"""The classic mm + backward(gradient) example, in three parts, printing what torch prints."""

import warnings

import jitgrad

# 1. x is a non-leaf (a view made after requires_grad): its .grad stays None, with a warning.
x = jitgrad.tensor([[2.0, 1.0]], requires_grad=True).view(1, 2)
y = jitgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
z = jitgrad.mm(x, y)
z.backward(jitgrad.tensor([[1.0, 0.0]]), retain_graph=True)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    print(x.grad)

# 2. x is a leaf: its gradient is g @ y.T.
x = jitgrad.tensor([[2.0, 1.0]], requires_grad=True)
y = jitgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
z = jitgrad.mm(x, y)
z.backward(jitgrad.tensor([[1.0, 0.0]]), retain_graph=True)
print(x.grad)

# 3. y's gradient is x.T @ g.
print(y.grad)
