"""Written for these tests in the way fast (feed-forward) style-transfer code for PyTorch is
commonly written (modelled on the API usage of pytorch/examples' fast_neural_style, not a copy of
it): an image-transformation net of reflection-padded convolutions (nn.ReflectionPad2d +
nn.Conv2d), nn.InstanceNorm2d(affine=True) and ReLU, two strided downsamplings, five residual
blocks, two upsample-convolutions (F.interpolate(mode='nearest', scale_factor=2) then a
convolution); a frozen VGG-like loss network (requires_grad_(False); the layer pattern of VGG16's
first 23 feature layers, 8 to 64 channels wide, weights drawn by NumPy) that returns a namedtuple
of its relu1_2, relu2_2, relu3_3 and relu4_3 activations; Gram matrices through view, transpose
and bmm; ImageNet normalization with new_tensor and an in-place div_; a content loss on relu2_2
and a style loss on the Gram matrices with nn.MSELoss, Adam; a Dataset of PNG files under a
DataLoader; checkpoints saved after eval().cpu() and training resumed by to(device).train();
stylizing with torch.load / load_state_dict under no_grad, the output clamped and saved as an
8-bit PNG.

Sizes: 16 synthetic 40x40 PNG images (a bright disk on noise) cropped to 32x32 and a 32x32
striped style image, in a temporary directory that also takes the models and the output;
widths 8, 16, 32; 4 epochs of batch 4 at lr 1e-2, content weight 1e5, style weight 1e10, a
checkpoint every 2 batches.

Sections:
- "(recorded)": the training run (``losses``), its checkpoints and saved model (``trained``),
  the stylized image (``stylized``);
- "(added)": fixed-weight results (NumPy-drawn weights, as jitgrad's random numbers are not
  torch's) to compare with torch.
"""
import os
import tempfile
from collections import namedtuple

import numpy as np
from PIL import Image

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.data import DataLoader, Dataset

rng = np.random.default_rng(0)
torch.manual_seed(0)
device = torch.device("cpu")


# ---------------------------------------------------------------- the transformation net


