"""A LeNet on 3x32x32 colour images, written for these tests in the way the PyTorch
"60 minute blitz" is commonly written (modelled on the API usage of that tutorial, not a copy
of it):

- a LeNet module (``nn.Conv2d``, a shared ``nn.MaxPool2d(2, 2)``, ``F.relu``, ``torch.flatten``)
- one manual step: ``backward(gradient)``, ``nn.MSELoss``, walking ``grad_fn.next_functions``,
  ``p.data.sub_``
- CIFAR-shaped random data through ``TensorDataset``/``DataLoader``, ``CrossEntropyLoss``, SGD
  with momentum, ``torch.save``/``torch.load(weights_only=True)``, ``torch.max``, ``torch.equal``
  and per-class accuracy counting
"""
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
NAMES = ("apple", "boat", "bus", "chair", "clock", "lamp", "maple", "rose", "tank", "whale")


class LeNet(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 5)  # 32 -> 28, pooled to 14
        self.c2 = nn.Conv2d(6, 16, 5)  # 14 -> 10, pooled to 5
        self.down = nn.MaxPool2d(2, 2)
        self.f1 = nn.Linear(16 * 5 * 5, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, n_classes)

    def forward(self, img):
        for conv in (self.c1, self.c2):
            img = self.down(F.relu(conv(img)))
        h = torch.flatten(img, 1)
        h = F.relu(self.f2(F.relu(self.f1(h))))
        return self.f3(h)


model = LeNet()
print(model)
params = list(model.parameters())
print(len(params), params[0].size())

# One step done by hand, looking at the autograd graph on the way.
x1 = torch.randn(1, 3, 32, 32)
model.zero_grad()
model(x1).backward(torch.randn(1, 10))  # a vector-Jacobian product with random weights
goal = torch.randn(10).view(1, -1)
mse = nn.MSELoss()(model(x1), goal)
node = mse.grad_fn
print(node)
for _ in range(2):  # back through the last Linear, then its first input
    node = node.next_functions[0][0]
    print(node)
model.zero_grad()
print("bias grad of c1 before:", model.c1.bias.grad)
mse.backward()
print("bias grad of c1 after:", model.c1.bias.grad)
for p in model.parameters():
    p.data.sub_(p.grad.data * 0.01)

# Ten classes, each a random 3x32x32 prototype; samples add noise to it.
protos = torch.randn(10, 3, 32, 32)
ys = torch.randint(0, 10, (96,))
xs = protos[ys] + 0.5 * torch.randn(96, 3, 32, 32)
train_loader = DataLoader(TensorDataset(xs[:64], ys[:64]), batch_size=4, shuffle=True,
                          num_workers=0)
test_loader = DataLoader(TensorDataset(xs[64:], ys[64:]), batch_size=4, shuffle=False,
                         num_workers=0)

model = LeNet()
ce = nn.CrossEntropyLoss()
sgd = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
epoch_losses = []
for epoch in range(3):
    losses = []
    for step, (batch_x, batch_y) in enumerate(train_loader, 0):
        sgd.zero_grad()
        loss = ce(model(batch_x), batch_y)
        loss.backward()
        sgd.step()
        losses.append(loss.item())
        if (step + 1) % 8 == 0:
            print(f"epoch {epoch + 1} step {step + 1}: {sum(losses[-8:]) / 8:.3f}")
    epoch_losses.append(sum(losses) / len(train_loader))

ckpt = os.path.join(tempfile.mkdtemp(), "lenet.pth")
torch.save(model.state_dict(), ckpt)
copy = LeNet()
copy.load_state_dict(torch.load(ckpt, weights_only=True))
batch_x, batch_y = next(iter(test_loader))
scores = copy(batch_x)
_, guess = torch.max(scores, 1)
print("truth:", [NAMES[batch_y[j]] for j in range(4)])
print("guess:", [NAMES[guess[j]] for j in range(4)])
reloaded_same = torch.equal(scores, model(batch_x))

right, seen = 0, 0
per_class = {name: [0, 0] for name in NAMES}  # name -> [right, seen]
with torch.no_grad():
    for batch_x, batch_y in test_loader:
        _, guess = torch.max(copy(batch_x).data, 1)
        seen += batch_y.size(0)
        right += (guess == batch_y).sum().item()
        for truth, g in zip(batch_y, guess):
            per_class[NAMES[truth]][0] += int(truth == g)
            per_class[NAMES[truth]][1] += 1
accuracy = right / seen
print(f"test accuracy {accuracy:.0%}")
for name, (ok, n) in per_class.items():
    if n:
        print(f"  {name:6s} {ok}/{n}")

# A LeNet with weights set by formula and a fixed input (compared with torch).
fixed = LeNet()
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        idx = torch.arange(p.numel(), dtype=torch.float32)
        p.copy_(0.1 * torch.sin(0.37 * idx + k).view_as(p))
probe = torch.cos(torch.arange(2 * 3 * 32 * 32, dtype=torch.float32)).reshape(2, 3, 32, 32)
fixed_out = fixed(probe).tolist()
