# ruff: noqa: B007, C408, E201, E202, E203, E211, E231, E261, E262, E265, E266, E302, E303, E305, E402, E501, E701, E702, E703, E711, E712, E713, E731, E741, F401, F811, F841, N801, N802, N803, N806, N812, N817, S102, SIM115, UP004, UP008, UP015, UP031, UP032
# (the tutorials' code as is)
"""yunjey/pytorch-tutorial, tutorials/03-advanced: generative_adversarial_network (an MLP
generator and discriminator with LeakyReLU, Sigmoid and Tanh, BCELoss against ones / zeros
labels, two Adam optimizers stepping in turn, real and generated images saved with
save_image) and variational_autoencoder (the reparameterization trick with randn_like,
binary_cross_entropy with the legacy size_average=False plus the KL term, sampled and
reconstructed images saved each epoch).

Changes: the two main.py files are one script, one section each; MNIST is a download, so
scikit-learn's 8 x 8 digits stand in (image_size 64 instead of 784; the torchvision stand-ins,
save_image included, are below); smaller hidden sizes and fewer epochs; images and checkpoints
go to a temporary directory; each section records its losses.
"""
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn

N_TRAIN, N_TEST = 1000, 0
# -----------------------------------------------------------------------------
# (added) torchvision stand-ins (scikit-learn's digits for MNIST and CIFAR-10: see the module)
import random

import numpy as np
from vision_standin import standin

torchvision = standin(N_TRAIN, N_TEST)
transforms = torchvision.transforms
save_image = torchvision.utils.save_image

WORK = tempfile.mkdtemp(prefix="yunjey_advanced_")
results = {}
torch.manual_seed(0)
random.seed(0)

# =============================================================================
# 03-advanced/generative_adversarial_network/main.py

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
latent_size = 16
hidden_size = 64
image_size = 64
num_epochs = 10
batch_size = 100
sample_dir = os.path.join(WORK, 'samples')

# Create a directory if not exists
if not os.path.exists(sample_dir):
    os.makedirs(sample_dir)

# Image processing
# transform = transforms.Compose([
#                 transforms.ToTensor(),
#                 transforms.Normalize(mean=(0.5, 0.5, 0.5),   # 3 for RGB channels
#                                      std=(0.5, 0.5, 0.5))])
transform = transforms.Compose([
                transforms.ToTensor(),
                transforms.Normalize(mean=[0.5],   # 1 for greyscale channels
                                     std=[0.5])])

# MNIST dataset
mnist = torchvision.datasets.MNIST(root='../../data/',
                                   train=True,
                                   transform=transform,
                                   download=True)

# Data loader
data_loader = torch.utils.data.DataLoader(dataset=mnist,
                                          batch_size=batch_size,
                                          shuffle=True)

# Discriminator
D = nn.Sequential(
    nn.Linear(image_size, hidden_size),
    nn.LeakyReLU(0.2),
    nn.Linear(hidden_size, hidden_size),
    nn.LeakyReLU(0.2),
    nn.Linear(hidden_size, 1),
    nn.Sigmoid())

# Generator
G = nn.Sequential(
    nn.Linear(latent_size, hidden_size),
    nn.ReLU(),
    nn.Linear(hidden_size, hidden_size),
    nn.ReLU(),
    nn.Linear(hidden_size, image_size),
    nn.Tanh())

# Device setting
D = D.to(device)
G = G.to(device)

# Binary cross entropy loss and optimizer
criterion = nn.BCELoss()
d_optimizer = torch.optim.Adam(D.parameters(), lr=0.0002)
g_optimizer = torch.optim.Adam(G.parameters(), lr=0.0002)

def denorm(x):
    out = (x + 1) / 2
    return out.clamp(0, 1)

def reset_grad():
    d_optimizer.zero_grad()
    g_optimizer.zero_grad()

