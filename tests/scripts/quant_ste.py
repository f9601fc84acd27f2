# ruff: noqa: N812 (the usual F alias)
"""Low-precision training in plain PyTorch, written for these tests the way BinaryNet/XNOR-Net,
TWN/TTQ, DoReFa/PACT, LSQ and hand-rolled QAT code write torch code (not a copy of any):

- straight-through estimators as ``torch.autograd.Function`` subclasses: ``ctx.save_for_backward``
  / ``saved_tensors``, ``ctx.needs_input_grad``, ``ctx.mark_non_differentiable`` on a mask output,
  ``ctx.set_materialize_grads``, ``@once_differentiable`` (and its error on a second
  differentiation), the ``setup_context`` form (``forward`` without ``ctx``) also under
  ``torch.vmap`` (``generate_vmap_rule``), an ``InplaceFunction`` with ``ctx.mark_dirty``; sign
  with the hard-tanh clipped gradient, XNOR-Net's per-channel ``alpha * sign(w)``, TWN
  ternarisation, TTQ's learned positive/negative scales (three gradients), Bi-Real's polynomial
  ``ApproxSign`` through the ``detach`` trick, DoReFa's k-bit weights (``tanh``), PACT's learned
  clip (``torch.where`` against a Parameter), DSQ's soft quantiser under
  ``torch.autograd.gradcheck``;
- BinaryNet's latent weights kept on the Parameter (``p.org``, ``weight.data = ...``) and
  clamped after ``Adam.step``; a BNN (``nn.BatchNorm1d``, ``nn.Hardtanh``) learning blobs;
- learned step size quantisation: the grad-scale trick ``(y - y*g).detach() + y*g``, the round
  pass ``(x.round() - x).detach() + x``, ``torch.clamp`` to ``[Qn, Qp]``, per-tensor and
  per-channel learnable scales initialised from the first batch (an ``init_state`` buffer),
  compared with ``torch._fake_quantize_learnable_per_tensor_affine`` where torch has it;
- ``torch.fake_quantize_per_tensor_affine`` (float and tensor qparams, float64, round half to
  even, the clamp mask in the gradient) and ``torch.fake_quantize_per_channel_affine`` (axis 0
  and 1); ``torch.quantize_per_tensor`` / ``int_repr`` / ``dequantize`` where available;
- a small QAT loop on synthetic images: moving-average min/max observers as buffers
  (``torch.aminmax``), per-channel symmetric weight scales (``torch.amax``), fake-quant modules
  with enable flags, conv+BN folding by hand in the QAT forward (scale by ``gamma / running_std``,
  divide back out), BN freezing, then a by-hand folded integer inference (uint8 activations,
  int8 per-channel weights, int32 bias, requantisation) that agrees with the fake-quant model.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
import jitgrad.autograd.function as autograd_function
from jitgrad.autograd.function import once_differentiable

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------------ straight-through estimators


class SignSTE(torch.autograd.Function):
    """BinaryNet's sign: +1 for x >= 0 else -1; the gradient passes where |x| <= 1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


class SignSetupContext(torch.autograd.Function):
    """The same estimator in the ``setup_context`` form (what ``torch.vmap`` needs)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.sign(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output.masked_fill(x.abs() > 1, 0.0)


class XnorBinarize(torch.autograd.Function):
    """XNOR-Net weights ``alpha * sign(w)``, alpha the mean |w| of each output channel; alpha is
    returned too, non-differentiable. The backward is XNOR-Net's full gradient."""

    @staticmethod
    def forward(w):
        dims = tuple(range(1, w.dim()))
        alpha = w.abs().mean(dim=dims, keepdim=True)
        return alpha * torch.sign(w), alpha

    @staticmethod
    def setup_context(ctx, inputs, output):
        (w,) = inputs
        _, alpha = output
        ctx.save_for_backward(w, alpha)
        ctx.mark_non_differentiable(alpha)

    @staticmethod
    def backward(ctx, grad_wb, grad_alpha):
        w, alpha = ctx.saved_tensors
        dims = tuple(range(1, w.dim()))
        n = w[0].numel()
        sign = torch.sign(w)
        through = grad_wb * alpha * (w.abs() <= 1).to(w.dtype)
        via_alpha = sign * (grad_wb * sign).sum(dim=dims, keepdim=True) / n
        return through + via_alpha


def xnor_by_detach(w):
    """XNOR-Net's weights written with the detach trick: autograd makes the same gradient."""
    alpha = w.abs().mean(dim=tuple(range(1, w.dim())), keepdim=True)
    clipped = F.hardtanh(w)
    return alpha * ((torch.sign(w) - clipped).detach() + clipped)


class TernarizeTWN(torch.autograd.Function):
    """Ternary weight networks: threshold 0.7 E|w|, the scale the mean |w| above it."""

    @staticmethod
    def forward(ctx, w, delta_factor):
        delta = delta_factor * w.abs().mean()
        mask = w.abs() > delta
        alpha = (w.abs() * mask).sum() / mask.sum()
        ctx.mark_non_differentiable(mask)
        ctx.set_materialize_grads(False)
        return alpha * torch.sign(w) * mask, mask

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_w, grad_mask):
        fixed_results.setdefault("twn_grad_mask_is_none", grad_mask is None)
        fixed_results.setdefault("twn_needs_input_grad", list(ctx.needs_input_grad))
        return grad_w, None


