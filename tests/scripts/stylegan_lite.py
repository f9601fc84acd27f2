# ruff: noqa: N812 (the usual F alias)
"""A toy StyleGAN2, written for these tests the way rosinality's stylegan2-pytorch (and NVIDIA's
StyleGAN2-ADA ``training/loss.py``) write torch code, at 8x8 (not a copy of either):

- ``EqualLinear`` / ``EqualConv2d``: weights drawn N(0, 1) (``div_(lr_mul)``) and scaled at
  runtime, biases times ``lr_mul``; a mapping network of ``PixelNorm`` + eight-ish equalized
  layers with ``lr_mul=0.01`` and a fused bias + ``leaky_relu`` * sqrt(2);
- ``ModulatedConv2d``: a style modulates a (1, out, in, k, k) weight, demodulation by
  ``torch.rsqrt``, the grouped-convolution trick (weight ``(batch * out, in, k, k)``, input
  ``(1, batch * in, H, W)``, ``F.conv2d(groups=batch)``), upsampling by a grouped
  ``F.conv_transpose2d`` (stride 2) and an upfirdn-style ``Blur`` (``F.pad`` + a depthwise
  ``F.conv2d`` of an outer-product [1, 3, 3, 1] kernel), and the unfused form it equals;
- ``NoiseInjection`` with a learned per-channel weight, fixed noise as registered buffers of
  an ``nn.Module`` holder, ``ConstantInput`` (``repeat``), ``ToRGB`` with an
  ``F.interpolate`` (bilinear) skip, style mixing (``random.randint`` inject index) and the
  truncation trick;
- a residual discriminator whose convolutions use ``nn.utils.spectral_norm`` and whose
  linear layers ``nn.utils.parametrizations.spectral_norm``, ``F.avg_pool2d`` downsampling,
  the minibatch standard-deviation layer (``var(0, unbiased=False)``);
- the non-saturating logistic loss by ``F.softplus``, lazy R1 (``autograd.grad(real_pred.sum(),
  real_img, create_graph=True)``, every ``d_reg_every`` steps, with the ``0 * real_pred[0]``
  term), lazy path-length regularization (``autograd.grad((fake * noise).sum(), latents,
  create_graph=True)``, a running mean by ``lerp``), Adam with betas (0, 0.99) scaled by the
  lazy-regularization ratio, ``requires_grad_`` toggling, an EMA generator (``accumulate`` by
  ``mul_`` / ``add_``, also ADA's ``lerp``), a ``DataLoader`` drawn forever by
  ``sample_data``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import io
import math
import random

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import autograd, nn, optim
from jitgrad.utils import data

torch.manual_seed(0)
random.seed(0)
fixed_results = {}


# ------------------------------------------------------------------------------ layers


def make_kernel(k):
    k = torch.tensor(k, dtype=torch.float32)
    if k.ndim == 1:
        k = k[None, :] * k[:, None]
    k /= k.sum()
    return k


def upfirdn2d(input, kernel, pad=(0, 0)):
    """Pad, then filter each channel by the (flipped) kernel: upfirdn2d_native with up = down
    = 1."""
    batch, channel, in_h, in_w = input.shape
    out = input.reshape(-1, 1, in_h, in_w)
    out = F.pad(out, [pad[0], pad[1], pad[0], pad[1]])
    w = torch.flip(kernel, [0, 1]).view(1, 1, *kernel.shape)
    out = F.conv2d(out, w)
    return out.view(batch, channel, out.shape[-2], out.shape[-1])


class Blur(nn.Module):
    def __init__(self, kernel, pad, upsample_factor=1):
        super().__init__()
        kernel = make_kernel(kernel)
        if upsample_factor > 1:
            kernel = kernel * (upsample_factor**2)
        self.register_buffer("kernel", kernel)
        self.pad = pad

    def forward(self, input):
        return upfirdn2d(input, self.kernel, pad=self.pad)


def fused_leaky_relu(input, bias, negative_slope=0.2, scale=2**0.5):
    rest_dim = [1] * (input.ndim - bias.ndim - 1)
    return F.leaky_relu(input + bias.view(1, bias.shape[0], *rest_dim),
                        negative_slope=negative_slope) * scale


class FusedLeakyReLU(nn.Module):
    def __init__(self, channel):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channel))

    def forward(self, input):
        return fused_leaky_relu(input, self.bias)


class PixelNorm(nn.Module):
    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input**2, dim=1, keepdim=True) + 1e-8)


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init))
        else:
            self.bias = None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            out = fused_leaky_relu(out, self.bias * self.lr_mul)
        else:
            out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
        return out

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]}, "
                f"lr_mul={self.lr_mul})")


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True,
                 upsample=False, blur_kernel=(1, 3, 3, 1), fused=True):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size = kernel_size
        self.in_channel = in_channel
        self.out_channel = out_channel
        self.upsample = upsample
        if upsample:
            factor = 2
            p = (len(blur_kernel) - factor) - (kernel_size - 1)
            pad0 = (p + 1) // 2 + factor - 1
            pad1 = p // 2 + 1
            self.blur = Blur(blur_kernel, pad=(pad0, pad1), upsample_factor=factor)
        fan_in = in_channel * kernel_size**2
        self.scale = 1 / math.sqrt(fan_in)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(
            torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
        self.demodulate = demodulate
        self.fused = fused

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape

        if not self.fused:
            # modulate the activations instead of the weights: the same numbers
            weight = self.scale * self.weight.squeeze(0)
            style = self.modulation(style)
            if self.demodulate:
                w = weight.unsqueeze(0) * style.view(batch, 1, in_channel, 1, 1)
                dcoefs = (w.square().sum((2, 3, 4)) + 1e-8).rsqrt()
            input = input * style.reshape(batch, in_channel, 1, 1)
            if self.upsample:
                weight = weight.transpose(0, 1)
                out = F.conv_transpose2d(input, weight, padding=0, stride=2)
                out = self.blur(out)
            else:
                out = F.conv2d(input, weight, padding=self.padding)
            if self.demodulate:
                out = out * dcoefs.view(batch, -1, 1, 1)
            return out

        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size,
                             self.kernel_size)

        if self.upsample:
            input = input.view(1, batch * in_channel, height, width)
            weight = weight.view(batch, self.out_channel, in_channel, self.kernel_size,
                                 self.kernel_size)
            weight = weight.transpose(1, 2).reshape(batch * in_channel, self.out_channel,
                                                    self.kernel_size, self.kernel_size)
            out = F.conv_transpose2d(input, weight, padding=0, stride=2, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
            out = self.blur(out)
        else:
            input = input.view(1, batch * in_channel, height, width)
            out = F.conv2d(input, weight, padding=self.padding, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
        return out


class NoiseInjection(nn.Module):
    def __init__(self, channel):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1, channel, 1, 1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        return image + self.weight * noise


class ConstantInput(nn.Module):
    def __init__(self, channel, size=4):
        super().__init__()
        self.input = nn.Parameter(torch.randn(1, channel, size, size))

    def forward(self, input):
        batch = input.shape[0]
        return self.input.repeat(batch, 1, 1, 1)


class StyledConv(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False,
                 blur_kernel=(1, 3, 3, 1), demodulate=True):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim,
                                    upsample=upsample, blur_kernel=blur_kernel,
                                    demodulate=demodulate)
        self.noise = NoiseInjection(out_channel)
        self.activate = FusedLeakyReLU(out_channel)

    def forward(self, input, style, noise=None):
        out = self.conv(input, style)
        out = self.noise(out, noise=noise)
        return self.activate(out)


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True):
        super().__init__()
        self.upsample = upsample
        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style) + self.bias
        if skip is not None:
            if self.upsample:
                skip = F.interpolate(skip, scale_factor=2, mode="bilinear", align_corners=False)
            out = out + skip
        return out


class Generator(nn.Module):
    def __init__(self, size, style_dim, n_mlp, channel=32, lr_mlp=0.01):
        super().__init__()
        self.size = size
        self.style_dim = style_dim
        layers = [PixelNorm()]
        for _ in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp,
                                      activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)

        self.input = ConstantInput(channel)
        self.conv1 = StyledConv(channel, channel, 3, style_dim)
        self.to_rgb1 = ToRGB(channel, style_dim, upsample=False)

        self.log_size = int(math.log(size, 2))
        self.num_layers = (self.log_size - 2) * 2 + 1
        self.convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        self.noises = nn.Module()
        for layer_idx in range(self.num_layers):
            res = (layer_idx + 5) // 2
            shape = [1, 1, 2**res, 2**res]
            self.noises.register_buffer(f"noise_{layer_idx}", torch.randn(*shape))
        for _ in range(3, self.log_size + 1):
            self.convs.append(StyledConv(channel, channel, 3, style_dim, upsample=True))
            self.convs.append(StyledConv(channel, channel, 3, style_dim))
            self.to_rgbs.append(ToRGB(channel, style_dim))
        self.n_latent = self.log_size * 2 - 2

    def mean_latent(self, n_latent):
        latent_in = torch.randn(n_latent, self.style_dim, device=self.input.input.device)
        return self.style(latent_in).mean(0, keepdim=True)

    def get_latent(self, input):
        return self.style(input)

    def forward(self, styles, return_latents=False, inject_index=None, truncation=1,
                truncation_latent=None, input_is_latent=False, noise=None,
                randomize_noise=True):
        if not input_is_latent:
            styles = [self.style(s) for s in styles]
        if noise is None:
            if randomize_noise:
                noise = [None] * self.num_layers
            else:
                noise = [getattr(self.noises, f"noise_{i}") for i in range(self.num_layers)]
        if truncation < 1:
            styles = [truncation_latent + truncation * (s - truncation_latent) for s in styles]

        if len(styles) < 2:
            inject_index = self.n_latent
            if styles[0].ndim < 3:
                latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            else:
                latent = styles[0]
        else:
            if inject_index is None:
                inject_index = random.randint(1, self.n_latent - 1)
            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
            latent = torch.cat([latent, latent2], 1)

        out = self.input(latent)
        out = self.conv1(out, latent[:, 0], noise=noise[0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, noise1, noise2, to_rgb in zip(self.convs[::2], self.convs[1::2],
                                                        noise[1::2], noise[2::2],
                                                        self.to_rgbs):
            out = conv1(out, latent[:, i], noise=noise1)
            out = conv2(out, latent[:, i + 1], noise=noise2)
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        image = skip
        if return_latents:
            return image, latent
        return image, None


# ------------------------------------------------------------------------ discriminator

SN = nn.utils.spectral_norm
SNP = nn.utils.parametrizations.spectral_norm


class ConvLayer(nn.Sequential):
    def __init__(self, in_channel, out_channel, kernel_size, downsample=False,
                 blur_kernel=(1, 3, 3, 1), bias=True, activate=True):
        layers = []
        if downsample:
            factor = 2
            p = (len(blur_kernel) - factor) + (kernel_size - 1)
            layers.append(Blur(blur_kernel, pad=((p + 1) // 2, p // 2)))
            stride, self.padding = 2, 0
        else:
            stride, self.padding = 1, kernel_size // 2
        layers.append(SN(nn.Conv2d(in_channel, out_channel, kernel_size, padding=self.padding,
                                   stride=stride, bias=bias and not activate)))
        if activate:
            layers.append(FusedLeakyReLU(out_channel))
        super().__init__(*layers)


class ResBlock(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv1 = ConvLayer(in_channel, in_channel, 3)
        self.conv2 = ConvLayer(in_channel, out_channel, 3, downsample=True)
        self.skip = ConvLayer(in_channel, out_channel, 1, downsample=True, activate=False,
                              bias=False)

    def forward(self, input):
        out = self.conv1(input)
        out = self.conv2(out)
        skip = self.skip(input)
        return (out + skip) / math.sqrt(2)


class MinibatchStdDev(nn.Module):
    def __init__(self, group_size=4, num_channels=1):
        super().__init__()
        self.group_size, self.num_channels = group_size, num_channels

    def forward(self, out):
        batch, channel, height, width = out.shape
        group = min(batch, self.group_size)
        stddev = out.view(group, -1, self.num_channels, channel // self.num_channels,
                          height, width)
        stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
        stddev = stddev.mean([2, 3, 4], keepdim=True).squeeze(2)
        stddev = stddev.repeat(group, 1, height, width)
        return torch.cat([out, stddev], 1)


class Discriminator(nn.Module):
    def __init__(self, size, channel=32):
        super().__init__()
        convs = [ConvLayer(3, channel, 1)]
        log_size = int(math.log(size, 2))
        for _ in range(log_size, 2, -1):
            convs.append(ResBlock(channel, channel))
        self.convs = nn.Sequential(*convs)
        self.stddev = MinibatchStdDev(group_size=4)
        self.final_conv = ConvLayer(channel + 1, channel, 3)
        self.final_linear = nn.Sequential(
            SNP(nn.Linear(channel * 4 * 4, channel)),
            nn.LeakyReLU(0.2),
            SNP(nn.Linear(channel, 1)),
        )

    def forward(self, input):
        out = self.convs(input)
        out = self.stddev(out)
        out = self.final_conv(out)
        out = out.view(out.shape[0], -1)
        return self.final_linear(out)


# ---------------------------------------------------------------- losses, train helpers


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def accumulate_lerp(model_ema, model, beta):
    """StyleGAN2-ADA's form: ``p_ema.copy_(p.lerp(p_ema, beta))``, buffers copied."""
    with torch.no_grad():
        for p_ema, p in zip(model_ema.parameters(), model.parameters()):
            p_ema.copy_(p.lerp(p_ema, beta))
        for b_ema, b in zip(model_ema.buffers(), model.buffers()):
            b_ema.copy_(b)


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)
    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    (grad_real,) = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    (grad,) = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents,
                            create_graph=True)
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
    path_penalty = (path_lengths - path_mean).pow(2).mean()
    return path_penalty, path_mean.detach(), path_lengths


