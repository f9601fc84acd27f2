# ruff: noqa: B007, E231, E225, E402, E501, E731, F841, N801, N802, N803, N806, N816, UP004, UP008, UP031, UP032, W291
# (example code as is)
"""pytorch/examples vae/main.py: a variational autoencoder (reparameterization trick, BCE plus
the KL divergence) trained with Adam, its reconstructions and samples saved as images.

MNIST is a download: scikit-learn's bundled digits, scaled to 28x28 in [0, 1], stand in for it;
torchvision's save_image is replaced by a NumPy save of the same grid, and the command line is
given in the script (fewer epochs)."""
import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.utils.data
from jitgrad import nn, optim
from jitgrad.nn import functional as F
from jitgrad.utils.data import TensorDataset


def save_image(tensor, fp, nrow=8):
    """(torchvision.utils.save_image's stand-in: the grid of images, saved with NumPy)"""
    images = tensor.clamp(0, 1).numpy()[:, 0]
    rows = [np.concatenate(list(images[i:i + nrow]), axis=1) for i in range(0, len(images), nrow)]
    np.save(os.path.join(results, os.path.basename(fp)), np.concatenate(rows, axis=0))


def digits_mnist(train):
    """sklearn's 8x8 digits scaled 3x and padded to 28x28, in [0, 1] (transforms.ToTensor())."""
    digits = load_digits()
    split = slice(0, 1280) if train else slice(1280, 1792)
    images = np.kron(digits.images[split] / 16.0, np.ones((3, 3)))
    images = np.pad(images, ((0, 0), (2, 2), (2, 2)))[:, None].astype(np.float32)
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(digits.target[split]))


results = tempfile.mkdtemp()  # ('results/' next to the example)


parser = argparse.ArgumentParser(description='VAE MNIST Example')
parser.add_argument('--batch-size', type=int, default=128, metavar='N',
                    help='input batch size for training (default: 128)')
parser.add_argument('--epochs', type=int, default=10, metavar='N',
                    help='number of epochs to train (default: 10)')
parser.add_argument('--no-accel', action='store_true', 
                    help='disables accelerator')
parser.add_argument('--seed', type=int, default=1, metavar='S',
                    help='random seed (default: 1)')
parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                    help='how many batches to wait before logging training status')
args = parser.parse_args(['--epochs', '3'])  # (python main.py --epochs 3)

use_accel = not args.no_accel and torch.accelerator.is_available()

torch.manual_seed(args.seed)


if use_accel:
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

print(f"Using device: {device}")

kwargs = {'num_workers': 1, 'pin_memory': True} if use_accel else {}
train_loader = torch.utils.data.DataLoader(
    digits_mnist(train=True),
    batch_size=args.batch_size, shuffle=True, **kwargs)
test_loader = torch.utils.data.DataLoader(
    digits_mnist(train=False),
    batch_size=args.batch_size, shuffle=False, **kwargs)


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5*logvar)
        eps = torch.randn_like(std)
        return mu + eps*std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader),
                loss.item() / len(data)))

    print('====> Epoch: {} Average loss: {:.4f}'.format(
          epoch, train_loss / len(train_loader.dataset)))
    train_losses.append(train_loss / len(train_loader.dataset))


def test(epoch):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n],
                                      recon_batch.view(args.batch_size, 1, 28, 28)[:n]])
                save_image(comparison.cpu(),
                         'results/reconstruction_' + str(epoch) + '.png', nrow=n)

    test_loss /= len(test_loader.dataset)
    print('====> Test set loss: {:.4f}'.format(test_loss))
    test_losses.append(test_loss)

train_losses, test_losses = [], []

if __name__ == "__main__":
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test(epoch)
        with torch.no_grad():
            sample = torch.randn(64, 20).to(device)
            sample = model.decode(sample).cpu()
            save_image(sample.view(64, 1, 28, 28),
                       'results/sample_' + str(epoch) + '.png')

    saved = sorted(os.listdir(results))
    sample_grid = np.load(os.path.join(results, 'sample_3.png.npy'))

    # a deterministic part to compare with torch: the loss and its gradients with fixed weights
    # and a fixed eps (reparameterize draws it with randn_like)
    fixed = VAE()
    with torch.no_grad():
        for k, p in enumerate(fixed.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 10)
    x = train_loader.dataset[:4][0]
    mu, logvar = fixed.encode(x.view(-1, 784))
    z = mu + torch.cos(torch.arange(80, dtype=torch.float32)).view(4, 20) * torch.exp(0.5 * logvar)
    fixed_loss = loss_function(fixed.decode(z), x, mu, logvar)
    fixed_loss.backward()
    fixed_result = {"loss": fixed_loss.item(), **{n: p.grad.tolist() for n, p in fixed.named_parameters()}}
