# ruff: noqa: N812 (the usual F alias)
"""A small Glow (Kingma & Dhariwal, 2018) written for these tests the way common torch
implementations of it (rosinality's glow-pytorch, chaiyujin's and y0ast's Glow) write it, not a
copy of any, on the 8x8 scikit-learn digits:

- ``ActNorm`` with data-dependent initialisation: a ``uint8`` ``initialized`` buffer, the
  per-channel mean and std of the first batch written into ``loc``/``scale`` under
  ``torch.no_grad`` (``permute`` + ``contiguous`` + ``view``, ``.data.copy_``, ``fill_``);
- the invertible 1x1 convolution as a full matrix (initialised from ``torch.linalg.qr``,
  ``F.conv2d`` with a (C, C, 1, 1) weight, log-determinant by ``torch.slogdet`` in float64,
  the reverse through ``torch.inverse``) and LU-decomposed (``torch.linalg.lu``, checked against
  ``torch.linalg.lu_factor`` + ``torch.lu_unpack``; ``torch.triu``/``tril`` masks, a ``sign_s``
  buffer, ``torch.diag_embed``, ``torch.linalg.inv``/``torch.linalg.slogdet``);
- affine coupling with ``torch.sigmoid(log_s + 2)``, a zero-initialised output convolution
  padded with ones (``F.pad(value=1)``) and scaled by ``exp(3 * scale)``, ``chunk``/``cat``;
- squeeze and unsqueeze by ``view``/``permute``; a multi-scale split whose learned prior
  (``torch.distributions.Normal``) is conditioned on the kept half, a learned top prior;
- the log-likelihood with dequantisation noise (``torch.rand_like``), bits per dimension,
  ``logdet`` bookkeeping; ``Adam`` with ``clip_grad_norm_``;
- the reverse pass: reconstruction x -> z -> x, sampling at a temperature;
- each layer's log-determinant against ``torch.autograd.functional.jacobian``'s
  ``torch.linalg.slogdet`` in float64, and ``torch.autograd.gradcheck`` through the LU weight,
  the slogdet and the coupling.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}
logabs = lambda x: torch.log(torch.abs(x))  # noqa: E731 (as glow-pytorch writes it)


# ------------------------------------------------------------------------------ layers


class ActNorm(nn.Module):
    def __init__(self, in_channel, logdet=True):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
        self.logdet = logdet

    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            mean = flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            std = flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, input):
        _, _, height, width = input.shape
        if self.initialized.item() == 0:
            self.initialize(input)
            self.initialized.fill_(1)
        log_abs = logabs(self.scale)
        logdet = height * width * torch.sum(log_abs)
        if self.logdet:
            return self.scale * (input + self.loc), logdet
        return self.scale * (input + self.loc)

    def reverse(self, output):
        return output / self.scale - self.loc


class InvConv2d(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        weight = q.unsqueeze(2).unsqueeze(3)
        self.weight = nn.Parameter(weight)

    def forward(self, input):
        _, _, height, width = input.shape
        out = F.conv2d(input, self.weight)
        logdet = height * width * torch.slogdet(self.weight.squeeze().double())[1].to(
            input.dtype)
        return out, logdet

    def reverse(self, output):
        return F.conv2d(output, self.weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


class InvConv2dLU(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        w_p, w_l, w_u = torch.linalg.lu(q)
        w_s = torch.diagonal(w_u)
        u_mask = torch.triu(torch.ones_like(w_u), 1)
        l_mask = u_mask.T
        self.register_buffer("w_p", w_p)
        self.register_buffer("u_mask", u_mask)
        self.register_buffer("l_mask", l_mask)
        self.register_buffer("s_sign", torch.sign(w_s))
        self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
        self.w_l = nn.Parameter(w_l)
        self.w_s = nn.Parameter(logabs(w_s))
        self.w_u = nn.Parameter(torch.triu(w_u, 1))
        self.q = q  # kept to check that the LU product starts at q

    def calc_weight(self):
        weight = self.w_p @ (self.w_l * self.l_mask + self.l_eye) @ (
            (self.w_u * self.u_mask) + torch.diag_embed(self.s_sign * torch.exp(self.w_s)))
        return weight.unsqueeze(2).unsqueeze(3)

    def forward(self, input):
        _, _, height, width = input.shape
        weight = self.calc_weight()
        out = F.conv2d(input, weight)
        logdet = height * width * torch.sum(self.w_s)
        return out, logdet

    def reverse(self, output):
        weight = self.calc_weight()
        return F.conv2d(output, torch.linalg.inv(weight.squeeze()).unsqueeze(2).unsqueeze(3))


class ZeroConv2d(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
        self.conv.weight.data.zero_()
        self.conv.bias.data.zero_()
        self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input):
        out = F.pad(input, [1, 1, 1, 1], value=1)
        out = self.conv(out)
        return out * torch.exp(self.scale * 3)


class AffineCoupling(nn.Module):
    def __init__(self, in_channel, filter_size=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(filter_size, filter_size, 1),
            nn.ReLU(inplace=True),
            ZeroConv2d(filter_size, in_channel),
        )
        self.net[0].weight.data.normal_(0, 0.05)
        self.net[0].bias.data.zero_()
        self.net[2].weight.data.normal_(0, 0.05)
        self.net[2].bias.data.zero_()

    def forward(self, input):
        in_a, in_b = input.chunk(2, 1)
        log_s, t = self.net(in_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        out_b = (in_b + t) * s
        logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
        return torch.cat([in_a, out_b], 1), logdet

    def reverse(self, output):
        out_a, out_b = output.chunk(2, 1)
        log_s, t = self.net(out_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        in_b = out_b / s - t
        return torch.cat([out_a, in_b], 1)


class FlowStep(nn.Module):
    def __init__(self, in_channel, filter_size=32, conv_lu=True):
        super().__init__()
        self.actnorm = ActNorm(in_channel)
        self.invconv = InvConv2dLU(in_channel) if conv_lu else InvConv2d(in_channel)
        self.coupling = AffineCoupling(in_channel, filter_size)

    def forward(self, input):
        out, logdet = self.actnorm(input)
        out, det1 = self.invconv(out)
        out, det2 = self.coupling(out)
        logdet = logdet + det1
        if det2 is not None:
            logdet = logdet + det2
        return out, logdet

    def reverse(self, output):
        input = self.coupling.reverse(output)
        input = self.invconv.reverse(input)
        return self.actnorm.reverse(input)


def squeeze2d(input):
    b_size, n_channel, height, width = input.shape
    squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
    squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
    return squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)


def unsqueeze2d(input):
    b_size, n_channel, height, width = input.shape
    unsqueezed = input.view(b_size, n_channel // 4, 2, 2, height, width)
    unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
    return unsqueezed.contiguous().view(b_size, n_channel // 4, height * 2, width * 2)


def gaussian_log_p(x, mean, log_sd):
    return -0.5 * math.log(2 * math.pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)


class Block(nn.Module):
    def __init__(self, in_channel, n_flow, split=True, filter_size=32, conv_lu=True):
        super().__init__()
        squeeze_dim = in_channel * 4
        self.flows = nn.ModuleList(
            [FlowStep(squeeze_dim, filter_size, conv_lu) for _ in range(n_flow)])
        self.split = split
        if split:
            self.prior = ZeroConv2d(in_channel * 2, in_channel * 4)
        else:
            self.prior = ZeroConv2d(in_channel * 4, in_channel * 8)

    def prior_params(self, out):
        if self.split:
            return self.prior(out).chunk(2, 1)
        zero = torch.zeros_like(out)
        return self.prior(zero).chunk(2, 1)

    def forward(self, input):
        out = squeeze2d(input)
        logdet = 0
        for flow in self.flows:
            out, det = flow(out)
            logdet = logdet + det
        if self.split:
            out, z_new = out.chunk(2, 1)
        else:
            z_new = out
        mean, log_sd = self.prior_params(out)
        prior = torch.distributions.Normal(mean, torch.exp(log_sd))
        log_p = prior.log_prob(z_new).view(input.shape[0], -1).sum(1)
        return out, logdet, log_p, z_new

    def reverse(self, output, eps=None, temperature=1.0):
        """``output`` is the kept half (or, for the top block, a tensor of its shape); with
        ``eps`` None, z is sampled from the prior at ``temperature``."""
        if eps is None:
            mean, log_sd = self.prior_params(output)
            eps = mean + torch.exp(log_sd) * torch.randn_like(mean) * temperature
        input = torch.cat([output, eps], 1) if self.split else eps
        for flow in self.flows[::-1]:
            input = flow.reverse(input)
        return unsqueeze2d(input)


class Glow(nn.Module):
    def __init__(self, in_channel, n_flow, n_block, filter_size=32, conv_lu=True):
        super().__init__()
        self.blocks = nn.ModuleList()
        n_channel = in_channel
        for _ in range(n_block - 1):
            self.blocks.append(Block(n_channel, n_flow, True, filter_size, conv_lu))
            n_channel *= 2
        self.blocks.append(Block(n_channel, n_flow, False, filter_size, conv_lu))

    def forward(self, input):
        log_p_sum = 0
        logdet = 0
        out = input
        z_outs = []
        for block in self.blocks:
            out, det, log_p, z_new = block(out)
            z_outs.append(z_new)
            logdet = logdet + det
            log_p_sum = log_p_sum + log_p
        return log_p_sum, logdet, z_outs

    def reverse(self, z_list):
        """Exact inversion of ``forward``'s z list."""
        input = None
        for i, block in enumerate(self.blocks[::-1]):
            z = z_list[-(i + 1)]
            if i == 0:
                input = block.reverse(z, eps=z)
            else:
                input = block.reverse(input, eps=z)
        return input

    @torch.no_grad()
    def sample(self, n, z_shapes, temperature=0.7):
        top = torch.zeros(n, *z_shapes[-1])
        input = self.blocks[-1].reverse(top, temperature=temperature)
        for block in self.blocks[-2::-1]:
            input = block.reverse(input, temperature=temperature)
        return input