def make_noise(batch, latent_dim, n_noise, device="cpu"):
    if n_noise == 1:
        return torch.randn(batch, latent_dim, device=device)
    return torch.randn(n_noise, batch, latent_dim, device=device).unbind(0)


def mixing_noise(batch, latent_dim, prob, device="cpu"):
    if prob > 0 and random.random() < prob:
        return make_noise(batch, latent_dim, 2, device)
    return [make_noise(batch, latent_dim, 1, device)]


def sample_data(loader):
    while True:
        yield from loader


# ------------------------------------------------------------------------------ data

SIZE, STYLE_DIM, N_MLP, CHANNEL = 8, 32, 4, 32
COLORS = torch.tensor([[1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0],
                       [1.0, 1.0, -1.0]])


def make_blobs(n, size=SIZE, generator=None):
    """A soft round blob of one of four colours on a dark background, in [-1, 1]."""
    centers = torch.rand(n, 2, generator=generator) * (size - 3) + 1.5
    colors = COLORS[torch.randint(0, len(COLORS), (n,), generator=generator)]
    ys, xs = torch.meshgrid(torch.arange(size, dtype=torch.float32),
                            torch.arange(size, dtype=torch.float32), indexing="ij")
    d2 = (ys[None] - centers[:, 0, None, None]) ** 2 + (xs[None] - centers[:, 1, None, None]) ** 2
    alpha = torch.exp(-d2 / 3.0)[:, None]  # (n, 1, size, size)
    background = torch.full((n, 3, 1, 1), -0.8)
    return (background * (1 - alpha) + colors[:, :, None, None] * alpha).clamp(-1, 1)