# Start training
total_step = len(data_loader)
d_losses, g_losses, real_scores, fake_scores = [], [], [], []
for epoch in range(num_epochs):
    for i, (images, _) in enumerate(data_loader):
        images = images.reshape(batch_size, -1).to(device)

        # Create the labels which are later used as input for the BCE loss
        real_labels = torch.ones(batch_size, 1).to(device)
        fake_labels = torch.zeros(batch_size, 1).to(device)

        # ================================================================== #
        #                      Train the discriminator                       #
        # ================================================================== #

        # Compute BCE_Loss using real images where BCE_Loss(x, y): - y * log(D(x)) - (1-y) * log(1 - D(x))
        # Second term of the loss is always zero since real_labels == 1
        outputs = D(images)
        d_loss_real = criterion(outputs, real_labels)
        real_score = outputs

        # Compute BCELoss using fake images
        # First term of the loss is always zero since fake_labels == 0
        z = torch.randn(batch_size, latent_size).to(device)
        fake_images = G(z)
        outputs = D(fake_images)
        d_loss_fake = criterion(outputs, fake_labels)
        fake_score = outputs

        # Backprop and optimize
        d_loss = d_loss_real + d_loss_fake
        reset_grad()
        d_loss.backward()
        d_optimizer.step()

        # ================================================================== #
        #                        Train the generator                         #
        # ================================================================== #

        # Compute loss with fake images
        z = torch.randn(batch_size, latent_size).to(device)
        fake_images = G(z)
        outputs = D(fake_images)

        # We train G to maximize log(D(G(z)) instead of minimizing log(1-D(G(z)))
        # For the reason, see the last paragraph of section 3. https://arxiv.org/pdf/1406.2661.pdf
        g_loss = criterion(outputs, real_labels)

        # Backprop and optimize
        reset_grad()
        g_loss.backward()
        g_optimizer.step()
        d_losses.append(d_loss.item()); g_losses.append(g_loss.item())
        real_scores.append(real_score.mean().item()); fake_scores.append(fake_score.mean().item())

        if (i+1) % 200 == 0:
            print('Epoch [{}/{}], Step [{}/{}], d_loss: {:.4f}, g_loss: {:.4f}, D(x): {:.2f}, D(G(z)): {:.2f}'
                  .format(epoch, num_epochs, i+1, total_step, d_loss.item(), g_loss.item(),
                          real_score.mean().item(), fake_score.mean().item()))

    # Save real images
    if (epoch+1) == 1:
        images = images.reshape(images.size(0), 1, 8, 8)
        save_image(denorm(images), os.path.join(sample_dir, 'real_images.png'))

    # Save sampled images
    fake_images = fake_images.reshape(fake_images.size(0), 1, 8, 8)
    save_image(denorm(fake_images), os.path.join(sample_dir, 'fake_images-{}.png'.format(epoch+1)))

# Save the model checkpoints
torch.save(G.state_dict(), os.path.join(WORK, 'G.ckpt'))
torch.save(D.state_dict(), os.path.join(WORK, 'D.ckpt'))
results["gan"] = {"d_losses": d_losses, "g_losses": g_losses, "real_scores": real_scores,
                  "fake_scores": fake_scores, "fake_range": (fake_images.min().item(), fake_images.max().item()),
                  "samples": sorted(os.listdir(sample_dir))}


# =============================================================================
# 03-advanced/variational_autoencoder/main.py
import jitgrad.nn.functional as F

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Create a directory if not exists
sample_dir = os.path.join(WORK, 'vae_samples')
if not os.path.exists(sample_dir):
    os.makedirs(sample_dir)

# Hyper-parameters
image_size = 64
h_dim = 100
z_dim = 8
num_epochs = 8
batch_size = 128
learning_rate = 1e-3

# MNIST dataset
dataset = torchvision.datasets.MNIST(root='../../data',
                                     train=True,
                                     transform=transforms.ToTensor(),
                                     download=True)

# Data loader
data_loader = torch.utils.data.DataLoader(dataset=dataset,
                                          batch_size=batch_size,
                                          shuffle=True)


