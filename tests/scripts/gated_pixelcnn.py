# ruff: noqa: N812, E741 (the usual F alias; PixelCNN++'s ``l`` for the network output)
"""A small PixelCNN, a class-conditional Gated PixelCNN, PixelCNN++'s shifted streams and its
discretized logistic mixture likelihood on sklearn's 8x8 digits quantised to 4 levels, written for
these tests the way public PixelCNN code for PyTorch writes them (not a copy of any one
repository):

- ``MaskedConv2d(nn.Conv2d)`` with type A/B masks registered as buffers
  (``register_buffer``, mask slices set to zero) and ``self.weight.data *= self.mask`` in
  ``forward``; a residual stack of 1x1 / masked 3x3 / 1x1 blocks;
- Gated PixelCNN: a vertical stack (``(k//2+1, k)`` kernels, padding and a crop of the extra
  rows) and a horizontal stack (``(1, k//2+1)`` kernels), both masked by buffers for the first
  (type A) layer, the vertical-to-horizontal 1x1 link, gated activations
  ``torch.tanh(a) * torch.sigmoid(b)`` of ``torch.chunk(x, 2, dim=1)``, a residual horizontal
  path, a class-conditional ``nn.Embedding`` bias broadcast with ``[:, :, None, None]``, the
  input levels through ``nn.Embedding`` and ``permute``;
- the same mask as a ``nn.utils.parametrize`` parametrization (a non-persistent buffer), and
  as ``self._conv_forward(x, self.weight * self.mask, self.bias)`` with ``padding = "same"``;
- PixelCNN++'s up-pass streams: ``down_shift``/``right_shift`` by slicing and
  ``nn.ZeroPad2d``, down-shifted and down-right-shifted convolutions under the deprecated
  ``nn.utils.weight_norm`` (``weight_g``/``weight_v``), ``concat_elu`` (``F.elu`` of
  ``torch.cat([x, -x])``), gated resnets with ``nn.Dropout2d`` and a network-in-network skip
  (``permute``/``view`` around a ``Linear``), a channel of ones as padding;
- PixelCNN++'s discretized logistic mixture (one channel): ``log_softmax``-style log-probs of
  the mixture logits written with ``torch.max``, ``F.softplus``, ``torch.sigmoid``, a hand-written
  log-sum-exp, the edge cases ``x < -0.999`` / ``x > 0.999`` and ``cdf_delta > 1e-5`` through
  nested ``torch.where``, ``torch.clamp(min=1e-12).log()``, ``clamp(min=-7.)`` of the log-scales;
- sampling pixel by pixel under ``torch.no_grad()``: ``torch.multinomial`` of a softmax, and
  Gumbel-max (``-log(-log(u))``, ``uniform_``) for the mixture component, ``F.one_hot`` and a
  logistic sample for the value;
- bits per dimension, ``Adam`` with ``clip_grad_norm_``, ``ExponentialLR``, causality checked by
  the gradient of one output pixel with respect to the input (the masked stack's blind spot, the
  gated stacks' complete past).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same script
on torch.
"""
import math
import warnings

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
np.random.seed(0)
fixed_results = {}
LEVELS = 4
H = W = 8

# ------------------------------------------------------------------------------------- data

digits = load_digits()
levels = np.clip(np.round(digits.images / 16.0 * (LEVELS - 1)), 0, LEVELS - 1).astype(np.int64)
images = torch.from_numpy(levels)  # (1797, 8, 8) integer levels 0..3
labels = torch.tensor(digits.target)
perm = torch.randperm(len(images))
train_idx, test_idx = perm[:512], perm[512:768]


def to_unit(x):
    """Integer levels to [-1, 1] as PixelCNN++ rescales 8-bit pixels."""
    return x.float().unsqueeze(1) / (LEVELS - 1) * 2.0 - 1.0


def batches(batch_size, epoch):
    g = torch.Generator().manual_seed(epoch)
    order = train_idx[torch.randperm(len(train_idx), generator=g)]
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        yield images[idx], labels[idx]


# ----------------------------------------------------------------------- masked convolution