# ----------------------------------------------------- fixed-weight checks (recorded)

gen = torch.Generator().manual_seed(123)
real_images = make_blobs(256, generator=gen)
fixed_results["blobs"] = real_images[:4]

generator = Generator(SIZE, STYLE_DIM, N_MLP, channel=CHANNEL)
discriminator = Discriminator(SIZE, channel=CHANNEL)
with torch.no_grad():  # noise weights start at zero: give them a value to check
    for module in generator.modules():
        if isinstance(module, NoiseInjection):
            module.weight.normal_(0, 0.1)
g_ema = copy.deepcopy(generator)
g_ema.eval()
accumulate(g_ema, generator, 0)
fixed_results["mapping_weight_std"] = generator.style[1].weight.std().item()
fixed_results["sn_u_init"] = discriminator.convs[0][0].weight_u.clone()
fixed_results["snp_u_init"] = discriminator.final_linear[0].parametrizations.weight[0]._u.clone()

z = torch.randn(4, STYLE_DIM)
w_fixed = generator.style(z)
fixed_results["w"] = w_fixed.detach()

# one modulated conv, fused vs unfused, plain and upsampling
mod_in = torch.randn(4, CHANNEL, 4, 4)
mod_results = {}
for upsample in (False, True):
    conv = ModulatedConv2d(CHANNEL, 8, 3, STYLE_DIM, upsample=upsample)
    conv.modulation.bias.data.normal_(1, 0.3)
    fused = conv(mod_in, w_fixed)
    conv.fused = False
    unfused = conv(mod_in, w_fixed)
    mod_results[upsample] = (fused.detach(), unfused.detach())
    fixed_results[f"modconv_up{int(upsample)}"] = fused.detach()
