"""pytorch/tutorials recipes_source/recipes/swap_tensors.py, its first two sections:
``torch.utils.swap_tensors`` on two tensors, and why it matters to ``nn.Module``: an optimizer
keeps the old Parameter when the module's is replaced out of place.

Changes: the results are recorded; the last lines swap the new Parameter into the old one, so
that the optimizer (which holds the old object) updates the module again. The recipe's other
sections need a ``__torch_dispatch__`` tensor subclass (``_make_wrapper_subclass``),
``__torch_function__`` and ``torch.__future__.set_swap_module_params_on_conversion``, which
jitgrad does not have: they are left out."""
import jitgrad as torch

torch.manual_seed(0)
t1 = torch.arange(2)
t2 = torch.arange(3)
print(f"Before swapping, t1: {t1}, t2: {t2}")
torch.utils.swap_tensors(t1, t2)
print(f"After swapping, t1: {t1}, t2: {t2}")
swapped = (t1.tolist(), t2.tolist())

mod = torch.nn.Linear(1, 2, bias=False)
optimizer = torch.optim.SGD(mod.parameters())
print(f"weight in mod: {mod.weight}")
print(f"weight in optimizer: {optimizer.param_groups[0]['params']}")
mod.weight = torch.nn.Parameter(2 * mod.weight)
print(f"weight in mod: {mod.weight}")
print(f"weight in optimizer: {optimizer.param_groups[0]['params']}")
stale = optimizer.param_groups[0]["params"][0] is not mod.weight

# (the fix swap_tensors brings: put the new values into the object the optimizer holds)
old = optimizer.param_groups[0]["params"][0]
new = mod.weight
del mod.weight
torch.utils.swap_tensors(old, new)
mod.weight = old
mod(torch.ones(1, 1)).sum().backward()
before = mod.weight.detach().clone()
optimizer.step()
fixed = (optimizer.param_groups[0]["params"][0] is mod.weight,
         torch.allclose(mod.weight, before - 1e-3 * torch.ones(2, 1)))
