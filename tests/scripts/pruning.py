"""Pruning a small convolutional classifier with ``nn.utils.prune``, written for these tests in
the way the PyTorch pruning tutorial is commonly written (modelled on the API usage of that
tutorial, not a copy of it):

- ``random_unstructured``, ``l1_unstructured`` (a fraction and an absolute count),
  ``ln_structured`` over output channels, the ``*_orig`` parameters, ``*_mask`` buffers and
  forward pre-hooks they leave, the PruningContainer's history, ``state_dict`` keys;
- ``prune.remove`` making a pruning permanent, per-layer pruning over ``named_modules``,
  ``global_unstructured`` with ``prune.L1Unstructured``, sparsity that survives SGD training
  (the masked entries get zero gradients);
- a custom ``prune.BasePruningMethod`` (``PRUNING_TYPE``, ``compute_mask``, ``apply``) and
  ``prune.is_pruned``.
"""
import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F
from jitgrad.nn.utils import prune

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SmallConvNet(nn.Module):
    """16x16 grey images -> 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)   # 150 weights, 6 output channels
        self.conv2 = nn.Conv2d(6, 10, 3)
        self.fc1 = nn.Linear(10 * 2 * 2, 30)
        self.fc2 = nn.Linear(30, 10)

    def forward(self, img):
        h = F.max_pool2d(F.relu(self.conv1(img)), (2, 2))
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        h = h.view(-1, int(h.nelement() / h.shape[0]))
        return self.fc2(F.relu(self.fc1(h)))


def names(mod):
    return [n for n, _ in mod.named_parameters()], [n for n, _ in mod.named_buffers()]


def zeros(t):
    return int((t == 0).sum())


net = SmallConvNet().to(device=device)
first = net.conv1
print(names(first))

prune.random_unstructured(first, name="weight", amount=0.3)
random_names = names(first)
random_zeros = zeros(first.weight)
print(random_names, first._forward_pre_hooks)

prune.l1_unstructured(first, name="bias", amount=3)  # an int: that many entries
bias_zeros = zeros(first.bias)
small = first.bias_orig.abs()[first.bias_mask == 0]
large = first.bias_orig.abs()[first.bias_mask == 1]
bias_kept_largest = bool(first.bias.abs().min() == 0) and small.max() <= large.min()

# drop half the output channels by L2 norm, on top of the random mask
prune.ln_structured(first, name="weight", amount=0.5, n=2, dim=0)
zero_channels = int((first.weight.flatten(1).abs().sum(1) == 0).sum())
container = next(h for h in first._forward_pre_hooks.values() if h._tensor_name == "weight")
history = [type(step).__name__ for step in container]
state_keys = list(net.state_dict().keys())
print(history, state_keys)

snapshot = first.weight.detach().clone()
prune.remove(first, "weight")  # bake the mask into a plain parameter
removed_names = names(first)
removed_same = torch.equal(first.weight, snapshot)

# per layer type: 20 % of every conv, 40 % of every linear layer
layered = SmallConvNet()
for _, sub in layered.named_modules():
    if isinstance(sub, nn.Conv2d):
        prune.l1_unstructured(sub, name="weight", amount=0.2)
    elif isinstance(sub, nn.Linear):
        prune.l1_unstructured(sub, name="weight", amount=0.4)
mask_names = list(dict(layered.named_buffers()))
fc1_sparsity = zeros(layered.fc1.weight) / layered.fc1.weight.nelement()

# one threshold for the whole network
pooled = SmallConvNet()
targets = [(layer, "weight") for layer in (pooled.conv1, pooled.conv2, pooled.fc1, pooled.fc2)]
prune.global_unstructured(targets, pruning_method=prune.L1Unstructured, amount=0.2)
for layer, _ in targets:
    w = layer.weight
    print(f"{type(layer).__name__}: {100.0 * float(torch.sum(w == 0)) / w.nelement():.1f} %")


def overall_sparsity():
    return (sum(zeros(layer.weight) for layer, _ in targets)
            / sum(layer.weight.nelement() for layer, _ in targets))


global_sparsity = overall_sparsity()
kept_min = min(float(m.weight_orig.abs()[m.weight_mask == 1].min()) for m, _ in targets)
pruned_max = max(float(m.weight_orig.abs()[m.weight_mask == 0].max()) for m, _ in targets)
print(f"global sparsity {100 * global_sparsity:.2f} %")

# the masks are reapplied by the pre-hooks on every forward, so training keeps them
sgd = torch.optim.SGD(pooled.parameters(), lr=0.05)
imgs, classes = torch.randn(4, 1, 16, 16), torch.randint(0, 10, (4,))
train_losses = []
for _ in range(5):
    loss = F.cross_entropy(pooled(imgs), classes)
    sgd.zero_grad()
    loss.backward()
    sgd.step()
    train_losses.append(loss.item())
still_sparse = overall_sparsity()
masked_grad_zero = bool((pooled.fc1.weight_orig.grad[pooled.fc1.weight_mask == 0] == 0).all())


class EveryOther(prune.BasePruningMethod):
    """Masks entries 0, 2, 4, ... of the flattened tensor."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        out = default_mask.clone()
        out.view(-1)[::2] = 0
        return out


def every_other(module, name):
    EveryOther.apply(module, name)
    return module


custom = every_other(SmallConvNet().fc2, name="bias")
foobar_mask = custom.bias_mask.tolist()
foobar_is_pruned = prune.is_pruned(custom)

# the deterministic methods on fixed weights, recorded for the comparison with torch
probe = nn.Linear(6, 4)
with torch.no_grad():
    probe.weight.copy_(torch.cos(torch.arange(24, dtype=torch.float32) * 0.9).view(4, 6))
    probe.bias.copy_(torch.sin(torch.arange(4, dtype=torch.float32) + 1))
prune.l1_unstructured(probe, "weight", amount=0.25)
prune.ln_structured(probe, "weight", amount=1, n=1, dim=1)
prune.l1_unstructured(probe, "bias", amount=0.5)
probe_out = probe(torch.linspace(1, -1, 12).view(2, 6))
fixed_results = {"weight_mask": probe.weight_mask.tolist(), "bias_mask": probe.bias_mask.tolist(),
                 "out": probe_out.tolist()}