# the grouped-conv trick twice differentiated (the path-length penalty's backward), float64
small_conv = ModulatedConv2d(3, 2, 3, 4, upsample=True).double()
gradgradcheck_modconv = autograd.gradgradcheck(
    small_conv, (torch.randn(2, 3, 3, 3, dtype=torch.float64, requires_grad=True),
                 torch.randn(2, 4, dtype=torch.float64, requires_grad=True)))
# demodulated outputs: each output channel's weight has unit norm per sample
demod_conv = ModulatedConv2d(CHANNEL, 8, 3, STYLE_DIM)
style = demod_conv.modulation(w_fixed).view(4, 1, CHANNEL, 1, 1)
demod_weight = demod_conv.scale * demod_conv.weight * style
demod_weight = demod_weight * torch.rsqrt(demod_weight.pow(2).sum([2, 3, 4]) + 1e-8).view(
    4, 8, 1, 1, 1)
demod_norms = demod_weight.flatten(2).norm(dim=2).detach()

# the generator with fixed noise buffers; the same latents with ``input_is_latent``
fake_fixed, latents_fixed = generator([z], return_latents=True, randomize_noise=False)
fake_from_w, _ = generator([w_fixed], input_is_latent=True, randomize_noise=False)
fixed_results["fake"] = fake_fixed.detach()
fixed_results["ema_fake"] = g_ema([z], randomize_noise=False)[0].detach()
# style mixing at a fixed index, and truncation to the mean latent
z2 = torch.randn(4, STYLE_DIM)
mixed, mixed_latents = generator([z, z2], inject_index=2, return_latents=True,
                                 randomize_noise=False)