def calc_z_shapes(n_channel, input_size, n_block):
    z_shapes = []
    for _ in range(n_block - 1):
        input_size //= 2
        n_channel *= 2
        z_shapes.append((n_channel, input_size, input_size))
    input_size //= 2
    z_shapes.append((n_channel * 4, input_size, input_size))
    return z_shapes


def calc_loss(log_p, logdet, image_size, n_bins, n_channel=1):
    n_pixel = image_size * image_size * n_channel
    loss = -math.log(n_bins) * n_pixel
    loss = loss + logdet + log_p
    return ((-loss / (math.log(2) * n_pixel)).mean(), (log_p / (math.log(2) * n_pixel)).mean(),
            (logdet / (math.log(2) * n_pixel)).mean())


# ------------------------------------------------------------------------------ data

digits = load_digits()
images = torch.tensor(digits.images.astype(np.float32)).unsqueeze(1)  # (1797, 1, 8, 8), 0..16
n_bins = 17.0
image_size, n_flow, n_block = 8, 3, 2


def preprocess(batch):
    """Pixel levels to [-0.5, 0.5) with uniform dequantisation noise."""
    return batch / n_bins - 0.5 + torch.rand_like(batch) / n_bins


# ----------------------------------------------------- fixed-weight checks (recorded)

