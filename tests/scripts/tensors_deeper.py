"""A tour of tensor creation, arithmetic, broadcasting, maths, in-place work, copies, devices,
reshaping and the NumPy bridge, written for these tests in the way the PyTorch introductory
("introyt") tutorials commonly write torch code (modelled on the API usage of the tutorial
"Introduction to PyTorch Tensors", not a copy of it):

- torch.empty / zeros / ones / rand under manual_seed, the ``*_like`` factories, torch.tensor
  from nested lists and tuples, dtype= and ``.to(dtype)``;
- scalar and tensor powers, a shape-mismatch error, broadcasting (and three shapes that do not
  broadcast);
- abs / ceil / floor / clamp, sin / asin, bitwise_xor, eq, max / mean / std / prod / unique,
  cross, matmul, svd;
- sin_ / add_ / mul_, ``out=`` (also for rand), aliasing against clone, clone and detach under
  autograd, devices;
- unsqueeze / squeeze / unsqueeze_, reshape (a view), from_numpy and ``.numpy()`` sharing memory.

``det`` keeps the results that do not depend on random numbers, to compare with torch.
"""
import math

import numpy as np

import jitgrad as torch

det = {}

blank = torch.empty(2, 5)
det["empty_type"] = type(blank).__name__
print(type(blank), torch.zeros(3, 1), torch.ones(1, 3))

# --- seeding: the same seed replays the same numbers
torch.manual_seed(2024)
first_a, first_b = torch.rand(3, 2), torch.rand(3, 2)
torch.manual_seed(2024)
again_a, again_b = torch.rand(3, 2), torch.rand(3, 2)
det["seeding_repeats"] = (torch.equal(first_a, again_a), torch.equal(first_b, again_b),
                          torch.equal(first_a, first_b))

template = torch.empty(3, 1, 2)
likes = (torch.empty_like(template), torch.zeros_like(template), torch.ones_like(template),
         torch.rand_like(template))
det["like_shapes"] = [list(t.shape) for t in likes]

pi_e = torch.tensor([[3.14159, 2.71828], [0.57721, 1.41421]])
primes = torch.tensor((23, 29, 31, 37))
table = torch.tensor(([1, 2, 3], (4, 5, 6)))
det["constructed"] = [repr(t) for t in (pi_e, primes, table)]

small_ints = torch.ones((3, 2), dtype=torch.int16)
wide = torch.rand((3, 2), dtype=torch.float64) * 50.
as_int = wide.to(torch.int32)
det["dtypes"] = (repr(small_ints), str(wide.dtype), str(as_int.dtype),
                 torch.equal(as_int, wide.trunc().to(torch.int32)))

# --- arithmetic with scalars and tensors
halves = torch.ones(2, 3) / 2
tens = torch.zeros(2, 3) + 10
sevens = (tens * 3 - 9) / 3
cubes = (halves * 4) ** 3
roots = tens ** 0.5
steps = (halves * 4) ** torch.tensor([[0, 1, 2], [3, 4, 5]])
sums = halves + sevens
products = sevens * cubes
det["arithmetic"] = [repr(t) for t in (halves, tens, sevens, cubes, roots, steps, sums, products)]
print(*det["arithmetic"], sep="\n")

try:
    torch.rand(3, 2) + torch.rand(2, 3)
except RuntimeError as err:
    det["mismatch_error"] = str(err)

row = torch.rand(3, 5)
det["doubled"] = torch.equal(row * (torch.ones(1, 5) * 2), row * 2)

# --- broadcasting against a (5, 2, 4) block
block = torch.ones(5, 2, 4)
full_tail = block * torch.rand(2, 4)     # no leading dim: repeated over the 5
col = block * torch.rand(2, 1)           # last dim 1: repeated along it
row_bc = block * torch.rand(1, 4)        # middle dim 1: repeated along it
det["broadcast"] = (torch.equal(full_tail[1], full_tail[4]),
                    torch.equal(col[..., 0], col[..., 3]),
                    torch.equal(row_bc[:, 0], row_bc[:, 1]))
failures = []
for bad in ((5, 4), (3, 4), (0,)):
    try:
        block * torch.rand(bad)
    except RuntimeError as err:
        failures.append(str(err))
det["broadcast_errors"] = failures