class TernarizeTTQ(torch.autograd.Function):
    """Trained ternary quantisation: w -> {-Wn, 0, Wp} with learned Wp, Wn and the threshold
    t * max|w|; Wp's gradient sums the positive part's, w's is scaled by the side it is on."""

    @staticmethod
    def forward(ctx, w, w_p, w_n, t):
        delta = t * w.abs().max()
        pos = (w > delta).to(w.dtype)
        neg = (w < -delta).to(w.dtype)
        ctx.save_for_backward(pos, neg, w_p, w_n)
        return w_p * pos - w_n * neg

    @staticmethod
    def backward(ctx, grad_output):
        pos, neg, w_p, w_n = ctx.saved_tensors
        middle = 1.0 - pos - neg
        grad_w = grad_p = grad_n = None
        if ctx.needs_input_grad[0]:
            grad_w = w_p * pos * grad_output + middle * grad_output + w_n * neg * grad_output
        if ctx.needs_input_grad[1]:
            grad_p = (pos * grad_output).sum().reshape(w_p.shape)
        if ctx.needs_input_grad[2]:
            grad_n = -(neg * grad_output).sum().reshape(w_n.shape)
        return grad_w, grad_p, grad_n, None


def approx_sign(x):
    """Bi-Real Net's sign: the forward is sign(x), the backward a piecewise polynomial's."""
    out_forward = torch.sign(x)
    mask1 = x < -1
    mask2 = x < 0
    mask3 = x < 1
    out1 = (-1) * mask1.type(torch.float32) + (x * x + 2 * x) * (1 - mask1.type(torch.float32))
    out2 = out1 * mask2.type(torch.float32) + (-x * x + 2 * x) * (1 - mask2.type(torch.float32))
    out3 = out2 * mask3.type(torch.float32) + 1 * (1 - mask3.type(torch.float32))
    return out_forward.detach() - out3.detach() + out3


def round_ste(x):
    return (x.round() - x).detach() + x


def dorefa_weight(w, k):
    """DoReFa-Net's k-bit weights in [-1, 1]."""
    n = float(2 ** k - 1)
    t = torch.tanh(w)
    t = t / (2 * t.abs().max()) + 0.5
    return 2 * (round_ste(t * n) / n) - 1


InplaceFunction = autograd_function.InplaceFunction


class UniformQuantize(InplaceFunction):
    """quantized.pytorch-style min/max uniform quantisation, in place when asked
    (``ctx.mark_dirty``), with the identity as its gradient."""

    @staticmethod
    def forward(ctx, input, num_bits=8, inplace=False):  # noqa: A002 (the usual name)
        ctx.inplace = inplace
        if ctx.inplace:
            ctx.mark_dirty(input)
            output = input
        else:
            output = input.clone()
        qmin, qmax = 0.0, 2.0 ** num_bits - 1.0
        min_value, max_value = float(output.min()), float(output.max())
        scale = max((max_value - min_value) / (qmax - qmin), 1e-8)
        output.add_(-min_value).div_(scale).clamp_(qmin, qmax).round_()
        output.mul_(scale).add_(min_value)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None, None


class PACT(nn.Module):
    """PACT: ReLU clipped at a learned alpha, then k-bit uniform quantisation."""

    def __init__(self, bits=4, alpha=6.0):
        super().__init__()
        self.bits = bits
        self.alpha = nn.Parameter(torch.tensor([alpha]))

    def forward(self, x):
        y = torch.clamp(x, min=0.0)
        y = torch.where(y < self.alpha, y, self.alpha)
        levels = 2 ** self.bits - 1
        scale = levels / self.alpha
        return round_ste(y * scale) / scale


def dsq_soft(x, lower, upper, bits, k):
    """DSQ's differentiable soft quantiser: tanh steps between the uniform levels."""
    delta = (upper - lower) / (2 ** bits - 1)
    x = torch.clamp(x, lower, upper)
    index = torch.floor((x - lower) / delta)
    m = lower + (index + 0.5) * delta
    s = 1 / math.tanh(0.5 * k * delta)
    phi = s * torch.tanh(k * (x - m))
    return lower + delta * (index + 0.5 * (phi + 1))


