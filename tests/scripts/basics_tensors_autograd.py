# ruff: noqa: E231, E501, F841 (tutorial code as is)
"""pytorch/tutorials beginner_source/basics/{tensorqs_tutorial,autogradqs_tutorial}.py (Learn
the Basics: Tensors, Autograd): tensors from data / NumPy / another tensor (``*_like`` with a
dtype override), a shape tuple, attributes, the cuda check through ``torch.device('cuda').index``,
indexing with ``...`` and a column assignment, cat, the three spellings of matmul and mul (also
with ``out=``), item, add_, the NumPy bridge; then the one-layer network with
binary_cross_entropy_with_logits, no_grad / detach, and the Jacobian product of ``(inp+1)
.pow(2).t()`` accumulated over calls with retain_graph.

Added for the test: the results are recorded; ``w`` and ``b`` are also set to fixed values
so that torch's run of the script computes the same loss and gradients."""
import jitgrad as torch
import numpy as np

torch.manual_seed(0)

data = [[1, 2],[3, 4]]
x_data = torch.tensor(data)

np_array = np.array(data)
x_np = torch.from_numpy(np_array)

x_ones = torch.ones_like(x_data) # retains the properties of x_data
print(f"Ones Tensor: \n {x_ones} \n")

x_rand = torch.rand_like(x_data, dtype=torch.float) # overrides the datatype of x_data
print(f"Random Tensor: \n {x_rand} \n")
like_dtypes = (x_data.dtype, x_np.dtype, x_ones.dtype, x_rand.dtype)

shape = (2,3,)
rand_tensor = torch.rand(shape)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)

print(f"Random Tensor: \n {rand_tensor} \n")
print(f"Ones Tensor: \n {ones_tensor} \n")
print(f"Zeros Tensor: \n {zeros_tensor}")
ones_text = f"{ones_tensor}"

tensor = torch.rand(3,4)

print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")
attributes = (f"{tensor.shape}", f"{tensor.dtype}", f"{tensor.device}")

# We move our tensor to the GPU if available, and if the cuda version is supported
if torch.cuda.is_available() & (torch.device('cuda').index is not None):
    tensor = tensor.to('cuda')

tensor = torch.ones(4, 4)
print('First row: ', tensor[0])
print('First column: ', tensor[:, 0])
print('Last column:', tensor[..., -1])
tensor[:,1] = 0
print(tensor)
assigned = tensor.tolist()

t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1)
cat_shape = tuple(t1.shape)

# This computes the matrix multiplication between two tensors. y1, y2, y3 will have the same value
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)

y3 = torch.rand_like(tensor)
torch.matmul(tensor, tensor.T, out=y3)
matmuls_equal = torch.equal(y1, y2) and torch.equal(y1, y3)

# This computes the element-wise product. z1, z2, z3 will have the same value
z1 = tensor * tensor
z2 = tensor.mul(tensor)

z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)
muls_equal = torch.equal(z1, z2) and torch.equal(z1, z3)

agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))

print(tensor, "\n")
tensor.add_(5)
print(tensor)
added = tensor.tolist()

t = torch.ones(5)
print(f"t: {t}")
n = t.numpy()
print(f"n: {n}")

t.add_(1)
print(f"t: {t}")
print(f"n: {n}")
bridge_to_numpy = n.tolist()

n = np.ones(5)
t = torch.from_numpy(n)

np.add(n, 1, out=n)
print(f"t: {t}")
print(f"n: {n}")
bridge_from_numpy = f"t: {t}"

# ------------------------------------------------------------ autogradqs_tutorial
x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
with torch.no_grad():  # (fixed values, for the comparison with torch)
    w.copy_(torch.linspace(-1, 1, 15).view(5, 3))
    b.copy_(torch.tensor([0.5, -0.25, 0.125]))
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")
grad_fn_names = (z.grad_fn.name(), loss.grad_fn.name())

loss.backward()
print(w.grad)
print(b.grad)
bce_result = {"loss": loss.item(), "w": w.grad.tolist(), "b": b.grad.tolist()}
try:
    loss.backward()
except RuntimeError as e:  # "We can only perform gradient calculations using backward once"
    second_backward_error = str(e)

z = torch.matmul(x, w)+b
print(z.requires_grad)
tracked = z.requires_grad

with torch.no_grad():
    z = torch.matmul(x, w)+b
print(z.requires_grad)
untracked = z.requires_grad

z = torch.matmul(x, w)+b
z_det = z.detach()
print(z_det.requires_grad)
detached = z_det.requires_grad

inp = torch.eye(4, 5, requires_grad=True)
out = (inp+1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
first_call = inp.grad.clone()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
second_call = inp.grad.clone()
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")
after_zeroing = inp.grad.clone()
