"""Swapping tensors in place, written for these tests in the way the PyTorch swap_tensors
recipe is commonly written (modelled on the API usage of that recipe, not a copy of it):

- ``torch.utils.swap_tensors`` exchanging two tensors of different lengths;
- replacing a module's Parameter out of place leaves an optimizer holding the old object;
- swapping the new values into the optimizer's Parameter so ``SGD.step`` reaches the module.
"""
import jitgrad as torch

torch.manual_seed(0)

short, longer = torch.arange(2), torch.arange(3)
print("before:", short, longer)
torch.utils.swap_tensors(short, longer)
print("after:", short, longer)
swapped = (short.tolist(), longer.tolist())

# a one-input layer and a plain SGD that captured its weight object
layer = torch.nn.Linear(1, 2, bias=False)
sgd = torch.optim.SGD(layer.parameters())
held = sgd.param_groups[0]["params"]
print("layer weight:", layer.weight, "optimizer holds:", held)

# scaling by rebinding creates a new Parameter the optimizer never saw
layer.weight = torch.nn.Parameter(layer.weight * 2)
stale = held[0] is not layer.weight
print("optimizer still sees the old weight:", stale)

# repair: move the doubled values into the object SGD knows, then put it back on the layer
replacement = layer.weight
del layer.weight
torch.utils.swap_tensors(held[0], replacement)
layer.weight = held[0]

out = layer(torch.ones(1, 1))
out.sum().backward()
snapshot = layer.weight.detach().clone()
sgd.step()
expected = snapshot - 1e-3 * torch.ones(2, 1)  # d(sum)/dW is all ones; the default lr
fixed = (held[0] is layer.weight, torch.allclose(layer.weight, expected))
print("fixed:", fixed)