# (recorded) the estimators on fixed inputs, values and gradients
x_ste = torch.tensor([-2.0, -1.0, -0.6, -0.1, 0.0, 0.3, 0.9, 1.0, 1.5], requires_grad=True)
y = SignSTE.apply(x_ste)
(y * torch.arange(1.0, 10.0)).sum().backward()
fixed_results["sign_ste"] = y.detach()
fixed_results["sign_ste_grad"] = x_ste.grad.clone()
x_ste.grad = None
y = SignSetupContext.apply(x_ste)
(y * torch.arange(1.0, 10.0)).sum().backward()
fixed_results["sign_setup"] = y.detach()
fixed_results["sign_setup_grad"] = x_ste.grad.clone()
sign_grad_fn_name = type(y.grad_fn).__name__
x_batch = torch.stack([x_ste.detach(), -x_ste.detach()]).requires_grad_()
y = torch.vmap(SignSetupContext.apply)(x_batch)
(y * x_batch).sum().backward()
fixed_results["sign_vmap"] = y.detach()
fixed_results["sign_vmap_grad"] = x_batch.grad
sign_vmap_grad_fn_name = type(y.grad_fn).__name__

x_ste.grad = None
y = approx_sign(x_ste)
y.sum().backward()
fixed_results["approx_sign"] = y.detach()
fixed_results["approx_sign_grad"] = x_ste.grad.clone()

w_conv = torch.randn(4, 3, 3, 3, requires_grad=True)
wb, alpha = XnorBinarize.apply(w_conv)
upstream = torch.randn(4, 3, 3, 3)
(wb * upstream).sum().backward()
fixed_results["xnor_weight"] = wb.detach()
fixed_results["xnor_alpha"] = alpha.reshape(-1)
fixed_results["xnor_grad"] = w_conv.grad.clone()
xnor_alpha_requires_grad = alpha.requires_grad
w_detach = w_conv.detach().clone().requires_grad_()
(xnor_by_detach(w_detach) * upstream).sum().backward()
xnor_detach_grad = w_detach.grad

w_lin = torch.randn(6, 5, requires_grad=True)
wt, mask = TernarizeTWN.apply(w_lin, 0.7)
(wt * torch.linspace(-1, 1, 30).reshape(6, 5)).sum().backward()
fixed_results["twn_weight"] = wt.detach()
fixed_results["twn_grad"] = w_lin.grad.clone()
twn_mask = mask
twn_mask_requires_grad = mask.requires_grad
once_message = None
wt2, _ = TernarizeTWN.apply(w_lin, 0.7)
(first,) = torch.autograd.grad((wt2 ** 2).sum(), w_lin, create_graph=True)
try:
    first.sum().backward()
except RuntimeError as err:
    once_message = str(err)

w_ttq = torch.randn(5, 4, requires_grad=True)
w_p = nn.Parameter(torch.tensor([0.8]))
w_n = nn.Parameter(torch.tensor([0.6]))
wq = TernarizeTTQ.apply(w_ttq, w_p, w_n, 0.3)
(wq * torch.linspace(0.5, 2.0, 20).reshape(5, 4)).sum().backward()
fixed_results["ttq_weight"] = wq.detach()
fixed_results["ttq_grads"] = [w_ttq.grad.clone(), w_p.grad.clone(), w_n.grad.clone()]
w_ttq.grad = None
TernarizeTTQ.apply(w_ttq, w_p.detach(), w_n.detach(), 0.3).sum().backward()
ttq_grad_w_only = w_ttq.grad.clone()

w_dorefa = torch.randn(3, 8, requires_grad=True)
wd = dorefa_weight(w_dorefa, 2)
(wd * torch.linspace(-1, 1, 24).reshape(3, 8)).sum().backward()
fixed_results["dorefa_weight"] = wd.detach()
fixed_results["dorefa_grad"] = w_dorefa.grad.clone()

x_uq = torch.linspace(-1.0, 1.0, 9, requires_grad=True)
y_uq = UniformQuantize.apply(x_uq, 2)
(y_uq * torch.arange(9.0)).sum().backward()
fixed_results["uniform_quantize"] = y_uq.detach()
fixed_results["uniform_quantize_grad"] = x_uq.grad.clone()
h_uq = x_uq.detach().clone().requires_grad_() * 1.0
z_uq = UniformQuantize.apply(h_uq, 3, True)
uniform_inplace_same = z_uq is h_uq
fixed_results["uniform_quantize_inplace"] = z_uq.detach()
uniform_inplace_version = h_uq._version

pact = PACT(bits=3, alpha=2.0)
x_act = torch.linspace(-1.0, 3.1, 12, requires_grad=True)
ya = pact(x_act)
(ya * torch.linspace(1.0, 2.0, 12)).sum().backward()
fixed_results["pact"] = ya.detach()
fixed_results["pact_grads"] = [x_act.grad.clone(), pact.alpha.grad.clone()]

x_dsq = torch.linspace(-1.2, 1.3, 11, dtype=torch.float64, requires_grad=True)
fixed_results["dsq"] = dsq_soft(x_dsq, -1.0, 1.0, 2, 5.0).detach()
dsq_gradcheck = torch.autograd.gradcheck(
    lambda v: dsq_soft(v, -1.0, 1.0, 2, 5.0), (x_dsq[1:-1].detach().clone().requires_grad_(),))


# ------------------------------------------------------------------ BinaryNet (latent weights)


def binarize(tensor):
    return tensor.sign()


