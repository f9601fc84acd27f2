# ruff: noqa: B007, B008, C408, E402, E501, E722, F401, F403, F405, F811, F841, N801, N802, N803, N806, N812, N817, S110, UP008, UP032 (milesial's code as is)
"""milesial/Pytorch-UNet: unet/unet_parts.py (DoubleConv of Conv2d(bias=False) + BatchNorm2d +
ReLU(inplace=True), Down through MaxPool2d, Up through nn.Upsample(scale_factor=2,
mode='bilinear', align_corners=True) or nn.ConvTranspose2d, F.pad to the skip's size,
torch.cat, OutConv), unet/unet_model.py (UNet and its use_checkpointing), utils/dice_score.py
(dice_coeff, multiclass_dice_coeff, dice_loss), utils/data_loading.py (BasicDataset and
CarvanaDataset over PIL images, with a multiprocessing Pool scanning the masks' values),
evaluate.py (under torch.inference_mode, F.one_hot(...).permute(0, 3, 1, 2)) and train.py
(random_split with a seeded Generator, DataLoader, RMSprop(weight_decay, momentum,
foreach=True), ReduceLROnPlateau('max'), torch.cuda.amp.GradScaler(enabled=False),
torch.autocast(enabled=False), CrossEntropyLoss + dice_loss on F.softmax(...).float(),
clip_grad_norm_, model.to(memory_format=torch.channels_last), torch.save of the state_dict
with its mask_values, and the --load path's torch.load).

Changes: the files are one script (unet_parts.py, unet_model.py, dice_score.py,
data_loading.py, evaluate.py, train.py); the Carvana images are a download, so 40 synthetic
64x64 RGB images (a red disk or square on noise) and their masks (0/255) are written as PNG
files to a temporary directory, which also takes the checkpoints; the UNet's widths are 8, 16,
32, 64, 128 (not 64 ... 1024); tqdm and wandb are not installed here, so small stand-ins count
the bars' updates and record what would be logged; torchvision's transforms, which train.py
imports and never uses, are not imported; the command line is parsed from a list
(2 epochs, batch 4, lr 1e-3, 20% validation, not 5, 1, 1e-5, 10%); np.random.seed /
torch.manual_seed for repeatable runs. Sections marked "(added)" are not milesial's: they
record fixed-weight results to compare with torch, and what use_checkpointing does.
"""
import argparse
import copy
import logging
import os
import random
import sys
import tempfile

import numpy as np
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
# (torchvision's transforms and transforms.functional: imported as transforms and TF, unused)
from pathlib import Path
from jitgrad import Tensor
from jitgrad import optim
from jitgrad.utils.data import DataLoader, Dataset, random_split
# from tqdm import tqdm
# import wandb
from PIL import Image
from functools import lru_cache
from functools import partial
from itertools import repeat
from multiprocessing import Pool
from os import listdir
from os.path import splitext, isfile, join

np.random.seed(0)
torch.manual_seed(0)


class tqdm:  # (stand-in for tqdm.tqdm: iterates, counts updates, keeps the postfix)
    bars = []

    def __init__(self, iterable=None, total=None, desc='', unit='it', leave=True):
        self.iterable, self.total, self.desc, self.n, self.postfix = iterable, total, desc, 0, {}
        tqdm.bars.append(self)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        self.n += n

    def set_postfix(self, **kwargs):
        self.postfix = kwargs


class wandb:  # (stand-in for wandb: records what would be logged)
    runs = []

    class Histogram:
        def __init__(self, value):
            self.shape = tuple(value.shape)

    class Image:
        def __init__(self, value):
            self.shape = tuple(value.shape)

    class _Config(dict):
        def update(self, d):
            dict.update(self, d)

    class _Run:
        def __init__(self):
            self.config, self.logged = wandb._Config(), []

        def log(self, d):
            self.logged.append(d)

    @staticmethod
    def init(project=None, resume=None, anonymous=None):
        run = wandb._Run()
        wandb.runs.append(run)
        return run


# ---------------------------------------------------------------- unet/unet_parts.py
""" Parts of the U-Net model """


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()

        # if bilinear, use the normal convolutions to reduce the number of channels
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        # if you have padding issues, see
        # https://github.com/HaiyongJiang/U-Net-Pytorch-Unstructured-Buggy/commit/0e854509c2cea854e247a9c615f175f76fbb2e3a
        # https://github.com/xiaopeng-liao/Pytorch-UNet/commit/8ebac70e633bac59fc22bb5195e513d5832fb3bd
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