fixed_results["mixed"] = mixed.detach()
with torch.no_grad():
    mean_w = generator.mean_latent(512)
    truncated, _ = generator([z], truncation=0.5, truncation_latent=mean_w,
                             randomize_noise=False)
    fully_truncated, _ = generator([z], truncation=0.0, truncation_latent=mean_w,
                                   randomize_noise=False)
fixed_results["truncated"] = truncated
fixed_results["mean_w"] = mean_w

# the discriminator: spectral norm's power iteration, minibatch stddev, the losses
real_batch = real_images[:8]
real_pred = discriminator(real_batch)
fake_pred = discriminator(fake_fixed.detach().repeat(2, 1, 1, 1))
fixed_results["real_pred"] = real_pred.detach()
fixed_results["fake_pred"] = fake_pred.detach()
fixed_results["sn_u_after"] = discriminator.convs[0][0].weight_u.clone()
fixed_results["stddev_features"] = discriminator.stddev(torch.randn(8, 4, 2, 2))
d_loss_fixed = d_logistic_loss(real_pred, fake_pred)
fixed_results["d_loss"] = d_loss_fixed.item()
fixed_results["g_loss"] = g_nonsaturating_loss(fake_pred).item()

# R1 and its double backward into the discriminator's parameters
discriminator.zero_grad()
real_img = real_batch.detach().clone()
real_img.requires_grad = True
real_pred_r1 = discriminator(real_img)
r1_fixed = d_r1_loss(real_pred_r1, real_img)
(10 / 2 * r1_fixed * 4 + 0 * real_pred_r1[0]).backward()
fixed_results["r1"] = r1_fixed.item()
fixed_results["r1_grads"] = {
    name: p.grad.clone() for name, p in discriminator.named_parameters()
    if name in ("convs.0.0.weight_orig", "convs.1.conv1.0.weight_orig",
                "convs.1.conv2.1.weight_orig", "convs.1.skip.1.weight_orig",
                "final_linear.0.parametrizations.weight.original",
                "final_linear.2.parametrizations.weight.original")}