class BinarizeLinear(nn.Linear):
    """BinaryNet's layer: the full-precision weight lives in ``weight.org``, ``weight.data``
    holds its sign while the forward runs."""

    def forward(self, x):
        if x.size(1) != 16:  # the first layer sees the real-valued inputs
            x.data = binarize(x.data)
        if not hasattr(self.weight, "org"):
            self.weight.org = self.weight.data.clone()
        self.weight.data = binarize(self.weight.org)
        out = F.linear(x, self.weight)
        if self.bias is not None:
            self.bias.org = self.bias.data.clone()
            out = out + self.bias.view(1, -1).expand_as(out)
        return out


def make_blobs(n_per_class, n_classes, dim, generator):
    centers = torch.randn(n_classes, dim, generator=generator) * 2.0
    xs, ys = [], []
    for c in range(n_classes):
        xs.append(centers[c] + 0.7 * torch.randn(n_per_class, dim, generator=generator))
        ys.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


g_bnn = torch.Generator().manual_seed(1)
bnn_x, bnn_y = make_blobs(32, 4, 16, g_bnn)
bnn = nn.Sequential(
    BinarizeLinear(16, 64), nn.BatchNorm1d(64), nn.Hardtanh(inplace=True),
    BinarizeLinear(64, 64), nn.BatchNorm1d(64), nn.Hardtanh(inplace=True),
    BinarizeLinear(64, 4), nn.BatchNorm1d(4, affine=False),
)
bnn_optimizer = torch.optim.Adam(bnn.parameters(), lr=0.01)
bnn_losses = []
for _epoch in range(6):
    order = torch.randperm(len(bnn_x), generator=g_bnn)
    for start in range(0, len(bnn_x), 32):
        idx = order[start:start + 32]
        out = bnn(bnn_x[idx])
        loss = F.cross_entropy(out, bnn_y[idx])
        bnn_optimizer.zero_grad()
        loss.backward()
        for p in bnn.parameters():  # the update applies to the latent full-precision weights
            if hasattr(p, "org"):
                p.data.copy_(p.org)
        bnn_optimizer.step()
        for p in bnn.parameters():
            if hasattr(p, "org"):
                p.org.copy_(p.data.clamp_(-1, 1))
        bnn_losses.append(loss.item())
bnn.eval()
with torch.no_grad():
    bnn_accuracy = (bnn(bnn_x).argmax(1) == bnn_y).float().mean().item()
bnn_weights_binary = all(
    set(m.weight.data.unique().tolist()) <= {-1.0, 1.0} for m in bnn if isinstance(m, nn.Linear))
bnn_latent_in_range = all(
    float(m.weight.org.abs().max()) <= 1.0 for m in bnn if isinstance(m, nn.Linear))


# ------------------------------------------------------------------ LSQ


def grad_scale(x, scale):
    y = x
    y_grad = x * scale
    return (y - y_grad).detach() + y_grad


def round_pass(x):
    y = x.round()
    y_grad = x
    return (y - y_grad).detach() + y_grad


class LsqQuantizer(nn.Module):
    """Learned step size quantisation of weights (signed) or activations (all_positive)."""

    def __init__(self, bits, all_positive=False, symmetric=False, per_channel=False,
                 num_channels=1):
        super().__init__()
        if all_positive:
            self.thd_neg, self.thd_pos = 0, 2 ** bits - 1
        elif symmetric:
            self.thd_neg, self.thd_pos = -(2 ** (bits - 1)) + 1, 2 ** (bits - 1) - 1
        else:
            self.thd_neg, self.thd_pos = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        self.per_channel = per_channel
        self.s = nn.Parameter(torch.ones(num_channels if per_channel else 1))
        self.register_buffer("init_state", torch.zeros(1))

    def init_from(self, x):
        with torch.no_grad():
            if self.per_channel:
                dims = list(range(1, x.dim()))
                self.s.copy_(x.abs().mean(dim=dims) * 2 / (self.thd_pos ** 0.5))
            else:
                self.s.fill_(x.abs().mean().item() * 2 / (self.thd_pos ** 0.5))
            self.init_state.fill_(1)

    def forward(self, x):
        if self.training and self.init_state == 0:
            self.init_from(x)
        if self.per_channel:
            s_grad_scale = 1.0 / ((self.thd_pos * x[0].numel()) ** 0.5)
        else:
            s_grad_scale = 1.0 / ((self.thd_pos * x.numel()) ** 0.5)
        s_scale = grad_scale(self.s, s_grad_scale)
        if self.per_channel:
            s_scale = s_scale.view(-1, *([1] * (x.dim() - 1)))
        x = x / s_scale
        x = torch.clamp(x, self.thd_neg, self.thd_pos)
        x = round_pass(x)
        return x * s_scale


def lsq_scale_grad_by_hand(x, s, qn, qp, g, upstream):
    """LSQ's step-size gradient (paper eq. 3) times the grad scale g."""
    v = x / s
    inside = (v > qn) & (v < qp)
    per = torch.where(inside, v.round() - v, torch.where(v <= qn, torch.full_like(v, qn),
                                                          torch.full_like(v, qp)))
    return (per * upstream).sum() * g


