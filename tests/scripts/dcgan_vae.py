"""A small DCGAN and a fully connected VAE on 16x16 spot images, written for these tests in the
way the PyTorch DCGAN tutorial and the PyTorch examples' VAE are commonly written (modelled on
the API usage of those, not a copy of them):

- ``torch.use_deterministic_algorithms(True)``, a device picked with ``torch.cuda.is_available``,
  a ``DataLoader`` with ``num_workers=2``
- generator/discriminator ``nn.Sequential``s of ``ConvTranspose2d``/``Conv2d`` (``bias=False``),
  ``BatchNorm2d``, ``ReLU(True)``, ``LeakyReLU(0.2, inplace=True)``, ``Tanh``, ``Sigmoid``,
  initialised with ``module.apply`` and ``nn.init.normal_``/``constant_``
- ``nn.BCELoss`` with ``torch.full`` labels and ``fill_``, Adam with ``betas``
- a VAE: reparameterisation with ``randn_like``, ``F.binary_cross_entropy(reduction='sum')``
  plus the KL term; decoding random codes
- a generator with weights and BatchNorm buffers set by formula, in eval mode (vs torch)
"""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
import jitgrad.utils.data
from jitgrad.utils.data import TensorDataset

torch.manual_seed(999)
torch.use_deterministic_algorithms(True)  # reproducible runs
Z, G_WIDTH, D_WIDTH, CHANNELS, SIDE = 8, 8, 8, 1, 16
use_gpu = torch.cuda.is_available()
device = torch.device("cuda:0" if use_gpu else "cpu")


def spots(count):
    """A Gaussian spot at a random place of each 16x16 image, scaled to [-1, 1]."""
    where = 4 + 8 * torch.rand(count, 2)
    rows, cols = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    dist2 = (rows - where[:, 0, None, None]) ** 2 + (cols - where[:, 1, None, None]) ** 2
    return (2 * torch.exp(-dist2 / 8.0) - 1).unsqueeze(1)


pictures = spots(64)
gan_loader = torch.utils.data.DataLoader(TensorDataset(pictures, torch.zeros(64)), batch_size=16,
                                         shuffle=True, num_workers=2)


def dcgan_init(module):
    """N(0, 0.02) conv weights; BatchNorm scales N(1, 0.02), shifts 0."""
    kind = type(module).__name__
    if "Conv" in kind:
        nn.init.normal_(module.weight.data, 0.0, 0.02)
    elif "BatchNorm" in kind:
        nn.init.normal_(module.weight.data, 1.0, 0.02)
        nn.init.constant_(module.bias.data, 0)


def up(cin, cout, kernel, stride, pad):
    return nn.ConvTranspose2d(cin, cout, kernel, stride, pad, bias=False)


class SpotGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(  # Z x 1 x 1 -> 32 x 4 x 4 -> 16 x 8 x 8 -> 1 x 16 x 16
            up(Z, 4 * G_WIDTH, 4, 1, 0), nn.BatchNorm2d(4 * G_WIDTH), nn.ReLU(True),
            up(4 * G_WIDTH, 2 * G_WIDTH, 4, 2, 1), nn.BatchNorm2d(2 * G_WIDTH), nn.ReLU(True),
            up(2 * G_WIDTH, CHANNELS, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class SpotCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(  # 1 x 16 x 16 -> 8 x 8 x 8 -> 16 x 4 x 4 -> 1 x 1 x 1
            nn.Conv2d(CHANNELS, D_WIDTH, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(D_WIDTH, 2 * D_WIDTH, 4, 2, 1, bias=False), nn.BatchNorm2d(2 * D_WIDTH),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(2 * D_WIDTH, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, img):
        return self.net(img).view(-1)  # one probability per image


gen = SpotGenerator().to(device)
gen.apply(dcgan_init)
critic = SpotCritic().to(device)
critic.apply(dcgan_init)
print(device.type, gen, critic)
bce = nn.BCELoss()
adam_betas = (0.5, 0.999)
opt_critic = optim.Adam(critic.parameters(), lr=0.0002, betas=adam_betas)
opt_gen = optim.Adam(gen.parameters(), lr=0.0002, betas=adam_betas)
watch_noise = torch.randn(16, Z, 1, 1, device=device)

snapshots, G_losses, D_losses = [], [], []
for epoch in range(2):
    for step, (real, _) in enumerate(gan_loader):
        real = real.to(device)
        n = real.size(0)
        # critic: real images towards 1, generated ones towards 0
        critic.zero_grad()
        target = torch.full((n,), 1.0, dtype=torch.float, device=device)
        p_real = critic(real)
        loss_real = bce(p_real, target)
        loss_real.backward()
        fake = gen(torch.randn(n, Z, 1, 1, device=device))
        target.fill_(0.0)
        loss_fake = bce(critic(fake.detach()), target)  # (no gradient into the generator)
        loss_fake.backward()
        loss_d = loss_real + loss_fake
        opt_critic.step()
        # generator: make the critic say 1 on the fakes
        gen.zero_grad()
        target.fill_(1.0)
        p_fooled = critic(fake)
        loss_g = bce(p_fooled, target)
        loss_g.backward()
        opt_gen.step()
        G_losses.append(loss_g.item())
        D_losses.append(loss_d.item())
        print(f"{epoch}/{step} D {loss_d.item():.4f} G {loss_g.item():.4f} "
              f"D(x) {p_real.mean().item():.3f} D(G(z)) {p_fooled.mean().item():.3f}")
    with torch.no_grad():
        snapshots.append(gen(watch_noise).detach().cpu())
fake_shape = tuple(snapshots[-1].shape)
fake_range = (snapshots[-1].min().item(), snapshots[-1].max().item())


class TinyVAE(nn.Module):
    def __init__(self, n_pixels=256, hidden=64, latent=4):
        super().__init__()
        self.n_pixels = n_pixels
        self.enc = nn.Linear(n_pixels, hidden)
        self.mu_head = nn.Linear(hidden, latent)
        self.logvar_head = nn.Linear(hidden, latent)
        self.dec_hidden = nn.Linear(latent, hidden)
        self.dec_out = nn.Linear(hidden, n_pixels)

    def decode(self, code):
        return torch.sigmoid(self.dec_out(F.relu(self.dec_hidden(code))))

    def forward(self, img):
        h = F.relu(self.enc(img.view(-1, self.n_pixels)))
        mu, logvar = self.mu_head(h), self.logvar_head(h)
        code = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decode(code), mu, logvar


def elbo_loss(recon, img, mu, logvar):
    """Summed binary cross-entropy plus KL(q(z|x) || N(0, 1))."""
    rec = F.binary_cross_entropy(recon, img.view(-1, 256), reduction='sum')
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return rec + kl


vae = TinyVAE().to(device)
adam = optim.Adam(vae.parameters(), lr=1e-2)
vae_loader = torch.utils.data.DataLoader(TensorDataset((pictures + 1) / 2), batch_size=16,
                                         shuffle=True)
vae_losses = []
for epoch in range(5):
    vae.train()
    epoch_total = 0.0
    for (img,) in vae_loader:
        img = img.to(device)
        adam.zero_grad()
        recon, mu, logvar = vae(img)
        loss = elbo_loss(recon, img, mu, logvar)
        loss.backward()
        adam.step()
        epoch_total += loss.item()
    vae_losses.append(epoch_total / len(vae_loader.dataset))
    print(f"VAE epoch {epoch}: {vae_losses[-1]:.3f} per image")
with torch.no_grad():
    decoded = vae.decode(torch.randn(8, 4).to(device)).cpu()
sample_view = tuple(decoded.view(8, 1, 16, 16).shape)

# A generator with formula weights and running statistics, in eval mode (vs torch)
frozen = SpotGenerator()
with torch.no_grad():
    for k, p in enumerate(frozen.parameters()):
        p.copy_(0.2 * torch.sin(0.3 * torch.arange(p.numel(), dtype=torch.float32) + k).view_as(p))
    for k, buf in enumerate(frozen.buffers()):
        if buf.dtype == torch.float32:  # (not the int64 batch counters)
            wave = torch.cos(torch.arange(buf.numel(), dtype=torch.float32) + k)
            buf.copy_(wave.view_as(buf).abs() + 0.5)
frozen.eval()
fixed_fake = frozen(torch.linspace(-1, 1, 2 * Z).view(2, Z, 1, 1)).tolist()
deterministic = torch.are_deterministic_algorithms_enabled()