# squeeze / unsqueeze
x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).view(2, 3, 4, 4)
fixed_results["squeeze"] = squeeze2d(x)
squeeze_roundtrip = torch.equal(unsqueeze2d(squeeze2d(x)), x)

# LU: torch.linalg.lu against lu_factor + lu_unpack; the LU weight starts at q
lu_layer = InvConv2dLU(6)
LU, pivots = torch.linalg.lu_factor(lu_layer.q)
P_unpacked, L_unpacked, U_unpacked = torch.lu_unpack(LU, pivots)
lu_agrees = (torch.allclose(P_unpacked, lu_layer.w_p)
             and torch.allclose(L_unpacked, lu_layer.w_l, atol=1e-6)
             and torch.allclose(U_unpacked, torch.triu(lu_layer.w_u, 1) + torch.diag_embed(
                 lu_layer.s_sign * torch.exp(lu_layer.w_s)), atol=1e-6))
lu_weight_error = (lu_layer.calc_weight().squeeze() - lu_layer.q).abs().max().item()
fixed_results["lu_factors"] = {"P": lu_layer.w_p, "L": lu_layer.w_l.detach(),
                               "s": lu_layer.w_s.detach(), "sign": lu_layer.s_sign,
                               "U": lu_layer.w_u.detach()}

# every layer's log-determinant against the slogdet of its Jacobian, float64
# (1, 4, 2, 2) inputs; ActNorm initialised on a batch; couplings given non-zero output weights