# (recorded) per-tensor LSQ on fixed activations, weights per channel
lsq_act = LsqQuantizer(4, all_positive=True)
x_lsq = (torch.randn(8, 12) * 1.5).relu().requires_grad_()
upstream_lsq = torch.randn(8, 12)
y_lsq = lsq_act(x_lsq)
(y_lsq * upstream_lsq).sum().backward()
fixed_results["lsq_init_scale"] = lsq_act.s.detach().clone()
fixed_results["lsq_act"] = y_lsq.detach()
fixed_results["lsq_act_grads"] = [x_lsq.grad.clone(), lsq_act.s.grad.clone()]
lsq_levels = sorted(set((y_lsq.detach() / lsq_act.s.detach()).round().reshape(-1).tolist()))
lsq_scale_grad_expected = lsq_scale_grad_by_hand(
    x_lsq.detach(), lsq_act.s.detach(), 0, 15, 1.0 / math.sqrt(15 * x_lsq.numel()), upstream_lsq)

lsq_w = LsqQuantizer(3, per_channel=True, num_channels=4)
w_lsq = torch.randn(4, 2, 3, 3, requires_grad=True)
yw = lsq_w(w_lsq)
(yw * torch.randn(4, 2, 3, 3)).sum().backward()
fixed_results["lsq_weight"] = yw.detach()
fixed_results["lsq_weight_grads"] = [w_lsq.grad.clone(), lsq_w.s.grad.clone()]
lsq_w.eval()  # the stored scale is kept in eval mode; init happens once
lsq_w.s.data.mul_(2.0)
fixed_results["lsq_weight_eval"] = lsq_w(w_lsq).detach()

# torch's learnable fake quantisers (private ops that QAT's _LearnableFakeQuantize calls)
learnable_results = {}
learnable_per_tensor = getattr(torch, "_fake_quantize_learnable_per_tensor_affine", None)
if learnable_per_tensor is not None:  # jitgrad-diff: jitgrad has no learnable fake-quant ops
    xl = x_lsq.detach().clone().requires_grad_()
    sl = lsq_act.s.detach().clone().requires_grad_()
    zl = torch.zeros(1, requires_grad=True)
    yl = learnable_per_tensor(xl, sl, zl, 0, 15, 1.0 / math.sqrt(15 * xl.numel()))
    (yl * upstream_lsq).sum().backward()
    learnable_results["per_tensor"] = [yl.detach(), xl.grad, sl.grad, zl.grad]
learnable_per_channel = getattr(torch, "_fake_quantize_learnable_per_channel_affine", None)
if learnable_per_channel is not None:  # jitgrad-diff: jitgrad has no learnable fake-quant ops
    wl = torch.linspace(-1.3, 0.9, 15).reshape(3, 5).requires_grad_()
    sl = torch.tensor([0.1, 0.25, 0.05], requires_grad=True)
    zl = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)
    yl = learnable_per_channel(wl, sl, zl, 0, -8, 7, 1.0)
    yl.sum().backward()
    learnable_results["per_channel"] = [yl.detach(), wl.grad, sl.grad, zl.grad]


# ------------------------------------------------------------------ fake_quantize ops (recorded)

x_fq = torch.tensor([-1.3, -0.375, -0.125, 0.0, 0.125, 0.375, 0.6, 0.875, 1.0, 2.0],
                    requires_grad=True)
y = torch.fake_quantize_per_tensor_affine(x_fq, 0.25, 1, -4, 3)
(y * torch.arange(1.0, 11.0)).sum().backward()
fixed_results["fq_tensor"] = y.detach()
fixed_results["fq_tensor_grad"] = x_fq.grad.clone()
fq_grad_fn_name = type(y.grad_fn).__name__
# round half to even: -0.125 / 0.25 = -0.5 -> -0, 0.375 / 0.25 = 1.5 -> 2
fq_by_hand = (torch.clamp(torch.round(x_fq.detach() / 0.25) + 1, -4, 3) - 1) * 0.25

x_fq.grad = None
scale_t = torch.tensor([0.1])
zp_t = torch.tensor([3], dtype=torch.int32)
y = torch.fake_quantize_per_tensor_affine(x_fq, scale_t, zp_t, 0, 255)
y.sum().backward()
fixed_results["fq_tensor_qparams"] = y.detach()
fixed_results["fq_tensor_qparams_grad"] = x_fq.grad.clone()

x64 = torch.randn(3, 7, dtype=torch.float64, requires_grad=True)
y64 = torch.fake_quantize_per_tensor_affine(x64, 0.05, 0, -128, 127)
(y64 ** 2).sum().backward()
fixed_results["fq_float64"] = y64.detach()
fixed_results["fq_float64_grad"] = x64.grad.clone()
fq_float64_dtype = str(y64.dtype).split(".")[-1]

