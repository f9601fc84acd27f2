"""Gradients, state_dicts, warm starts and saved models for inference on one small CNN, written
for these tests in the way the PyTorch recipes commonly write torch code (modelled on the API
usage of the recipes on zeroing gradients, state_dict, warm-starting from another model and
saving/loading for inference, not a copy of them):

- a CIFAR-shaped CNN (Conv2d, MaxPool2d(2, 2), flatten(start_dim=1), Linear) trained with
  CrossEntropyLoss and SGD+momentum over a DataLoader with workers, optimizer.zero_grad() each
  step, model.zero_grad() after;
- the model's and the optimizer's state_dict (also of a fresh optimizer);
- torch.save / torch.load of a state_dict into a twin class with load_state_dict(strict=False),
  into a renamed and partial model (missing/unexpected keys, and the strict RuntimeError);
- inference from a saved state_dict and from a pickled whole model (refused by the default
  weights_only load, accepted with weights_only=False);
- three momentum steps from sin-valued weights and the optimizer's state, for the torch
  comparison.

3x32x32 images made from per-class colour patterns plus noise stand in for CIFAR-10.
"""
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.utils.data import TensorDataset

torch.manual_seed(12)
tmp = tempfile.mkdtemp()

# each class: a colour per channel times a class-specific horizontal wave, plus noise
y_all = torch.randint(0, 10, (160,))
rows = torch.arange(32, dtype=torch.float32).view(1, 1, 32, 1)
freq = (y_all.float() + 1).view(-1, 1, 1, 1) / 4
colour = torch.rand(10, 3)[y_all].view(-1, 3, 1, 1)
x_all = colour * torch.sin(freq * rows).expand(-1, 3, 32, 32) + 0.3 * torch.randn(160, 3, 32, 32)
loader = torch.utils.data.DataLoader(TensorDataset(x_all, y_all), batch_size=4, shuffle=True,
                                     num_workers=2)


class TinyCifarNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.halve = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(400, 96)
        self.fc2 = nn.Linear(96, 48)
        self.fc3 = nn.Linear(48, 10)

    def forward(self, x):
        for conv in (self.conv1, self.conv2):
            x = self.halve(F.relu(conv(x)))
        h = F.relu(self.fc1(x.flatten(start_dim=1)))
        return self.fc3(F.relu(self.fc2(h)))


class SameLayout(TinyCifarNet):
    """Another class with the same parameter names: a warm start loads everything."""


class Renamed(nn.Module):
    """First conv under another name, no fc1-fc3, a new head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.head = nn.Linear(400, 10)


net = TinyCifarNet()
ce = nn.CrossEntropyLoss()
sgd = optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
epoch_losses = []
for epoch in range(3):
    acc = 0.0
    for i, (xb, yb) in enumerate(loader, 0):
        sgd.zero_grad()
        loss = ce(net(xb), yb)
        loss.backward()
        sgd.step()
        acc += loss.item()
        if (i + 1) % 20 == 0:
            epoch_losses.append(acc / 20)
            print(f"epoch {epoch + 1} batch {i + 1}: {acc / 20:.3f}")
            acc = 0.0
net.zero_grad()  # every parameter is in sgd, so this is sgd.zero_grad() too
grads_after_model_zero_grad = [w.grad for w in net.parameters()]

# --- what the state_dicts hold
sd = net.state_dict()
for name in sd:
    print(name, sd[name].size())
model_state_sizes = [(name, tuple(t.size())) for name, t in sd.items()]
optimizer_state = sgd.state_dict()
for key in optimizer_state:
    print(key, optimizer_state[key] if key == "param_groups" else len(optimizer_state[key]))
fresh_optimizer_state = optim.SGD(TinyCifarNet().parameters(), lr=0.001,
                                  momentum=0.9).state_dict()

# --- warm starts
weights_file = os.path.join(tmp, "tiny_cifar.pt")
torch.save(net.state_dict(), weights_file)
twin = SameLayout()
warm_result = twin.load_state_dict(torch.load(weights_file), strict=False)
warm_same = all(torch.equal(a, b) for a, b in zip(net.parameters(), twin.parameters()))

renamed = Renamed()
loaded = {name.replace("conv1.", "stem.", 1): t for name, t in torch.load(weights_file).items()}
partial_result = renamed.load_state_dict(loaded, strict=False)
missing, unexpected = partial_result.missing_keys, partial_result.unexpected_keys
partial_keys = (sorted(missing), sorted(unexpected))
print(warm_result, partial_result)
try:
    renamed.load_state_dict(loaded)
except RuntimeError as err:
    strict_error = str(err)

# --- inference from a state_dict, then from the whole pickled model
inference_file = os.path.join(tmp, "for_inference.pt")
torch.save(net.state_dict(), inference_file)
served = TinyCifarNet()
served.load_state_dict(torch.load(inference_file))
served.eval()
net.eval()
batch = x_all[:8]
with torch.no_grad():
    state_dict_inference_same = torch.equal(served(batch), net(batch))

whole_file = os.path.join(tmp, "whole_model.pt")
torch.save(net, whole_file)
try:
    torch.load(whole_file)  # weights_only=True by default: no arbitrary classes
except Exception as err:
    entire_default_error = type(err).__name__
whole = torch.load(whole_file, weights_only=False)
whole.eval()
with torch.no_grad():
    entire_inference_same = isinstance(whole, TinyCifarNet) and torch.equal(whole(batch),
                                                                            net(batch))

# --- fixed weights: three momentum steps and the optimizer's state
ref = TinyCifarNet()
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 5)
ref_opt = optim.SGD(ref.parameters(), lr=0.005, momentum=0.9)
ref_x = torch.cos(torch.arange(4 * 3 * 32 * 32, dtype=torch.float32)).view(4, 3, 32, 32)
fixed_losses = []
for _ in range(3):
    ref_opt.zero_grad()
    loss = ce(ref(ref_x), torch.tensor([2, 7, 1, 8]))
    loss.backward()
    ref_opt.step()
    fixed_losses += [loss.item()]
ref_state = ref_opt.state_dict()
fixed_momentum = {k: v["momentum_buffer"].tolist() for k, v in ref_state["state"].items()}
fixed_param_groups = ref_state["param_groups"]
