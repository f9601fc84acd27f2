"""Written for these tests in the way U-Net segmentation code for PyTorch is commonly written
(modelled on the API usage of milesial/Pytorch-UNet, not a copy of it): a small encoder-decoder
(each stage two Conv2d(bias=False) + BatchNorm2d + ReLU(inplace=True), MaxPool2d going down,
nn.ConvTranspose2d or nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True) going up,
F.pad of the upsampled map to its skip connection's size, torch.cat, a 1x1 Conv2d head), an
optional torch.utils.checkpoint.checkpoint(use_reentrant=False) of every stage, a soft Dice
score and Dice loss, CrossEntropyLoss (several classes, with F.softmax and
F.one_hot(...).permute(0, 3, 1, 2) in the logits' dtype) or BCEWithLogitsLoss (one class,
F.sigmoid, the mask as float32 whatever the logits' dtype) plus the Dice loss, a Dataset
reading PNG images and masks with PIL (a scan of the masks' values maps them to class indices),
random_split with a seeded Generator, DataLoader(pin_memory=True, drop_last),
RMSprop(weight_decay, momentum, foreach=True), ReduceLROnPlateau('max', patience=5),
torch.amp.GradScaler / torch.cuda.amp.GradScaler(enabled=False) and
torch.autocast(enabled=False), clip_grad_norm_, model.to(memory_format=torch.channels_last),
evaluation under torch.inference_mode, torch.save / torch.load of a checkpoint dict, and a
fallback that catches torch.OutOfMemoryError, calls torch.cuda.empty_cache() and retries with
the stages checkpointed.

Sizes: 40 synthetic 64x64 RGB PNG images (a red disk or square on noise) and their 0/255 masks
in a temporary directory, read at half scale (32x32); widths 8, 16, 32, 64, 128; 2 epochs of
batch 4 at lr 1e-3 with 20% held out, a validation round every step.

Sections:
- "(recorded)": the training run's losses, validation rounds and checkpoints (what the tests
  read as ``losses``, ``val_rounds``, ``epoch_images`` ...);
- "(added)": fixed-weight results (NumPy-drawn weights, as jitgrad's random numbers are not
  torch's) to compare with torch, the checkpointed stages against the plain forward, and the
  out-of-memory fallback driven by a trainer that fails once.
"""
import argparse
import copy
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.data import DataLoader, Dataset, random_split

np.random.seed(0)
torch.manual_seed(0)


# ---------------------------------------------------------------- the network


