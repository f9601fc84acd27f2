"""First steps with the library, written for these tests in the way yunjey's pytorch-tutorial
(01-basics) is commonly written (modelled on the API usage of that tutorial, not a copy of it):

- autograd on 0-d tensors, then a Linear layer's gradients against the MSE closed form and one
  SGD step;
- ``from_numpy`` / ``.numpy()`` sharing memory;
- a torchvision-style dataset (the digits stand-in of vision_standin.py), ``DataLoader`` with
  ``iter``/``next`` and a full pass, and an empty custom ``Dataset``;
- a 1-d regression fitted with SGD from fixed weights, a softmax classifier (SGD) and a
  one-hidden-layer net (Adam) on the digits, tested with ``torch.max`` over ``outputs.data``;
- freezing a trained net and swapping its head, saving/loading a whole module and a
  ``state_dict``.
"""
import os
import tempfile

import numpy as np
from vision_standin import standin

import jitgrad as torch
import jitgrad.nn as nn

torch.manual_seed(0)
vision = standin(1000, 400)
to_tensor = vision.transforms.ToTensor()
work_dir = tempfile.mkdtemp(prefix="basics_ckpt_")
results = {}


# --- autograd on scalars ------------------------------------------------------------------
a = torch.tensor(3., requires_grad=True)
b = torch.tensor(-1., requires_grad=True)
c = torch.tensor(0.5, requires_grad=True)
out = a * b + c
out.backward()
print("grads:", a.grad, b.grad, c.grad)
results["autograd1"] = [a.grad.item(), b.grad.item(), c.grad.item()]

# --- a layer's gradients and one optimizer step -------------------------------------------
inputs, targets = torch.randn(12, 3), torch.randn(12, 2)
layer = nn.Linear(3, 2)
print("weight:", layer.weight, "bias:", layer.bias)
mse = nn.MSELoss()
sgd = torch.optim.SGD(layer.parameters(), lr=0.01)
prediction = layer(inputs)
first_loss = mse(prediction, targets)
first_loss.backward()
expected = 2 * (prediction - targets).t() @ inputs / prediction.numel()
grads_ok = bool(torch.allclose(layer.weight.grad, expected, atol=1e-6))
sgd.step()
second_loss = mse(layer(inputs), targets)
print(f"loss {first_loss.item():.4f} -> {second_loss.item():.4f}")
results["autograd2_grads_ok"] = grads_ok
results["autograd2_losses"] = [first_loss.item(), second_loss.item()]

# --- numpy bridge ---------------------------------------------------------------------------
counts = np.arange(6).reshape(2, 3)
as_tensor = torch.from_numpy(counts)
back = as_tensor.numpy()
results["numpy"] = (str(as_tensor.dtype), back.dtype.name, np.shares_memory(counts, back))

# --- datasets and loaders --------------------------------------------------------------------
colour_set = vision.datasets.CIFAR10(root="./data", train=True, transform=to_tensor,
                                     download=True)
picture, digit = colour_set[0]
print("one sample:", picture.size(), digit)
results["pipeline_item"] = (tuple(picture.size()), digit)

loader = torch.utils.data.DataLoader(dataset=colour_set, batch_size=64, shuffle=True)
batch_x, batch_y = next(iter(loader))
results["pipeline_batch"] = (tuple(batch_x.shape), tuple(batch_y.shape), str(batch_y.dtype))
results["pipeline_batches"] = sum(1 for _ in loader)


class EmptyFolder(torch.utils.data.Dataset):
    """A dataset whose folder has no files yet."""

    def __init__(self):
        self.files = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        raise IndexError(idx)


empty_loader = torch.utils.data.DataLoader(dataset=EmptyFolder(), batch_size=64, shuffle=False)
results["custom_batches"] = len(list(empty_loader))


# --- 1-d regression from fixed weights -------------------------------------------------------
xs = np.linspace(1.0, 10.0, 18, dtype=np.float32).reshape(-1, 1)
ys = (0.35 * xs + 0.4 + 0.15 * np.sin(3 * xs)).astype(np.float32)
line = nn.Linear(1, 1)
with torch.no_grad():
    line.weight.fill_(-0.3)
    line.bias.fill_(0.2)