class PadConv(nn.Module):
    """Reflection padding of k // 2, then a convolution; with ``grow``, a nearest-neighbour
    upsampling first."""

    def __init__(self, c_in, c_out, kernel, stride=1, grow=None):
        super().__init__()
        self.grow = grow
        self.pad = nn.ReflectionPad2d(kernel // 2)
        self.conv = nn.Conv2d(c_in, c_out, kernel, stride)

    def forward(self, x):
        if self.grow:
            x = F.interpolate(x, mode="nearest", scale_factor=self.grow)
        return self.conv(self.pad(x))


def conv_norm_relu(c_in, c_out, kernel, stride=1, grow=None):
    return [PadConv(c_in, c_out, kernel, stride, grow), nn.InstanceNorm2d(c_out, affine=True),
            nn.ReLU()]


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(
            *conv_norm_relu(width, width, 3),
            PadConv(width, width, 3), nn.InstanceNorm2d(width, affine=True))

    def forward(self, x):
        return x + self.body(x)


class StyleNet(nn.Module):
    def __init__(self, widths=(8, 16, 32), blocks=5):
        super().__init__()
        a, b, c = widths
        self.encode = nn.Sequential(*conv_norm_relu(3, a, 9), *conv_norm_relu(a, b, 3, 2),
                                    *conv_norm_relu(b, c, 3, 2))
        self.blocks = nn.Sequential(*(Residual(c) for _ in range(blocks)))
        self.decode = nn.Sequential(*conv_norm_relu(c, b, 3, grow=2),
                                    *conv_norm_relu(b, a, 3, grow=2), PadConv(a, 3, 9))

    def forward(self, x):
        return self.decode(self.blocks(self.encode(x)))


# ---------------------------------------------------------------- the loss network

Taps = namedtuple("Taps", ["relu1_2", "relu2_2", "relu3_3", "relu4_3"])


class FrozenFeatures(nn.Module):
    """VGG16's layer pattern up to relu4_3 (convolutions 3x3, ReLU, 2x2 max pools), narrower,
    its weights given as NumPy arrays; no parameter takes a gradient."""

    plan = [(8, 2), (16, 2), (32, 3), (64, 3)]  # (width, convolutions) per stage

    def __init__(self, weights):
        super().__init__()
        self.stages = nn.ModuleList()
        c_in, k = 3, 0
        for i, (width, count) in enumerate(self.plan):
            layers = [nn.MaxPool2d(2, 2)] if i else []
            for _ in range(count):
                conv = nn.Conv2d(c_in, width, 3, padding=1)
                w, bias = weights[k]
                conv.weight.data.copy_(torch.tensor(w, dtype=torch.float32))
                conv.bias.data.copy_(torch.tensor(bias, dtype=torch.float32))
                layers += [conv, nn.ReLU(inplace=True)]
                c_in, k = width, k + 1
            self.stages.append(nn.Sequential(*layers))
        self.requires_grad_(False)

    def forward(self, x):
        taps = []
        for stage in self.stages:
            x = stage(x)
            taps.append(x)
        return Taps(*taps)


def numpy_weights(plan):
    out, c_in = [], 3
    for width, count in plan:
        for _ in range(count):
            out.append((rng.normal(0.0, (2.0 / (9 * c_in)) ** 0.5, (width, c_in, 3, 3)),
                        rng.normal(0.0, 0.01, width)))
            c_in = width
    return out


def gram(features):
    n, c, h, w = features.shape
    flat = features.view(n, c, h * w)
    return flat.bmm(flat.transpose(1, 2)) / (c * h * w)


def imagenet_normalize(batch):
    """Pixels 0..255 to ImageNet-normalized values; divides ``batch`` by 255 in place."""
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch.div_(255.0)
    return (batch - mean) / std


def style_content_losses(net, loss_net, images, style_grams, content_weight, style_weight):
    mse = nn.MSELoss()
    out = loss_net(imagenet_normalize(net(images)))
    ref = loss_net(imagenet_normalize(images.clone()))
    content = content_weight * mse(out.relu2_2, ref.relu2_2)
    style = 0.0
    for feats, target in zip(out, style_grams):
        style = style + mse(gram(feats), target[: images.shape[0]])
    return content, style_weight * style, out


# ---------------------------------------------------------------- images


def read_rgb(path, size=None):
    """An RGB PNG as a float (3, H, W) tensor of 0..255, center-cropped to ``size``."""
    pixels = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32)
    if size:
        top, left = (pixels.shape[0] - size) // 2, (pixels.shape[1] - size) // 2
        pixels = pixels[top:top + size, left:left + size]
    return torch.from_numpy(pixels.transpose(2, 0, 1).copy())


class PngFolder(Dataset):
    def __init__(self, folder, size):
        self.paths = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                            if f.endswith(".png"))
        self.size = size

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return read_rgb(self.paths[i], self.size)


# ---------------------------------------------------------------- (added) fixed weights
# A StyleNet and a loss network with NumPy weights: the stylized output in float32; in float64
# (where a ReLU input within float32 rounding of 0 cannot flip a gradient) the losses, the
# gradients and two Adam steps.
fixed = StyleNet()
with torch.no_grad():
    for module in fixed.modules():
        if isinstance(module, nn.InstanceNorm2d):
            module.weight.copy_(torch.tensor(1.0 + rng.normal(0.0, 0.1, module.num_features),
                                             dtype=torch.float32))
            module.bias.copy_(torch.tensor(rng.normal(0.0, 0.1, module.num_features),
                                           dtype=torch.float32))
        elif isinstance(module, nn.Conv2d):
            fan_in = module.weight[0].numel()
            for p in (module.weight, module.bias):
                p.copy_(torch.tensor(rng.normal(0.0, fan_in ** -0.5, tuple(p.shape)),
                                     dtype=torch.float32))
loss_weights = numpy_weights(FrozenFeatures.plan)
fixed_loss_net = FrozenFeatures(loss_weights)
fixed_x = torch.tensor(rng.uniform(0, 255, (2, 3, 32, 32)), dtype=torch.float32)
fixed_style = torch.tensor(rng.uniform(0, 255, (1, 3, 32, 32)), dtype=torch.float32)
fixed_results = {"output32": fixed(fixed_x).detach()}
fixed, fixed_loss_net = fixed.double(), fixed_loss_net.double()
style_grams = [gram(f).repeat(2, 1, 1) for f in fixed_loss_net(imagenet_normalize(
    fixed_style.double()))]
