"""Tensor basics and autograd basics, written for these tests in the way PyTorch's "Learn
the Basics" tensor and autograd pages are commonly written (modelled on the API usage of those
pages, not a copy of them):

- tensors from a nested list, from NumPy (``from_numpy``), ``ones_like`` and
  ``rand_like(..., dtype=torch.float)``; ``rand`` / ``ones`` / ``zeros`` from a shape tuple;
- ``.shape`` / ``.dtype`` / ``.device``, the cuda check via ``torch.device('cuda').index``;
- indexing (``[0]``, ``[:, 0]``, ``[..., -1]``) and a column assignment, ``torch.cat``;
- ``@`` / ``.matmul`` / ``torch.matmul(out=)`` and ``*`` / ``.mul`` / ``torch.mul(out=)``,
  ``.T``, ``sum().item()``, ``add_``, and the NumPy bridge both ways (shared memory);
- a logistic layer with ``binary_cross_entropy_with_logits``: ``grad_fn``, ``backward``,
  a second backward's error, ``no_grad``, ``detach``;
- a vector-Jacobian product through ``(a + 1).pow(2).t()`` with ``retain_graph=True``,
  accumulating over calls until ``grad.zero_()``.
"""
import numpy as np

import jitgrad as torch

torch.manual_seed(0)

# ---- making tensors
nested = [[5, 6], [7, 8]]
from_list = torch.tensor(nested)
from_np = torch.from_numpy(np.array(nested))
same_kind = torch.ones_like(from_list)  # keeps int64
random_float = torch.rand_like(from_list, dtype=torch.float)  # dtype overridden
like_dtypes = tuple(t.dtype for t in (from_list, from_np, same_kind, random_float))

dims = (2, 3)
made = {"rand": torch.rand(dims), "ones": torch.ones(dims), "zeros": torch.zeros(dims)}
for kind, value in made.items():
    print(kind, value, sep="\n")
ones_text = f"{made['ones']}"

grid = torch.rand(3, 4)
attributes = (f"{grid.shape}", f"{grid.dtype}", f"{grid.device}")
print("shape / dtype / device:", *attributes)
if torch.cuda.is_available() & (torch.device("cuda").index is not None):
    grid = grid.to("cuda")

# ---- indexing and joining
board = torch.ones(4, 4)
print(board[0], board[:, 0], board[..., -1])
board[:, 1] = 0  # clear the second column
assigned = board.tolist()
cat_shape = tuple(torch.cat([board] * 3, dim=1).shape)

# ---- arithmetic: three spellings each
prod_out = torch.rand_like(board)
torch.matmul(board, board.T, out=prod_out)
matmuls_equal = torch.equal(board @ board.T, board.matmul(board.T)) and torch.equal(
    board @ board.T, prod_out)
elem_out = torch.rand_like(board)
torch.mul(board, board, out=elem_out)
muls_equal = torch.equal(board * board, board.mul(board)) and torch.equal(board * board,
                                                                            elem_out)
agg_item = board.sum().item()  # a Python float
board.add_(5)
added = board.tolist()

# ---- NumPy bridge: the memory is shared both ways
vec = torch.ones(5)
arr = vec.numpy()
vec.add_(1)
bridge_to_numpy = arr.tolist()
arr2 = np.ones(5)
vec2 = torch.from_numpy(arr2)
np.add(arr2, 1, out=arr2)
bridge_from_numpy = f"t: {vec2}"
print(bridge_to_numpy, bridge_from_numpy)

# ---- autograd on a one-layer logistic model (fixed weights, for the torch comparison)
features = torch.ones(5)
labels = torch.zeros(3)
weight = torch.randn(5, 3, requires_grad=True)
bias = torch.randn(3, requires_grad=True)
with torch.no_grad():
    weight.copy_(torch.linspace(-1, 1, 15).view(5, 3))
    bias.copy_(torch.tensor([0.5, -0.25, 0.125]))


def logits():
    return torch.matmul(features, weight) + bias


scores = logits()
bce = torch.nn.functional.binary_cross_entropy_with_logits(scores, labels)
grad_fn_names = (scores.grad_fn.name(), bce.grad_fn.name())
bce.backward()
bce_result = {"loss": bce.item(), "w": weight.grad.tolist(), "b": bias.grad.tolist()}
second_backward_error = None
try:
    bce.backward()  # the graph's buffers were freed by the first backward
except RuntimeError as err:
    second_backward_error = str(err)

tracked = logits().requires_grad
with torch.no_grad():
    untracked = logits().requires_grad
detached = logits().detach().requires_grad

# ---- vector-Jacobian products accumulate in .grad
src = torch.eye(4, 5, requires_grad=True)
res = (src + 1).pow(2).t()
seed = torch.ones_like(res)
res.backward(seed, retain_graph=True)
first_call = src.grad.clone()
res.backward(seed, retain_graph=True)
second_call = src.grad.clone()  # twice the first
src.grad.zero_()
res.backward(seed, retain_graph=True)
after_zeroing = src.grad.clone()
print(first_call, second_call, after_zeroing, sep="\n")