# the R1 gradient of a bias after the minibatch stddev is zero: the rest is piecewise linear
r1_bias_grads = {name: p.grad.abs().max().item() for name, p in discriminator.named_parameters()
                 if name.endswith("bias")}
r1_param_grads_finite = all(torch.isfinite(p.grad).all().item()
                            for p in discriminator.parameters() if p.grad is not None)
# R1 by an explicit double backward through a scalar function of the input gradient
discriminator.eval()  # (no power-iteration step: the same weights twice)
x64 = real_batch[:4].double().requires_grad_()
discriminator.double()
(grad_x,) = autograd.grad(discriminator(x64).sum(), x64, create_graph=True)
gradient_penalty = grad_x.pow(2).sum(dim=[1, 2, 3]).mean()
penalty_grad_input = autograd.grad(gradient_penalty, x64)[0]
fixed_results["r1_grad_input"] = penalty_grad_input
gradcheck_r1 = autograd.gradcheck(
    lambda x: autograd.grad(discriminator(x).sum(), x, create_graph=True)[0],
    (real_batch[:4].double().requires_grad_(),), atol=1e-5, fast_mode=True)
discriminator.float()
discriminator.train()

# path-length regularization on fixed weights
generator.zero_grad()
torch.manual_seed(7)
pl_mean = torch.zeros([])
path_z = [torch.randn(4, STYLE_DIM)]
fake_img, latents = generator(path_z, return_latents=True, randomize_noise=False)
path_loss, path_mean_fixed, path_lengths = g_path_regularize(fake_img, latents, 0.0)
(2 * 4 * path_loss + 0 * fake_img[0, 0, 0, 0]).backward()
fixed_results["path_lengths"] = path_lengths.detach()
fixed_results["path_loss"] = path_loss.item()
fixed_results["path_mean"] = path_mean_fixed
fixed_results["path_grads"] = {
    name: p.grad.clone() for name, p in generator.named_parameters()
    if name in ("style.1.weight", "style.4.bias", "conv1.conv.weight",
                "convs.0.conv.modulation.weight", "convs.1.noise.weight",
                "to_rgbs.0.conv.weight", "input.input")}
# ADA's running mean by lerp equals rosinality's explicit form
pl_mean_lerp = pl_mean.lerp(path_lengths.detach().mean(), 0.01)
generator.zero_grad()

