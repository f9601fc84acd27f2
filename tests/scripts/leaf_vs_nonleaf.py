# ruff: noqa: E501 (tutorial code as is)
"""pytorch/tutorials beginner_source/understanding_leaf_vs_nonleaf_tutorial.py: is_leaf,
requires_grad, the grads a backward fills (leaves only, None plus a warning for a non-leaf),
retain_grad / retains_grad on intermediate tensors, and the errors the tutorial quotes."""
import warnings

import jitgrad as torch
import jitgrad.nn.functional as F

# tensor setup
x = torch.ones(1, 3)                      # input with shape: (1, 3)
W = torch.ones(3, 2, requires_grad=True)  # weights with shape: (3, 2)
b = torch.ones(1, 2, requires_grad=True)  # bias with shape: (1, 2)
y = torch.ones(1, 2)                      # output with shape: (1, 2)

# forward pass
z = (x @ W) + b                           # pre-activation with shape: (1, 2)
y_pred = F.relu(z)                        # activation with shape: (1, 2)
loss = F.mse_loss(y_pred, y)              # scalar loss

# prints True because new tensors are leafs by convention
print(f"{x.is_leaf=}")

# prints False because tensor is the result of an operation with at
# least one input having requires_grad=True
print(f"{z.is_leaf=}")
leaf_flags = [t.is_leaf for t in (x, W, b, y, z, y_pred, loss)]

print(f"{x.requires_grad=}") # prints False because requires_grad=False by default
print(f"{W.requires_grad=}") # prints True because we set requires_grad=True in constructor
print(f"{z.requires_grad=}") # prints True because tensor is a non-leaf node
requires_flags = [t.requires_grad for t in (x, W, z)]

# "try not setting requires_grad, re-run the forward pass, and then run backpropagation"
try:
    F.mse_loss(F.relu(x @ W.detach() + b.detach()), y).backward()
except RuntimeError as e:
    no_grad_error = str(e)
print(no_grad_error)

loss.backward()

print(f"{W.grad=}")
print(f"{b.grad=}")
first_grads = (W.grad.clone(), b.grad.clone())

# prints all None because requires_grad=False
print(f"{x.grad=}")
print(f"{y.grad=}")
leaf_grads_none = (x.grad is None, y.grad is None)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print(f"{z.grad=}")
    nonleaf_grad_none = z.grad is None
nonleaf_warnings = [str(w.message) for w in caught]

# we have to re-run the forward pass
z = (x @ W) + b
y_pred = F.relu(z)
loss = F.mse_loss(y_pred, y)

# tell PyTorch to store the gradients after backward()
z.retain_grad()
y_pred.retain_grad()
loss.retain_grad()

# have to zero out gradients otherwise they would accumulate
W.grad = None
b.grad = None

# backpropagation
loss.backward()

# print gradients for all tensors that have requires_grad=True
print(f"{W.grad=}")
print(f"{b.grad=}")
print(f"{z.grad=}")
print(f"{y_pred.grad=}")
print(f"{loss.grad=}")
second_grads = {"W": W.grad, "b": b.grad, "z": z.grad, "y_pred": y_pred.grad, "loss": loss.grad}
retains = [t.retains_grad for t in (x, W, b, z, y_pred, loss)]

# retain_grad() on a leaf is a no-op; on a tensor without requires_grad it is an error
W.retain_grad()
leaf_retains_after = W.retains_grad
try:
    x.retain_grad()
except RuntimeError as e:
    retain_error = str(e)
print(retain_error)

# the summary table's requires_grad_() column
x.requires_grad_()
x_requires_after = (x.requires_grad, x.is_leaf)
x.requires_grad_(False)
try:
    z.requires_grad_(False)
except RuntimeError as e:
    nonleaf_requires_error = str(e)
z.requires_grad_()
