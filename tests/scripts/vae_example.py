"""A variational autoencoder for small digit images, written for these tests in the way
pytorch/examples commonly writes torch code (modelled on the API usage of its vae example, not a
copy of it):

- an argparse command line (given in the script), torch.accelerator / torch.device selection,
  torch.utils.data.DataLoader over a TensorDataset;
- encoder/decoder of nn.Linear with F.relu and torch.sigmoid, the reparameterisation with
  torch.exp and torch.randn_like, F.binary_cross_entropy(reduction='sum') plus the Gaussian KL
  term (pow, exp, torch.sum), optim.Adam;
- reconstructions (torch.cat of inputs and outputs) and decoded torch.randn samples saved as image
  grids each epoch;
- the loss and gradients from sin-valued weights and a fixed noise, for the torch comparison.

scikit-learn's 8x8 digits blown up to 28x28 stand in for MNIST; a NumPy save of the grid stands
in for torchvision's save_image.
"""
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

out_dir = tempfile.mkdtemp()
PIXELS = 28 * 28


def write_grid(batch, name, per_row=8):
    """Tile (N, 1, 28, 28) images into one array and save it as ``name + '.npy'``."""
    tiles = batch.clamp(0, 1).numpy()[:, 0]
    rows = [np.hstack(tiles[r:r + per_row]) for r in range(0, len(tiles), per_row)]
    np.save(os.path.join(out_dir, name), np.vstack(rows))


def digit_set(first, last):
    bunch = load_digits()
    imgs = bunch.images[first:last].repeat(3, axis=1).repeat(3, axis=2) / 16.0
    imgs = np.pad(imgs, ((0, 0), (2, 2), (2, 2))).astype(np.float32)[:, None]
    return TensorDataset(torch.from_numpy(imgs), torch.from_numpy(bunch.target[first:last]))


cli = argparse.ArgumentParser(description="digits VAE")
cli.add_argument("--batch-size", type=int, default=128)
cli.add_argument("--epochs", type=int, default=10)
cli.add_argument("--latent", type=int, default=16)
cli.add_argument("--no-accel", action="store_true")
cli.add_argument("--seed", type=int, default=1)
args = cli.parse_args(["--epochs", "3", "--seed", "5"])

accel = torch.accelerator.is_available() and not args.no_accel
device = torch.accelerator.current_accelerator() if accel else torch.device("cpu")
torch.manual_seed(args.seed)
loader_opts = {"num_workers": 1, "pin_memory": True} if accel else {}
train_loader = torch.utils.data.DataLoader(digit_set(0, 1280), batch_size=args.batch_size,
                                           shuffle=True, **loader_opts)
test_loader = torch.utils.data.DataLoader(digit_set(1280, 1792), batch_size=args.batch_size,
                                          shuffle=False, **loader_opts)


class DigitVAE(nn.Module):
    def __init__(self, latent, hidden=300):
        super().__init__()
        self.enc = nn.Linear(PIXELS, hidden)
        self.to_mean = nn.Linear(hidden, latent)
        self.to_logvar = nn.Linear(hidden, latent)
        self.dec = nn.Linear(latent, hidden)
        self.to_pixels = nn.Linear(hidden, PIXELS)

    def encode(self, flat):
        h = F.relu(self.enc(flat))
        return self.to_mean(h), self.to_logvar(h)

    def sample_latent(self, mean, logvar):
        sigma = torch.exp(logvar / 2)
        return mean + sigma * torch.randn_like(sigma)

    def decode(self, z):
        return torch.sigmoid(self.to_pixels(F.relu(self.dec(z))))

    def forward(self, images):
        mean, logvar = self.encode(images.view(-1, PIXELS))
        return self.decode(self.sample_latent(mean, logvar)), mean, logvar


def elbo_loss(recon, images, mean, logvar):
    """Summed Bernoulli reconstruction error plus KL(q(z|x) || N(0, I))."""
    rec = F.binary_cross_entropy(recon, images.view(-1, PIXELS), reduction="sum")
    kl = -0.5 * torch.sum(1 + logvar - mean.pow(2) - logvar.exp())
    return rec + kl


vae = DigitVAE(args.latent).to(device)
adam = optim.Adam(vae.parameters(), lr=1e-3)
train_losses, test_losses = [], []


def fit_epoch():
    vae.train()
    total = 0.0
    for images, _ in train_loader:
        images = images.to(device)
        adam.zero_grad()
        recon, mean, logvar = vae(images)
        loss = elbo_loss(recon, images, mean, logvar)
        loss.backward()
        adam.step()
        total += loss.item()
    train_losses.append(total / len(train_loader.dataset))


def check_epoch(epoch):
    vae.eval()
    total = 0.0
    with torch.no_grad():
        for k, (images, _) in enumerate(test_loader):
            images = images.to(device)
            recon, mean, logvar = vae(images)
            total += elbo_loss(recon, images, mean, logvar).item()
            if k == 0:
                n = min(images.size(0), 8)
                pairs = torch.cat([images[:n], recon.view(-1, 1, 28, 28)[:n]])
                write_grid(pairs.cpu(), f"reconstruction_{epoch}.png", per_row=n)
    test_losses.append(total / len(test_loader.dataset))
    print(f"epoch {epoch}: train {train_losses[-1]:.2f}, test {test_losses[-1]:.2f}")


if __name__ == "__main__":
    for epoch in range(1, args.epochs + 1):
        fit_epoch()
        check_epoch(epoch)
        with torch.no_grad():
            dreams = vae.decode(torch.randn(64, args.latent).to(device)).cpu()
        write_grid(dreams.view(64, 1, 28, 28), f"sample_{epoch}.png")
    saved = sorted(os.listdir(out_dir))
    sample_grid = np.load(os.path.join(out_dir, "sample_3.png.npy"))

    # fixed weights and a fixed noise in place of randn_like, for the torch comparison
    ref = DigitVAE(args.latent)
    with torch.no_grad():
        for k, p in enumerate(ref.parameters(), start=1):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 10)
    x = train_loader.dataset[:4][0]
    mean, logvar = ref.encode(x.view(-1, PIXELS))
    noise = torch.cos(torch.arange(4 * args.latent, dtype=torch.float32)).view(4, -1)
    ref_loss = elbo_loss(ref.decode(mean + noise * torch.exp(logvar / 2)), x, mean, logvar)
    ref_loss.backward()
    fixed_result = {"loss": ref_loss.item(),
                    **{n: p.grad.tolist() for n, p in ref.named_parameters()}}