def perturb_(module, std=0.3):
    # (randn of the shape, not randn_like: that one draws in a tensor's memory order, and the
    # full 1x1 weight keeps the column-major layout of torch.linalg.qr's Q)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, dtype=p.dtype) * std)
    return module


# (float64 by default from here to the gradchecks: the layers draw and factorise in float64)
torch.set_default_dtype(torch.float64)
layer_input = torch.randn(1, 4, 2, 2, dtype=torch.float64)
actnorm64 = ActNorm(4).double()
actnorm64(torch.randn(8, 4, 2, 2, dtype=torch.float64) * 3 + 1)
layers64 = {
    "actnorm": actnorm64,
    "invconv": perturb_(InvConv2d(4).double()),
    "invconv_lu": perturb_(InvConv2dLU(4).double(), 0.1),
    "coupling": perturb_(AffineCoupling(4, filter_size=8).double()),
    "flow_step": perturb_(FlowStep(4, filter_size=8).double(), 0.1),
}
logdets, jacobian_logdets, reconstruction64 = {}, {}, {}
for name, layer in layers64.items():
    out, logdet = layer(layer_input)
    logdets[name] = logdet.sum().item()

    def flat(inp, layer=layer):
        return layer(inp.view(1, 4, 2, 2))[0].reshape(-1)

    jac = torch.autograd.functional.jacobian(flat, layer_input.reshape(-1))
    sign, logabsdet = torch.linalg.slogdet(jac)
    jacobian_logdets[name] = logabsdet.item()
    reconstruction64[name] = (layer.reverse(out) - layer_input).abs().max().item()

# the whole two-block Glow on a (1, 1, 4, 4) image: x -> cat(z) has log|det J| = logdet
glow64 = Glow(1, 2, 2, filter_size=8).double()
glow64(torch.randn(16, 1, 4, 4, dtype=torch.float64))  # ActNorm initialisation
for module in glow64.modules():
    if isinstance(module, AffineCoupling):
        perturb_(module.net[4], 0.1)
glow_input = torch.randn(1, 1, 4, 4, dtype=torch.float64)
_, glow_logdet, glow_z = glow64(glow_input)
logdets["glow"] = glow_logdet.item()


def glow_flat(inp):
    _, _, zs = glow64(inp.view(1, 1, 4, 4))
    return torch.cat([z.reshape(-1) for z in zs])


jacobian_logdets["glow"] = torch.linalg.slogdet(
    torch.autograd.functional.jacobian(glow_flat, glow_input.reshape(-1)))[1].item()
reconstruction64["glow"] = (glow64.reverse(glow_z) - glow_input).abs().max().item()
fixed_results["logdets64"] = logdets


# gradcheck: the LU weight (and its logdet), the full-matrix slogdet, the coupling
def lu_conv(w_l, w_s, w_u, inp, layer=layers64["invconv_lu"]):
    weight = layer.w_p @ (w_l * layer.l_mask + layer.l_eye) @ (
        (w_u * layer.u_mask) + torch.diag_embed(layer.s_sign * torch.exp(w_s)))
    return F.conv2d(inp, weight.unsqueeze(2).unsqueeze(3)), torch.sum(w_s) * 4


def full_conv(weight, inp):
    return (F.conv2d(inp, weight.unsqueeze(2).unsqueeze(3)), torch.slogdet(weight)[1] * 4,
            F.conv2d(inp, torch.inverse(weight).unsqueeze(2).unsqueeze(3)))


coupling64 = layers64["coupling"]


def coupling_fn(inp):
    return coupling64(inp)


lu64 = layers64["invconv_lu"]
gradcheck_results = {
    "lu_conv": torch.autograd.gradcheck(lu_conv, tuple(
        t.detach().clone().requires_grad_() for t in (lu64.w_l, lu64.w_s, lu64.w_u,
                                                       layer_input))),
    "full_conv": torch.autograd.gradcheck(full_conv, (
        layers64["invconv"].weight.squeeze().detach().clone().requires_grad_(),
        layer_input.clone().requires_grad_())),
    "coupling": torch.autograd.gradcheck(coupling_fn, (layer_input.clone().requires_grad_(),)),
}
torch.set_default_dtype(torch.float32)