def conv_pair(c_in, c_out):
    """Two 3x3 convolutions, each followed by batch norm and ReLU; the size is kept."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class Decoder(nn.Module):
    """Grows the deeper map 2x, pads it onto the skip connection and fuses the two."""

    def __init__(self, deep_ch, skip_ch, c_out, bilinear):
        super().__init__()
        if bilinear:
            self.grow = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            grown = deep_ch
        else:
            self.grow = nn.ConvTranspose2d(deep_ch, deep_ch // 2, kernel_size=2, stride=2)
            grown = deep_ch // 2
        self.fuse = conv_pair(skip_ch + grown, c_out)

    def forward(self, deep, skip):
        deep = self.grow(deep)
        rows = skip.shape[2] - deep.shape[2]
        cols = skip.shape[3] - deep.shape[3]
        deep = F.pad(deep, [cols // 2, cols - cols // 2, rows // 2, rows - rows // 2])
        return self.fuse(torch.cat([skip, deep], dim=1))


class SegNet(nn.Module):
    def __init__(self, in_ch, classes, bilinear=False, widths=(8, 16, 32, 64, 128)):
        super().__init__()
        self.classes, self.bilinear = classes, bilinear
        self.stem = conv_pair(in_ch, widths[0])
        self.encoders = nn.ModuleList(
            nn.Sequential(nn.MaxPool2d(2), conv_pair(a, b)) for a, b in zip(widths, widths[1:]))
        rev = widths[::-1]
        self.decoders = nn.ModuleList(
            Decoder(deep, skip, skip, bilinear) for deep, skip in zip(rev, rev[1:]))
        self.head = nn.Conv2d(widths[0], classes, kernel_size=1)
        self.checkpoint_stages = False  # recompute each stage's activations in the backward

    def _stage(self, fn, *inputs):
        if self.checkpoint_stages:
            return torch.utils.checkpoint.checkpoint(fn, *inputs, use_reentrant=False)
        return fn(*inputs)

    def forward(self, x):
        skips = [self._stage(self.stem, x)]
        for enc in self.encoders:
            skips.append(self._stage(enc, skips[-1]))
        h = skips.pop()
        for dec in self.decoders:
            h = self._stage(dec, h, skips.pop())
        return self._stage(self.head, h)


# ---------------------------------------------------------------- Dice


def soft_dice(pred, target, per_item=True, eps=1e-6):
    """Mean over the leading dims of 2|A.B| / (|A| + |B|) of each (H, W) map (per_item), or one
    score over everything; two empty maps score 1."""
    dims = (-2, -1) if per_item else tuple(range(pred.dim()))
    overlap = (pred * target).sum(dim=dims)
    sizes = pred.sum(dim=dims) + target.sum(dim=dims)
    return ((2 * overlap + eps) / (sizes + eps)).mean()


def dice_loss(pred, target, per_class=False):
    if per_class:  # (N, C, H, W): every class map of every image scored on its own
        pred, target = pred.flatten(0, 1), target.flatten(0, 1)
    return 1 - soft_dice(pred, target)


def segmentation_loss(net, logits, masks):
    """Cross entropy (or BCE for one class) plus the Dice loss of the probabilities."""
    if net.classes == 1:
        flat = logits.squeeze(1)
        total = nn.BCEWithLogitsLoss()(flat, masks.float())
        total += dice_loss(F.sigmoid(flat), masks.float())
    else:
        total = nn.CrossEntropyLoss()(logits, masks)
        onehot = F.one_hot(masks, net.classes).permute(0, 3, 1, 2).to(logits.dtype)
        total += dice_loss(F.softmax(logits, dim=1), onehot, per_class=True)
    return total


def validation_dice(net, loader):
    """Mean Dice score of the hard predictions (background excluded when there are classes)."""
    was_training = net.training
    net.eval()
    scores = []
    with torch.inference_mode():
        for images, masks in loader:
            images = images.to(dtype=torch.float32, memory_format=torch.channels_last)
            logits = net(images)
            if net.classes == 1:
                hard = (F.sigmoid(logits.squeeze(1)) > 0.5).float()
                scores.append(soft_dice(hard, masks.float()))
            else:
                hard = F.one_hot(logits.argmax(dim=1), net.classes).permute(0, 3, 1, 2).float()
                truth = F.one_hot(masks, net.classes).permute(0, 3, 1, 2).float()
                scores.append(soft_dice(hard[:, 1:].flatten(0, 1), truth[:, 1:].flatten(0, 1)))
    net.train(was_training)
    return sum(scores) / max(len(scores), 1)


# ---------------------------------------------------------------- the data


class MaskedImages(Dataset):
    """Pairs ``<stem>.png`` in one folder with ``<stem><suffix>.png`` in another, resized by
    ``scale``; the masks' distinct values, in order, become the class indices."""

    def __init__(self, image_dir, mask_dir, scale=1.0, suffix="_mask"):
        self.image_dir, self.mask_dir = Path(image_dir), Path(mask_dir)
        self.scale, self.suffix = scale, suffix
        self.stems = sorted(p.stem for p in self.image_dir.glob("*.png"))
        if not self.stems:
            raise RuntimeError(f"no images in {image_dir}")
        seen = set()
        for stem in self.stems:
            seen.update(np.unique(np.asarray(Image.open(self._mask_path(stem)))).tolist())
        self.masks_scanned = len(self.stems)
        self.values = sorted(seen)

    def _mask_path(self, stem):
        return self.mask_dir / f"{stem}{self.suffix}.png"

    def _resized(self, img, is_mask):
        w, h = img.size
        size = (max(1, int(w * self.scale)), max(1, int(h * self.scale)))
        return img.resize(size, Image.NEAREST if is_mask else Image.BICUBIC)

    def __len__(self):
        return len(self.stems)

    def __getitem__(self, i):
        stem = self.stems[i]
        img = np.asarray(self._resized(Image.open(self.image_dir / f"{stem}.png"), False))
        raw = np.asarray(self._resized(Image.open(self._mask_path(stem)), True))
        labels = np.zeros(raw.shape, dtype=np.int64)
        for k, v in enumerate(self.values):
            labels[raw == v] = k
        image = torch.as_tensor(img.transpose(2, 0, 1).copy()).float().contiguous() / 255.0
        return image, torch.as_tensor(labels).long().contiguous()


