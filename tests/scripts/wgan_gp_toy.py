# ruff: noqa: B007, E401, E402, E501, E711, F401, F841, N801, N802, N806, N816, SIM115, UP008, UP032 (repository code as is)
"""caogang/wgan-gp ``gan_toy.py``: WGAN-GP (Gulrajani et al., "Improved Training of Wasserstein
GANs") on the 8 gaussians / 25 gaussians / swiss roll toy sets: ReLU MLP generator and critic,
``calc_gradient_penalty`` with ``autograd.grad(..., create_graph=True, retain_graph=True,
only_inputs=True)``, ``backward(mone)``, Adam with betas (0.5, 0.9); old-style code
(``autograd.Variable(..., volatile=True)``, ``.data``, ``torch.FloatTensor``, ``torch.Tensor``).

Changes from the repository's file: the import; Python 3 (``print(...)``, ``range``,
``next(data)``, ``//``); ``use_cuda = False``; ``one``/``mone`` are 0-dim, the fix users of
torch >= 0.4 made (``torch.FloatTensor([1])`` has shape [1] and ``D_real.backward(mone)`` then
raises "Mismatch in shape" on torch 2.x, as on jitgrad); tflib.plot (Python 2, matplotlib) is
a few lines that keep its records; ``generate_image`` keeps the critic map and the samples
instead of drawing them; ``sklearn.datasets.make_swiss_roll`` is its numpy formula; DIM,
BATCH_SIZE, ITERS and the 25 gaussians' set are shrunk. What the tests check is recorded at the
end (marked).
"""
import os, sys

sys.path.append(os.getcwd())

import random

import numpy as np

import collections

import jitgrad as torch
import jitgrad.autograd as autograd
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(1)
random.seed(1)
np.random.seed(1)


class lib:  # (tflib.plot without matplotlib and pickle: it keeps what it would plot)
    class plot:
        _since_beginning = collections.defaultdict(lambda: {})
        _since_last_flush = collections.defaultdict(lambda: {})
        _iter = [0]
        flushed = []

        @staticmethod
        def tick():
            lib.plot._iter[0] += 1

        @staticmethod
        def plot(name, value):
            lib.plot._since_last_flush[name][lib.plot._iter[0]] = value

        @staticmethod
        def flush():
            prints = []
            for name, vals in lib.plot._since_last_flush.items():
                prints.append("{}\t{}".format(name, np.mean(list(vals.values()))))
                lib.plot._since_beginning[name].update(vals)
            print("iter {}\t{}".format(lib.plot._iter[0], "\t".join(prints)))
            lib.plot.flushed.append(lib.plot._iter[0])
            lib.plot._since_last_flush.clear()


def make_swiss_roll(n_samples=100, noise=0.0):
    """sklearn.datasets.make_swiss_roll's formula (on numpy's global generator)."""
    t = 1.5 * np.pi * (1 + 2 * np.random.rand(n_samples))
    y = 21 * np.random.rand(n_samples)
    x = t * np.cos(t)
    z = t * np.sin(t)
    X = np.vstack((x, y, z)).T + noise * np.random.randn(n_samples, 3)
    return X, np.squeeze(t)


MODE = 'wgan-gp'  # wgan or wgan-gp
DATASET = '8gaussians'  # 8gaussians, 25gaussians, swissroll
DIM = 64  # Model dimensionality
FIXED_GENERATOR = False  # whether to hold the generator fixed at real data plus
# Gaussian noise, as in the plots in the paper
LAMBDA = .1  # Smaller lambda seems to help for toy tasks specifically
CRITIC_ITERS = 5  # How many critic iterations per generator iteration
BATCH_SIZE = 64  # Batch size
ITERS = 60  # how many generator iterations to train for
use_cuda = False

# ==================Definition Start======================

class Generator(nn.Module):

    def __init__(self):
        super(Generator, self).__init__()

        main = nn.Sequential(
            nn.Linear(2, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, 2),
        )
        self.main = main

    def forward(self, noise, real_data):
        if FIXED_GENERATOR:
            return noise + real_data
        else:
            output = self.main(noise)
            return output


class Discriminator(nn.Module):

    def __init__(self):
        super(Discriminator, self).__init__()

        main = nn.Sequential(
            nn.Linear(2, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, DIM),
            nn.ReLU(True),
            nn.Linear(DIM, 1),
        )
        self.main = main

    def forward(self, inputs):
        output = self.main(inputs)
        return output.view(-1)


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Linear') != -1:
        m.weight.data.normal_(0.0, 0.02)
        m.bias.data.fill_(0)
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)

