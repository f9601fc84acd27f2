# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""The PyTorch Quickstart (FashionMNIST-shaped random data): torch.accelerator device pick,
nn.Flatten + linear_relu_stack, train/test loops, save/load state_dict, predict; plus the
"Build the model" page's inspection and a module forward hook / full backward hook."""
import os
import tempfile

import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class FakeFashionMNIST(Dataset):
    def __init__(self, n, train=True):
        g = torch.Generator().manual_seed(1 if train else 2)
        self.targets = torch.randint(0, 10, (n,), generator=g)
        protos = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        self.data = (protos[self.targets] + 0.3 * torch.rand(n, 1, 28, 28, generator=g)).clamp(0, 1)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, idx):
        return self.data[idx], int(self.targets[idx])


training_data = FakeFashionMNIST(256, train=True)
test_data = FakeFashionMNIST(64, train=False)
batch_size = 64
train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)
for X, y in test_dataloader:
    print(f"Shape of X [N, C, H, W]: {X.shape}")
    print(f"Shape of y: {y.shape} {y.dtype}")
    break
first_batch_shapes = (tuple(X.shape), tuple(y.shape), str(y.dtype))

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
device = "cpu"
print(f"Using {device} device")


# Define model
class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10)
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork().to(device)
print(model)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)
        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 100 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss, correct


history = [test(test_dataloader, model, loss_fn)]
epochs = 5
for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    train(train_dataloader, model, loss_fn, optimizer)
    history.append(test(test_dataloader, model, loss_fn))
print("Done!")

path = os.path.join(tempfile.mkdtemp(), "model.pth")
torch.save(model.state_dict(), path)
print("Saved PyTorch Model State to model.pth")
model = NeuralNetwork().to(device)
model.load_state_dict(torch.load(path, weights_only=True))
reloaded = test(test_dataloader, model, loss_fn)

classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot"]
model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    x = x.to(device)
    pred = model(x)
    predicted, actual = classes[pred[0].argmax(0)], classes[y]
    print(f'Predicted: "{predicted}", Actual: "{actual}"')

# "Build the model": inspect logits, softmax, layers, parameters
X = torch.rand(1, 28, 28, device=device)
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
y_pred = pred_probab.argmax(1)
print(f"Predicted class: {y_pred}")
param_summary = [(name, tuple(param.size())) for name, param in model.named_parameters()]
for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {param.size()} | Values : {param[:2]} \n")

# hooks: a forward hook records activations, a full backward hook the gradients
activations, grads = {}, {}
layer = model.linear_relu_stack[2]
h1 = layer.register_forward_hook(lambda m, inp, out: activations.update(fc2=out.detach()))
h2 = layer.register_full_backward_hook(
    lambda m, grad_input, grad_output: grads.update(fc2_in=grad_input[0], fc2_out=grad_output[0]))
model.train()
xb, yb = next(iter(train_dataloader))
loss_fn(model(xb), yb).backward()
h1.remove()
h2.remove()
hook_shapes = (tuple(activations["fc2"].shape), tuple(grads["fc2_in"].shape),
               tuple(grads["fc2_out"].shape))
# the gradient w.r.t. fc2's input is grad_output @ W
hook_grad_consistent = torch.allclose(grads["fc2_in"], grads["fc2_out"] @ layer.weight,
                                      atol=1e-6)
