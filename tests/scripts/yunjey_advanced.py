"""Two generative models on the digits, written for these tests in the way yunjey's
pytorch-tutorial (03-advanced) is commonly written (modelled on the API usage of that tutorial,
not a copy of it):

- a fully connected GAN: LeakyReLU(0.2)/Sigmoid critic, ReLU/Tanh generator, ``nn.BCELoss``
  against ``ones``/``zeros`` targets, two Adam optimizers taking turns, images normalised to
  [-1, 1] with Compose/Normalize and written back with ``save_image`` after ``clamp``;
- a VAE: ``F.relu``/``F.sigmoid``, sampling with ``randn_like``, ``F.binary_cross_entropy``
  with the legacy ``size_average=False`` plus the closed-form KL term, decoded samples and
  side-by-side reconstructions (``torch.cat(dim=3)``) saved every epoch;
- for the torch comparison: both models with set weights and fixed noise, their losses and
  gradients.
"""
import os
import random
import tempfile

from vision_standin import standin

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)
random.seed(0)
vision = standin(1000, 0)
save_image = vision.utils.save_image
root = tempfile.mkdtemp(prefix="generative_")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
PIXELS, NOISE = 64, 16
results = {}


def image_folder(name):
    path = os.path.join(root, name)
    os.makedirs(path, exist_ok=True)
    return path


def to_unit_range(x):
    return ((x + 1) / 2).clamp(0, 1)


# --- GAN ----------------------------------------------------------------------------------------
class Critic(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(PIXELS, width), nn.LeakyReLU(0.2),
            nn.Linear(width, width), nn.LeakyReLU(0.2),
            nn.Linear(width, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class Painter(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(NOISE, width), nn.ReLU(),
            nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, PIXELS), nn.Tanh())

    def forward(self, z):
        return self.net(z)


signed = vision.transforms.Compose([vision.transforms.ToTensor(),
                                    vision.transforms.Normalize(mean=[0.5], std=[0.5])])
digits = vision.datasets.MNIST(root="data", train=True, transform=signed, download=True)
gan_loader = torch.utils.data.DataLoader(dataset=digits, batch_size=100, shuffle=True)
critic, painter = Critic().to(device), Painter().to(device)
bce = nn.BCELoss()
opt_c = torch.optim.Adam(critic.parameters(), lr=0.0002)
opt_p = torch.optim.Adam(painter.parameters(), lr=0.0002)
gan_dir = image_folder("gan")
log = {"d_losses": [], "g_losses": [], "real_scores": [], "fake_scores": []}

for epoch in range(10):
    for real, _ in gan_loader:
        n = real.size(0)
        real = real.reshape(n, -1).to(device)
        is_real, is_fake = torch.ones(n, 1).to(device), torch.zeros(n, 1).to(device)

        # critic step: real images towards 1, generated ones towards 0
        on_real = critic(real)
        fake = painter(torch.randn(n, NOISE).to(device))
        on_fake = critic(fake)
        d_loss = bce(on_real, is_real) + bce(on_fake, is_fake)
        opt_c.zero_grad()
        opt_p.zero_grad()
        d_loss.backward()
        opt_c.step()

        # generator step: the non-saturating loss, fresh noise
        fake = painter(torch.randn(n, NOISE).to(device))
        g_loss = bce(critic(fake), is_real)
        opt_c.zero_grad()
        opt_p.zero_grad()
        g_loss.backward()
        opt_p.step()

        log["d_losses"].append(d_loss.item())
        log["g_losses"].append(g_loss.item())
        log["real_scores"].append(on_real.mean().item())
        log["fake_scores"].append(on_fake.mean().item())
    print(f"gan epoch {epoch + 1}: d {d_loss.item():.3f} g {g_loss.item():.3f}")
    if epoch == 0:
        save_image(to_unit_range(real.reshape(-1, 1, 8, 8)),
                   os.path.join(gan_dir, "real_images.png"))
    fake = fake.reshape(fake.size(0), 1, 8, 8)
    save_image(to_unit_range(fake), os.path.join(gan_dir, f"fake_images-{epoch + 1}.png"))

torch.save(painter.state_dict(), os.path.join(root, "painter.pt"))
torch.save(critic.state_dict(), os.path.join(root, "critic.pt"))
results["gan"] = dict(log, fake_range=(fake.min().item(), fake.max().item()),
                      samples=sorted(os.listdir(gan_dir)))


# --- VAE ----------------------------------------------------------------------------------------
class VariationalAE(nn.Module):
    def __init__(self, n_in=PIXELS, n_hidden=100, n_latent=8):
        super().__init__()
        self.enc = nn.Linear(n_in, n_hidden)
        self.to_mu = nn.Linear(n_hidden, n_latent)
        self.to_logvar = nn.Linear(n_hidden, n_latent)
        self.dec_hidden = nn.Linear(n_latent, n_hidden)
        self.dec_out = nn.Linear(n_hidden, n_in)

    def encode(self, x):
        h = F.relu(self.enc(x))
        return self.to_mu(h), self.to_logvar(h)

    def sample(self, mu, logvar):
        sigma = torch.exp(0.5 * logvar)
        return mu + sigma * torch.randn_like(sigma)

    def decode(self, z):
        return F.sigmoid(self.dec_out(F.relu(self.dec_hidden(z))))

    def forward(self, x):
        mu, logvar = self.encode(x)
        return self.decode(self.sample(mu, logvar)), mu, logvar


def kl_term(mu, logvar):
    return -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())


