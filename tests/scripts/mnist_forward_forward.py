# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""pytorch/examples mnist_forward_forward: Hinton's Forward-Forward algorithm. Each layer trains
on its own loss (positive data: the image with its label overlaid, negative data: a wrong label)
with no backpropagation between layers; prediction picks the label of greatest "goodness".

torchvision is not used: MNIST is replaced by 8x8 "digits" (a pattern per class plus noise),
with Compose/ToTensor/Normalize/Lambda written out.
"""
import argparse
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.optim import Adam
from jitgrad.utils.data import DataLoader


# ---- the few lines torchvision would provide ----
class ToTensor:
    def __call__(self, pic):
        return torch.from_numpy(np.asarray(pic, dtype=np.float32)[None] / 255.0)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, t):
        return (t - torch.tensor(self.mean).view(-1, 1, 1)) / torch.tensor(self.std).view(-1, 1, 1)


class Lambda:
    def __init__(self, lambd):
        self.lambd = lambd

    def __call__(self, x):
        return self.lambd(x)


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class MNIST(torch.utils.data.Dataset):
    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 256, size=(10, 8, 8))

    def __init__(self, root, train=True, download=False, transform=None):
        rng = np.random.default_rng(0 if train else 1)
        n = 400 if train else 200
        self.targets = rng.integers(0, 10, size=n)
        noise = rng.normal(0, 40, size=(n, 8, 8))
        self.data = np.clip(self.patterns[self.targets] + noise, 0, 255).astype(np.uint8)
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.transform(self.data[i]), int(self.targets[i])


# ---- main.py ----
def get_y_neg(y):
    y_neg = y.clone()
    for idx, y_samp in enumerate(y):
        allowed_indices = list(range(10))
        allowed_indices.remove(y_samp.item())
        y_neg[idx] = torch.tensor(allowed_indices)[
            torch.randint(len(allowed_indices), size=(1,))
        ].item()
    return y_neg.to(device)


def overlay_y_on_x(x, y, classes=10):
    """Replace the first 10 pixels of data [x] with one-hot-encoded label [y]
    """
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):

        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs
        self.losses = []

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # The following loss pushes pos (neg) samples to
            # values larger (smaller) than the self.threshold.
            loss = torch.log(
                1
                + torch.exp(
                    torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                )
            ).mean()
            self.opt.zero_grad()
            # this backward just compute the derivative and hence
            # is not considered backpropagation.
            loss.backward()
            self.opt.step()
            self.losses.append(loss.item())
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=300, metavar="N",
                        help="number of epochs to train (default: 1000)")
    parser.add_argument("--lr", type=float, default=0.03, metavar="LR",
                        help="learning rate (default: 0.03)")
    parser.add_argument("--no_accel", action="store_true", default=False,
                        help="disables accelerator")
    parser.add_argument("--seed", type=int, default=1, metavar="S",
                        help="random seed (default: 1)")
    parser.add_argument("--save_model", action="store_true", default=True,
                        help="For saving the current Model")
    parser.add_argument("--train_size", type=int, default=400, help="size of training set")
    parser.add_argument("--threshold", type=float, default=2, help="threshold for training")
    parser.add_argument("--test_size", type=int, default=200, help="size of test set")
    parser.add_argument("--log-interval", type=int, default=10, metavar="N",
                        help="how many batches to wait before logging training status")
    args = parser.parse_args([])

    use_accel = not args.no_accel and torch.accelerator.is_available()
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    torch.manual_seed(args.seed)
    train_kwargs = {"batch_size": args.train_size}
    test_kwargs = {"batch_size": args.test_size}

    if use_accel:
        accel_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    transform = Compose(
        [
            ToTensor(),
            Normalize((0.1307,), (0.3081,)),
            Lambda(lambda x: torch.flatten(x)),
        ]
    )
    train_loader = DataLoader(
        MNIST("./data/", train=True, download=True, transform=transform), **train_kwargs
    )
    test_loader = DataLoader(
        MNIST("./data/", train=False, download=True, transform=transform), **test_kwargs
    )
    net = Net([64, 100, 100])
    x, y = next(iter(train_loader))
    x, y = x.to(device), y.to(device)
    x_pos = overlay_y_on_x(x, y)
    y_neg = get_y_neg(y)
    x_neg = overlay_y_on_x(x, y_neg)

    train_error_before = 1.0 - net.predict(x).eq(y).float().mean().item()
    net.train(x_pos, x_neg)
    train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
    print("train error:", train_error)

    x_te, y_te = next(iter(test_loader))
    x_te, y_te = x_te.to(device), y_te.to(device)

    if args.save_model:
        save_path = os.path.join(tempfile.mkdtemp(), "mnist_ff.pt")
        torch.save(net.state_dict(), save_path)
    test_error = 1.0 - net.predict(x_te).eq(y_te).float().mean().item()
    print("test error:", test_error)

    # (the layers live in a plain list, so the saved state_dict is empty, as in torch)
    saved_keys = list(torch.load(save_path).keys())
    layer_losses = [layer.losses for layer in net.layers]
    overlay_row = overlay_y_on_x(x[:2], y[:2])[:, :12].tolist()
    neg_differs = bool((y_neg != y).all())

    # deterministic parts to compare with torch: the overlay, the norms, one layer's loss,
    # its gradients and one Adam step, from fixed weights
    xs = torch.sin(torch.arange(5 * 64, dtype=torch.float32)).view(5, 64)
    fixed_overlay = overlay_y_on_x(xs, torch.tensor([0, 3, 9, 3, 1])).tolist()
    fixed_norms = xs.norm(2, 1, keepdim=True).tolist()
    trained_epochs, args.epochs = args.epochs, 1
    fixed = Layer(64, 7)
    with torch.no_grad():
        fixed.weight.copy_(torch.cos(torch.arange(7 * 64, dtype=torch.float32)).view(7, 64))
        fixed.bias.fill_(0.1)
    fixed_pos, fixed_neg = fixed.train(xs, overlay_y_on_x(xs, 4))
    fixed_results = (fixed.losses, fixed.weight.tolist(), fixed_pos.tolist(), fixed_neg.tolist())