frame_index = [0]
frames = []  # (what the plot drew)
def generate_image(true_dist):
    """
    Generates and saves a plot of the true distribution, the generator, and the
    critic.
    """
    N_POINTS = 32
    RANGE = 3

    points = np.zeros((N_POINTS, N_POINTS, 2), dtype='float32')
    points[:, :, 0] = np.linspace(-RANGE, RANGE, N_POINTS)[:, None]
    points[:, :, 1] = np.linspace(-RANGE, RANGE, N_POINTS)[None, :]
    points = points.reshape((-1, 2))

    points_v = autograd.Variable(torch.Tensor(points), volatile=True)
    if use_cuda:
        points_v = points_v.cuda()
    disc_map = netD(points_v).cpu().data.numpy()

    noise = torch.randn(BATCH_SIZE, 2)
    if use_cuda:
        noise = noise.cuda()
    noisev = autograd.Variable(noise, volatile=True)
    true_dist_v = autograd.Variable(torch.Tensor(true_dist).cuda() if use_cuda else torch.Tensor(true_dist))
    samples = netG(noisev, true_dist_v).cpu().data.numpy()

    frames.append((disc_map.reshape((N_POINTS, N_POINTS)).transpose(), samples))

    frame_index[0] += 1


# Dataset iterator
def inf_train_gen():
    if DATASET == '25gaussians':

        dataset = []
        for i in range(1000 // 25):
            for x in range(-2, 3):
                for y in range(-2, 3):
                    point = np.random.randn(2) * 0.05
                    point[0] += 2 * x
                    point[1] += 2 * y
                    dataset.append(point)
        dataset = np.array(dataset, dtype='float32')
        np.random.shuffle(dataset)
        dataset /= 2.828  # stdev
        while True:
            for i in range(len(dataset) // BATCH_SIZE):
                yield dataset[i * BATCH_SIZE:(i + 1) * BATCH_SIZE]

    elif DATASET == 'swissroll':

        while True:
            data = make_swiss_roll(
                n_samples=BATCH_SIZE,
                noise=0.25
            )[0]
            data = data.astype('float32')[:, [0, 2]]
            data /= 7.5  # stdev plus a little
            yield data

    elif DATASET == '8gaussians':

        scale = 2.
        centers = [
            (1, 0),
            (-1, 0),
            (0, 1),
            (0, -1),
            (1. / np.sqrt(2), 1. / np.sqrt(2)),
            (1. / np.sqrt(2), -1. / np.sqrt(2)),
            (-1. / np.sqrt(2), 1. / np.sqrt(2)),
            (-1. / np.sqrt(2), -1. / np.sqrt(2))
        ]
        centers = [(scale * x, scale * y) for x, y in centers]
        while True:
            dataset = []
            for i in range(BATCH_SIZE):
                point = np.random.randn(2) * .02
                center = random.choice(centers)
                point[0] += center[0]
                point[1] += center[1]
                dataset.append(point)
            dataset = np.array(dataset, dtype='float32')
            dataset /= 1.414  # stdev
            yield dataset


def calc_gradient_penalty(netD, real_data, fake_data):
    alpha = torch.rand(BATCH_SIZE, 1)
    alpha = alpha.expand(real_data.size())
    alpha = alpha.cuda() if use_cuda else alpha

    interpolates = alpha * real_data + ((1 - alpha) * fake_data)

    if use_cuda:
        interpolates = interpolates.cuda()
    interpolates = autograd.Variable(interpolates, requires_grad=True)

    disc_interpolates = netD(interpolates)

    gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                              grad_outputs=torch.ones(disc_interpolates.size()).cuda() if use_cuda else torch.ones(
                                  disc_interpolates.size()),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]

    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA
    return gradient_penalty

# ==================Definition End======================

netG = Generator()
netD = Discriminator()
netD.apply(weights_init)
netG.apply(weights_init)
print(netG)
print(netD)

if use_cuda:
    netD = netD.cuda()
    netG = netG.cuda()

optimizerD = optim.Adam(netD.parameters(), lr=1e-4, betas=(0.5, 0.9))
optimizerG = optim.Adam(netG.parameters(), lr=1e-4, betas=(0.5, 0.9))

one = torch.tensor(1, dtype=torch.float)
mone = one * -1
if use_cuda:
    one = one.cuda()
    mone = mone.cuda()

data = inf_train_gen()

for iteration in range(ITERS):
    ############################
    # (1) Update D network
    ###########################
    for p in netD.parameters():  # reset requires_grad
        p.requires_grad = True  # they are set to False below in netG update

    for iter_d in range(CRITIC_ITERS):
        _data = next(data)
        real_data = torch.Tensor(_data)
        if use_cuda:
            real_data = real_data.cuda()
        real_data_v = autograd.Variable(real_data)

        netD.zero_grad()

        # train with real
        D_real = netD(real_data_v)
        D_real = D_real.mean()
        D_real.backward(mone)

        # train with fake
        noise = torch.randn(BATCH_SIZE, 2)
        if use_cuda:
            noise = noise.cuda()
        noisev = autograd.Variable(noise, volatile=True)  # totally freeze netG
        fake = autograd.Variable(netG(noisev, real_data_v).data)
        inputv = fake
        D_fake = netD(inputv)
        D_fake = D_fake.mean()
        D_fake.backward(one)

        # train with gradient penalty
        gradient_penalty = calc_gradient_penalty(netD, real_data_v.data, fake.data)
        gradient_penalty.backward()

        D_cost = D_fake - D_real + gradient_penalty
        Wasserstein_D = D_real - D_fake
        optimizerD.step()

    if not FIXED_GENERATOR:
        ############################
        # (2) Update G network
        ###########################
        for p in netD.parameters():
            p.requires_grad = False  # to avoid computation
        netG.zero_grad()

        _data = next(data)
        real_data = torch.Tensor(_data)
        if use_cuda:
            real_data = real_data.cuda()
        real_data_v = autograd.Variable(real_data)

        noise = torch.randn(BATCH_SIZE, 2)
        if use_cuda:
            noise = noise.cuda()
        noisev = autograd.Variable(noise)
        fake = netG(noisev, real_data_v)
        G = netD(fake)
        G = G.mean()
        G.backward(mone)
        G_cost = -G
        optimizerG.step()

    # Write logs and save samples
    lib.plot.plot('tmp/' + DATASET + '/' + 'disc cost', D_cost.cpu().data.numpy())
    lib.plot.plot('tmp/' + DATASET + '/' + 'wasserstein distance', Wasserstein_D.cpu().data.numpy())
    if not FIXED_GENERATOR:
        lib.plot.plot('tmp/' + DATASET + '/' + 'gen cost', G_cost.cpu().data.numpy())
    if iteration % 20 == 19:
        lib.plot.flush()
        generate_image(_data)
    lib.plot.tick()

# ----------------------------------------------------------------- (recorded for the tests)
# the same numbers on torch and jitgrad (their generators differ for one seed): a critic and a
# generator with weights from numpy, one critic step and one generator step on numpy's data. The
# penalty is taken at the real points (fake_data=real_data: torch.rand's alpha then only rounds)
_rng = np.random.default_rng(0)
fixedD, fixedG = Discriminator(), Generator()
with torch.no_grad():
    for p in list(fixedD.parameters()) + list(fixedG.parameters()):
        p.copy_(torch.tensor(_rng.normal(0.0, 0.3, tuple(p.shape)), dtype=torch.float32))
fixed_optD = optim.Adam(fixedD.parameters(), lr=1e-4, betas=(0.5, 0.9))
fixed_real = autograd.Variable(torch.Tensor(_rng.normal(0.0, 1.0, (BATCH_SIZE, 2)).astype('float32')))
fixed_noise = autograd.Variable(torch.Tensor(_rng.normal(0.0, 1.0, (BATCH_SIZE, 2)).astype('float32')))
fixed_results = {}
fixedD.zero_grad()
D_real = fixedD(fixed_real).mean()
D_real.backward(mone)
fixed_results['D_real_grads'] = [p.grad.clone() for p in fixedD.parameters()]
fake = autograd.Variable(fixedG(fixed_noise, fixed_real).data)
D_fake = fixedD(fake).mean()
D_fake.backward(one)
gradient_penalty = calc_gradient_penalty(fixedD, fixed_real.data, fixed_real.data)
fixed_results['penalty'] = gradient_penalty.item()
gradient_penalty.backward()
fixed_results['D_grads'] = [p.grad.clone() for p in fixedD.parameters()]
fixed_results['D_cost'] = (D_fake - D_real + gradient_penalty).item()
fixed_optD.step()
fixed_results['D_stepped'] = [p.detach().clone() for p in fixedD.parameters()]
for p in fixedD.parameters():
    p.requires_grad = False
fixedG.zero_grad()
G = fixedD(fixedG(fixed_noise, fixed_real)).mean()
G.backward(mone)
fixed_results['G_grads'] = [p.grad.clone() for p in fixedG.parameters()]
fixed_results['D_grads_after_G'] = [p.grad for p in fixedD.parameters()]  # (left as they were)
# the two other toy sets' first batches (through torch.Tensor, as the loop takes them)
other_batches = {}
for DATASET in ('25gaussians', 'swissroll'):
    other_batches[DATASET] = torch.Tensor(next(inf_train_gen()))
DATASET = '8gaussians'
fixed_results['other_batches'] = other_batches