# a 16x16 generator: two upsampling blocks, six latents
generator16 = Generator(16, STYLE_DIM, N_MLP, channel=CHANNEL)
fake16, latents16 = generator16([z[:2]], return_latents=True, randomize_noise=False)
_, _, path_lengths16 = g_path_regularize(fake16, latents16, 0.0)
fixed_results["fake16"] = fake16.detach()
fixed_results["path_lengths16"] = path_lengths16.detach()

# an EMA step two ways: mul_/add_ and lerp
ema_a, ema_b = copy.deepcopy(g_ema), copy.deepcopy(g_ema)
with torch.no_grad():
    for p in generator.parameters():
        p.add_(torch.randn_like(p) * 0.01)
accumulate(ema_a, generator, 0.9)
accumulate_lerp(ema_b, generator, 0.9)
ema_difference = max((pa - pb).abs().max().item()
                     for pa, pb in zip(ema_a.parameters(), ema_b.parameters()))
fixed_results["ema_step"] = ema_a.conv1.conv.weight[0, :2, :2].detach().clone()

# ------------------------------------------------------------------------------ training

torch.manual_seed(1)
random.seed(1)
generator = Generator(SIZE, STYLE_DIM, N_MLP, channel=CHANNEL)
discriminator = Discriminator(SIZE, channel=CHANNEL)
g_ema = Generator(SIZE, STYLE_DIM, N_MLP, channel=CHANNEL)
g_ema.eval()
accumulate(g_ema, generator, 0)

iters, batch, lr = 120, 16, 0.004
r1_weight, path_regularize, path_batch_shrink = 1.0, 2.0, 2
d_reg_every, g_reg_every, mixing = 4, 4, 0.9
g_reg_ratio = g_reg_every / (g_reg_every + 1)
d_reg_ratio = d_reg_every / (d_reg_every + 1)
g_optim = optim.Adam(generator.parameters(), lr=lr * g_reg_ratio,
                     betas=(0**g_reg_ratio, 0.99**g_reg_ratio))
d_optim = optim.Adam(discriminator.parameters(), lr=lr * d_reg_ratio,
                     betas=(0**d_reg_ratio, 0.99**d_reg_ratio))
loader = sample_data(data.DataLoader(data.TensorDataset(real_images), batch_size=batch,
                                     shuffle=True, drop_last=True))
sample_z = torch.randn(64, STYLE_DIM)
ema_kimg, ema_rampup = 10, 0.05

mean_path_length = 0
log = {"d": [], "g": [], "r1": [], "path": [], "path_length": [], "real_score": [],
       "fake_score": [], "d_accuracy": []}