fit = torch.optim.SGD(line.parameters(), lr=0.002)
line_losses = []
for epoch in range(50):
    loss = mse(line(torch.from_numpy(xs)), torch.from_numpy(ys))
    fit.zero_grad()
    loss.backward()
    fit.step()
    line_losses.append(loss.item())
    if epoch % 10 == 9:
        print(f"regression epoch {epoch + 1}: {loss.item():.4f}")
fitted = line(torch.from_numpy(xs)).detach().numpy()
results["linreg"] = {"losses": line_losses, "predicted": fitted.ravel().tolist()}
torch.save(line.state_dict(), os.path.join(work_dir, "line.pt"))


# --- digit classifiers -------------------------------------------------------------------------
def digit_loaders(batch):
    train = vision.datasets.MNIST(root="./data", train=True, transform=to_tensor, download=True)
    test = vision.datasets.MNIST(root="./data", train=False, transform=to_tensor)
    return (torch.utils.data.DataLoader(dataset=train, batch_size=batch, shuffle=True),
            torch.utils.data.DataLoader(dataset=test, batch_size=batch, shuffle=False))


def fit_classifier(net, optimizer, train_loader, epochs, device=None):
    criterion = nn.CrossEntropyLoss()
    history = []
    for epoch in range(epochs):
        for step, (pixels, labels) in enumerate(train_loader):
            pixels = pixels.reshape(-1, 64)
            if device is not None:
                pixels, labels = pixels.to(device), labels.to(device)
            loss = criterion(net(pixels), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
            if step % 5 == 4:
                print(f"epoch {epoch + 1}/{epochs}, step {step + 1}: loss {loss.item():.4f}")
    return history


train_loader, test_loader = digit_loaders(100)
softmax_reg = nn.Linear(64, 10)
reg_losses = fit_classifier(softmax_reg, torch.optim.SGD(softmax_reg.parameters(), lr=0.1),
                            train_loader, 5)
with torch.no_grad():
    hits, seen = 0, 0
    for pixels, labels in test_loader:
        _, guess = torch.max(softmax_reg(pixels.reshape(-1, 64)).data, 1)
        seen += labels.size(0)
        hits += (guess == labels).sum()
print("softmax regression accuracy:", 100 * hits / seen)
results["logreg"] = {"losses": reg_losses, "accuracy": (100 * hits / seen).item(),
                     "correct_type": type(hits).__name__}
torch.save(softmax_reg.state_dict(), os.path.join(work_dir, "softmax.pt"))


class TwoLayer(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.hidden = nn.Linear(n_in, n_hidden)
        self.act = nn.ReLU()
        self.head = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        return self.head(self.act(self.hidden(x)))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mlp = TwoLayer(64, 100, 10).to(device)
mlp_losses = fit_classifier(mlp, torch.optim.Adam(mlp.parameters(), lr=0.001), train_loader, 5,
                            device)
with torch.no_grad():
    hits, seen = 0, 0
    for pixels, labels in test_loader:
        pixels, labels = pixels.reshape(-1, 64).to(device), labels.to(device)
        _, guess = torch.max(mlp(pixels).data, 1)
        seen += labels.size(0)
        hits += (guess == labels).sum().item()
results["ffn"] = {"losses": mlp_losses, "accuracy": 100 * hits / seen}
torch.save(mlp.state_dict(), os.path.join(work_dir, "mlp.pt"))


# --- freeze, swap the head, save and reload --------------------------------------------------
for p in mlp.parameters():
    p.requires_grad = False
mlp.head = nn.Linear(mlp.head.in_features, 100)
probe = torch.randn(64, 64)
logits = mlp(probe)
trainable = [name for name, p in mlp.named_parameters() if p.requires_grad]
results["finetune"] = (tuple(logits.size()), logits.requires_grad, trainable)

whole_path, weights_path = os.path.join(work_dir, "whole.pt"), os.path.join(work_dir, "w.pt")
torch.save(mlp, whole_path)
copy = torch.load(whole_path, weights_only=False)
torch.save(mlp.state_dict(), weights_path)
mlp.load_state_dict(torch.load(weights_path))
results["reloaded_equal"] = bool(torch.equal(copy(probe), mlp(probe)))