plain = vision.datasets.MNIST(root="data", train=True, transform=vision.transforms.ToTensor(),
                              download=True)
vae_loader = torch.utils.data.DataLoader(dataset=plain, batch_size=128, shuffle=True)
vae = VariationalAE().to(device)
opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
vae_dir = image_folder("vae")
recon_log, kl_log = [], []
for epoch in range(8):
    for x, _ in vae_loader:
        x = x.to(device).view(-1, PIXELS)
        recon, mu, logvar = vae(x)
        rec = F.binary_cross_entropy(recon, x, size_average=False)
        kl = kl_term(mu, logvar)
        opt.zero_grad()
        (rec + kl).backward()
        opt.step()
        recon_log.append(rec.item() / x.size(0))
        kl_log.append(kl.item() / x.size(0))
    print(f"vae epoch {epoch + 1}: reconstruction {recon_log[-1]:.3f} kl {kl_log[-1]:.3f}")
    with torch.no_grad():
        dreamt = vae.decode(torch.randn(64, 8).to(device)).view(-1, 1, 8, 8)
        save_image(dreamt, os.path.join(vae_dir, f"sampled-{epoch + 1}.png"))
        again, _, _ = vae(x)
        pairs = torch.cat([x.view(-1, 1, 8, 8), again.view(-1, 1, 8, 8)], dim=3)
        save_image(pairs, os.path.join(vae_dir, f"reconst-{epoch + 1}.png"))
results["vae"] = {"reconst": recon_log, "kl": kl_log, "x_concat_shape": tuple(pairs.shape),
                  "samples": sorted(os.listdir(vae_dir))}


# --- set weights and fixed noise, for the comparison with torch ---------------------------------
def set_weights(module):
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 0.5)).view_as(p)
                    / 4)
    return module


def grads_of(prefix, module):
    return {f"{prefix}.{name}": p.grad.tolist() for name, p in module.named_parameters()}


batch = torch.stack([digits[i][0] for i in range(24)]).reshape(24, -1)
noise = torch.cos(torch.arange(24 * NOISE, dtype=torch.float32) * 0.9).view(24, NOISE)
set_weights(critic)
set_weights(painter)
critic.zero_grad()
painter.zero_grad()
d_fixed = bce(critic(batch), torch.ones(24, 1)) + bce(critic(painter(noise)), torch.zeros(24, 1))
d_fixed.backward()
fixed_results = {"d_loss": d_fixed.item(), **grads_of("critic", critic)}
critic.zero_grad()
painter.zero_grad()
g_fixed = bce(critic(painter(noise)), torch.ones(24, 1))
g_fixed.backward()
fixed_results.update({"g_loss": g_fixed.item(), **grads_of("painter", painter)})

fixed_vae = set_weights(VariationalAE())
fixed_vae.sample = lambda mu, logvar: mu + torch.exp(logvar / 2) * torch.cos(
    torch.arange(mu.numel(), dtype=torch.float32)).view_as(mu)
pixels = torch.stack([plain[i][0] for i in range(24)]).view(-1, PIXELS)
recon, mu, logvar = fixed_vae(pixels)
vae_loss = F.binary_cross_entropy(recon, pixels, reduction="sum") + kl_term(mu, logvar)
vae_loss.backward()
fixed_results.update({"vae_loss": vae_loss.item(), **grads_of("vae", fixed_vae)})
