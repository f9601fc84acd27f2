"""Neural style transfer with L-BFGS, written for these tests in the way the PyTorch neural
style tutorial is commonly written (modelled on the API usage of that tutorial, not a copy of
it):

- content and style losses as pass-through ``nn.Module``s that store ``self.loss``
  (``F.mse_loss``; Gram matrices from ``view`` / ``torch.mm`` / ``t()`` / ``div``);
- a normalization module (``torch.tensor(t).view(-1, 1, 1)``);
- the loss network assembled from a conv stack's ``children()`` after ``copy.deepcopy``, with
  ``add_module`` names conv_i / relu_i / pool_i (in-place ReLUs replaced) and trimmed after the
  last loss by slicing the ``nn.Sequential``; ``named_children``;
- ``optim.LBFGS([img.requires_grad_()])`` stepping a closure that clamps ``img.data``.

The feature extractor is a small VGG-like ``features`` stack whose weights come from
``linspace`` (no download; torch's run computes the same numbers); the images are 32x32
synthetic stripes (style) and a soft blob (content); ``plt`` is a tiny recorder standing in for
matplotlib. 20 L-BFGS evaluations; every closure call's losses go to ``history``.
"""
import copy
import math

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

use_gpu = torch.cuda.is_available()
device = torch.device("cuda" if use_gpu else "cpu")
SIDE = 32


class PlotRecorder:
    """Keeps the shape of every image it is asked to show; everything else is a no-op."""

    shown = []

    @classmethod
    def imshow(cls, picture):
        cls.shown.append(tuple(picture.shape))

    @staticmethod
    def _noop(*args, **kwargs):
        return None

    figure = title = pause = ion = ioff = show = _noop


plt = PlotRecorder  # the name plotting code expects


def synthetic(kind):
    rows, cols = torch.meshgrid(torch.linspace(0, 1, SIDE), torch.linspace(0, 1, SIDE),
                                indexing="ij")
    if kind == "style":  # diagonal stripes, a different slant per channel
        planes = [0.5 + 0.5 * torch.sin(2 * math.pi * (4 * cols + k * rows)) for k in range(3)]
    else:  # a soft blob slightly above the centre
        blob = torch.exp(-((cols - 0.5) ** 2 + (rows - 0.45) ** 2) / 0.05)
        planes = [blob, 0.6 * blob, 1 - blob]
    return torch.stack(planes).unsqueeze(0).to(device, torch.float)


def show(batch_img, caption):
    hwc = batch_img.cpu().clone().squeeze(0).permute(1, 2, 0)  # CHW -> HWC for plotting
    plt.figure()
    plt.imshow(hwc)
    plt.title(caption)
    plt.pause(0.001)


style_img, content_img = synthetic("style"), synthetic("content")
assert style_img.size() == content_img.size(), "style and content sizes differ"
plt.ion()
show(style_img, "style")
show(content_img, "content")


def gram(feats):
    n, c, h, w = feats.size()
    flat = feats.view(n * c, h * w)
    return torch.mm(flat, flat.t()).div(n * c * h * w)


class ContentTerm(nn.Module):
    def __init__(self, reference):
        super().__init__()
        self.reference = reference.detach()  # a constant, not part of the graph

    def forward(self, feats):
        self.loss = F.mse_loss(feats, self.reference)
        return feats


class StyleTerm(nn.Module):
    def __init__(self, reference):
        super().__init__()
        self.reference = gram(reference).detach()

    def forward(self, feats):
        self.loss = F.mse_loss(gram(feats), self.reference)
        return feats


class Standardize(nn.Module):
    def __init__(self, centre, spread):
        super().__init__()
        # per-channel constants shaped (C, 1, 1) to broadcast over (N, C, H, W)
        self.centre, self.spread = (torch.tensor(v).view(-1, 1, 1) for v in (centre, spread))

    def forward(self, img):
        shifted = img - self.centre
        return shifted / self.spread


class TinyVGG(nn.Module):
    def __init__(self):
        super().__init__()
        widths = [(3, 8), (8, 8), "pool", (8, 16), (16, 16), "pool", (16, 16)]
        layers = []
        for spec in widths:
            if spec == "pool":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(*spec, 3, padding=1), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*layers)
        with torch.no_grad():  # deterministic "pretrained" weights
            for k, p in enumerate(self.features.parameters(), start=1):
                scale = p[0].numel() ** 0.5 if p.dim() > 1 else 1.0
                wave = torch.linspace(-1, 1, p.numel()).mul(7.3 * k).sin()
                p.copy_(wave.view_as(p) / scale)


backbone = TinyVGG().features.to(device).eval()
mean = torch.tensor([0.485, 0.456, 0.406]).to(device)
std = torch.tensor([0.229, 0.224, 0.225]).to(device)
CONTENT_AT = ["conv_4"]
STYLE_AT = [f"conv_{k}" for k in range(1, 6)]
PREFIXES = ((nn.Conv2d, "conv"), (nn.ReLU, "relu"), (nn.MaxPool2d, "pool"),
            (nn.BatchNorm2d, "bn"))


def build_loss_net(stack, style_ref, content_ref):
    stack = copy.deepcopy(stack)
    net = nn.Sequential(Standardize(mean, std).to(device))
    content_terms, style_terms = [], []
    convs = 0
    for layer in stack.children():
        prefix = next((tag for kind, tag in PREFIXES if isinstance(layer, kind)), None)
        if prefix is None:
            raise RuntimeError(f"unexpected layer {type(layer).__name__}")
        if prefix == "conv":
            convs += 1
        elif prefix == "relu":
            layer = nn.ReLU(inplace=False)  # in place would overwrite what the terms saw
        name = f"{prefix}_{convs}"
        net.add_module(name, layer)
        if name in CONTENT_AT:
            term = ContentTerm(net(content_ref).detach())
            net.add_module(f"content_loss_{convs}", term)
            content_terms.append(term)
        if name in STYLE_AT:
            term = StyleTerm(net(style_ref).detach())
            net.add_module(f"style_loss_{convs}", term)
            style_terms.append(term)
    last = max(k for k, m in enumerate(net) if isinstance(m, (ContentTerm, StyleTerm)))
    return net[:last + 1], style_terms, content_terms


history = []


def transfer(image, steps=20, style_weight=1e6, content_weight=1.0):
    global model_layers
    net, style_terms, content_terms = build_loss_net(backbone, style_img, content_img)
    model_layers = [name for name, _ in net.named_children()]
    lbfgs = optim.LBFGS([image.requires_grad_()])
    calls = [0]

    def closure():
        image.data.clamp_(0, 1)
        lbfgs.zero_grad()
        net(image)
        style = style_weight * sum(t.loss for t in style_terms)
        content = content_weight * sum(t.loss for t in content_terms)
        total = style + content
        total.backward()
        history.append((style.item(), content.item()))
        calls[0] += 1
        return total

    while calls[0] <= steps:
        lbfgs.step(closure)
    image.data.clamp_(0, 1)
    return image


start = content_img.clone()
show(start, "input")
output = transfer(start)
show(output, "output")
plt.ioff()
plt.show()
output_range = tuple(v.item() for v in (output.min(), output.max()))
print(history[0], history[-1], output_range)
