"""Leaf and non-leaf tensors in autograd, written for these tests in the way the PyTorch
leaf-vs-non-leaf tutorial is commonly written (modelled on the API usage of that tutorial,
not a copy of it):

- ``is_leaf`` / ``requires_grad`` of inputs, weights and computed tensors;
- ``backward`` filling ``.grad`` on leaves only (None, with a warning, on a non-leaf);
- the error of a backward through nothing that requires grad;
- ``retain_grad`` / ``retains_grad`` on intermediates, a no-op on a leaf and an error on a
  tensor without requires_grad; ``requires_grad_`` on a leaf and a non-leaf.
"""
import warnings

import jitgrad as torch
import jitgrad.nn.functional as F

# a one-sample affine layer with a ReLU, all ones so the gradients are easy to check by hand
inp = torch.ones(1, 3)
weight = torch.ones(3, 2, requires_grad=True)
bias = torch.ones(1, 2, requires_grad=True)
target = torch.ones(1, 2)


def forward():
    pre = inp @ weight + bias
    act = F.relu(pre)
    return pre, act, F.mse_loss(act, target)


pre, act, loss = forward()
tensors = (inp, weight, bias, target, pre, act, loss)
leaf_flags = [t.is_leaf for t in tensors]
requires_flags = [t.requires_grad for t in (inp, weight, pre)]
print("leaf:", leaf_flags, "requires_grad:", requires_flags)

no_grad_error = None
try:  # the same graph built from detached parameters has nothing to differentiate
    frozen = F.relu(inp @ weight.detach() + bias.detach())
    F.mse_loss(frozen, target).backward()
except RuntimeError as err:
    no_grad_error = str(err)

loss.backward()
first_grads = (weight.grad.clone(), bias.grad.clone())
leaf_grads_none = (inp.grad is None, target.grad is None)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    print(f"pre.grad = {pre.grad}")  # reading it once for the print ...
    nonleaf_grad_none = pre.grad is None  # ... and once for the check: two warnings
nonleaf_warnings = [str(w.message) for w in seen]

# again, this time keeping the intermediate gradients
pre, act, loss = forward()
for t in (pre, act, loss):
    t.retain_grad()
weight.grad = bias.grad = None  # otherwise the new gradients would add up
loss.backward()
second_grads = {"W": weight.grad, "b": bias.grad, "z": pre.grad, "y_pred": act.grad,
                "loss": loss.grad}
for name, grad in second_grads.items():
    print(name, grad)
retains = [t.retains_grad for t in (inp, weight, bias, pre, act, loss)]

weight.retain_grad()  # a leaf keeps its grad anyway
leaf_retains_after = weight.retains_grad
retain_error = None
try:
    inp.retain_grad()
except RuntimeError as err:
    retain_error = str(err)

inp.requires_grad_()
x_requires_after = (inp.requires_grad, inp.is_leaf)
inp.requires_grad_(False)
nonleaf_requires_error = None
try:
    pre.requires_grad_(False)
except RuntimeError as err:
    nonleaf_requires_error = str(err)
pre.requires_grad_()
print(no_grad_error, retain_error, nonleaf_requires_error, sep="\n")
