"""Two image classifiers on the digits, written for these tests in the way yunjey's
pytorch-tutorial (02-intermediate) is commonly written (modelled on the API usage of that
tutorial, not a copy of it):

- a small CNN: ``nn.Sequential`` stages of Conv2d(kernel_size=5, padding=2) + BatchNorm2d +
  ReLU + MaxPool2d, Adam, ``model.eval()`` for testing;
- a tiny residual net on the three-channel digits: bias-free 3x3 convolutions, a 1-conv
  downsampling shortcut, ``ReLU(inplace=True)``, ``out += shortcut``, AvgPool2d, a
  Pad / RandomHorizontalFlip / RandomCrop / ToTensor pipeline and a step-wise learning rate
  written into ``optimizer.param_groups``;
- a float64 check for the torch comparison: both nets with deterministic weights, their loss
  and gradients on a fixed batch.
"""
import os
import random
import tempfile

from vision_standin import standin

import jitgrad as torch
import jitgrad.nn as nn

torch.manual_seed(0)
random.seed(0)
vision = standin(600, 300)
T = vision.transforms
out_dir = tempfile.mkdtemp(prefix="intermediate_")
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
results = {}


def make_loader(dataset, shuffle):
    return torch.utils.data.DataLoader(dataset=dataset, batch_size=100, shuffle=shuffle)


def train_epochs(net, optimizer, loader, epochs, after_epoch=None):
    loss_fn = nn.CrossEntropyLoss()
    history = []
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
        print(f"epoch {epoch + 1}: last loss {history[-1]:.4f}")
        if after_epoch is not None:
            after_epoch(epoch)
    return history


def accuracy(net, loader):
    net.eval()  # batch norm switches to its running statistics
    right = total = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            _, best = torch.max(net(x).data, 1)
            total += y.size(0)
            right += (best == y).sum().item()
    return 100 * right / total


# --- a two-stage CNN on the grey digits ------------------------------------------------------
def conv_stage(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel_size=5, stride=1, padding=2),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
    )


class DigitCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.features = nn.Sequential(conv_stage(1, 12), conv_stage(12, 24))
        self.classifier = nn.Linear(24 * 2 * 2, n_classes)

    def forward(self, x):
        h = self.features(x)
        return self.classifier(h.reshape(h.size(0), -1))


grey_train = vision.datasets.MNIST(root="data", train=True, transform=T.ToTensor(),
                                   download=True)
grey_test = vision.datasets.MNIST(root="data", train=False, transform=T.ToTensor())
cnn = DigitCNN().to(device)
cnn_losses = train_epochs(cnn, torch.optim.Adam(cnn.parameters(), lr=0.01),
                          make_loader(grey_train, True), 2)
cnn_acc = accuracy(cnn, make_loader(grey_test, False))
print(f"cnn accuracy {cnn_acc:.1f}%")
first_bn = cnn.features[0][1]
results["cnn"] = {"losses": cnn_losses, "accuracy": cnn_acc,
                  "running_var": first_bn.running_var.tolist()}
torch.save(cnn.state_dict(), os.path.join(out_dir, "cnn.pt"))


# --- a small residual net on the coloured digits -------------------------------------------------
def conv3(c_in, c_out, stride=1):
    return nn.Conv2d(c_in, c_out, kernel_size=3, stride=stride, padding=1, bias=False)


class Residual(nn.Module):
    def __init__(self, c_in, c_out, stride=1, shortcut=None):
        super().__init__()
        self.conv_a, self.norm_a = conv3(c_in, c_out, stride), nn.BatchNorm2d(c_out)
        self.conv_b, self.norm_b = conv3(c_out, c_out), nn.BatchNorm2d(c_out)
        self.act = nn.ReLU(inplace=True)
        self.shortcut = shortcut

    def forward(self, x):
        skip = self.shortcut(x) if self.shortcut else x
        out = self.act(self.norm_a(self.conv_a(x)))
        out = self.norm_b(self.conv_b(out))
        out += skip
        return self.act(out)


class TinyResNet(nn.Module):
    def __init__(self, widths=(8, 16, 32), n_classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv3(3, widths[0]), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(inplace=True))
        stages, c = [], widths[0]
        for k, width in enumerate(widths):
            stride = 1 if k == 0 else 2
            shortcut = None
            if stride != 1 or c != width:
                shortcut = nn.Sequential(conv3(c, width, stride=stride), nn.BatchNorm2d(width))
            stages.append(Residual(c, width, stride, shortcut))
            c = width
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Linear(c, n_classes)

    def forward(self, x):
        h = self.pool(self.stages(self.stem(x)))
        return self.head(h.view(h.size(0), -1))


augment = T.Compose([T.Pad(1), T.RandomHorizontalFlip(), T.RandomCrop(8), T.ToTensor()])
colour_train = vision.datasets.CIFAR10(root="data", train=True, transform=augment,
                                       download=True)
colour_test = vision.datasets.CIFAR10(root="data", train=False, transform=T.ToTensor())
resnet = TinyResNet().to(device)
adam = torch.optim.Adam(resnet.parameters(), lr=0.01)
lr_now, lr_log = 0.01, []


def decay_every_two(epoch):
    global lr_now
    if epoch % 2 == 1:
        lr_now /= 3
        for group in adam.param_groups:
            group["lr"] = lr_now
    lr_log.append(adam.param_groups[0]["lr"])


res_losses = train_epochs(resnet, adam, make_loader(colour_train, True), 4, decay_every_two)
res_acc = accuracy(resnet, make_loader(colour_test, False))
print(f"resnet accuracy {res_acc:.1f}%")
results["resnet"] = {"losses": res_losses, "accuracy": res_acc, "lrs": lr_log}
torch.save(resnet.state_dict(), os.path.join(out_dir, "resnet.pt"))


# --- deterministic float64 forward/backward for the comparison with torch ---------------------
def gradients_with_set_weights(net, x, y):
    net.double()
    with torch.no_grad():
        for k, p in enumerate(net.parameters()):
            wave = torch.sin(torch.arange(p.numel(), dtype=torch.float64) * (0.7 + k))
            p.copy_(wave.view_as(p) / 4)
    net.train()
    net.zero_grad()
    loss = nn.CrossEntropyLoss()(net(x.double() if x.is_floating_point() else x), y)
    loss.backward()
    grads = {name: p.grad.tolist() for name, p in net.named_parameters()}
    return {"loss": loss.item(), **grads}


probe_x = torch.stack([colour_test[i][0] for i in range(16)])
probe_y = torch.tensor([colour_test[i][1] for i in range(16)])
fixed_results = {
    "cnn": gradients_with_set_weights(DigitCNN(), probe_x[:, 2:], probe_y),
    "resnet": gradients_with_set_weights(TinyResNet(), probe_x, probe_y),
}
