# ruff: noqa: E128, E225, E231, E501, N801, UP004, UP008, UP030, UP032 (example code as is)
"""pytorch/examples mnist/main.py: the two-conv MNIST network trained with Adadelta and a
StepLR schedule by the example's own train/test functions and argparse options.

Changes: MNIST (a download) is replaced by scikit-learn's bundled 8 x 8 digits, upsampled to
28 x 28 (bilinear) and normalized with MNIST's mean and std; 320 training and 160 test images;
the options come from ``ARGS`` (2 epochs, test batch 160, log every 2 batches) instead of the
command line (pytest's ``sys.argv`` is not the example's); ``main`` returns what it printed
(losses, test results, learning rates) for the test."""
import argparse

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.optim.lr_scheduler import StepLR

ARGS = ['--epochs', '2', '--test-batch-size', '160', '--log-interval', '2']
record = {"train": [], "test": [], "lr": []}


class datasets:  # (stands in for torchvision.datasets.MNIST)
    class MNIST(torch.utils.data.Dataset):
        def __init__(self, root, train=True, download=False, transform=None):
            digits = load_digits()
            images = digits.images.astype(np.float32) / 16.0
            part = slice(0, 320) if train else slice(320, 480)
            self.images = images[part]
            self.targets = digits.target[part]
            self.transform = transform

        def __len__(self):
            return len(self.targets)

        def __getitem__(self, i):
            return self.transform(self.images[i]), int(self.targets[i])


class transforms:  # (the two torchvision transforms the example uses)
    class Compose:
        def __init__(self, ts):
            self.ts = ts

        def __call__(self, x):
            for t in self.ts:
                x = t(x)
            return x

    class ToTensor:  # (an 8 x 8 digit in [0, 1], upsampled to MNIST's 28 x 28)
        def __call__(self, image):
            t = torch.from_numpy(image)[None, None]
            return F.interpolate(t, size=(28, 28), mode="bilinear", align_corners=False)[0]

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean[0], std[0]

        def __call__(self, t):
            return (t - self.mean) / self.std


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            record["train"].append(loss.item())
            if args.dry_run:
                break


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    record["test"].append((test_loss, correct))


def main():
    # Training settings
    parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
    parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                        help='input batch size for training (default: 64)')
    parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                        help='input batch size for testing (default: 1000)')
    parser.add_argument('--epochs', type=int, default=14, metavar='N',
                        help='number of epochs to train (default: 14)')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR',
                        help='learning rate (default: 1.0)')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M',
                        help='Learning rate step gamma (default: 0.7)')
    parser.add_argument('--no-accel', action='store_true',
                        help='disables accelerator')
    parser.add_argument('--dry-run', action='store_true',
                        help='quickly check a single pass')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                        help='how many batches to wait before logging training status')
    parser.add_argument('--save-model', action='store_true',
                        help='For Saving the current Model')
    args = parser.parse_args(ARGS)

    use_accel = not args.no_accel and torch.accelerator.is_available()

    torch.manual_seed(args.seed)

    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_accel:
        accel_kwargs = {'num_workers': 1,
                        'persistent_workers': True,
                       'pin_memory': True,
                       'shuffle': True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    transform=transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,))
        ])
    dataset1 = datasets.MNIST('../data', train=True, download=True,
                       transform=transform)
    dataset2 = datasets.MNIST('../data', train=False,
                       transform=transform)
    train_loader = torch.utils.data.DataLoader(dataset1,**train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()
        record["lr"].append(scheduler.get_last_lr()[0])

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")
    return record


if __name__ == '__main__':
    main()