# ---------------------------------------------------------------- unet/unet_model.py
""" Full assembly of the parts to form the complete network """


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False):
        super(UNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear

        self.inc = (DoubleConv(n_channels, 8))
        self.down1 = (Down(8, 16))
        self.down2 = (Down(16, 32))
        self.down3 = (Down(32, 64))
        factor = 2 if bilinear else 1
        self.down4 = (Down(64, 128 // factor))
        self.up1 = (Up(128, 64 // factor, bilinear))
        self.up2 = (Up(64, 32 // factor, bilinear))
        self.up3 = (Up(32, 16 // factor, bilinear))
        self.up4 = (Up(16, 8, bilinear))
        self.outc = (OutConv(8, n_classes))

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up1(x5, x4)
        x = self.up2(x, x3)
        x = self.up3(x, x2)
        x = self.up4(x, x1)
        logits = self.outc(x)
        return logits

    def use_checkpointing(self):
        self.inc = torch.utils.checkpoint(self.inc)
        self.down1 = torch.utils.checkpoint(self.down1)
        self.down2 = torch.utils.checkpoint(self.down2)
        self.down3 = torch.utils.checkpoint(self.down3)
        self.down4 = torch.utils.checkpoint(self.down4)
        self.up1 = torch.utils.checkpoint(self.up1)
        self.up2 = torch.utils.checkpoint(self.up2)
        self.up3 = torch.utils.checkpoint(self.up3)
        self.up4 = torch.utils.checkpoint(self.up4)
        self.outc = torch.utils.checkpoint(self.outc)


# ---------------------------------------------------------------- utils/dice_score.py


def dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all batches, or for a single mask
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first

    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)

    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)

    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all classes
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input: Tensor, target: Tensor, multiclass: bool = False):
    # Dice loss (objective to minimize) between 0 and 1
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


# ---------------------------------------------------------------- utils/data_loading.py


def load_image(filename):
    ext = splitext(filename)[1]
    if ext == '.npy':
        return Image.fromarray(np.load(filename))
    elif ext in ['.pt', '.pth']:
        return Image.fromarray(torch.load(filename).numpy())
    else:
        return Image.open(filename)


def unique_mask_values(idx, mask_dir, mask_suffix):
    mask_file = list(mask_dir.glob(idx + mask_suffix + '.*'))[0]
    mask = np.asarray(load_image(mask_file))
    if mask.ndim == 2:
        return np.unique(mask)
    elif mask.ndim == 3:
        mask = mask.reshape(-1, mask.shape[-1])
        return np.unique(mask, axis=0)
    else:
        raise ValueError(f'Loaded masks should have 2 or 3 dimensions, found {mask.ndim}')


class BasicDataset(Dataset):
    def __init__(self, images_dir: str, mask_dir: str, scale: float = 1.0, mask_suffix: str = ''):
        self.images_dir = Path(images_dir)
        self.mask_dir = Path(mask_dir)
        assert 0 < scale <= 1, 'Scale must be between 0 and 1'
        self.scale = scale
        self.mask_suffix = mask_suffix

        self.ids = [splitext(file)[0] for file in listdir(images_dir) if isfile(join(images_dir, file)) and not file.startswith('.')]
        if not self.ids:
            raise RuntimeError(f'No input file found in {images_dir}, make sure you put your images there')

        logging.info(f'Creating dataset with {len(self.ids)} examples')
        logging.info('Scanning mask files to determine unique values')
        with Pool() as p:
            unique = list(tqdm(
                p.imap(partial(unique_mask_values, mask_dir=self.mask_dir, mask_suffix=self.mask_suffix), self.ids),
                total=len(self.ids)
            ))

        self.mask_values = list(sorted(np.unique(np.concatenate(unique), axis=0).tolist()))
        logging.info(f'Unique mask values: {self.mask_values}')

    def __len__(self):
        return len(self.ids)

    @staticmethod
    def preprocess(mask_values, pil_img, scale, is_mask):
        w, h = pil_img.size
        newW, newH = int(scale * w), int(scale * h)
        assert newW > 0 and newH > 0, 'Scale is too small, resized images would have no pixel'
        pil_img = pil_img.resize((newW, newH), resample=Image.NEAREST if is_mask else Image.BICUBIC)
        img = np.asarray(pil_img)

        if is_mask:
            mask = np.zeros((newH, newW), dtype=np.int64)
            for i, v in enumerate(mask_values):
                if img.ndim == 2:
                    mask[img == v] = i
                else:
                    mask[(img == v).all(-1)] = i

            return mask

        else:
            if img.ndim == 2:
                img = img[np.newaxis, ...]
            else:
                img = img.transpose((2, 0, 1))

            if (img > 1).any():
                img = img / 255.0

            return img

    def __getitem__(self, idx):
        name = self.ids[idx]
        mask_file = list(self.mask_dir.glob(name + self.mask_suffix + '.*'))
        img_file = list(self.images_dir.glob(name + '.*'))

        assert len(img_file) == 1, f'Either no image or multiple images found for the ID {name}: {img_file}'
        assert len(mask_file) == 1, f'Either no mask or multiple masks found for the ID {name}: {mask_file}'
        mask = load_image(mask_file[0])
        img = load_image(img_file[0])

        assert img.size == mask.size, \
            f'Image and mask {name} should be the same size, but are {img.size} and {mask.size}'

        img = self.preprocess(self.mask_values, img, self.scale, is_mask=False)
        mask = self.preprocess(self.mask_values, mask, self.scale, is_mask=True)

        return {
            'image': torch.as_tensor(img.copy()).float().contiguous(),
            'mask': torch.as_tensor(mask.copy()).long().contiguous()
        }


class CarvanaDataset(BasicDataset):
    def __init__(self, images_dir, mask_dir, scale=1):
        super().__init__(images_dir, mask_dir, scale, mask_suffix='_mask')


# ---------------------------------------------------------------- evaluate.py


@torch.inference_mode()
def evaluate(net, dataloader, device, amp):
    net.eval()
    num_val_batches = len(dataloader)
    dice_score = 0

    # iterate over the validation set
    with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
        for batch in tqdm(dataloader, total=num_val_batches, desc='Validation round', unit='batch', leave=False):
            image, mask_true = batch['image'], batch['mask']

            # move images and labels to correct device and type
            image = image.to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
            mask_true = mask_true.to(device=device, dtype=torch.long)

            # predict the mask
            mask_pred = net(image)

            if net.n_classes == 1:
                assert mask_true.min() >= 0 and mask_true.max() <= 1, 'True mask indices should be in [0, 1]'
                mask_pred = (F.sigmoid(mask_pred) > 0.5).float()
                # compute the Dice score
                dice_score += dice_coeff(mask_pred, mask_true, reduce_batch_first=False)
            else:
                assert mask_true.min() >= 0 and mask_true.max() < net.n_classes, 'True mask indices should be in [0, n_classes['
                # convert to one-hot format
                mask_true = F.one_hot(mask_true, net.n_classes).permute(0, 3, 1, 2).float()
                mask_pred = F.one_hot(mask_pred.argmax(dim=1), net.n_classes).permute(0, 3, 1, 2).float()
                # compute the Dice score, ignoring background
                dice_score += multiclass_dice_coeff(mask_pred[:, 1:], mask_true[:, 1:], reduce_batch_first=False)

    net.train()
    return dice_score / max(num_val_batches, 1)


# ---------------------------------------------------------------- (added) fixed weights
# A fixed-weight copy of each variant (weights drawn by NumPy: jitgrad's random numbers are not
# torch's), on 36x36 inputs (36, 18, 9, 4, 2: the 4 -> 8 upsampling is padded to 9, and the
# deepest BatchNorm2d sees 8 values a channel, not a badly conditioned 2). In float32, the
# script's dtype: the forward, train.py's loss and evaluate's Dice score. In float64: the
# gradients, the clipped norm and two RMSprop steps through the disabled GradScaler (in float32
# these jump with rounding: a ReLU input within rounding of 0 passes or stops its gradient, and
# RMSprop's first step, lr * g / (0.1 |g| + eps), moves a weight whose gradient is within
# rounding of 0 by 10 lr either way). ReduceLROnPlateau's reaction to a score sequence.
_rng = np.random.default_rng(0)


def _fixed_unet(n_classes, bilinear):
    net = UNet(n_channels=3, n_classes=n_classes, bilinear=bilinear)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if p.dim() == 1 and 'double_conv' in name:  # (the BatchNorm2d's affine parameters)
                p.copy_(torch.tensor(1.0 * ('weight' in name) + _rng.normal(0.0, 0.1, tuple(p.shape)), dtype=torch.float32))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 1
                p.copy_(torch.tensor(_rng.normal(0.0, 1.0 / np.sqrt(fan_in), tuple(p.shape)), dtype=torch.float32))
    return net.to(memory_format=torch.channels_last)


def _train_loss(model, masks_pred, true_masks):  # (train.py's lines)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    if model.n_classes == 1:
        loss = criterion(masks_pred.squeeze(1), true_masks.float())
        loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float(), multiclass=False)
    else:
        loss = criterion(masks_pred, true_masks)
        loss += dice_loss(
            F.softmax(masks_pred, dim=1).float(),
            F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
            multiclass=True
        )
    return loss


fixed_images = torch.tensor(_rng.uniform(0.0, 1.0, (2, 3, 36, 36)), dtype=torch.float32)
fixed_masks = torch.tensor(_rng.integers(0, 2, (2, 36, 36)), dtype=torch.long)
fixed_results = {}
for _bilinear in (False, True):
    for _n_classes in (2, 1):
        _key = f"{'bilinear' if _bilinear else 'transposed'}_{_n_classes}"
        _r = fixed_results[_key] = {'losses': [], 'norms': []}
        _net = _fixed_unet(_n_classes, _bilinear)
        _net64 = copy.deepcopy(_net).double()
        # float32
        images = fixed_images.to(dtype=torch.float32, memory_format=torch.channels_last)
        _r['channels_last'] = images.is_contiguous(memory_format=torch.channels_last)
        with torch.autocast('cpu', enabled=False):
            masks_pred = _net(images)
            _r['logits'] = masks_pred.detach().clone()
            _r['loss'] = _train_loss(_net, masks_pred, fixed_masks).item()
        _loader = DataLoader([{'image': i, 'mask': m} for i, m in zip(fixed_images, fixed_masks)], batch_size=1)
        try:  # (with one class, evaluate compares (B, 1, H, W) predictions with (B, H, W) masks)
            _r['dice'] = evaluate(_net, _loader, torch.device('cpu'), False).item()
        except AssertionError:
            _r['dice'] = 'AssertionError'
        _r['training_after_evaluate'] = _net.training
        # float64
        _optimizer = optim.RMSprop(_net64.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.999, foreach=True)
        # (train.py's spelling, and for the bilinear nets the one its FutureWarning suggests)
        _scaler = torch.amp.GradScaler('cuda', enabled=False) if _bilinear else torch.cuda.amp.GradScaler(enabled=False)
        for _step in range(2):
            masks_pred = _net64(images.double())
            loss = _train_loss(_net64, masks_pred, fixed_masks)
            _optimizer.zero_grad(set_to_none=True)
            _r['scaled_is_loss'] = _scaler.scale(loss) is loss
            _scaler.scale(loss).backward()
            _scaler.unscale_(_optimizer)
            _r['norms'].append(torch.nn.utils.clip_grad_norm_(_net64.parameters(), 1.0).item())
            if _step == 0:
                _r['grads'] = {n: p.grad.clone() for n, p in _net64.named_parameters()}
            _scaler.step(_optimizer)
            _scaler.update()
            _r['losses'].append(loss.item())
        _r['params'] = {n: p.detach().clone() for n, p in _net64.named_parameters()}
        _r['running'] = {n: b.clone() for n, b in _net64.named_buffers() if 'running' in n}
        _r['scale'] = _scaler.get_scale()
        _r['dtypes'] = [str(loss.dtype), str(masks_pred.dtype)]
fixed_results['dice_coeff'] = [
    dice_coeff(fixed_images[0, 0], fixed_images[1, 0]).item(),  # (a single mask)
    dice_coeff(fixed_images[:, 0], fixed_images[:, 1], reduce_batch_first=True).item(),
    dice_coeff(torch.zeros(2, 4, 4), torch.zeros(2, 4, 4)).item(),  # (empty sets: 1)
    multiclass_dice_coeff(fixed_images[:, :2], fixed_images[:, 1:]).item(),
    dice_loss(fixed_images[:, :2], fixed_images[:, 1:], multiclass=True).item(),
]
_optimizer = optim.RMSprop([nn.Parameter(torch.zeros(1))], lr=1e-3, weight_decay=1e-8, momentum=0.999, foreach=True)
_scheduler = optim.lr_scheduler.ReduceLROnPlateau(_optimizer, 'max', patience=5)
fixed_results['plateau_lrs'] = []
for _score in [0.1, 0.2, 0.2, 0.15, 0.1, 0.2, 0.19, 0.18, 0.2, 0.21, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]:
    _scheduler.step(torch.tensor(_score))
    fixed_results['plateau_lrs'].append(_optimizer.param_groups[0]['lr'])

# ---------------------------------------------------------------- (added) synthetic data
# 40 RGB images 64x64: a red disk or square on noise; masks 0 (background) / 255 (the shape)
data_root = Path(tempfile.mkdtemp())
_yy, _xx = np.mgrid[0:64, 0:64]
os.makedirs(data_root / 'imgs'), os.makedirs(data_root / 'masks')
for _i in range(40):
    _cy, _cx, _rad = _rng.integers(16, 48), _rng.integers(16, 48), _rng.integers(6, 14)
    if _i % 2:
        _shape = (_yy - _cy) ** 2 + (_xx - _cx) ** 2 <= _rad ** 2
    else:
        _shape = (abs(_yy - _cy) <= _rad) & (abs(_xx - _cx) <= _rad)
    _img = _rng.uniform(0, 120, (64, 64, 3))
    _img[_shape] = _img[_shape] * 0.5 + np.array([200.0, 40.0, 40.0])
    Image.fromarray(_img.clip(0, 255).astype(np.uint8)).save(data_root / 'imgs' / f'{_i:03d}.png')
    Image.fromarray((_shape * 255).astype(np.uint8)).save(data_root / 'masks' / f'{_i:03d}_mask.png')

# ---------------------------------------------------------------- train.py

dir_img = data_root / 'imgs'  # Path('./data/imgs/')
dir_mask = data_root / 'masks'  # Path('./data/masks/')
dir_checkpoint = data_root / 'checkpoints'  # Path('./checkpoints/')

losses = []  # (added)


def train_model(
        model,
        device,
        epochs: int = 5,
        batch_size: int = 1,
        learning_rate: float = 1e-5,
        val_percent: float = 0.1,
        save_checkpoint: bool = True,
        img_scale: float = 0.5,
        amp: bool = False,
        weight_decay: float = 1e-8,
        momentum: float = 0.999,
        gradient_clipping: float = 1.0,
):
    # 1. Create dataset
    try:
        dataset = CarvanaDataset(dir_img, dir_mask, img_scale)
    except (AssertionError, RuntimeError, IndexError):
        dataset = BasicDataset(dir_img, dir_mask, img_scale)

    # 2. Split into train / validation partitions
    n_val = int(len(dataset) * val_percent)
    n_train = len(dataset) - n_val
    train_set, val_set = random_split(dataset, [n_train, n_val], generator=torch.Generator().manual_seed(0))

    # 3. Create data loaders
    loader_args = dict(batch_size=batch_size, num_workers=os.cpu_count(), pin_memory=True)
    train_loader = DataLoader(train_set, shuffle=True, **loader_args)
    val_loader = DataLoader(val_set, shuffle=False, drop_last=True, **loader_args)

    # (Initialize logging)
    experiment = wandb.init(project='U-Net', resume='allow', anonymous='must')
    experiment.config.update(
        dict(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
             val_percent=val_percent, save_checkpoint=save_checkpoint, img_scale=img_scale, amp=amp)
    )

    logging.info(f'''Starting training:
        Epochs:          {epochs}
        Batch size:      {batch_size}
        Learning rate:   {learning_rate}
        Training size:   {n_train}
        Validation size: {n_val}
        Checkpoints:     {save_checkpoint}
        Device:          {device.type}
        Images scaling:  {img_scale}
        Mixed Precision: {amp}
    ''')

    # 4. Set up the optimizer, the loss, the learning rate scheduler and the loss scaling for AMP
    optimizer = optim.RMSprop(model.parameters(),
                              lr=learning_rate, weight_decay=weight_decay, momentum=momentum, foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=5)  # goal: maximize Dice score
    grad_scaler = torch.cuda.amp.GradScaler(enabled=amp)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    global_step = 0

    # 5. Begin training
    for epoch in range(1, epochs + 1):
        model.train()
        epoch_loss = 0
        with tqdm(total=n_train, desc=f'Epoch {epoch}/{epochs}', unit='img') as pbar:
            for batch in train_loader:
                images, true_masks = batch['image'], batch['mask']

                assert images.shape[1] == model.n_channels, \
                    f'Network has been defined with {model.n_channels} input channels, ' \
                    f'but loaded images have {images.shape[1]} channels. Please check that ' \
                    'the images are loaded correctly.'

                images = images.to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
                true_masks = true_masks.to(device=device, dtype=torch.long)

                with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
                    masks_pred = model(images)
                    if model.n_classes == 1:
                        loss = criterion(masks_pred.squeeze(1), true_masks.float())
                        loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float(), multiclass=False)
                    else:
                        loss = criterion(masks_pred, true_masks)
                        loss += dice_loss(
                            F.softmax(masks_pred, dim=1).float(),
                            F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                            multiclass=True
                        )

                optimizer.zero_grad(set_to_none=True)
                grad_scaler.scale(loss).backward()
                grad_scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
                grad_scaler.step(optimizer)
                grad_scaler.update()

                pbar.update(images.shape[0])
                global_step += 1
                epoch_loss += loss.item()
                losses.append(loss.item())  # (added)
                experiment.log({
                    'train loss': loss.item(),
                    'step': global_step,
                    'epoch': epoch
                })
                pbar.set_postfix(**{'loss (batch)': loss.item()})

                # Evaluation round
                division_step = (n_train // (5 * batch_size))
                if division_step > 0:
                    if global_step % division_step == 0:
                        histograms = {}
                        for tag, value in model.named_parameters():
                            tag = tag.replace('/', '.')
                            if not (torch.isinf(value) | torch.isnan(value)).any():
                                histograms['Weights/' + tag] = wandb.Histogram(value.data.cpu())
                            if not (torch.isinf(value.grad) | torch.isnan(value.grad)).any():
                                histograms['Gradients/' + tag] = wandb.Histogram(value.grad.data.cpu())

                        val_score = evaluate(model, val_loader, device, amp)
                        scheduler.step(val_score)

                        logging.info('Validation Dice score: {}'.format(val_score))
                        try:
                            experiment.log({
                                'learning rate': optimizer.param_groups[0]['lr'],
                                'validation Dice': val_score,
                                'images': wandb.Image(images[0].cpu()),
                                'masks': {
                                    'true': wandb.Image(true_masks[0].float().cpu()),
                                    'pred': wandb.Image(masks_pred.argmax(dim=1)[0].float().cpu()),
                                },
                                'step': global_step,
                                'epoch': epoch,
                                **histograms
                            })
                        except:
                            pass

        if save_checkpoint:
            Path(dir_checkpoint).mkdir(parents=True, exist_ok=True)
            state_dict = model.state_dict()
            state_dict['mask_values'] = dataset.mask_values
            torch.save(state_dict, str(dir_checkpoint / 'checkpoint_epoch{}.pth'.format(epoch)))
            logging.info(f'Checkpoint {epoch} saved!')


def get_args():
    parser = argparse.ArgumentParser(description='Train the UNet on images and target masks')
    parser.add_argument('--epochs', '-e', metavar='E', type=int, default=5, help='Number of epochs')
    parser.add_argument('--batch-size', '-b', dest='batch_size', metavar='B', type=int, default=1, help='Batch size')
    parser.add_argument('--learning-rate', '-l', metavar='LR', type=float, default=1e-5,
                        help='Learning rate', dest='lr')
    parser.add_argument('--load', '-f', type=str, default=False, help='Load model from a .pth file')
    parser.add_argument('--scale', '-s', type=float, default=0.5, help='Downscaling factor of the images')
    parser.add_argument('--validation', '-v', dest='val', type=float, default=10.0,
                        help='Percent of the data that is used as validation (0-100)')
    parser.add_argument('--amp', action='store_true', default=False, help='Use mixed precision')
    parser.add_argument('--bilinear', action='store_true', default=False, help='Use bilinear upsampling')
    parser.add_argument('--classes', '-c', type=int, default=2, help='Number of classes')

    return parser.parse_args(['-e', '2', '-b', '4', '-l', '1e-3', '-v', '20'])  # (parse_args())


if __name__ == '__main__':
    args = get_args()

    logging.basicConfig(level=logging.INFO, format='%(levelname)s: %(message)s')
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    logging.info(f'Using device {device}')

    # Change here to adapt to your data
    # n_channels=3 for RGB images
    # n_classes is the number of probabilities you want to get per pixel
    model = UNet(n_channels=3, n_classes=args.classes, bilinear=args.bilinear)
    model = model.to(memory_format=torch.channels_last)

    logging.info(f'Network:\n'
                 f'\t{model.n_channels} input channels\n'
                 f'\t{model.n_classes} output channels (classes)\n'
                 f'\t{"Bilinear" if model.bilinear else "Transposed conv"} upscaling')

    if args.load:
        state_dict = torch.load(args.load, map_location=device)
        del state_dict['mask_values']
        model.load_state_dict(state_dict)
        logging.info(f'Model loaded from {args.load}')

    model.to(device=device)
    try:
        train_model(
            model=model,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            device=device,
            img_scale=args.scale,
            val_percent=args.val / 100,
            amp=args.amp
        )
    except torch.cuda.OutOfMemoryError:
        logging.error('Detected OutOfMemoryError! '
                      'Enabling checkpointing to reduce memory usage, but this slows down training. '
                      'Consider enabling AMP (--amp) for fast and memory efficient training')
        torch.cuda.empty_cache()
        model.use_checkpointing()
        train_model(
            model=model,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            device=device,
            img_scale=args.scale,
            val_percent=args.val / 100,
            amp=args.amp
        )

    # (added) the --load path: the last checkpoint back into a fresh model, as the script's
    # second run with -f does
    loaded = UNet(n_channels=3, n_classes=args.classes, bilinear=args.bilinear)
    state_dict = torch.load(str(dir_checkpoint / 'checkpoint_epoch{}.pth'.format(args.epochs)), map_location=device)
    mask_values = state_dict.pop('mask_values')
    loaded.load_state_dict(state_dict)

    # (added) use_checkpointing calls the module torch.utils.checkpoint (the function is
    # torch.utils.checkpoint.checkpoint): what the OutOfMemoryError branch would meet
    try:
        model.use_checkpointing()
    except TypeError as e:
        use_checkpointing_error = str(e)
    # (added) what it means to do: each stage's activations recomputed in the backward (in
    # float64, as the fixed weights' gradients above)
    checkpointed = {}
    fixed = _fixed_unet(2, True).double()
    for _use in (False, True):
        _x = fixed_images.double().requires_grad_()
        if _use:
            x1 = torch.utils.checkpoint.checkpoint(fixed.inc, _x, use_reentrant=False)
            x2 = torch.utils.checkpoint.checkpoint(fixed.down1, x1, use_reentrant=False)
            x3 = torch.utils.checkpoint.checkpoint(fixed.down2, x2, use_reentrant=False)
            x4 = torch.utils.checkpoint.checkpoint(fixed.down3, x3, use_reentrant=False)
            x5 = torch.utils.checkpoint.checkpoint(fixed.down4, x4, use_reentrant=False)
            _h = torch.utils.checkpoint.checkpoint(fixed.up1, x5, x4, use_reentrant=False)
            _h = torch.utils.checkpoint.checkpoint(fixed.up2, _h, x3, use_reentrant=False)
            _h = torch.utils.checkpoint.checkpoint(fixed.up3, _h, x2, use_reentrant=False)
            _h = torch.utils.checkpoint.checkpoint(fixed.up4, _h, x1, use_reentrant=False)
            _out = torch.utils.checkpoint.checkpoint(fixed.outc, _h, use_reentrant=False)
        else:
            _out = fixed(_x)
        fixed.zero_grad()
        (_out ** 2).mean().backward()
        checkpointed[_use] = {'out': _out.detach(), 'x_grad': _x.grad,
                              'grads': {n: p.grad.clone() for n, p in fixed.named_parameters()}}
    fixed_results['checkpoint'] = checkpointed[True]
