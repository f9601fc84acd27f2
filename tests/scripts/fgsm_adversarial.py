"""Fast-gradient-sign attacks on a small conv classifier, written for these tests in the way the
PyTorch FGSM adversarial-example tutorial is commonly written (modelled on the API usage of that
tutorial, not a copy of it):

- a quick "pretraining" of the classifier on synthetic 12x12 uint8 glyphs (Adadelta, StepLR,
  ``F.nll_loss`` on ``log_softmax``, ``Dropout``, ``max_pool2d``, ``flatten``), saved as a
  state dict and loaded back with ``map_location=`` and ``weights_only=True``;
- hand-written ToTensor/Normalize/Compose transforms (``as_tensor(dtype=, device=)``), a
  ``Dataset`` and ``DataLoader(batch_size=1, shuffle=True)``;
- ``torch.accelerator`` for the device, ``eval``, setting ``requires_grad = True`` on an input,
  ``model.zero_grad``, the input's ``grad.data``, ``sign``, ``torch.clamp``, undoing the
  normalisation, ``max(1, keepdim=True)``;
- a fixed-weight attack whose loss, input gradient and adversarial logits torch must match.
"""
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

MEAN, STD = (0.1307,), (0.3081,)
SIDE = 12


class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean
        self.std = std

    def forward(self, img):
        m = torch.as_tensor(self.mean, dtype=img.dtype, device=img.device).view(-1, 1, 1)
        s = torch.as_tensor(self.std, dtype=img.dtype, device=img.device).view(-1, 1, 1)
        return (img - m) / s


class ToTensor:
    def __call__(self, pixels):
        scaled = np.asarray(pixels, dtype=np.float32) / 255.0
        return torch.from_numpy(scaled[None])


class Compose:
    def __init__(self, steps):
        self.steps = steps

    def __call__(self, item):
        for step in self.steps:
            item = step(item)
        return item


# one random template per class; samples are the template plus Gaussian noise
TEMPLATES = np.random.default_rng(0).integers(0, 256, size=(10, SIDE, SIDE))


class Glyphs(torch.utils.data.Dataset):
    def __init__(self, size, seed, transform=None):
        gen = np.random.default_rng(seed)
        self.labels = gen.integers(0, 10, size=size)
        jitter = gen.normal(0, 40, size=(size, SIDE, SIDE))
        self.images = np.clip(TEMPLATES[self.labels] + jitter, 0, 255).astype(np.uint8)
        self.transform = transform

    def __len__(self):
        return self.labels.shape[0]

    def __getitem__(self, idx):
        pic = self.images[idx]
        return (self.transform(pic) if self.transform else pic), int(self.labels[idx])


class SmallConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3, 1)
        self.c2 = nn.Conv2d(32, 64, 3, 1)
        self.drop_conv = nn.Dropout(0.25)
        self.hidden = nn.Linear(64 * 4 * 4, 128)
        self.drop_fc = nn.Dropout(0.5)
        self.out = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(x)))), 2)
        x = torch.flatten(self.drop_conv(x), 1)
        x = self.drop_fc(F.relu(self.hidden(x)))
        return F.log_softmax(self.out(x), dim=1)


def fgsm(clean, eps, grad):
    """One signed-gradient step of size eps, kept inside the valid pixel range."""
    return torch.clamp(clean + eps * grad.sign(), 0, 1)


def unnormalize(batch, mean=MEAN, std=STD):
    m = torch.tensor(list(mean)).to(device).view(1, -1, 1, 1)
    s = torch.tensor(list(std)).to(device).view(1, -1, 1, 1)
    return batch * s + m


torch.manual_seed(42)
prep = Compose([ToTensor(), Normalize(MEAN, STD)])
ckpt = os.path.join(tempfile.mkdtemp(), "small_convnet.pth")

# ---- stand-in for the pretrained weights: three short epochs ----
teacher = SmallConvNet()
opt = optim.Adadelta(teacher.parameters(), lr=1.0)
decay = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
train_losses = []
fit_loader = torch.utils.data.DataLoader(Glyphs(256, seed=1, transform=prep), batch_size=32,
                                         shuffle=True)
for _ in range(3):
    teacher.train()
    for xb, yb in fit_loader:
        opt.zero_grad()
        batch_loss = F.nll_loss(teacher(xb), yb)
        batch_loss.backward()
        opt.step()
        train_losses.append(batch_loss.item())
    decay.step()
torch.save(teacher.state_dict(), ckpt)

device = (torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
          else "cpu")
model = SmallConvNet().to(device)
model.load_state_dict(torch.load(ckpt, map_location=device, weights_only=True))
model.eval()
loaded_same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                   teacher.state_dict().values()))

attack_loader = torch.utils.data.DataLoader(Glyphs(30, seed=2, transform=prep), batch_size=1,
                                            shuffle=True)


def attack_all(eps, keep=5):
    hits, kept = 0, []
    for img, label in attack_loader:
        img, label = img.to(device), label.to(device)
        img.requires_grad = True
        scores = model(img)
        before = scores.max(1, keepdim=True)[1]
        if before.item() != label.item():
            continue  # already misclassified: nothing to attack
        model.zero_grad()
        F.nll_loss(scores, label).backward()
        adv = fgsm(unnormalize(img), eps, img.grad.data)
        after = model(Normalize(MEAN, STD)(adv)).max(1, keepdim=True)[1]
        fooled = after.item() != label.item()
        hits += not fooled
        if len(kept) < keep and (fooled or eps == 0):
            kept.append((before.item(), after.item(), adv.squeeze().detach().cpu().numpy()))
    return hits / float(len(attack_loader)), kept


epsilons = [0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
accuracies, examples = [], []
for eps in epsilons:
    acc, kept = attack_all(eps)
    accuracies.append(acc)
    examples.append(kept)
    print(f"eps={eps:<5} accuracy {acc:.3f}")

# ---- the same attack on fixed weights, for torch to match ----
fixed = SmallConvNet()
with torch.no_grad():
    for j, w in enumerate(fixed.parameters()):
        wave = torch.cos(torch.arange(w.numel(), dtype=torch.float32) * 0.61 + j)
        w.copy_(wave.view_as(w) * 0.1)
fixed.eval()
norm = Normalize(MEAN, STD)
glyph = torch.from_numpy(TEMPLATES[3:4, None].astype(np.float32) / 255.0)
x = norm(glyph).clone().requires_grad_(True)
target_class = torch.tensor([3])
fixed_nll = F.nll_loss(fixed(x), target_class)
fixed_nll.backward()
fixed_grad = x.grad.tolist()  # d loss / d (normalised) input
fixed_perturbed = fgsm(unnormalize(x.detach()), 0.1, x.grad.data)
fixed_adv_logits = fixed(norm(fixed_perturbed)).tolist()
fixed_loss = fixed_nll.item()
