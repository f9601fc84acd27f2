# ruff: noqa: N812 (the usual F alias of nn.functional)
"""A small vision transformer on sklearn's 8x8 digits, written for these tests the way ViT code
for PyTorch is commonly written (not a copy of one script):

- patches by ``F.unfold`` (and, for the masked-reconstruction head, back by ``F.fold``);
- a class token and learned position embeddings as ``nn.Parameter``, initialized by
  ``nn.init.trunc_normal_(std=0.02)``, a ``model.apply(init_fn)`` over the Linear/LayerNorm
  modules;
- ``nn.TransformerEncoder`` of pre-norm layers (``norm_first=True, batch_first=True,
  activation="gelu"``) with a final ``LayerNorm``, ``enable_nested_tensor=False``;
- ``nn.CrossEntropyLoss(label_smoothing=0.1)``, ``AdamW`` with parameter groups (no weight
  decay on biases, norms and embeddings), ``CosineAnnealingWarmRestarts`` stepped per batch
  with a fractional epoch, ``clip_grad_norm_``;
- evaluation under ``torch.inference_mode()``, ``torch.utils.data`` loaders.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.data import DataLoader, TensorDataset

np.random.seed(0)
torch.manual_seed(0)


class PatchEmbed(nn.Module):
    def __init__(self, patch, channels, dim):
        super().__init__()
        self.patch = patch
        self.proj = nn.Linear(channels * patch * patch, dim)

    def forward(self, x):
        patches = F.unfold(x, kernel_size=self.patch, stride=self.patch)  # (B, C*p*p, L)
        return self.proj(patches.transpose(1, 2))


class ViT(nn.Module):
    def __init__(self, image=8, patch=2, channels=1, dim=32, depth=2, heads=4, classes=10,
                 dropout=0.1):
        super().__init__()
        self.image, self.patch = image, patch
        n = (image // patch) ** 2
        self.embed = PatchEmbed(patch, channels, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(dim),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)
        self.decoder = nn.Linear(dim, channels * patch * patch)  # masked-patch reconstruction
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def tokens(self, x, mask=None):
        t = self.embed(x)
        if mask is not None:  # zero the masked patches' embeddings
            t = t.masked_fill(mask.unsqueeze(-1), 0.0)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        t = torch.cat((cls, t), dim=1) + self.pos_embed
        return self.encoder(t)

    def forward(self, x):
        return self.head(self.tokens(x)[:, 0])

    def reconstruct(self, x, mask):
        patches = self.decoder(self.tokens(x, mask)[:, 1:]).transpose(1, 2)
        return F.fold(patches, (self.image, self.image), kernel_size=self.patch,
                      stride=self.patch)


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim < 2 or name.endswith("bias") or "embed" in name and "proj" not in name \
                or name == "cls_token":
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


digits = load_digits()
X = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)  # (1797, 1, 8, 8)
y = torch.tensor(digits.target)
perm = torch.randperm(len(X))
train_idx, test_idx = perm[:1400], perm[1400:]
train_loader = DataLoader(TensorDataset(X[train_idx], y[train_idx]), batch_size=64, shuffle=True)
test_loader = DataLoader(TensorDataset(X[test_idx], y[test_idx]), batch_size=256)

model = ViT()
optimizer = torch.optim.AdamW(param_groups(model, 0.05), lr=3e-3)
epochs, iters = 6, len(train_loader)
scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2,
                                                                 eta_min=1e-4)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
losses, lrs, accuracies = [], [], []
for epoch in range(epochs):
    model.train()
    for i, (xb, yb) in enumerate(train_loader):
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(xb), yb)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step(epoch + i / iters)
        losses.append(loss.item())
        lrs.append(optimizer.param_groups[0]["lr"])
    model.eval()
    correct = 0
    with torch.inference_mode():
        for xb, yb in test_loader:
            correct += (model(xb).argmax(dim=-1) == yb).sum().item()
    accuracies.append(correct / len(test_idx))
    print(f"epoch {epoch}: loss {np.mean(losses[-iters:]):.3f}, test accuracy "
          f"{accuracies[-1]:.3f}, lr {lrs[-1]:.5f}")

# ------------------------------------------------------------ (recorded) on fixed weights
fixed = ViT(dropout=0.0)
rng = np.random.default_rng(5)
with torch.no_grad():
    for p in fixed.parameters():
        p.copy_(torch.from_numpy(rng.normal(0.0, 0.2, size=tuple(p.shape)).astype(np.float32)))
fixed.eval()
xb, yb = X[:16], y[:16]
mask = torch.from_numpy(rng.random((16, 16)) < 0.3)
fixed_results = {}
with torch.no_grad():
    fixed_results["patches"] = F.unfold(xb, 2, stride=2)
    fixed_results["logits_eval"] = fixed(xb)
fixed.train()  # (dropout 0: the same numbers through the training path)
logits = fixed(xb)
loss = criterion(logits, yb)
recon = fixed.reconstruct(xb, mask)
patch_mask = F.fold(mask.float().unsqueeze(1).expand(-1, 4, -1), (8, 8), 2, stride=2)
recon_loss = ((recon - xb) ** 2 * patch_mask).sum() / patch_mask.sum()
(loss + recon_loss).backward()
fixed_results["logits"] = logits.detach()
fixed_results["loss"] = loss.item()
fixed_results["recon"] = recon.detach()
fixed_results["recon_loss"] = recon_loss.item()
fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
opt = torch.optim.AdamW(param_groups(fixed, 0.05), lr=1e-2)
opt.step()
fixed_results["after_step"] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
sched_opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(sched_opt, T_0=3, T_mult=2,
                                                             eta_min=0.01)
warm_lrs = []
for _ in range(20):
    sched_opt.step()
    sched.step()
    warm_lrs.append(sched.get_last_lr()[0])
for epoch in (0.5, 2.75, 9.1, 4.0):
    sched.step(epoch)
    warm_lrs.append(sched_opt.param_groups[0]["lr"])
fixed_results["warm_lrs"] = warm_lrs
fixed_results["state_keys"] = list(fixed.state_dict())