w_pc = torch.randn(4, 3, 2, 2, requires_grad=True)
scales_pc = torch.tensor([0.05, 0.1, 0.2, 0.02])
zps_pc = torch.tensor([0, 1, -1, 0], dtype=torch.int32)
y = torch.fake_quantize_per_channel_affine(w_pc, scales_pc, zps_pc, 0, -8, 7)
(y * torch.randn(4, 3, 2, 2)).sum().backward()
fixed_results["fq_channel_axis0"] = y.detach()
fixed_results["fq_channel_axis0_grad"] = w_pc.grad.clone()
act_pc = torch.randn(2, 3, 4, 4, requires_grad=True)
y = torch.fake_quantize_per_channel_affine(act_pc, torch.tensor([0.02, 0.05, 0.1]),
                                           torch.tensor([128, 100, 0], dtype=torch.int32),
                                           1, 0, 255)
y.sum().backward()
fixed_results["fq_channel_axis1"] = y.detach()
fixed_results["fq_channel_axis1_grad"] = act_pc.grad.clone()

fq_errors = {}
for key, bad in {
    "min_gt_max": lambda: torch.fake_quantize_per_tensor_affine(x_fq, 0.1, 0, 10, 5),
    "zero_point_range": lambda: torch.fake_quantize_per_tensor_affine(x_fq, 0.1, 300, 0, 255),
    "channel_scale_dtype": lambda: torch.fake_quantize_per_channel_affine(
        w_pc, scales_pc.double(), zps_pc, 0, -8, 7),
    "channel_zero_point_dtype": lambda: torch.fake_quantize_per_channel_affine(
        w_pc, scales_pc, zps_pc.long(), 0, -8, 7),
    "channel_axis": lambda: torch.fake_quantize_per_channel_affine(
        w_pc, scales_pc, zps_pc, 1, -8, 7),
}.items():
    try:
        bad()
        fq_errors[key] = None
    except RuntimeError as err:
        fq_errors[key] = " ".join(str(err).split())

# quantized tensors (deprecated in torch 2.13): the integer codes and the dequantised values
quantized_results = {}
x_q = torch.linspace(-1.0, 1.5, 11)
if hasattr(torch, "quantize_per_tensor"):  # jitgrad-diff: jitgrad has no quantized tensors
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(x_q, 0.02, 10, torch.qint8)
        quantized_results["int_repr"] = q.int_repr().to(torch.int64)
        quantized_results["dequantize"] = q.dequantize()
        quantized_results["torch_dequantize"] = torch.dequantize(q)
        q8 = torch.quantize_per_tensor(x_q, 0.01, 128, torch.quint8)
        quantized_results["uint8_repr"] = q8.int_repr().to(torch.int64)
# the same codes by hand
codes_by_hand = torch.clamp(torch.round(x_q / 0.02) + 10, -128, 127).to(torch.int64)
uint8_codes_by_hand = torch.clamp(torch.round(x_q / 0.01) + 128, 0, 255).to(torch.int64)
dequant_by_hand = (codes_by_hand - 10).to(torch.float32) * 0.02


# ------------------------------------------------------------------ hand-written QAT


class MovingAverageMinMax(nn.Module):
    """An activation observer: running min/max with an averaging constant, as buffers."""

    def __init__(self, averaging_constant=0.1, quant_min=0, quant_max=255):
        super().__init__()
        self.c = averaging_constant
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    @torch.no_grad()
    def forward(self, x):
        x_min, x_max = torch.aminmax(x.detach())
        if torch.isinf(self.min_val):
            self.min_val.copy_(x_min)
            self.max_val.copy_(x_max)
        else:
            self.min_val.copy_(self.min_val + self.c * (x_min - self.min_val))
            self.max_val.copy_(self.max_val + self.c * (x_max - self.max_val))
        return x

    def calculate_qparams(self):
        min_neg = torch.min(self.min_val, torch.zeros_like(self.min_val))
        max_pos = torch.max(self.max_val, torch.zeros_like(self.max_val))
        scale = (max_pos - min_neg) / float(self.quant_max - self.quant_min)
        scale = torch.max(scale, torch.tensor(torch.finfo(torch.float32).eps))
        zero_point = self.quant_min - torch.round(min_neg / scale).to(torch.int)
        zero_point = torch.clamp(zero_point, self.quant_min, self.quant_max)
        return scale.reshape(1), zero_point.reshape(1).to(torch.int32)


class PerChannelSymmetric(nn.Module):
    """A weight observer: per-output-channel symmetric int8 scales from the current weight."""

    def __init__(self, quant_min=-128, quant_max=127):
        super().__init__()
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("max_abs", torch.zeros(0))

    @torch.no_grad()
    def forward(self, w):
        self.max_abs = torch.amax(w.detach().abs(), dim=tuple(range(1, w.dim())))
        return w

    def calculate_qparams(self):
        scale = self.max_abs / ((self.quant_max - self.quant_min) / 2)
        scale = torch.clamp(scale, min=torch.finfo(torch.float32).eps)
        return scale, torch.zeros(scale.shape, dtype=torch.int32)