d_grads_kept = []  # the generator's steps leave the frozen discriminator's grads alone
for idx in range(iters):
    (real_img,) = next(loader)

    requires_grad(generator, False)
    requires_grad(discriminator, True)
    noise = mixing_noise(batch, STYLE_DIM, mixing)
    fake_img, _ = generator(noise)
    fake_pred = discriminator(fake_img)
    real_pred = discriminator(real_img)
    d_loss = d_logistic_loss(real_pred, fake_pred)
    discriminator.zero_grad()
    d_loss.backward()
    d_optim.step()
    log["d"].append(d_loss.item())
    log["real_score"].append(real_pred.mean().item())
    log["fake_score"].append(fake_pred.mean().item())
    accuracy = torch.cat([real_pred > 0, fake_pred < 0]).float().mean()
    log["d_accuracy"].append(accuracy.item())

    if idx % d_reg_every == 0:
        real_img.requires_grad = True
        real_pred = discriminator(real_img)
        r1_loss = d_r1_loss(real_pred, real_img)
        discriminator.zero_grad()
        (r1_weight / 2 * r1_loss * d_reg_every + 0 * real_pred[0]).backward()
        d_optim.step()
        log["r1"].append(r1_loss.item())

    requires_grad(generator, True)
    requires_grad(discriminator, False)
    noise = mixing_noise(batch, STYLE_DIM, mixing)
    fake_img, _ = generator(noise)
    fake_pred = discriminator(fake_img)
    g_loss = g_nonsaturating_loss(fake_pred)
    generator.zero_grad()
    d_grads_before = [p.grad.clone() for p in discriminator.parameters()]
    g_loss.backward()
    g_optim.step()
    log["g"].append(g_loss.item())
    d_grads_kept.append(all(torch.equal(p.grad, before) for p, before
                            in zip(discriminator.parameters(), d_grads_before)))

    if idx % g_reg_every == 0:
        path_batch_size = max(1, batch // path_batch_shrink)
        noise = mixing_noise(path_batch_size, STYLE_DIM, mixing)
        fake_img, latents = generator(noise, return_latents=True)
        path_loss, mean_path_length, path_lengths = g_path_regularize(
            fake_img, latents, mean_path_length)
        generator.zero_grad()
        weighted_path_loss = path_regularize * g_reg_every * path_loss
        if path_batch_shrink:
            weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
        weighted_path_loss.backward()
        g_optim.step()
        log["path"].append(path_loss.item())
        log["path_length"].append(path_lengths.mean().item())

    # StyleGAN2-ADA's half-life, ramped up over the first images
    ema_nimg = min(ema_kimg * 1000, (idx + 1) * batch * ema_rampup)
    ema_beta = 0.5 ** (batch / max(ema_nimg, 1e-8))
    accumulate(g_ema, generator, ema_beta)
    if idx % 40 == 0 or idx == iters - 1:
        print(f"{idx}: d {d_loss.item():.3f} g {g_loss.item():.3f} "
              f"r1 {log['r1'][-1]:.4f} path {log['path'][-1]:.4f} "
              f"mean path {float(mean_path_length):.4f} acc {accuracy.item():.2f}")

requires_grad(discriminator, True)

# how close are generated images to the data: the mean image and per-pixel spread
with torch.no_grad():
    samples, _ = g_ema([sample_z])
    generator_samples, _ = generator([sample_z])
    init_samples, _ = Generator(SIZE, STYLE_DIM, N_MLP, channel=CHANNEL)([sample_z])


def stats_distance(images):
    mean_gap = (images.mean(0) - real_images.mean(0)).abs().mean()
    std_gap = (images.std(0) - real_images.std(0)).abs().mean()
    return (mean_gap + std_gap).item()


# a checkpoint as train.py writes it, loaded into fresh modules
buffer = io.BytesIO()
torch.save({"g": generator.state_dict(), "d": discriminator.state_dict(),
            "g_ema": g_ema.state_dict(), "g_optim": g_optim.state_dict(),
            "d_optim": d_optim.state_dict(), "mean_path_length": mean_path_length}, buffer)
buffer.seek(0)
ckpt = torch.load(buffer, map_location=lambda storage, loc: storage)
d_state_keys = sorted(ckpt["d"].keys())
restored_g = Generator(SIZE, STYLE_DIM, N_MLP, channel=CHANNEL)
restored_d = Discriminator(SIZE, channel=CHANNEL)
restored_g.load_state_dict(ckpt["g_ema"])
restored_d.load_state_dict(ckpt["d"])
restored_optim = optim.Adam(restored_d.parameters(), lr=lr * d_reg_ratio,
                            betas=(0**d_reg_ratio, 0.99**d_reg_ratio))
restored_optim.load_state_dict(ckpt["d_optim"])
restored_g.eval()
restored_d.eval()
discriminator.eval()
with torch.no_grad():
    restored_difference = max(
        (restored_g([sample_z[:8]], randomize_noise=False)[0]
         - g_ema([sample_z[:8]], randomize_noise=False)[0]).abs().max().item(),
        (restored_d(real_images[:8]) - discriminator(real_images[:8])).abs().max().item())
restored_step = restored_optim.state_dict()["state"][0]["step"]
discriminator.train()

trained_distance = stats_distance(samples)
generator_distance = stats_distance(generator_samples)
init_distance = stats_distance(init_samples)
print(f"image statistics gap: untrained {init_distance:.3f}, trained {generator_distance:.3f}, "
      f"g_ema {trained_distance:.3f}")
