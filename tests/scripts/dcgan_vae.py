# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, N816, UP008, UP031, UP032 (tutorial code as is)
"""DCGAN (ConvTranspose2d, BatchNorm2d, weights_init via apply, BCELoss, Adam betas) and a VAE
(reparameterization trick, binary_cross_entropy with reduction='sum') on tiny random images."""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
import jitgrad.utils.data
from jitgrad.utils.data import TensorDataset

torch.manual_seed(999)
torch.use_deterministic_algorithms(True)  # Needed for reproducible results
workers = 2
batch_size = 16
image_size = 16
nc = 1
nz = 8
ngf = 8
ndf = 8
num_epochs = 2
lr = 0.0002
beta1 = 0.5
ngpu = 1
device = torch.device("cuda:0" if (torch.cuda.is_available() and ngpu > 0) else "cpu")

# blurry blobs in [-1, 1], like normalized images
centers = torch.rand(64, 2) * 8 + 4
yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
images = torch.exp(-((yy - centers[:, 0, None, None]) ** 2 + (xx - centers[:, 1, None, None]) ** 2)
                   / 8.0)
images = (images * 2 - 1).unsqueeze(1)
dataset = TensorDataset(images, torch.zeros(64))
dataloader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True,
                                         num_workers=workers)


# custom weights initialization called on ``netG`` and ``netD``
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. ``(ngf*4) x 4 x 4``
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. ``(ngf*2) x 8 x 8``
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. ``(nc) x 16 x 16``
        )

    def forward(self, input):
        return self.main(input)


netG = Generator(ngpu).to(device)
if (device.type == 'cuda') and (ngpu > 1):
    netG = nn.DataParallel(netG, list(range(ngpu)))
netG.apply(weights_init)
print(netG)


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is ``(nc) x 16 x 16``
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. ``(ndf) x 8 x 8``
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. ``(ndf*2) x 4 x 4``
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        return self.main(input)


netD = Discriminator(ngpu).to(device)
netD.apply(weights_init)
criterion = nn.BCELoss()
fixed_noise = torch.randn(16, nz, 1, 1, device=device)
real_label = 1.
fake_label = 0.
optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))

img_list = []
G_losses = []
D_losses = []
iters = 0
for epoch in range(num_epochs):
    for i, data in enumerate(dataloader, 0):
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        netD.zero_grad()
        real_cpu = data[0].to(device)
        b_size = real_cpu.size(0)
        label = torch.full((b_size,), real_label, dtype=torch.float, device=device)
        output = netD(real_cpu).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        noise = torch.randn(b_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        print('[%d/%d][%d/%d]\tLoss_D: %.4f\tLoss_G: %.4f\tD(x): %.4f\tD(G(z)): %.4f / %.4f'
              % (epoch, num_epochs, i, len(dataloader),
                 errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
        G_losses.append(errG.item())
        D_losses.append(errD.item())
        iters += 1
    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    img_list.append(fake)
fake_shape = tuple(img_list[-1].shape)
fake_range = (img_list[-1].min().item(), img_list[-1].max().item())


# --- VAE (the pytorch/examples one, shrunk) ---
class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(256, 64)
        self.fc21 = nn.Linear(64, 4)
        self.fc22 = nn.Linear(64, 4)
        self.fc3 = nn.Linear(4, 64)
        self.fc4 = nn.Linear(64, 256)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 256))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-2)


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 256), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


vae_loader = torch.utils.data.DataLoader(TensorDataset((images + 1) / 2), batch_size=16,
                                         shuffle=True)
vae_losses = []
for epoch in range(1, 6):
    model.train()
    train_loss = 0
    for batch_idx, (data,) in enumerate(vae_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    vae_losses.append(train_loss / len(vae_loader.dataset))
    print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, vae_losses[-1]))
with torch.no_grad():
    sample = torch.randn(8, 4).to(device)
    sample = model.decode(sample).cpu()
sample_view = tuple(sample.view(8, 1, 16, 16).shape)

# deterministic: a fixed-weight generator (ConvTranspose2d + BatchNorm2d in eval mode)
fixedG = Generator(ngpu)
with torch.no_grad():
    for k, p in enumerate(fixedG.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.3 + k).view_as(p) * 0.2)
    for k, b in enumerate(fixedG.buffers()):
        if b.dtype == torch.float32:
            b.copy_(torch.cos(torch.arange(b.numel(), dtype=torch.float32) + k).view_as(b).abs()
                    + 0.5)
fixedG.eval()
fixed_fake = fixedG(torch.linspace(-1, 1, 2 * nz).view(2, nz, 1, 1)).tolist()
deterministic = torch.are_deterministic_algorithms_enabled()
