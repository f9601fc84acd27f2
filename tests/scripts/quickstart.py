"""A first image classifier end to end, written for these tests in the way the PyTorch
Quickstart and its "Build the model" page are commonly written (modelled on the API usage of
those pages, not a copy of them):

- a map-style ``Dataset`` of 1x28x28 images (generated with seeded ``torch.Generator``s),
  ``DataLoader`` batches, a device chosen with ``torch.accelerator``
- ``nn.Flatten`` + an ``nn.Sequential`` of Linear/ReLU, ``CrossEntropyLoss``, SGD,
  ``train()``/``eval()`` loops, ``torch.save``/``torch.load(weights_only=True)`` of a state_dict
- inspection: ``nn.Softmax``, ``named_parameters``, a forward hook and a full backward hook
"""
import os
import tempfile

import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader, Dataset

torch.manual_seed(0)
LABELS = ["circle", "square", "cross", "ring", "bar", "dot", "wave", "grid", "star", "blank"]


class NoisyTemplates(Dataset):
    """Each class is a fixed random 28x28 template; a sample is its template plus noise."""

    def __init__(self, size, seed):
        gen = torch.Generator().manual_seed(seed)
        templates = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        self.labels = torch.randint(0, 10, (size,), generator=gen)
        noise = torch.rand(size, 1, 28, 28, generator=gen)
        self.images = (templates[self.labels] + 0.3 * noise).clamp(0, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


train_set, test_set = NoisyTemplates(256, seed=1), NoisyTemplates(64, seed=2)
train_loader = DataLoader(train_set, batch_size=64)
test_loader = DataLoader(test_set, batch_size=64)
images, labels = next(iter(test_loader))
print("batch:", images.shape, labels.shape, labels.dtype)
first_batch_shapes = (tuple(images.shape), tuple(labels.shape), str(labels.dtype))

if torch.accelerator.is_available():
    print("an accelerator is present:", torch.accelerator.current_accelerator().type)
device = "cpu"  # (kept on the CPU so the run is the same everywhere)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.layers = nn.Sequential(nn.Linear(28 * 28, 64), nn.ReLU(),
                                    nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, img):
        return self.layers(self.flatten(img))


model = MLP().to(device)
print(model)
criterion = nn.CrossEntropyLoss()
sgd = torch.optim.SGD(model.parameters(), lr=0.1)


def train_epoch(loader, net):
    net.train()
    seen = 0
    for step, (xb, yb) in enumerate(loader):
        xb, yb = xb.to(device), yb.to(device)
        loss = criterion(net(xb), yb)
        loss.backward()
        sgd.step()
        sgd.zero_grad()
        seen += len(xb)
        if step % 2 == 0:
            print(f"  step {step}: loss {loss.item():.4f} ({seen}/{len(loader.dataset)})")


def evaluate(loader, net):
    """(mean batch loss, accuracy) over the loader."""
    net.eval()
    total_loss, right = 0.0, 0.0
    with torch.no_grad():
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            scores = net(xb)
            total_loss += criterion(scores, yb).item()
            right += (scores.argmax(1) == yb).type(torch.float).sum().item()
    return total_loss / len(loader), right / len(loader.dataset)


history = [evaluate(test_loader, model)]
for epoch in range(10):
    train_epoch(train_loader, model)
    history.append(evaluate(test_loader, model))
    print(f"epoch {epoch}: loss {history[-1][0]:.4f}, accuracy {history[-1][1]:.1%}")

weights_file = os.path.join(tempfile.mkdtemp(), "mlp_weights.pth")
torch.save(model.state_dict(), weights_file)
model = MLP().to(device)
model.load_state_dict(torch.load(weights_file, weights_only=True))
reloaded = evaluate(test_loader, model)

model.eval()
sample, truth = test_set[0]
with torch.no_grad():
    guess = model(sample.to(device))[0].argmax(0)
print(f"guessed {LABELS[guess]}, was {LABELS[truth]}")

# a look inside: probabilities of a random input, and every parameter's name and size
probs = nn.Softmax(dim=1)(model(torch.rand(1, 28, 28, device=device)))
print("most likely class:", probs.argmax(1))
param_summary = []
for name, p in model.named_parameters():
    param_summary.append((name, tuple(p.size())))
    print(name, p.size(), p[:2])

# hooks on the middle Linear: what it outputs and the gradients around it
seen_out, seen_grads = {}, {}
middle = model.layers[2]


def keep_output(module, inputs, output):
    seen_out["y"] = output.detach()


def keep_grads(module, grad_input, grad_output):
    seen_grads["x"], seen_grads["y"] = grad_input[0], grad_output[0]


handles = [middle.register_forward_hook(keep_output),
           middle.register_full_backward_hook(keep_grads)]
model.train()
xb, yb = next(iter(train_loader))
criterion(model(xb), yb).backward()
for handle in handles:
    handle.remove()
hook_shapes = (tuple(seen_out["y"].shape), tuple(seen_grads["x"].shape),
               tuple(seen_grads["y"].shape))
# a Linear's input gradient is its output gradient times the weight
hook_grad_consistent = torch.allclose(seen_grads["x"], seen_grads["y"] @ middle.weight, atol=1e-6)