# VAE model
class VAE(nn.Module):
    def __init__(self, image_size=784, h_dim=400, z_dim=20):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(image_size, h_dim)
        self.fc2 = nn.Linear(h_dim, z_dim)
        self.fc3 = nn.Linear(h_dim, z_dim)
        self.fc4 = nn.Linear(z_dim, h_dim)
        self.fc5 = nn.Linear(h_dim, image_size)

    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h), self.fc3(h)

    def reparameterize(self, mu, log_var):
        std = torch.exp(log_var/2)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h = F.relu(self.fc4(z))
        return F.sigmoid(self.fc5(h))

    def forward(self, x):
        mu, log_var = self.encode(x)
        z = self.reparameterize(mu, log_var)
        x_reconst = self.decode(z)
        return x_reconst, mu, log_var

model = VAE(image_size, h_dim, z_dim).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Start training
reconst_losses, kl_divs = [], []
for epoch in range(num_epochs):
    for i, (x, _) in enumerate(data_loader):
        # Forward pass
        x = x.to(device).view(-1, image_size)
        x_reconst, mu, log_var = model(x)

        # Compute reconstruction loss and kl divergence
        # For KL divergence, see Appendix B in VAE paper or http://yunjey47.tistory.com/43
        reconst_loss = F.binary_cross_entropy(x_reconst, x, size_average=False)
        kl_div = - 0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())

        # Backprop and optimize
        loss = reconst_loss + kl_div
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reconst_losses.append(reconst_loss.item() / x.size(0)); kl_divs.append(kl_div.item() / x.size(0))

        if (i+1) % 10 == 0:
            print ("Epoch[{}/{}], Step [{}/{}], Reconst Loss: {:.4f}, KL Div: {:.4f}"
                   .format(epoch+1, num_epochs, i+1, len(data_loader), reconst_loss.item(), kl_div.item()))

    with torch.no_grad():
        # Save the sampled images
        z = torch.randn(batch_size, z_dim).to(device)
        out = model.decode(z).view(-1, 1, 8, 8)
        save_image(out, os.path.join(sample_dir, 'sampled-{}.png'.format(epoch+1)))

        # Save the reconstructed images
        out, _, _ = model(x)
        x_concat = torch.cat([x.view(-1, 1, 8, 8), out.view(-1, 1, 8, 8)], dim=3)
        save_image(x_concat, os.path.join(sample_dir, 'reconst-{}.png'.format(epoch+1)))
results["vae"] = {"reconst": reconst_losses, "kl": kl_divs, "x_concat_shape": tuple(x_concat.shape),
                  "samples": sorted(os.listdir(sample_dir))}


# =============================================================================
# (added) a deterministic part to compare with torch: the GAN's two losses and the VAE's loss
# with fixed weights, fixed latents and eps (in place of randn)
def fix(model):
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
    return model


fixed_images = torch.stack([mnist[i][0] for i in range(20)]).reshape(20, -1)
fixed_z = torch.cos(torch.arange(20 * latent_size, dtype=torch.float32)).view(20, latent_size)
fix(D), fix(G)
D.zero_grad(), G.zero_grad()
fixed_d_loss = criterion(D(fixed_images), torch.ones(20, 1)) + criterion(D(G(fixed_z)), torch.zeros(20, 1))
fixed_d_loss.backward()
fixed_results = {"d_loss": fixed_d_loss.item(), **{"D." + n: p.grad.tolist() for n, p in D.named_parameters()}}
D.zero_grad(), G.zero_grad()
fixed_g_loss = criterion(D(G(fixed_z)), torch.ones(20, 1))
fixed_g_loss.backward()
fixed_results.update({"g_loss": fixed_g_loss.item(), **{"G." + n: p.grad.tolist() for n, p in G.named_parameters()}})
vae = fix(VAE(image_size, h_dim, z_dim))
vae.reparameterize = lambda mu, log_var: mu + torch.sin(torch.arange(mu.numel(), dtype=torch.float32)).view_as(mu) * torch.exp(log_var / 2)
fx = torch.stack([dataset[i][0] for i in range(20)]).view(-1, image_size)
x_reconst, mu, log_var = vae(fx)
loss = F.binary_cross_entropy(x_reconst, fx, reduction='sum') - 0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())
loss.backward()
fixed_results.update({"vae_loss": loss.item(), **{"vae." + n: p.grad.tolist() for n, p in vae.named_parameters()}})