def write_shapes(root, count, size, rng):
    """``count`` RGB images of a red disk or square on noise, with 0/255 masks of the shape."""
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir(parents=True)
    rows, cols = np.mgrid[0:size, 0:size]
    for i in range(count):
        r0, c0 = rng.integers(size // 4, 3 * size // 4, 2)
        half = rng.integers(6, 14)
        if i % 2:
            inside = (rows - r0) ** 2 + (cols - c0) ** 2 <= half ** 2
        else:
            inside = (np.abs(rows - r0) <= half) & (np.abs(cols - c0) <= half)
        pixels = rng.uniform(0, 120, (size, size, 3))
        pixels[inside] = 0.5 * pixels[inside] + np.array([200.0, 40.0, 40.0])
        name = f"s{i:02d}"
        Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(root / "images" / f"{name}.png")
        Image.fromarray(inside.astype(np.uint8) * 255).save(root / "masks" / f"{name}_mask.png")


# ---------------------------------------------------------------- training


def parse_options(argv):
    p = argparse.ArgumentParser(description="train a small U-Net on masked images")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", dest="batch_size", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--scale", type=float, default=0.5)
    p.add_argument("--holdout", type=float, default=10.0, help="percent held out for validation")
    p.add_argument("--classes", type=int, default=2)
    p.add_argument("--bilinear", action="store_true")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--resume", type=str, default="")
    return p.parse_args(argv)


def train(net, opts, data_root, ckpt_dir, log):
    data = MaskedImages(data_root / "images", data_root / "masks", scale=opts.scale)
    log["mask_values"], log["masks_scanned"] = data.values, data.masks_scanned
    n_val = int(len(data) * opts.holdout / 100)
    train_set, val_set = random_split(data, [len(data) - n_val, n_val],
                                      generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=opts.batch_size, shuffle=True, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=opts.batch_size, shuffle=False, pin_memory=True,
                            drop_last=True)

    optimizer = torch.optim.RMSprop(net.parameters(), lr=opts.lr, weight_decay=1e-8,
                                    momentum=0.999, foreach=True)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "max", patience=5)
    scaler = torch.amp.GradScaler("cuda", enabled=opts.amp)
    step = 0
    for epoch in range(1, opts.epochs + 1):
        net.train()
        seen = 0
        for images, masks in train_loader:
            images = images.to(dtype=torch.float32, memory_format=torch.channels_last)
            with torch.autocast("cpu", enabled=opts.amp):
                loss = segmentation_loss(net, net(images), masks)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            step += 1
            seen += images.shape[0]
            log["losses"].append(loss.item())
            score = validation_dice(net, val_loader)
            plateau.step(score)
            log["val_rounds"].append({"step": step, "dice": float(score),
                                      "batches": len(val_loader),
                                      "lr": optimizer.param_groups[0]["lr"]})
        log["epoch_images"].append(seen)
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        torch.save({"epoch": epoch, "model": net.state_dict(), "mask_values": data.values},
                   str(ckpt_dir / f"unet_e{epoch}.pt"))
    return val_loader


def train_with_fallback(net, trainer, *args):
    """Runs ``trainer``; out of device memory, empties the cache and retries with every stage
    checkpointed."""
    try:
        return trainer(net, *args)
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
        net.checkpoint_stages = True
        return trainer(net, *args)


# ---------------------------------------------------------------- (added) fixed weights
# A fixed-weight copy of each variant on 36x36 inputs (36, 18, 9, 4, 2: the 4 -> 8 upsampling is
# padded to 9, and the deepest BatchNorm2d sees 8 values a channel). In float32: the forward,
# the loss and the validation Dice. In float64: gradients, clipped norms and two RMSprop steps
# through a disabled GradScaler (in float32 a ReLU input within rounding of 0 may pass or stop
# its gradient, and RMSprop's first step, lr * g / (0.1 |g| + eps), moves a weight whose gradient
# is rounding by 10 lr either way).
rng = np.random.default_rng(0)


def fixed_net(classes, bilinear):
    net = SegNet(3, classes, bilinear=bilinear)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.weight.copy_(torch.tensor(1.0 + rng.normal(0.0, 0.1, module.num_features),
                                                 dtype=torch.float32))
                module.bias.copy_(torch.tensor(rng.normal(0.0, 0.1, module.num_features),
                                               dtype=torch.float32))
            elif isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
                for p in module.parameters(recurse=False):
                    fan = p[0].numel() if p.dim() > 1 else 1
                    p.copy_(torch.tensor(rng.normal(0.0, fan ** -0.5, tuple(p.shape)),
                                         dtype=torch.float32))
    return net.to(memory_format=torch.channels_last)


