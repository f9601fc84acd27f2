# ruff: noqa: B007, E402, F811, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Tutorial "Pruning": random_unstructured, l1_unstructured, ln_structured, the pruning
container, prune.remove, iterative and global pruning, and a custom BasePruningMethod."""
import jitgrad as torch
import jitgrad.nn.functional as F
import jitgrad.nn.utils.prune as prune
from jitgrad import nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
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


model = LeNet().to(device=device)

module = model.conv1
print(list(module.named_parameters()))
print(list(module.named_buffers()))

prune.random_unstructured(module, name="weight", amount=0.3)
print(list(module.named_parameters()))
print(list(module.named_buffers()))
print(module.weight)
print(module._forward_pre_hooks)
random_names = ([n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()])
random_zeros = int((module.weight == 0).sum())

prune.l1_unstructured(module, name="bias", amount=3)
print(list(module.named_parameters()))
print(list(module.named_buffers()))
print(module.bias)
print(module._forward_pre_hooks)
bias_zeros = int((module.bias == 0).sum())
bias_kept_largest = bool(module.bias.abs().min() == 0) and \
    module.bias_orig.abs()[module.bias_mask == 0].max() <= \
    module.bias_orig.abs()[module.bias_mask == 1].min()

prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)

# As we can verify, this will zero out all the connections corresponding to
# 50% (3 out of 6) of the channels, while preserving the action of the
# previous mask.
print(module.weight)
zero_channels = int((module.weight.flatten(1).abs().sum(1) == 0).sum())

for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":  # select out the correct hook
        break

print(list(hook))  # pruning history in the container
history = [type(h).__name__ for h in hook]

print(model.state_dict().keys())
state_keys = list(model.state_dict().keys())

print(list(module.named_parameters()))
print(list(module.named_buffers()))
print(module.weight)
pruned_weight = module.weight.detach().clone()
prune.remove(module, 'weight')
print(list(module.named_parameters()))
print(list(module.named_buffers()))
removed_names = ([n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()])
removed_same = torch.equal(module.weight, pruned_weight)

new_model = LeNet()
for name, module in new_model.named_modules():
    # prune 20% of connections in all 2D-conv layers
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name='weight', amount=0.2)
    # prune 40% of connections in all linear layers
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name='weight', amount=0.4)

print(dict(new_model.named_buffers()).keys())  # to verify that all masks exist
mask_names = list(dict(new_model.named_buffers()).keys())
fc1_sparsity = float((new_model.fc1.weight == 0).sum()) / new_model.fc1.weight.nelement()

model = LeNet()

parameters_to_prune = (
    (model.conv1, 'weight'),
    (model.conv2, 'weight'),
    (model.fc1, 'weight'),
    (model.fc2, 'weight'),
    (model.fc3, 'weight'),
)

prune.global_unstructured(
    parameters_to_prune,
    pruning_method=prune.L1Unstructured,
    amount=0.2,
)

print(
    "Sparsity in conv1.weight: {:.2f}%".format(
        100. * float(torch.sum(model.conv1.weight == 0))
        / float(model.conv1.weight.nelement())
    )
)
print(
    "Sparsity in conv2.weight: {:.2f}%".format(
        100. * float(torch.sum(model.conv2.weight == 0))
        / float(model.conv2.weight.nelement())
    )
)
print(
    "Sparsity in fc1.weight: {:.2f}%".format(
        100. * float(torch.sum(model.fc1.weight == 0))
        / float(model.fc1.weight.nelement())
    )
)
print(
    "Sparsity in fc2.weight: {:.2f}%".format(
        100. * float(torch.sum(model.fc2.weight == 0))
        / float(model.fc2.weight.nelement())
    )
)
print(
    "Sparsity in fc3.weight: {:.2f}%".format(
        100. * float(torch.sum(model.fc3.weight == 0))
        / float(model.fc3.weight.nelement())
    )
)
global_sparsity = (
    float(
        torch.sum(model.conv1.weight == 0)
        + torch.sum(model.conv2.weight == 0)
        + torch.sum(model.fc1.weight == 0)
        + torch.sum(model.fc2.weight == 0)
        + torch.sum(model.fc3.weight == 0)
    )
    / float(
        model.conv1.weight.nelement()
        + model.conv2.weight.nelement()
        + model.fc1.weight.nelement()
        + model.fc2.weight.nelement()
        + model.fc3.weight.nelement()
    )
)
print("Global sparsity: {:.2f}%".format(100. * global_sparsity))
# global pruning removes the globally smallest 20%: every kept weight is at least as large
kept_min = min(float(m.weight_orig.abs()[m.weight_mask == 1].min())
               for m, _ in parameters_to_prune)
pruned_max = max(float(m.weight_orig.abs()[m.weight_mask == 0].max())
                 for m, _ in parameters_to_prune)

# pruned weights stay zero through training: the forward pre-hook applies the mask
opt = torch.optim.SGD(model.parameters(), lr=0.05)
images, labels = torch.randn(4, 1, 32, 32), torch.randint(0, 10, (4,))
train_losses = []
for step in range(5):
    loss = F.cross_entropy(model(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    train_losses.append(loss.item())
still_sparse = float(torch.sum(model.fc1.weight == 0)) / model.fc1.weight.nelement()
masked_grad_zero = bool((model.fc1.weight_orig.grad[model.fc1.weight_mask == 0] == 0).all())


class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor
    """
    PRUNING_TYPE = 'unstructured'

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    """Prunes tensor corresponding to parameter called `name` in `module`
    by removing every other entry in the tensors.
    Modifies module in place (and also return the modified module)
    by:
    1) adding a named buffer called `name+'_mask'` corresponding to the
    binary mask applied to the parameter `name` by the pruning method.
    The parameter `name` is replaced by its pruned version, while the
    original (unpruned) parameter is stored in a new parameter named
    `name+'_orig'`.

    Args:
        module (nn.Module): module containing the tensor to prune
        name (string): parameter name within `module` on which pruning
                will act.

    Returns:
        module (nn.Module): modified (i.e. pruned) version of the input
            module

    Examples:
        >>> m = nn.Linear(3, 4)
        >>> foobar_unstructured(m, name='bias')
    """
    FooBarPruningMethod.apply(module, name)
    return module


model = LeNet()
foobar_unstructured(model.fc3, name='bias')

print(model.fc3.bias_mask)
foobar_mask = model.fc3.bias_mask.tolist()
foobar_is_pruned = prune.is_pruned(model.fc3)

# deterministic parts to compare with torch: masks of the deterministic methods on fixed weights
fixed = nn.Linear(6, 4)
with torch.no_grad():
    fixed.weight.copy_(torch.sin(torch.arange(24, dtype=torch.float32) * 1.3).view(4, 6))
    fixed.bias.copy_(torch.cos(torch.arange(4, dtype=torch.float32)))
prune.l1_unstructured(fixed, "weight", amount=0.25)
prune.ln_structured(fixed, "weight", amount=1, n=1, dim=1)
prune.l1_unstructured(fixed, "bias", amount=0.5)
fixed_out = fixed(torch.linspace(-1, 1, 12).view(2, 6))
fixed_results = {"weight_mask": fixed.weight_mask.tolist(), "bias_mask": fixed.bias_mask.tolist(),
                 "out": fixed_out.tolist()}
