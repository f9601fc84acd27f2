"""A classifier with a learned spatial transformer in front, written for these tests in the way
PyTorch's Spatial Transformer Networks tutorial is commonly written (modelled on the API usage
of that tutorial, not a copy of it):

- a localisation ``nn.Sequential`` (``Conv2d``, ``MaxPool2d(2, stride=2)``, ``ReLU(True)``)
  regressing a 2x3 affine ``theta``, its last layer started at the identity through
  ``weight.data.zero_()``/``bias.data.copy_``
- ``F.affine_grid`` + ``F.grid_sample`` (``align_corners=False``) warping the input
- a LeNet-style head with ``nn.Dropout2d``, ``F.dropout(training=...)``, ``F.log_softmax``;
  SGD with momentum, ``F.nll_loss`` (also with the legacy ``size_average=False``),
  ``max(1, keepdim=True)``, ``eq``/``view_as``
"""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
device = torch.device("cpu")  # (kept on the CPU for repeatable runs)

# ten random binary 28x28 patterns (30 % of pixels on); samples are a pattern plus noise
patterns = (torch.rand(10, 1, 28, 28) > 0.7).float()
digit = torch.randint(0, 10, (64,))
pics = patterns[digit] + 0.2 * torch.rand(64, 1, 28, 28)
train_loader = DataLoader(TensorDataset(pics[:48], digit[:48]), batch_size=16, shuffle=True)
test_loader = DataLoader(TensorDataset(pics[48:], digit[48:]), batch_size=16, shuffle=True)
IDENTITY = [1, 0, 0, 0, 1, 0]  # theta = [[1, 0, 0], [0, 1, 0]]


def loc_block(cin, cout, kernel):
    return [nn.Conv2d(cin, cout, kernel_size=kernel), nn.MaxPool2d(2, stride=2), nn.ReLU(True)]


class WarpThenClassify(nn.Module):
    def __init__(self):
        super().__init__()
        # 28 -> conv 7 -> 22 -> pool -> 11 -> conv 5 -> 7 -> pool -> 3
        self.locate = nn.Sequential(*loc_block(1, 8, 7), *loc_block(8, 10, 5))
        self.theta_head = nn.Sequential(nn.Linear(90, 32), nn.ReLU(True), nn.Linear(32, 6))
        last = self.theta_head[2]
        last.weight.data.zero_()
        last.bias.data.copy_(torch.tensor(IDENTITY, dtype=torch.float))
        # classifier: 28 -> conv 5 -> 24 -> pool -> 12 -> conv 5 -> 8 -> pool -> 4; 20*4*4 = 320
        self.conv_a = nn.Conv2d(1, 10, kernel_size=5)
        self.conv_b = nn.Conv2d(10, 20, kernel_size=5)
        self.map_drop = nn.Dropout2d()
        self.hidden = nn.Linear(320, 50)
        self.logits = nn.Linear(50, 10)

    def warp(self, img):
        theta = self.theta_head(self.locate(img).view(-1, 90)).view(-1, 2, 3)
        grid = F.affine_grid(theta, img.size(), align_corners=False)
        return F.grid_sample(img, grid, align_corners=False)

    def forward(self, img):
        h = self.warp(img)
        h = F.relu(F.max_pool2d(self.conv_a(h), 2))
        h = F.relu(F.max_pool2d(self.map_drop(self.conv_b(h)), 2))
        h = F.relu(self.hidden(h.view(-1, 320)))
        h = F.dropout(h, training=self.training)
        return F.log_softmax(self.logits(h), dim=1)


net = WarpThenClassify().to(device)
sgd = optim.SGD(net.parameters(), lr=0.05, momentum=0.9)

with torch.no_grad():  # the identity theta samples every pixel where it was
    identity_error = (net.warp(pics[:4]) - pics[:4]).abs().max().item()


def one_epoch():
    net.train()
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        sgd.zero_grad()
        F.nll_loss(net(xb), yb).backward()
        sgd.step()


def held_out_loss():
    net.eval()
    summed, hits = 0.0, 0
    with torch.no_grad():
        for xb, yb in test_loader:
            xb, yb = xb.to(device), yb.to(device)
            logp = net(xb)
            summed += F.nll_loss(logp, yb, size_average=False).item()  # a sum, not a mean
            best = logp.max(1, keepdim=True)[1]
            hits += best.eq(yb.view_as(best)).sum().item()
    n = len(test_loader.dataset)
    print(f"held out: loss {summed / n:.4f}, {hits}/{n} right")
    return summed / n


test_losses = [held_out_loss()]
for _ in range(2):
    one_epoch()
    test_losses.append(held_out_loss())
theta_weight = net.theta_head[2].weight
theta_grad_flows = theta_weight.grad is not None and theta_weight.grad.abs().sum().item() > 0