fixed_images = torch.tensor(rng.uniform(0.0, 1.0, (2, 3, 36, 36)), dtype=torch.float32)
fixed_masks = torch.tensor(rng.integers(0, 2, (2, 36, 36)), dtype=torch.long)
fixed_results = {}
for bilinear in (False, True):
    for classes in (2, 1):
        res = fixed_results[f"{'bilinear' if bilinear else 'transposed'}_{classes}"] = {
            "losses": [], "norms": []}
        net = fixed_net(classes, bilinear)
        net64 = copy.deepcopy(net).double()
        x = fixed_images.contiguous(memory_format=torch.channels_last)
        res["channels_last"] = x.is_contiguous(memory_format=torch.channels_last)
        with torch.autocast("cpu", enabled=False):
            logits = net(x)
            res["logits"] = logits.detach().clone()
            res["loss"] = segmentation_loss(net, logits, fixed_masks).item()
        pairs = DataLoader(list(zip(fixed_images, fixed_masks)), batch_size=1)
        res["dice"] = float(validation_dice(net, pairs))
        res["training_after_evaluate"] = net.training
        opt = torch.optim.RMSprop(net64.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.999,
                                  foreach=True)
        # (both spellings of a disabled scaler: torch.cuda.amp's is the deprecated one)
        scaler = torch.amp.GradScaler("cuda", enabled=False) if bilinear \
            else torch.cuda.amp.GradScaler(enabled=False)
        for i in range(2):
            logits = net64(x.double())
            loss = segmentation_loss(net64, logits, fixed_masks)
            opt.zero_grad(set_to_none=True)
            res["scaled_is_loss"] = scaler.scale(loss) is loss
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            res["norms"].append(nn.utils.clip_grad_norm_(net64.parameters(), 1.0).item())
            if i == 0:
                res["grads"] = {n: p.grad.clone() for n, p in net64.named_parameters()}
            scaler.step(opt)
            scaler.update()
            res["losses"].append(loss.item())
        res["params"] = {n: p.detach().clone() for n, p in net64.named_parameters()}
        res["running"] = {n: b.clone() for n, b in net64.named_buffers() if "running" in n}
        res["scale"] = scaler.get_scale()
        res["dtypes"] = [str(loss.dtype), str(logits.dtype)]

a, b = fixed_images[:, 0], fixed_images[:, 1]
fixed_results["dice_coeff"] = [
    soft_dice(a[0], b[0]).item(),
    soft_dice(a, b, per_item=False).item(),
    soft_dice(torch.zeros(3, 5, 5), torch.zeros(3, 5, 5)).item(),  # (nothing in either: 1)
    dice_loss(fixed_images[:, :2], fixed_images[:, 1:], per_class=True).item(),
    dice_loss(a, b).item(),
]
opt = torch.optim.RMSprop([nn.Parameter(torch.zeros(2))], lr=1e-3, momentum=0.9, foreach=True)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, "max", patience=5)
fixed_results["plateau_lrs"] = []
for score in [0.3, 0.4, 0.45, 0.45, 0.44, 0.4, 0.45, 0.42, 0.45, 0.5, 0.5, 0.49, 0.5, 0.48,
              0.5, 0.5, 0.5, 0.5]:
    plateau.step(score)
    fixed_results["plateau_lrs"].append(opt.param_groups[0]["lr"])

# every stage checkpointed recomputes the same forward and gradients (float64)
checkpointed = {}
net = fixed_net(2, True).double()
for use in (False, True):
    net.checkpoint_stages = use
    x = fixed_images.double().requires_grad_()
    out = net(x)
    net.zero_grad()
    (out ** 2).mean().backward()
    checkpointed[use] = {"out": out.detach(), "x_grad": x.grad,
                         "grads": {n: p.grad.clone() for n, p in net.named_parameters()}}
fixed_results["checkpoint"] = checkpointed[True]
try:  # (the function lives in the module torch.utils.checkpoint; the module is no callable)
    torch.utils.checkpoint(net.stem, x)
except TypeError as e:
    module_call_error = str(e)

# the fallback: a trainer that runs out of memory once, then succeeds
fallback_calls = []


def _fails_once(net):
    fallback_calls.append(net.checkpoint_stages)
    if len(fallback_calls) == 1:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
    return "done"


fallback_result = train_with_fallback(SegNet(3, 2), _fails_once)

# ---------------------------------------------------------------- (recorded) the training run
data_root = Path(tempfile.mkdtemp())
write_shapes(data_root, 40, 64, rng)
ckpt_dir = data_root / "checkpoints"
args = parse_options(["--epochs", "2", "--batch-size", "4", "--lr", "1e-3", "--holdout", "20",
                      "--classes", "2"])
model = SegNet(3, args.classes, bilinear=args.bilinear).to(memory_format=torch.channels_last)
log = {"losses": [], "val_rounds": [], "epoch_images": []}
val_loader = train_with_fallback(model, train, args, data_root, ckpt_dir, log)
losses, val_rounds = log["losses"], log["val_rounds"]

# resuming: the last checkpoint into a fresh net
resumed = torch.load(str(ckpt_dir / f"unet_e{args.epochs}.pt"))
loaded = SegNet(3, args.classes, bilinear=args.bilinear)
loaded.load_state_dict(resumed["model"])
model.eval()
with torch.no_grad():
    val_image = next(iter(val_loader))[0][:1]
    prediction = model(val_image).argmax(dim=1)[0]