class FakeQuant(nn.Module):
    def __init__(self, observer, per_channel=False):
        super().__init__()
        self.observer = observer
        self.per_channel = per_channel
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("scale", torch.tensor([1.0]))
        self.register_buffer("zero_point", torch.tensor([0], dtype=torch.int32))

    def forward(self, x):
        if self.observer_enabled[0] == 1:
            self.observer(x)
            scale, zero_point = self.observer.calculate_qparams()
            if self.scale.shape != scale.shape:
                self.scale.resize_(scale.shape)
                self.zero_point.resize_(zero_point.shape)
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)
        if self.fake_quant_enabled[0] == 1:
            q = self.observer
            # (the backward keeps only the mask: the observer may copy_ new qparams before it)
            scale, zero_point = self.scale, self.zero_point
            if self.per_channel:
                x = torch.fake_quantize_per_channel_affine(
                    x, scale, zero_point, 0, q.quant_min, q.quant_max)
            else:
                x = torch.fake_quantize_per_tensor_affine(
                    x, scale, zero_point, q.quant_min, q.quant_max)
        return x


def act_fq():
    return FakeQuant(MovingAverageMinMax())


def weight_fq():
    return FakeQuant(PerChannelSymmetric(), per_channel=True)


class ConvBnReLUQAT(nn.Module):
    """Conv + BN (+ReLU) with the BN scale folded into the fake-quantised weight."""

    def __init__(self, cin, cout, padding=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.weight_fake_quant = weight_fq()
        self.frozen = False

    def forward(self, x):
        running_std = torch.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.conv.weight * scale_factor.reshape(-1, 1, 1, 1))
        conv = F.conv2d(x, scaled_weight, None, self.conv.stride, self.conv.padding)
        conv_orig = conv / scale_factor.reshape(1, -1, 1, 1)
        return F.relu(self.bn(conv_orig))

    def freeze_bn_stats(self):
        self.bn.eval()
        self.frozen = True

    def folded(self):
        """The inference conv: weight * gamma / std, bias beta - mean * gamma / std."""
        std = torch.sqrt(self.bn.running_var + self.bn.eps)
        w = self.conv.weight * (self.bn.weight / std).reshape(-1, 1, 1, 1)
        b = self.bn.bias - self.bn.running_mean * self.bn.weight / std
        return w.detach(), b.detach()


class QATNet(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.quant = act_fq()
        self.block1 = ConvBnReLUQAT(1, 4)
        self.act1 = act_fq()
        self.block2 = ConvBnReLUQAT(4, 8)
        self.act2 = act_fq()
        self.fc = nn.Linear(8, n_classes)
        self.fc_weight_fq = weight_fq()
        self.out_fq = act_fq()

    def forward(self, x):
        x = self.quant(x)
        x = self.act1(self.block1(x))
        x = F.max_pool2d(x, 2)
        x = self.act2(self.block2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        x = self.act2(x)  # the pooled mean is requantised with the same qparams
        x = F.linear(x, self.fc_weight_fq(self.fc.weight), self.fc.bias)
        return self.out_fq(x)


def make_bars(n, generator):
    """8x8 images: a horizontal bar (0), a vertical bar (1) or a diagonal (2), plus noise."""
    images = torch.rand(n, 1, 8, 8, generator=generator) * 0.3
    labels = torch.randint(0, 3, (n,), generator=generator)
    pos = torch.randint(1, 7, (n,), generator=generator)
    eye = torch.eye(8)
    for i in range(n):
        k, p = int(labels[i]), int(pos[i])
        if k == 0:
            images[i, 0, p, :] += 1.0
        elif k == 1:
            images[i, 0, :, p] += 1.0
        else:
            images[i, 0] += eye if p % 2 else eye.flip(1)
    return images, labels


g_qat = torch.Generator().manual_seed(2)
qat_x, qat_y = make_bars(96, g_qat)
qat_model = QATNet()
qat_model.train()

# (recorded) conv+BN folding: the eval-mode conv -> bn equals the folded conv
with torch.no_grad():
    block = qat_model.block1
    block.bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.05, 0.3]))
    block.bn.running_var.copy_(torch.tensor([0.5, 1.5, 2.0, 0.8]))
    block.bn.weight.copy_(torch.tensor([1.2, 0.8, -0.5, 1.0]))
    block.bn.bias.copy_(torch.tensor([0.0, 0.1, -0.1, 0.2]))
    block.bn.eval()
    reference = block.bn(block.conv(qat_x[:4]))
    w_fold, b_fold = block.folded()
    fixed_results["fold_conv_bn"] = reference
    folded_out = F.conv2d(qat_x[:4], w_fold, b_fold, padding=1)
    block.bn.train()
    block.bn.reset_running_stats()
    block.bn.reset_parameters()

# (recorded) one fixed-weight forward/backward in train mode, observers seeing the batch
out = qat_model(qat_x[:16])
loss = F.cross_entropy(out, qat_y[:16])
loss.backward()
fixed_results["qat_logits"] = out.detach()
fixed_results["qat_grads"] = {name: p.grad.clone() for name, p in qat_model.named_parameters()}
fixed_results["qat_qparams"] = {
    name: [m.scale.clone(), m.zero_point.to(torch.int64)]
    for name, m in qat_model.named_modules() if isinstance(m, FakeQuant)}
