"""A convolution and a batch norm fused into one custom ``autograd.Function`` that keeps only
its input for the backward, written for these tests in the way the PyTorch "fusing convolution
and batch norm using custom Function" tutorial is commonly written (modelled on the API usage of
that tutorial, not a copy of it):

- hand-written conv2d / batch-norm backwards (``F.conv2d`` on transposed batches,
  ``F.conv_transpose2d``), ``@once_differentiable``, ``gradcheck`` (also ``fast_mode=False``);
- a fused Function that recomputes the convolution in its backward and returns trailing Nones;
- an ``nn.Module`` owning the weight (``nn.Parameter(torch.empty(..., device=, dtype=))``,
  ``init.kaiming_uniform_``), in a small classifier trained with ``Adadelta`` + ``StepLR``
  against the same net built from ``nn.Conv2d`` + ``nn.BatchNorm2d(affine=False,
  track_running_stats=False)``; ``F.relu_``, dropout, ``nll_loss``, ``inference_mode``.
"""
import math

import jitgrad as torch
from jitgrad import nn, optim
from jitgrad.autograd.function import once_differentiable
from jitgrad.nn import functional as F
from jitgrad.optim.lr_scheduler import StepLR

torch.manual_seed(0)
DIMS = (0, 2, 3)  # batch norm statistics run over N, H, W


def per_channel(v):
    return v.view(1, -1, 1, 1)


def conv_grads(g, inp, w):
    """Gradients of F.conv2d(inp, w) (stride 1, no padding) for an upstream g."""
    d_inp = F.conv_transpose2d(g, w)
    d_w = F.conv2d(inp.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
    return d_inp, d_w


def norm_stats(y, eps):
    count = y.numel() // y.size(1)
    mean = y.mean(dim=DIMS)
    std = y.var(dim=DIMS, unbiased=True).sqrt()
    return mean, std, count


def normalize(y, mean, std, eps):
    out = y - per_channel(mean)
    out /= per_channel(std + eps)
    return out


def norm_grad(g, y, mean, std, count, eps):
    """Backward of (y - mean) / (std + eps) with the unbiased std, per channel."""
    centred = y - per_channel(mean)
    direct = (g - per_channel(g.mean(dim=DIMS))) / per_channel(std + eps)
    # d std / d y = centred / ((count - 1) * std)
    via_std = (g * centred).sum(dim=DIMS) / ((count - 1) * std * (std + eps) ** 2)
    return direct - per_channel(via_std) * centred


class Conv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, w):
        ctx.save_for_backward(inp, w)
        return F.conv2d(inp, w)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return conv_grads(g, *ctx.saved_tensors)


class Norm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y, eps=1e-3):
        mean, std, count = norm_stats(y, eps)
        ctx.save_for_backward(y)
        ctx.stats = (mean, std, count, eps)
        return normalize(y, mean, std, eps)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return norm_grad(g, y, *ctx.stats), None


class ConvNorm(torch.autograd.Function):
    """conv2d then batch norm; only the conv input is kept, the conv is redone backwards."""

    @staticmethod
    def forward(ctx, inp, w, eps=1e-3):
        assert inp.ndim == 4
        ctx.save_for_backward(inp, w)
        y = F.conv2d(inp, w)
        mean, std, count = norm_stats(y, eps)
        ctx.stats = (mean, std, count, eps)
        return normalize(y, mean, std, eps)

    @staticmethod
    def backward(ctx, g):
        inp, w = ctx.saved_tensors
        g_y = norm_grad(g, F.conv2d(inp, w), *ctx.stats)
        d_inp, d_w = conv_grads(g_y, inp, w)
        return d_inp, d_w, None, None  # (a trailing extra None is allowed)


double = {"dtype": torch.double, "requires_grad": True}
conv_check = torch.autograd.gradcheck(
    Conv.apply, (torch.rand(2, 3, 5, 5, **double), torch.rand(3, 3, 3, 3, **double)))