# --- a sample of maths
centred = torch.rand(3, 3) * 4 - 2
print(torch.abs(centred), torch.ceil(centred), torch.floor(centred), torch.clamp(centred, -1, 1))
quarter_turns = torch.tensor([math.pi / 6, math.pi / 3, math.pi / 2, 0])
heights = torch.sin(quarter_turns)
back = torch.asin(heights)
det["trig"] = [repr(t) for t in (quarter_turns, heights, back)]
det["xor"] = repr(torch.bitwise_xor(torch.tensor([3, 8, 12]), torch.tensor([5, 8, 6])))

grid = torch.tensor([[2., 4.], [6., 8.]])
twos = torch.full((1, 2), 2.)
dupes = torch.tensor([4, 4, 9, 1, 9, 4])
det["reductions"] = [repr(t) for t in (torch.eq(grid, twos), torch.max(grid), torch.mean(grid),
                                       torch.std(grid), torch.prod(grid), torch.unique(dupes))]
print(torch.max(grid).item())

x_axis = torch.tensor([1., 0., 0.])
z_axis = torch.tensor([0., 0., 1.])
det["cross"] = repr(torch.cross(z_axis, x_axis))   # z x x = y
rnd = torch.rand(2, 2)
twice = torch.tensor([[2., 0.], [0., 2.]])
prod = torch.matmul(rnd, twice)
U, S, V = torch.svd(prod)
svd_ok = torch.allclose(U @ torch.diag(S) @ V.t(), prod, atol=1e-5) and \
    torch.allclose(prod, 2 * rnd)
det["svd_repr_head"] = repr(torch.svd(twice)).split("(")[0]

# --- in place
kept = torch.tensor([0, math.pi / 6, math.pi / 2])
changed = torch.tensor([0, math.pi / 6, math.pi / 2])
torch.sin(kept)      # a new tensor; ``kept`` stays
torch.sin_(changed)  # trailing underscore: ``changed`` is overwritten
det["sin_"] = (repr(kept), repr(changed))

acc = torch.zeros(2, 2)
inc = torch.rand(2, 2)
print(acc.add_(inc), inc.mul_(inc))

left, right = torch.rand(3, 3), torch.rand(3, 3)
dest = torch.empty(3, 3)
dest_id = id(dest)
result = torch.matmul(left, right, out=dest)
assert result is dest and id(dest) == dest_id
torch.rand(3, 3, out=dest)
assert id(dest) == dest_id

# --- names, copies and autograd
orig = torch.zeros(2, 2)
alias = orig
orig[1][0] = 42
det["alias"] = repr(alias)
orig = torch.zeros(2, 2)
dup = orig.clone()
assert dup is not orig
orig[1][0] = 42
det["clone"] = repr(dup)

tracked = torch.rand(2, 3, requires_grad=True)
tracked_copy = tracked.clone()
plain_copy = tracked.detach().clone()
det["clone_grad"] = (tracked.requires_grad, tracked_copy.grad_fn.name(),
                     plain_copy.requires_grad, plain_copy.grad_fn)

# --- devices
print("GPU" if torch.cuda.is_available() else "CPU only")
if torch.cuda.is_available():
    on_gpu = torch.rand(2, 2, device="cuda")
where = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
det["device"] = f"Device: {where}"
made_there = torch.rand(3, device=where)
moved = torch.rand(3).to(where)

# --- shapes
image = torch.rand(3, 64, 64)
print(image.unsqueeze(0).shape, torch.rand(1, 1, 1).shape)
flat_row = torch.rand(1, 12)
squeezed = flat_row.squeeze(0)
square = torch.rand(3, 3)
not_squeezed = square.squeeze(0)  # dim 0 is not 1: unchanged
det["squeeze"] = (str(squeezed.shape), str(not_squeezed.shape))
per_channel = torch.rand(2).unsqueeze(1)   # (2, 1) broadcasts against (5, 2, 4)
print((block * per_channel).shape)
batch = torch.rand(3, 64, 64)
batch.unsqueeze_(0)
det["unsqueeze_"] = str(batch.shape)

maps = torch.rand(4, 10, 10)
flat = maps.reshape(4 * 10 * 10)
print(flat.shape, torch.reshape(maps, (400,)).shape)
maps[0, 0, 0] = 9.0
det["reshape_is_view"] = flat[0].item() == 9.0

# --- NumPy shares memory both ways
arr = np.zeros((3, 2))
from_arr = torch.from_numpy(arr)
rand_t = torch.rand(3, 2)
as_arr = rand_t.numpy()
arr[2, 0] = 23
rand_t[2, 0] = 17
det["numpy_bridge"] = (repr(from_arr), float(as_arr[2, 0]))
