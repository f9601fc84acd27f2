"""nn.utils.prune against torch: the pruning tutorial's steps (only the import changed)."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.utils.prune as prune

TUTORIAL = """
import jitgrad as torch
from jitgrad import nn
import jitgrad.nn.utils.prune as prune
import jitgrad.nn.functional as F
class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x
model = LeNet()
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 1.3 + k).view_as(p))
module = model.conv1
res = []
res.append([n for n, _ in module.named_parameters()])
prune.random_unstructured(module, name="weight", amount=0.3)
res.append([n for n, _ in module.named_parameters()])
res.append([n for n, _ in module.named_buffers()])
res.append(int((module.weight_mask == 0).sum()))
res.append(len(module._forward_pre_hooks))
prune.l1_unstructured(module, name="bias", amount=3)
res.append(module.bias.tolist())
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        break
res.append(type(hook).__name__)
res.append(list(hook) and [type(h).__name__ for h in hook])
res.append(int((module.weight.sum(dim=(1, 2, 3)) == 0).sum()))
prune.remove(module, 'weight')
res.append([n for n, _ in module.named_parameters()])
new_model = LeNet()
with torch.no_grad():
    for k, p in enumerate(new_model.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + k).view_as(p))
for name, module in new_model.named_modules():
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name='weight', amount=0.2)
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name='weight', amount=0.4)
res.append(sorted(dict(new_model.named_buffers()).keys()))
model = LeNet()
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.9 + k).view_as(p))
parameters_to_prune = ((model.conv1, 'weight'), (model.conv2, 'weight'), (model.fc1, 'weight'),
                       (model.fc2, 'weight'), (model.fc3, 'weight'))
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
for m, n in parameters_to_prune:
    res.append(float(torch.sum(getattr(m, n) == 0)))
res.append(prune.is_pruned(model))
x = torch.cos(torch.arange(2 * 28 * 28, dtype=torch.float32)).view(2, 1, 28, 28) * 0.1
res.append(model(x).tolist())
out = model(x).sum()
out.backward()
res.append(model.fc3.weight_orig.grad.abs().sum().item())
res.append(float((model.fc3.weight_orig.grad[model.fc3.weight_mask == 0] != 0).sum()))
class FooBarPruningMethod(prune.BasePruningMethod):
    PRUNING_TYPE = 'unstructured'
    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask
def foobar_unstructured(module, name):
    FooBarPruningMethod.apply(module, name)
    return module
model = LeNet()
foobar_unstructured(model.fc3, name='bias')
res.append(model.fc3.bias_mask.tolist())
"""


def test_pruning_tutorial_matches_torch():
    pytest.importorskip("torch")
    ours, theirs = {}, {}
    exec(TUTORIAL, ours)  # noqa: S102
    exec(TUTORIAL.replace("jitgrad", "torch"), theirs)  # noqa: S102
    assert len(ours["res"]) == len(theirs["res"]) == 21
    for i, (a, b) in enumerate(zip(ours["res"], theirs["res"])):
        if isinstance(a, (str, bool)) or (isinstance(a, list) and a and isinstance(a[0], str)):
            assert a == b, i
        else:
            np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                       rtol=1e-5, atol=1e-6, err_msg=str(i))


def test_pruned_weight_is_orig_times_mask_and_recomputed_each_forward():
    lin = jitgrad.nn.Linear(4, 3)
    prune.l1_unstructured(lin, "weight", amount=5)
    assert int((lin.weight_mask == 0).sum()) == 5
    with jitgrad.no_grad():
        lin.weight_orig.add_(1.0)
    lin(jitgrad.ones(1, 4))  # the pre-hook recomputes weight
    assert jitgrad.equal(lin.weight, lin.weight_orig * lin.weight_mask)
    prune.remove(lin, "weight")
    assert isinstance(lin.weight, jitgrad.nn.Parameter)
    assert not prune.is_pruned(lin) and "weight_mask" not in dict(lin.named_buffers())


def test_stacked_pruning_prunes_only_what_was_kept():
    lin = jitgrad.nn.Linear(10, 1)
    prune.random_unstructured(lin, "weight", amount=3)
    prune.random_unstructured(lin, "weight", amount=0.5)  # half of the 7 left: 4
    hook = next(iter(lin._forward_pre_hooks.values()))
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2
    assert int((lin.weight_mask == 0).sum()) == 7


@pytest.mark.parametrize("call", [
    lambda L, m: L.nn.utils.prune.l1_unstructured(m, "weight", amount=1.5),
    lambda L, m: L.nn.utils.prune.l1_unstructured(m, "weight", amount=100),
    lambda L, m: L.nn.utils.prune.l1_unstructured(m, "weight", amount="a"),
    lambda L, m: L.nn.utils.prune.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda L, m: L.nn.utils.prune.remove(m, "weight"),
])
def test_errors_match_torch(call):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.utils.prune")
    errors = []
    for lib in (torch, jitgrad):
        with pytest.raises((ValueError, TypeError)) as e:
            call(lib, lib.nn.Linear(3, 2))
        errors.append((type(e.value), str(e.value).split(" of module")[0]
                       .replace("torch.Size", "jitgrad.Size")))
    assert errors[0] == errors[1]