bn_check = torch.autograd.gradcheck(Norm.apply, (torch.rand(1, 2, 3, 4, **double),),
                                    fast_mode=False)
fused_check = torch.autograd.gradcheck(
    ConvNorm.apply, (torch.rand(2, 3, 4, 4, **double), torch.rand(3, 3, 3, 3, **double)))


class ConvNormLayer(nn.Module):
    def __init__(self, c_in, c_out, k, eps=1e-3, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(c_out, c_in, k, k, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        # the same draw nn.Conv2d makes, so both nets below start from equal weights
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, inp):
        return ConvNorm.apply(inp, self.weight, self.eps)


def conv_then_norm(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, bias=False),
                         nn.BatchNorm2d(c_out, affine=False, track_running_stats=False))


class BlockClassifier(nn.Module):
    def __init__(self, fused):
        super().__init__()
        block = ConvNormLayer if fused else (lambda a, b, _k: conv_then_norm(a, b))
        self.block1 = block(1, 4, 3)
        self.block2 = block(4, 8, 3)
        self.hidden = nn.Linear(8 * 4 * 4, 32)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(32, 10)

    def forward(self, img):
        h = F.relu_(self.block1(img))
        h = F.max_pool2d(F.relu_(self.block2(h)), 2)
        h = F.relu_(self.drop(self.hidden(h.flatten(1))))
        return F.log_softmax(self.out(h), dim=1)


# synthetic digits: class k lights up a 3x3 patch at its own place on a noisy 12x12 canvas
patches = torch.zeros(10, 1, 12, 12)
for k in range(10):
    top, left = (k // 4) * 4, (k % 4) * 3
    patches[k, 0, top:top + 3, left:left + 3] = 3.0
classes = torch.randint(0, 10, (64,))
pictures = torch.randn(64, 1, 12, 12) + patches[classes]
batches = list(zip(pictures.split(16), classes.split(16)))


def one_epoch(net, opt, dev):
    net.train()
    total = 0.0
    for xb, yb in batches:
        xb, yb = xb.to(dev), yb.to(dev)
        opt.zero_grad()
        loss = F.nll_loss(net(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item()
    return total / len(batches)


def evaluate(net, dev):
    net.eval()
    nll, hits = 0.0, 0
    with torch.inference_mode():
        for xb, yb in batches:
            logp = net(xb.to(dev))
            yb = yb.to(dev)
            nll += F.nll_loss(logp, yb, reduction="sum").item()
            guess = logp.argmax(dim=1, keepdim=True)
            hits += guess.eq(yb.view_as(guess)).sum().item()
    return nll / 64, hits / 64


dev = "cpu"
histories = {}
for fused in (True, False):
    torch.manual_seed(2024)
    net = BlockClassifier(fused).to(dev)
    opt = optim.Adadelta(net.parameters(), lr=1.0)
    sched = StepLR(opt, step_size=1, gamma=0.7)
    curve = []
    for _ in range(8):
        curve.append(one_epoch(net, opt, dev))
        sched.step()
    histories[fused] = (curve, evaluate(net, dev))
    print("fused" if fused else "modules", curve[0], curve[-1], histories[fused][1])

# the fused Function on fixed float64 data, recorded for the comparison with torch
fx = torch.cos(torch.arange(150, dtype=torch.double) * 0.8).view(2, 3, 5, 5).requires_grad_()
fw = torch.sin(torch.arange(108, dtype=torch.double) + 0.3).view(4, 3, 3, 3).requires_grad_()
fout = ConvNorm.apply(fx, fw)
weights_out = torch.linspace(1, -1, fout.numel(), dtype=torch.double).view(fout.shape)
(fout * weights_out).sum().backward()
fixed_results = {"out": fout.tolist(), "X_grad": fx.grad.tolist(), "w_grad": fw.grad.tolist()}
