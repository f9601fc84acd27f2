# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, N815, UP008, UP010, UP031, UP032
# (tutorial code as is)
"""pytorch/examples super_resolution: an efficient sub-pixel conv net (nn.PixelShuffle) with
init.orthogonal_ and calculate_gain, trained on MSE and scored by PSNR.

data.py/dataset.py download BSDS300 and crop/resize with PIL; here DatasetFromFolder makes
smooth random 16x16 "Y channel" images and their 2x box-downsampled inputs.
model.py, main.py and super_resolve.py follow.
"""
from __future__ import print_function

import os
import tempfile
from math import log10

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.init as init
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader


# ---- model.py ----
class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


# ---- dataset.py / data.py (images made here instead of read from BSDS300) ----
class DatasetFromFolder(torch.utils.data.Dataset):
    def __init__(self, n, seed, crop_size=16, upscale_factor=2):
        super(DatasetFromFolder, self).__init__()
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[0:crop_size, 0:crop_size] / crop_size
        images = []
        for _ in range(n):
            fx, fy, px, py = rng.uniform(0.5, 3.0, 2).tolist() + rng.uniform(0, 6.3, 2).tolist()
            img = 0.5 + 0.25 * np.sin(2 * np.pi * fx * xx + px) * np.cos(2 * np.pi * fy * yy + py)
            images.append(img.astype(np.float32))
        self.targets = np.stack(images)[:, None]
        n_, c, h, w = self.targets.shape
        self.inputs = self.targets.reshape(n_, c, h // upscale_factor, upscale_factor,
                                           w // upscale_factor, upscale_factor).mean((3, 5))

    def __getitem__(self, index):
        return torch.from_numpy(self.inputs[index]), torch.from_numpy(self.targets[index])

    def __len__(self):
        return len(self.targets)


def get_training_set(upscale_factor):
    return DatasetFromFolder(48, seed=0, upscale_factor=upscale_factor)


def get_test_set(upscale_factor):
    return DatasetFromFolder(20, seed=1, upscale_factor=upscale_factor)


# ---- main.py ----
class Opt:
    upscale_factor = 2
    batchSize = 16
    testBatchSize = 10
    nEpochs = 8
    lr = 0.001
    cuda = False
    mps = False
    threads = 1  # (4 in main.py: worker processes per epoch cost torch seconds here)
    seed = 123


opt = Opt()
print(vars(Opt))

if opt.cuda and not torch.cuda.is_available():
    raise Exception("No GPU found, please run without --cuda")
if not opt.mps and torch.backends.mps.is_available():
    raise Exception("Found mps device, please run with --mps to enable macOS GPU")

torch.manual_seed(opt.seed)
use_mps = opt.mps and torch.backends.mps.is_available()

if opt.cuda:
    device = torch.device("cuda")
elif use_mps:
    device = torch.device("mps")
else:
    device = torch.device("cpu")

print('===> Loading datasets')
train_set = get_training_set(opt.upscale_factor)
test_set = get_test_set(opt.upscale_factor)
training_data_loader = DataLoader(dataset=train_set, num_workers=opt.threads,
                                  batch_size=opt.batchSize, shuffle=True)
testing_data_loader = DataLoader(dataset=test_set, num_workers=opt.threads,
                                 batch_size=opt.testBatchSize, shuffle=False)

print('===> Building model')
model = Net(upscale_factor=opt.upscale_factor).to(device)
criterion = nn.MSELoss()

optimizer = optim.Adam(model.parameters(), lr=opt.lr)
tmpdir = tempfile.mkdtemp()
epoch_losses, psnrs = [], []


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)

        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()

        print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(
            epoch, iteration, len(training_data_loader), loss.item()))

    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(
        epoch, epoch_loss / len(training_data_loader)))
    epoch_losses.append(epoch_loss / len(training_data_loader))


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)

            prediction = model(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
    psnrs.append(avg_psnr / len(testing_data_loader))


def checkpoint(epoch):
    model_out_path = os.path.join(tmpdir, "model_epoch_{}.pth".format(epoch))
    torch.save(model, model_out_path)
    print("Checkpoint saved to {}".format(model_out_path))
    return model_out_path


test()  # (the PSNR before training, for comparison)
for epoch in range(1, opt.nEpochs + 1):
    train(epoch)
    test()
    model_out_path = checkpoint(epoch)

# ---- super_resolve.py ----
img = test_set.inputs[0, 0]  # the Y channel of the input image
model = torch.load(model_out_path, weights_only=False)
img_to_tensor = torch.from_numpy
input = img_to_tensor(img).view(1, -1, img.shape[0], img.shape[1])
if opt.cuda:
    model = model.cuda()
    input = input.cuda()

out = model(input)
out = out.cpu()
out_img_y = out[0].detach().numpy()
out_img_y *= 255.0
out_img_y = out_img_y.clip(0, 255)
out_img_y = np.uint8(out_img_y[0])
super_resolved_shape = out_img_y.shape

# deterministic parts to compare with torch: the gains, orthogonality, a fixed-weight forward
gains = [init.calculate_gain(name) for name in ('relu', 'linear', 'tanh', 'sigmoid')] + \
    [init.calculate_gain('leaky_relu', 0.2), init.calculate_gain('selu')]
fresh = Net(upscale_factor=2)
w2 = fresh.conv2.weight.detach().reshape(64, -1)  # 64x576: orthonormal rows (times the gain)
w1 = fresh.conv1.weight.detach().reshape(64, -1)  # 64x25: orthonormal columns
orthogonal_errors = [(w2 @ w2.t() / init.calculate_gain('relu') ** 2 - torch.eye(64)).abs().max(),
                     (w1.t() @ w1 / 2.0 - torch.eye(25)).abs().max()]
fixed = Net(upscale_factor=3)
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.3 + k).view_as(p)
                * 0.1)
fixed_in = torch.cos(torch.arange(2 * 5 * 6, dtype=torch.float32)).view(2, 1, 5, 6)
fixed_out = fixed(fixed_in).tolist()
shuffled = nn.PixelShuffle(2)(torch.arange(2 * 8 * 2 * 3).view(2, 8, 2, 3)).tolist()
unshuffled = nn.PixelUnshuffle(2)(torch.arange(2 * 2 * 4 * 6).view(2, 2, 4, 6)).tolist()