fixed_results["gram_style"] = [g.clone() for g in style_grams]
opt = torch.optim.Adam(fixed.parameters(), lr=1e-3)
fixed_results["losses"] = []
for step in range(2):
    opt.zero_grad()
    content, style, feats = style_content_losses(fixed, fixed_loss_net, fixed_x.double(),
                                                 style_grams, 1e5, 1e10)
    (content + style).backward()
    if step == 0:
        fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
        fixed_results["vgg_grads"] = [p.grad for p in fixed_loss_net.parameters()]
        fixed_results["features"] = [f.detach().clone() for f in feats]
    opt.step()
    fixed_results["losses"].append([content.item(), style.item()])
fixed_results["params"] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
fixed_results["feature_names"] = list(feats._fields)
fixed_results["buffers"] = [n for n, _ in fixed.named_buffers()]

# ---------------------------------------------------------------- (recorded) training
data_root = tempfile.mkdtemp()
image_dir = os.path.join(data_root, "content")
os.makedirs(image_dir)
rows, cols = np.mgrid[0:40, 0:40]
for i in range(16):
    pixels = rng.uniform(0, 100, (40, 40, 3))
    r0, c0, radius = rng.integers(10, 30), rng.integers(10, 30), rng.integers(4, 10)
    pixels[(rows - r0) ** 2 + (cols - c0) ** 2 <= radius ** 2] += rng.uniform(50, 150, 3)
    Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(
        os.path.join(image_dir, f"c{i:02d}.png"))
stripes = np.zeros((32, 32, 3), np.uint8)
stripes[..., 0] = 255 * ((rows[:32, :32] + cols[:32, :32]) // 4 % 2)
stripes[..., 2] = 255 - stripes[..., 0]
Image.fromarray(stripes).save(os.path.join(data_root, "stripes.png"))


def train(epochs=4, batch_size=4, lr=1e-2, size=32, save_every=2):
    loader = DataLoader(PngFolder(image_dir, size), batch_size=batch_size, shuffle=True)
    net = StyleNet().to(device)
    loss_net = FrozenFeatures(loss_weights).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr)
    style = read_rgb(os.path.join(data_root, "stripes.png"), size).unsqueeze(0).to(device)
    grams = [gram(f).repeat(batch_size, 1, 1) for f in loss_net(imagenet_normalize(style))]
    ckpt_dir = os.path.join(data_root, "ckpt")
    os.makedirs(ckpt_dir, exist_ok=True)
    record = []
    for epoch in range(epochs):
        net.train()
        for batch_id, images in enumerate(loader, 1):
            optimizer.zero_grad()
            content, style_loss, _ = style_content_losses(net, loss_net, images.to(device),
                                                          grams, 1e5, 1e10)
            (content + style_loss).backward()
            optimizer.step()
            record.append((content.item(), style_loss.item()))
            if batch_id % save_every == 0:
                net.eval().cpu()
                torch.save(net.state_dict(),
                           os.path.join(ckpt_dir, f"epoch{epoch}_batch{batch_id}.pth"))
                net.to(device).train()
    net.eval().cpu()
    path = os.path.join(data_root, "stripes_model.pth")
    torch.save(net.state_dict(), path)
    return net, path, record


def stylize(model_path, image_path, out_path):
    image = read_rgb(image_path).unsqueeze(0).to(device)
    net = StyleNet()
    net.load_state_dict(torch.load(model_path))
    net.to(device).eval()
    with torch.no_grad():
        out = net(image).cpu()
    pixels = out[0].clamp(0, 255).numpy().transpose(1, 2, 0).astype("uint8")
    Image.fromarray(pixels).save(out_path)
    return image, out


model, model_path, losses = train()
trained = {"model": model, "path": model_path}
_input, _output = stylize(model_path, os.path.join(image_dir, "c00.png"),
                          os.path.join(data_root, "out.png"))
stylized = {"input": _input, "output": _output}