# the digit model on fixed weights: the first batch initialises ActNorm; log p, logdet, the
# loss's gradients, both 1x1 convolution kinds
torch.manual_seed(1)
model = Glow(1, n_flow, n_block, filter_size=16, conv_lu=True)
model_full = Glow(1, n_flow, n_block, filter_size=16, conv_lu=False)
z_shapes = calc_z_shapes(1, image_size, n_block)
fixed_batch = preprocess(images[:64])
for name, net in (("lu", model), ("full", model_full)):
    log_p, logdet, z_outs = net(fixed_batch)
    loss, log_p_bpd, logdet_bpd = calc_loss(log_p, logdet, image_size, n_bins)
    net.zero_grad()
    loss.backward()
    fixed_results[f"{name}_log_p"] = log_p.detach()
    fixed_results[f"{name}_logdet"] = logdet.detach()
    fixed_results[f"{name}_z0"] = z_outs[0].detach()
    fixed_results[f"{name}_loss"] = loss.item()
    fixed_results[f"{name}_grads"] = {
        n: p.grad.clone() for n, p in net.named_parameters()
        if n in ("blocks.0.flows.0.actnorm.scale", "blocks.0.flows.1.invconv.w_s",
                 "blocks.0.flows.1.invconv.w_u", "blocks.0.flows.1.invconv.weight",
                 "blocks.0.flows.2.coupling.net.4.conv.weight", "blocks.1.prior.conv.bias",
                 "blocks.0.flows.0.coupling.net.0.weight")}
fixed_results["actnorm_init"] = {"loc": model.blocks[0].flows[0].actnorm.loc.detach().clone(),
                                 "scale": model.blocks[0].flows[0].actnorm.scale.detach().clone()}
actnorm_initialized = [int(m.initialized) for m in model.modules() if isinstance(m, ActNorm)]
# after data-dependent init, the first ActNorm's output has zero mean and unit std per channel
first_actnorm_out = model.blocks[0].flows[0].actnorm(squeeze2d(fixed_batch))[0].detach()
model.zero_grad()

# ------------------------------------------------------------------------------ training

lr, batch_size, n_iter = 3e-3, 48, 150
optimizer = torch.optim.Adam(model.parameters(), lr=lr)
n_train = 1500
train_images, test_images = images[:n_train], images[n_train:]
bpds, log_p_bpds, logdet_bpds = [], [], []
it = 0
while it < n_iter:
    perm = torch.randperm(n_train)
    for start in range(0, n_train - batch_size + 1, batch_size):
        batch = preprocess(train_images[perm[start:start + batch_size]])
        log_p, logdet, _ = model(batch)
        loss, log_p_bpd, logdet_bpd = calc_loss(log_p, logdet, image_size, n_bins)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 50.0)
        optimizer.step()
        bpds.append(loss.item())
        log_p_bpds.append(log_p_bpd.item())
        logdet_bpds.append(logdet_bpd.item())
        if it % 40 == 0:
            print(f"iter {it}: bpd {loss.item():.3f} (log p {log_p_bpd.item():.3f}, "
                  f"logdet {logdet_bpd.item():.3f})")
        it += 1
        if it == n_iter:
            break

model.eval()
with torch.no_grad():
    test_batch = preprocess(test_images)
    log_p, logdet, z_outs = model(test_batch)
    test_bpd = calc_loss(log_p, logdet, image_size, n_bins)[0].item()
    reconstructed = model.reverse(z_outs)
    reconstruction_error = (reconstructed - test_batch).abs().max().item()
    # the z shapes that sampling draws
    z_out_shapes = [tuple(z.shape[1:]) for z in z_outs]
    torch.manual_seed(2)
    samples = model.sample(16, z_shapes, temperature=0.7)
    samples_cold = model.sample(16, z_shapes, temperature=0.0)
    # the samples' own likelihood: colder samples are more likely
    sample_bpd = calc_loss(*model(samples)[:2], image_size, n_bins)[0].item()
    cold_bpd = calc_loss(*model(samples_cold)[:2], image_size, n_bins)[0].item()

print(f"bpd {bpds[0]:.3f} -> {bpds[-1]:.3f}, test {test_bpd:.3f}, reconstruction "
      f"{reconstruction_error:.2e}, sample bpd {sample_bpd:.3f} (T=0: {cold_bpd:.3f})")