class MaskedConv2d(nn.Conv2d):
    """A convolution that only sees the pixels above and to the left (type A) and, for type B,
    the centre pixel too."""

    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kh, kw = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kh // 2, kw // 2 + (mask_type == "B"):] = 0
        self.mask[:, :, kh // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


class ResidualBlock(nn.Module):
    """PixelCNN's residual block: 1x1 down, masked 3x3, 1x1 up."""

    def __init__(self, h):
        super().__init__()
        self.net = nn.Sequential(
            nn.ReLU(), nn.Conv2d(2 * h, h, 1),
            nn.ReLU(), MaskedConv2d("B", h, h, 3, padding=1),
            nn.ReLU(), nn.Conv2d(h, 2 * h, 1))

    def forward(self, x):
        return x + self.net(x)


class PixelCNN(nn.Module):
    """Masked-convolution PixelCNN with a discretized logistic mixture head."""

    def __init__(self, h=16, n_blocks=3, nr_mix=3):
        super().__init__()
        self.input_conv = MaskedConv2d("A", 1, 2 * h, 5, padding=2)
        self.blocks = nn.Sequential(*[ResidualBlock(h) for _ in range(n_blocks)])
        self.output = nn.Sequential(nn.ReLU(), MaskedConv2d("B", 2 * h, 2 * h, 1), nn.ReLU(),
                                    nn.Conv2d(2 * h, 3 * nr_mix, 1))

    def forward(self, x):
        return self.output(self.blocks(self.input_conv(x)))


# --------------------------------------------------------------------------- gated PixelCNN


class GatedActivation(nn.Module):
    def forward(self, x):
        a, b = torch.chunk(x, 2, dim=1)
        return torch.tanh(a) * torch.sigmoid(b)


class GatedMaskedConv2d(nn.Module):
    """One gated layer: the vertical stack sees the rows above, the horizontal stack the pixels
    to the left on the same row (and, through the 1x1 link, what the vertical stack saw)."""

    def __init__(self, mask_type, dim, kernel, residual=True, n_classes=10):
        super().__init__()
        self.mask_type, self.residual = mask_type, residual
        self.class_cond_embedding = nn.Embedding(n_classes, 2 * dim)

        self.vert_stack = nn.Conv2d(dim, 2 * dim, (kernel // 2 + 1, kernel), 1,
                                    (kernel // 2, kernel // 2))
        self.vert_to_horiz = nn.Conv2d(2 * dim, 2 * dim, 1)
        self.horiz_stack = nn.Conv2d(dim, 2 * dim, (1, kernel // 2 + 1), 1, (0, kernel // 2))
        self.horiz_resid = nn.Conv2d(dim, dim, 1)
        self.gate = GatedActivation()

        # type A may not see the current row (vertical) nor the current pixel (horizontal)
        vmask = torch.ones_like(self.vert_stack.weight)
        hmask = torch.ones_like(self.horiz_stack.weight)
        if mask_type == "A":
            vmask[:, :, -1] = 0
            hmask[:, :, :, -1] = 0
        self.register_buffer("vmask", vmask)
        self.register_buffer("hmask", hmask)

    def forward(self, x_v, x_h, h):
        self.vert_stack.weight.data *= self.vmask
        self.horiz_stack.weight.data *= self.hmask
        h = self.class_cond_embedding(h)

        h_vert = self.vert_stack(x_v)
        h_vert = h_vert[:, :, :x_v.size(-2), :]  # keep the rows at or above each output row
        out_v = self.gate(h_vert + h[:, :, None, None])

        h_horiz = self.horiz_stack(x_h)
        h_horiz = h_horiz[:, :, :, :x_h.size(-1)]  # the pixels at or left of each output
        v2h = self.vert_to_horiz(h_vert)
        out = self.gate(v2h + h_horiz + h[:, :, None, None])
        out_h = self.horiz_resid(out) + x_h if self.residual else self.horiz_resid(out)
        return out_v, out_h


class GatedPixelCNN(nn.Module):
    def __init__(self, input_dim=LEVELS, dim=16, n_layers=4, n_classes=10, first_kernel=7):
        super().__init__()
        self.dim = dim
        self.embedding = nn.Embedding(input_dim, dim)
        self.layers = nn.ModuleList()
        for i in range(n_layers):
            mask_type = "A" if i == 0 else "B"
            kernel = first_kernel if i == 0 else 3
            residual = i != 0
            self.layers.append(GatedMaskedConv2d(mask_type, dim, kernel, residual, n_classes))
        self.output_conv = nn.Sequential(nn.Conv2d(dim, 2 * dim, 1), nn.ReLU(True),
                                         nn.Conv2d(2 * dim, input_dim, 1))

    def forward(self, x, label):
        shp = x.size() + (-1,)
        x = self.embedding(x.view(-1)).view(shp)  # (B, H, W, C)
        x = x.permute(0, 3, 1, 2)  # (B, C, H, W)
        x_v, x_h = (x, x)
        for layer in self.layers:
            x_v, x_h = layer(x_v, x_h, label)
        return self.output_conv(x_h)

    @torch.no_grad()
    def generate(self, label, shape=(H, W), batch_size=16):
        x = torch.zeros((batch_size, *shape), dtype=torch.int64)
        for i in range(shape[0]):
            for j in range(shape[1]):
                logits = self.forward(x, label)
                probs = F.softmax(logits[:, :, i, j], -1)
                x.data[:, i, j].copy_(probs.multinomial(1).squeeze().data)
        return x


# ---------------------------------------------------- PixelCNN++ shifted convolution streams


def wn(module):
    return nn.utils.weight_norm(module)  # (deprecated: PixelCNN++'s own choice)


def down_shift(x, pad=None):
    xs = [int(y) for y in x.size()]
    x = x[:, :, :xs[2] - 1, :]  # drop the last row, then pad a row of zeros on top
    pad = nn.ZeroPad2d((0, 0, 1, 0)) if pad is None else pad
    return pad(x)


def right_shift(x, pad=None):
    xs = [int(y) for y in x.size()]
    x = x[:, :, :, :xs[3] - 1]
    pad = nn.ZeroPad2d((1, 0, 0, 0)) if pad is None else pad
    return pad(x)


def concat_elu(x):
    """Like concatenated ReLU, with ELU: (B, 2C, H, W)."""
    axis = len(x.size()) - 3
    return F.elu(torch.cat([x, -x], dim=axis))


class Nin(nn.Module):
    """PixelCNN++'s network-in-network: a Linear over the channels."""

    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.lin_a = wn(nn.Linear(dim_in, dim_out))
        self.dim_out = dim_out

    def forward(self, x):
        og_x = x
        x = x.permute(0, 2, 3, 1)
        shp = [int(y) for y in x.size()]
        out = self.lin_a(x.contiguous().view(shp[0] * shp[1] * shp[2], shp[3]))
        shp[-1] = self.dim_out
        out = out.view(shp)
        return out.permute(0, 3, 1, 2) if og_x.dim() == 4 else out


class DownShiftedConv2d(nn.Module):
    """Sees the rows above (and the current one, unless the output is shifted down)."""

    def __init__(self, c_in, c_out, filter_size=(2, 3), shift_output_down=False):
        super().__init__()
        self.conv = wn(nn.Conv2d(c_in, c_out, filter_size))
        self.shift_output_down = shift_output_down
        self.pad = nn.ZeroPad2d((int((filter_size[1] - 1) / 2), int((filter_size[1] - 1) / 2),
                                 filter_size[0] - 1, 0))

    def forward(self, x):
        x = self.conv(self.pad(x))
        return down_shift(x) if self.shift_output_down else x


class DownRightShiftedConv2d(nn.Module):
    """Sees the rows above and the pixels to the left."""

    def __init__(self, c_in, c_out, filter_size=(2, 2), shift_output_right=False):
        super().__init__()
        self.conv = wn(nn.Conv2d(c_in, c_out, filter_size))
        self.shift_output_right = shift_output_right
        self.pad = nn.ZeroPad2d((filter_size[1] - 1, 0, filter_size[0] - 1, 0))

    def forward(self, x):
        x = self.conv(self.pad(x))
        return right_shift(x) if self.shift_output_right else x


class GatedResnet(nn.Module):
    def __init__(self, num_filters, conv_op, skip_connection=0):
        super().__init__()
        self.skip_connection = skip_connection
        self.conv_input = conv_op(2 * num_filters, num_filters)
        if skip_connection != 0:
            self.nin_skip = Nin(2 * skip_connection * num_filters, num_filters)
        self.dropout = nn.Dropout2d(0.5)
        self.conv_out = conv_op(2 * num_filters, 2 * num_filters)

    def forward(self, og_x, a=None):
        x = self.conv_input(concat_elu(og_x))
        if a is not None:
            x += self.nin_skip(concat_elu(a))
        x = concat_elu(x)
        x = self.dropout(x)
        x = self.conv_out(x)
        a, b = torch.chunk(x, 2, dim=1)
        return og_x + a * F.sigmoid(b)


weight_norm_warnings = []


def build_pp(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = PixelCNNpp(**kwargs)
    weight_norm_warnings.extend({(w.category.__name__, str(w.message)) for w in caught})
    return model


class PixelCNNpp(nn.Module):
    """One resolution of PixelCNN++'s up pass: the u (above) and ul (above-left) streams."""

    def __init__(self, nr_filters=8, nr_resnet=2, nr_mix=2, input_channels=1):
        super().__init__()
        self.init_padding = None
        self.u_init = DownShiftedConv2d(input_channels + 1, nr_filters, (2, 3),
                                        shift_output_down=True)
        self.ul_init = nn.ModuleList([
            DownShiftedConv2d(input_channels + 1, nr_filters, (1, 3), shift_output_down=True),
            DownRightShiftedConv2d(input_channels + 1, nr_filters, (2, 1),
                                   shift_output_right=True)])
        self.u_stream = nn.ModuleList(
            [GatedResnet(nr_filters, DownShiftedConv2d) for _ in range(nr_resnet)])
        self.ul_stream = nn.ModuleList(
            [GatedResnet(nr_filters, DownRightShiftedConv2d, skip_connection=1)
             for _ in range(nr_resnet)])
        self.nin_out = Nin(nr_filters, 3 * nr_mix)

    def forward(self, x):
        if self.init_padding is None or self.init_padding.shape[0] != x.shape[0]:
            xs = [int(y) for y in x.size()]
            self.init_padding = torch.ones(xs[0], 1, xs[2], xs[3], requires_grad=False)
        x = torch.cat((x, self.init_padding), 1)  # a channel of ones marks the image
        u = self.u_init(x)
        ul = self.ul_init[0](x) + self.ul_init[1](x)
        for u_layer, ul_layer in zip(self.u_stream, self.ul_stream):
            u = u_layer(u)
            ul = ul_layer(ul, a=u)
        return self.nin_out(F.elu(ul))


# ------------------------------------------------- PixelCNN++ discretized logistic mixture


def log_sum_exp(x):
    """Numerically stable log-sum-exp over the last axis."""
    axis = len(x.size()) - 1
    m, _ = torch.max(x, dim=axis)
    m2, _ = torch.max(x, dim=axis, keepdim=True)
    return m + torch.log(torch.sum(torch.exp(x - m2), dim=axis))


def log_prob_from_logits(x):
    """Numerically stable log-softmax over the last axis."""
    axis = len(x.size()) - 1
    m, _ = torch.max(x, dim=axis, keepdim=True)
    return x - m - torch.log(torch.sum(torch.exp(x - m), dim=axis, keepdim=True))


def discretized_mix_logistic_log_probs(x, l, n_bins=LEVELS):
    """Per-pixel log-likelihood (B, H, W) of ``x`` in [-1, 1] (B, 1, H, W) under the mixture
    ``l`` (B, 3 * nr_mix, H, W), discretised into ``n_bins`` bins."""
    x = x.permute(0, 2, 3, 1)
    l = l.permute(0, 2, 3, 1)
    xs = [int(y) for y in x.size()]
    ls = [int(y) for y in l.size()]

    nr_mix = int(ls[-1] / 3)
    logit_probs = l[:, :, :, :nr_mix]
    l = l[:, :, :, nr_mix:].contiguous().view(xs + [nr_mix * 2])  # 2: means and scales
    means = l[:, :, :, :, :nr_mix]
    log_scales = torch.clamp(l[:, :, :, :, nr_mix:2 * nr_mix], min=-7.)
    x = x.contiguous()
    x = x.unsqueeze(-1) + torch.zeros(xs + [nr_mix], dtype=x.dtype, requires_grad=False)

    half_bin = 1.0 / (n_bins - 1)
    centered_x = x - means
    inv_stdv = torch.exp(-log_scales)
    plus_in = inv_stdv * (centered_x + half_bin)
    cdf_plus = torch.sigmoid(plus_in)
    min_in = inv_stdv * (centered_x - half_bin)
    cdf_min = torch.sigmoid(min_in)
    # log probability for the edge case of the lowest level
    log_cdf_plus = plus_in - F.softplus(plus_in)
    # log probability for the edge case of the highest level
    log_one_minus_cdf_min = -F.softplus(min_in)
    cdf_delta = cdf_plus - cdf_min  # probability for all other cases
    mid_in = inv_stdv * centered_x
    # log density at the centre of the bin, for the (rare) case of a very peaked logistic
    log_pdf_mid = mid_in - log_scales - 2. * F.softplus(mid_in)

    inner_inner_cond = (cdf_delta > 1e-5).float()
    inner_inner_out = inner_inner_cond * torch.clamp(cdf_delta, min=1e-12).log() + \
        (1. - inner_inner_cond) * (log_pdf_mid - math.log((n_bins - 1) / 2))
    inner_out = torch.where(x > 0.999, log_one_minus_cdf_min, inner_inner_out)
    log_probs = torch.where(x < -0.999, log_cdf_plus, inner_out)

    log_probs = torch.sum(log_probs, dim=3) + log_prob_from_logits(logit_probs)
    return log_sum_exp(log_probs)


def discretized_mix_logistic_loss(x, l, n_bins=LEVELS):
    return -torch.sum(discretized_mix_logistic_log_probs(x, l, n_bins))


def sample_from_discretized_mix_logistic(l, nr_mix):
    l = l.permute(0, 2, 3, 1)
    ls = [int(y) for y in l.size()]
    xs = ls[:-1] + [1]

    logit_probs = l[:, :, :, :nr_mix]
    l = l[:, :, :, nr_mix:].contiguous().view(xs + [nr_mix * 2])
    # the mixture component by Gumbel-max
    temp = torch.empty_like(logit_probs).uniform_(1e-5, 1. - 1e-5)
    temp = logit_probs.data - torch.log(- torch.log(temp))
    _, argmax = temp.max(dim=3)
    one_hot = F.one_hot(argmax, nr_mix).float()
    sel = one_hot.view(xs[:-1] + [1, nr_mix])
    means = torch.sum(l[:, :, :, :, :nr_mix] * sel, dim=4)
    log_scales = torch.clamp(torch.sum(l[:, :, :, :, nr_mix:2 * nr_mix] * sel, dim=4), min=-7.)
    u = torch.empty_like(means).uniform_(1e-5, 1. - 1e-5)
    x = means + torch.exp(log_scales) * (torch.log(u) - torch.log(1. - u))
    x0 = torch.clamp(torch.clamp(x[:, :, :, 0], min=-1.), max=1.)
    return x0.unsqueeze(1)


def quantise(x):
    """[-1, 1] back to integer levels."""
    return torch.round((x + 1.0) / 2.0 * (LEVELS - 1)).long().clamp(0, LEVELS - 1)


@torch.no_grad()
def sample_pixelcnn(model, n, nr_mix):
    x = torch.zeros(n, 1, H, W)
    for i in range(H):
        for j in range(W):
            out = model(x)
            value = sample_from_discretized_mix_logistic(out, nr_mix)
            x[:, :, i, j] = to_unit(quantise(value[:, 0]))[:, :, i, j]
    return quantise(x[:, 0])


def bits_per_dim(nll_sum, n_pixels):
    return nll_sum / (n_pixels * math.log(2.0))


# ------------------------------------------------------------------------ masks and causality

mask_a = MaskedConv2d("A", 1, 1, 3, padding=1).mask[0, 0].clone()
mask_b = MaskedConv2d("B", 1, 1, 3, padding=1).mask[0, 0].clone()


class MaskWeight(nn.Module):
    """The same mask as a parametrization: ``weight`` becomes ``original * mask``."""

    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, w):
        return w * self.mask


class MaskedConvSame(nn.Conv2d):
    """The third common style: the masked weight into ``_conv_forward``, with 'same' padding."""

    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        mask = torch.ones_like(self.weight)
        _, _, kh, kw = self.weight.shape
        mask[:, :, kh // 2, kw // 2 + (mask_type == "B"):] = 0
        mask[:, :, kh // 2 + 1:] = 0
        self.register_buffer("mask", mask)
        self.padding = "same"

    def forward(self, x):
        return self._conv_forward(x, self.weight * self.mask, self.bias)


torch.manual_seed(8)
data_masked = MaskedConv2d("B", 2, 3, 3, padding=1)
param_masked = nn.Conv2d(2, 3, 3, padding=1)
with torch.no_grad():
    param_masked.weight.copy_(data_masked.weight)
    param_masked.bias.copy_(data_masked.bias)
nn.utils.parametrize.register_parametrization(param_masked, "weight",
                                              MaskWeight(data_masked.mask.clone()))
x_mask = torch.randn(2, 2, 5, 5)
out_data, out_param = data_masked(x_mask), param_masked(x_mask)
(out_data.sum() + out_param.sum()).backward()
parametrized_difference = (out_data - out_param).abs().max().item()
# through the parametrization the masked entries get no gradient; through .data they do
original = param_masked.parametrizations.weight.original
parametrized_masked_grad = (original.grad * (1 - data_masked.mask)).abs().sum().item()
data_masked_grad = (data_masked.weight.grad * (1 - data_masked.mask)).abs().sum().item()
parametrized_keys = sorted(param_masked.state_dict().keys())
same_masked = MaskedConvSame("B", 2, 3, 3)
with torch.no_grad():
    same_masked.weight.copy_(data_masked.weight)
    same_masked.bias.copy_(data_masked.bias)
out_same = same_masked(x_mask)
out_same.sum().backward()
same_difference = (out_same - out_data).abs().max().item()
same_masked_grad = (same_masked.weight.grad * (1 - same_masked.mask)).abs().sum().item()
has_conv_forward = hasattr(same_masked, "_conv_forward")




def dependency(forward, pixel, integer=False):
    """Which input pixels the output at ``pixel`` has a nonzero gradient from."""
    torch.manual_seed(5)
    if integer:
        # the gated model takes integer levels: differentiate through the embedding output
        emb = {}

        def keep(module, inputs, output):
            output.retain_grad()
            emb["out"] = output

        handle = gated_probe.embedding.register_forward_hook(keep)
        x = torch.randint(0, LEVELS, (1, H, W))
        out = forward(x)
        handle.remove()
        out[0, :, pixel[0], pixel[1]].sum().backward()
        grad = emb["out"].grad.view(H, W, -1).abs().sum(-1)
    else:
        x = torch.rand(1, 1, H, W, requires_grad=True)
        out = forward(x)
        out[0, :, pixel[0], pixel[1]].sum().backward()
        grad = x.grad[0, 0].abs()
    return grad != 0


def raster_past(pixel):
    idx = torch.arange(H * W).view(H, W)
    return idx < pixel[0] * W + pixel[1]


torch.manual_seed(0)
pixel_probe = PixelCNN(h=4, n_blocks=2, nr_mix=2)
gated_probe = GatedPixelCNN(dim=4, n_layers=4, first_kernel=5)
probe_label = torch.tensor([3])
PIXEL = (5, 3)
masked_dependency = dependency(pixel_probe, PIXEL)
gated_dependency = dependency(lambda x: gated_probe(x, probe_label), PIXEL, integer=True)
pp_probe = build_pp(nr_filters=4, nr_resnet=2, nr_mix=2).eval()
pp_dependency = dependency(pp_probe, PIXEL)
past = raster_past(PIXEL)
# mask buffers are in the state_dict, not among the parameters
buffer_names = [name for name, _ in gated_probe.named_buffers()][:2] + \
    [name for name, _ in pixel_probe.named_buffers()][:1]
n_parameters = {"pixelcnn": sum(p.numel() for p in pixel_probe.parameters()),
                "gated": sum(p.numel() for p in gated_probe.parameters())}

# --------------------------------------------------------- the likelihood itself (recorded)

torch.manual_seed(1)
nr_mix_probe = 3
l_probe = torch.randn(2, 3 * nr_mix_probe, 4, 4, dtype=torch.float64) * 1.5
l_probe.requires_grad_(True)
x_probe = (torch.randint(0, LEVELS, (2, 1, 4, 4)).double() / (LEVELS - 1)) * 2 - 1
lp = discretized_mix_logistic_log_probs(x_probe, l_probe)
lp.sum().backward()
fixed_results["mixture_log_probs"] = lp.detach()
fixed_results["mixture_grad"] = l_probe.grad.clone()
# the probabilities of the four levels sum to one at every pixel
total = sum(discretized_mix_logistic_log_probs(torch.full_like(x_probe, v), l_probe).exp()
            for v in (-1.0, -1.0 / 3, 1.0 / 3, 1.0))
mixture_total = total.detach()
# the hand-written log-sum-exp / log-softmax agree with the built-in ones
lse_probe = torch.randn(5, 7, dtype=torch.float64) * 30
lse_difference = (log_sum_exp(lse_probe) - torch.logsumexp(lse_probe, dim=-1)).abs().max()
lsm_difference = (log_prob_from_logits(lse_probe) - F.log_softmax(lse_probe, -1)).abs().max()
# a very peaked component (log-scale at the -7 clamp): the log-pdf branch of the where
peaked = torch.zeros(1, 3, 1, 1, dtype=torch.float64)
peaked[0, 2] = -9.0  # (clamped to -7)
peaked[0, 1] = -0.5  # the mean, outside the bin [0, 2/3] of 1/3 by 500 scales
peaked_log_prob = discretized_mix_logistic_log_probs(
    torch.full((1, 1, 1, 1), 1.0 / 3, dtype=torch.float64), peaked).item()
fixed_results["peaked_log_prob"] = torch.tensor(peaked_log_prob)

# ---------------------------------------------------- fixed-weight forward passes (recorded)

batch_images, batch_labels = images[train_idx[:16]], labels[train_idx[:16]]
torch.manual_seed(2)
fixed_gated = GatedPixelCNN(dim=8, n_layers=3, first_kernel=5)
logits = fixed_gated(batch_images, batch_labels)
gated_fixed_loss = F.cross_entropy(logits, batch_images)
gated_fixed_loss.backward()
fixed_results["gated_logits"] = logits.detach()
fixed_results["gated_loss"] = gated_fixed_loss.detach()
fixed_results["gated_grad_vert"] = fixed_gated.layers[1].vert_stack.weight.grad.clone()
fixed_results["gated_grad_embedding"] = fixed_gated.embedding.weight.grad.clone()
# ``.data *= mask`` zeroes the masked weights in each forward, but their gradients are not zero
# (the optimizer moves them, and the next forward zeroes them again)
masked_rows_zero = bool((fixed_gated.layers[0].vert_stack.weight[:, :, -1] == 0).all())
masked_rows_grad = fixed_gated.layers[0].vert_stack.weight.grad[:, :, -1].abs().sum().item()

torch.manual_seed(3)
fixed_pixelcnn = PixelCNN(h=8, n_blocks=2, nr_mix=2)
out = fixed_pixelcnn(to_unit(batch_images))
pixel_fixed_loss = discretized_mix_logistic_loss(to_unit(batch_images), out)
pixel_fixed_loss.backward()
fixed_results["pixelcnn_out"] = out.detach()
fixed_results["pixelcnn_loss"] = pixel_fixed_loss.detach()
fixed_results["pixelcnn_grad_input"] = fixed_pixelcnn.input_conv.weight.grad.clone()

# the PixelCNN++ streams, in train mode (Dropout2d draws its channel masks)
torch.manual_seed(6)
fixed_pp = build_pp(nr_filters=8, nr_resnet=2, nr_mix=2)
out = fixed_pp(to_unit(batch_images))
pp_fixed_loss = discretized_mix_logistic_loss(to_unit(batch_images), out)
pp_fixed_loss.backward()
fixed_results["pp_out"] = out.detach()
fixed_results["pp_loss"] = pp_fixed_loss.detach()
fixed_results["pp_grad_g"] = fixed_pp.ul_stream[1].conv_out.conv.weight_g.grad.clone()
fixed_results["pp_grad_v"] = fixed_pp.u_init.conv.weight_v.grad.clone()
fixed_results["pp_grad_nin"] = fixed_pp.nin_out.lin_a.weight_v.grad.clone()
pp_state_keys = [k for k in fixed_pp.state_dict() if k.startswith("u_init")]

# sampling from fixed weights with a fixed seed
torch.manual_seed(4)
fixed_results["gated_samples"] = fixed_gated.generate(torch.arange(4), batch_size=4)
torch.manual_seed(4)
fixed_results["pixelcnn_samples"] = sample_pixelcnn(fixed_pixelcnn, 4, nr_mix=2)

# ------------------------------------------------------------------------------- training

EPOCHS, BATCH = 2, 32
n_test_pixels = len(test_idx) * H * W


def train_gated():
    torch.manual_seed(10)
    model = GatedPixelCNN(dim=8, n_layers=3, first_kernel=5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7)
    losses = []
    for epoch in range(EPOCHS):
        model.train()
        for x, label in batches(BATCH, epoch):
            logits = model(x, label)  # (B, LEVELS, H, W)
            loss = F.cross_entropy(logits, x)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    with torch.no_grad():
        x, label = images[test_idx], labels[test_idx]
        nll = F.cross_entropy(model(x, label), x, reduction="sum").item()
    return model, losses, bits_per_dim(nll, n_test_pixels)


def train_pixelcnn(nr_mix=3):
    torch.manual_seed(11)
    model = PixelCNN(h=8, n_blocks=2, nr_mix=nr_mix)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7)
    losses = []
    for epoch in range(EPOCHS):
        for x, _ in batches(BATCH, epoch):
            x = to_unit(x)
            loss = discretized_mix_logistic_loss(x, model(x)) / x.numel()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        scheduler.step()
    with torch.no_grad():
        x = to_unit(images[test_idx])
        nll = discretized_mix_logistic_loss(x, model(x)).item()
    return model, losses, bits_per_dim(nll, n_test_pixels)


gated_model, gated_losses, gated_bpd = train_gated()
pixel_model, pixel_losses, pixel_bpd = train_pixelcnn()
uniform_bpd = math.log2(LEVELS)

# the trained models' weights obey their masks (forward multiplies them in place)
masks_hold = all(bool((m.weight.data * (1 - m.mask) == 0).all())
                 for m in pixel_model.modules() if isinstance(m, MaskedConv2d))

# samples of the trained models
torch.manual_seed(20)
gated_samples = gated_model.generate(torch.arange(10), batch_size=10)
torch.manual_seed(21)
pixel_samples = sample_pixelcnn(pixel_model, 10, nr_mix=3)
data_mean_level = images[train_idx].float().mean().item()
sample_mean_levels = {"gated": gated_samples.float().mean().item(),
                      "pixelcnn": pixel_samples.float().mean().item()}
# the data's border columns are mostly blank: so are the samples'
data_border = (images[train_idx][:, :, 0] == 0).float().mean().item()
sample_border = {"gated": (gated_samples[:, :, 0] == 0).float().mean().item(),
                 "pixelcnn": (pixel_samples[:, :, 0] == 0).float().mean().item()}

if __name__ == "__main__":
    print("gated", gated_losses[0], gated_losses[-1], "bpd", gated_bpd)
    print("pixelcnn", pixel_losses[0], pixel_losses[-1], "bpd", pixel_bpd)
    print("means", data_mean_level, sample_mean_levels, "border", data_border, sample_border)
    print(gated_samples[:2])