fixed_results["qat_observer_ranges"] = {
    name: torch.stack([m.min_val, m.max_val])
    for name, m in qat_model.named_modules() if isinstance(m, MovingAverageMinMax)}
qat_model.zero_grad()

qat_optimizer = torch.optim.SGD(qat_model.parameters(), lr=0.1, momentum=0.9)
qat_losses = []
n_epochs = 8
for epoch in range(n_epochs):
    if epoch == 5:  # freeze observers and BN statistics for the last epochs
        for m in qat_model.modules():
            if isinstance(m, FakeQuant):
                m.observer_enabled[0] = 0
            if isinstance(m, ConvBnReLUQAT):
                m.freeze_bn_stats()
    order = torch.randperm(len(qat_x), generator=g_qat)
    for start in range(0, len(qat_x), 16):
        idx = order[start:start + 16]
        logits = qat_model(qat_x[idx])
        loss = F.cross_entropy(logits, qat_y[idx])
        qat_optimizer.zero_grad()
        loss.backward()
        qat_optimizer.step()
        qat_losses.append(loss.item())

qat_model.eval()
with torch.no_grad():
    qat_logits = qat_model(qat_x)
qat_accuracy = (qat_logits.argmax(1) == qat_y).float().mean().item()
frozen_scales = [m.scale.clone() for m in qat_model.modules() if isinstance(m, FakeQuant)]


# ------------------------------------------------------------------ integer inference by hand


def quantize(x, scale, zero_point, qmin, qmax):
    return torch.clamp(torch.round(x / scale) + zero_point, qmin, qmax)


def requantize(acc, multiplier, zero_point, qmin=0, qmax=255, relu=False):
    out = torch.round(acc * multiplier) + zero_point
    if relu:
        out = torch.clamp(out, min=zero_point)
    return torch.clamp(out, qmin, qmax)


def int_conv_block(q_in, in_qparams, block, out_fq):
    """uint8 in -> int8 per-channel weights -> int32 accumulator -> uint8 out (ReLU fused);
    the weight scales are the ones the fake quantiser froze with its observer."""
    s_in, z_in = in_qparams
    w, b = block.folded()
    s_w = block.weight_fake_quant.scale
    q_w = quantize(w, s_w.reshape(-1, 1, 1, 1), 0, -128, 127)
    s_out, z_out = float(out_fq.scale), int(out_fq.zero_point)
    bias_scale = s_in * s_w
    q_b = torch.round(b / bias_scale)  # int32 bias
    # int32 accumulation, exactly, in float32: the products and partial sums are integers
    # below 2 ** 24
    acc = F.conv2d(q_in - z_in, q_w, q_b, padding=1).double()
    multiplier = (bias_scale / s_out).double().reshape(1, -1, 1, 1)
    return requantize(acc, multiplier, z_out, relu=True), (s_out, z_out)


with torch.no_grad():
    fq_in = qat_model.quant
    in_qparams = (float(fq_in.scale), int(fq_in.zero_point))
    q_x = quantize(qat_x, *in_qparams, 0, 255)
    q1, qp1 = int_conv_block(q_x, in_qparams, qat_model.block1, qat_model.act1)
    q1 = F.max_pool2d(q1.float(), 2)  # max pooling commutes with the monotone dequantisation
    q2, qp2 = int_conv_block(q1, qp1, qat_model.block2, qat_model.act2)
    pooled = (q2.mean(dim=(2, 3)) - qp2[1]) * qp2[0]
    q_pooled = quantize(pooled, qp2[0], qp2[1], 0, 255)
    fc_w = qat_model.fc.weight
    s_fc = qat_model.fc_weight_fq.scale
    q_fc = quantize(fc_w, s_fc.reshape(-1, 1), 0, -128, 127).double()
    acc = (q_pooled - qp2[1]) @ q_fc.t()
    real = acc * qp2[0] * s_fc.double() + qat_model.fc.bias.double()
    s_o, z_o = float(qat_model.out_fq.scale), int(qat_model.out_fq.zero_point)
    int_logits = (quantize(real, s_o, z_o, 0, 255) - z_o) * s_o
int_vs_fake_steps = ((int_logits - qat_logits.double()).abs().max() / s_o).item()
int_agrees_argmax = (int_logits.argmax(1) == qat_logits.argmax(1)).float().mean().item()
int_accuracy = (int_logits.argmax(1) == qat_y).float().mean().item()

if __name__ == "__main__":
    print("BNN losses", [round(v, 3) for v in bnn_losses[::4]], "accuracy", bnn_accuracy)
    print("QAT losses", [round(v, 3) for v in qat_losses[::6]], "accuracy", qat_accuracy)
    print("integer inference: accuracy", int_accuracy, "argmax agreement", int_agrees_argmax,
          "max |int - fake| in output steps", int_vs_fake_steps)
    print("once_differentiable:", once_message)
