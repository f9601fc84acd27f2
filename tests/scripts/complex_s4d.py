# ruff: noqa: N812, N806, N816 (the usual F alias; S4 code's H, N, L, A, B, C, D, dA names)
"""Complex-valued deep learning and an S4D diagonal state space model, written for these tests
the way complex-valued network code (complexPyTorch-style layers, modReLU RNN code) and the S4
repository's standalone S4D example write torch code (not a copy of either):

- complex autograd: torch's conjugate Wirtinger convention on real losses of complex tensors
  (``|z|^2``, ``Re(z w)``, ``Im(z w)``, ``abs``, ``angle``, ``exp``, ``conj``), a vector-Jacobian
  product with a complex ``gradient=`` and the implicit-grad error for a complex output;
  ``.conj()``, ``is_conj``, ``resolve_conj``, ``conj_physical``/``conj_physical_``,
  ``torch.view_as_real``/``view_as_complex`` (and their errors), ``torch.complex``,
  ``torch.polar``, ``.real``/``.imag``, ``torch.sgn``, ``torch.vdot``;
  ``torch.autograd.gradcheck`` of complex128 functions (modReLU, CReLU, cardioid, a complex
  linear map, complex batch-norm-lite, the S4D kernel and its FFT convolution);
- complex layers: a linear layer from two real ``nn.Parameter``s glued by ``torch.complex``,
  a complex Conv1d from two real ``nn.Conv1d``s, beside ``nn.Linear``/``nn.Conv1d`` with
  ``dtype=torch.cfloat``; CReLU, modReLU (``abs``, ``angle``, ``torch.polar``), cardioid; a
  complex batch-norm-lite with a complex running-mean buffer; a complex-signal classifier on
  ``abs`` logits (``F.cross_entropy``) trained with Adam, and a complex FIR filter (the
  complex weight of a cfloat ``nn.Conv1d``, applied through real convolutions of the parts)
  identified under SGD with momentum on an MSE of ``view_as_real`` parts;
- S4D: a diagonal complex ``A`` parameterised by ``log_A_real`` and ``A_imag``, ``log_dt``, a
  ``C`` stored as ``view_as_real`` (and a variant with a complex ``nn.Parameter``), zero-order
  hold ``exp(dt A)``, the Vandermonde kernel by ``exp`` of outer products (and by ``torch.pow``
  and by ``cumprod``), the causal convolution by ``torch.fft.rfft``/``irfft`` padded to 2L
  (and by ``F.conv1d``), the recurrent form by a Python loop over time; a two-layer S4D model
  (``nn.GLU``, ``nn.LayerNorm``, ``nn.GELU``) trained on a synthetic causal filtering task by
  ``AdamW`` with S4's per-parameter ``_optim`` groups and ``CosineAnnealingLR``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.autograd import gradcheck

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------ complex autograd (recorded)


def as_real_pairs(t):
    """view_as_real refuses an unresolved conjugate: resolve it first, as S4 code does."""
    if t.is_conj():
        t = t.resolve_conj()
    return torch.view_as_real(t)


def grad_of(loss, z):
    return torch.autograd.grad(loss, z)[0]


z = torch.randn(6, dtype=torch.cdouble, requires_grad=True)
w = torch.randn(6, dtype=torch.cdouble)
wirtinger = {
    # a real loss L(z): torch's gradient is dL/dRe z + i dL/dIm z (2 dL/d conj(z))
    "abs_sq": grad_of(z.abs().pow(2).sum(), z),  # 2 z
    "re_zw": grad_of((z * w).real.sum(), z),  # conj(w)
    "im_zw": grad_of((z * w).imag.sum(), z),  # i conj(w)
    "abs": grad_of(z.abs().sum(), z),  # sgn(z)
    "angle": grad_of(z.angle().sum(), z),  # i z / |z|^2
    "exp_real": grad_of(torch.exp(z).real.sum(), z),  # conj(exp(z))
    "conj_w": grad_of((z.conj() * w).real.sum(), z),  # w
    "vdot": grad_of(torch.vdot(w, z).real, z),  # w
    "z_conj_z": grad_of((z * z.conj()).real.sum(), z),  # 2 z
}
# a complex output: backward takes a complex vector v and gives v * conj(dy/dz) (holomorphic)
v = torch.randn(6, dtype=torch.cdouble)
y = z * z * w
y.backward(gradient=v)
wirtinger["vjp_z2w"] = z.grad.clone()  # v * conj(2 z w)
z.grad = None
try:
    (z * w).sum().backward()
    implicit_error = None
except RuntimeError as e:
    implicit_error = str(e)
fixed_results["wirtinger"] = {k: as_real_pairs(g) for k, g in wirtinger.items()}

# the conjugate bit: .conj() is lazy in torch (a view with is_conj), conj_physical is not
zd = z.detach()
lazy = zd.conj()
conj_bits = {
    "conj": lazy.is_conj(),
    "resolved": lazy.resolve_conj().is_conj(),
    "physical": zd.conj_physical().is_conj(),
    "real_conj": torch.ones(2).conj().is_conj(),  # a real tensor's conj is itself
}


buf = zd.clone()
buf.conj_physical_()
conj_values = {
    "lazy": as_real_pairs(lazy),
    "physical": torch.view_as_real(torch.conj_physical(zd)),
    "inplace": torch.view_as_real(buf),
    "real_imag": torch.stack([lazy.real, lazy.imag], dim=-1),
}
fixed_results["conj"] = conj_values

# view_as_real / view_as_complex: the last dim of 2 floats, stride 1; their errors
errors = {}
for key, fn in {
    "conj_view_as_real": lambda: torch.view_as_real(zd.conj()),
    "real_view_as_real": lambda: torch.view_as_real(torch.randn(3)),
    "last_dim_3": lambda: torch.view_as_complex(torch.randn(3, 3)),
    "stride": lambda: torch.view_as_complex(torch.randn(2, 3).t()),
    "long_complex": lambda: torch.complex(torch.ones(2, dtype=torch.long),
                                          torch.ones(2, dtype=torch.long)),
    "polar_dtypes": lambda: torch.polar(torch.ones(2), torch.ones(2, dtype=torch.double)),
    "relu_complex": lambda: F.relu(zd),
    "lt_complex": lambda: zd < zd,
    "cross_entropy_complex": lambda: F.cross_entropy(zd.reshape(2, 3), torch.tensor([0, 1])),
}.items():
    try:
        fn()
        errors[key] = None
    except (RuntimeError, NotImplementedError) as e:
        errors[key] = f"{type(e).__name__}: {e}"

pairs = torch.randn(4, 3, 2, dtype=torch.double, requires_grad=True)
as_complex = torch.view_as_complex(pairs)  # (4, 3) complex128
roundtrip = torch.view_as_real(as_complex * (1 - 2j)).pow(2).sum()
roundtrip.backward()
fixed_results["view_pairs_grad"] = pairs.grad.clone()
view_roundtrip_exact = bool(torch.equal(torch.view_as_real(torch.view_as_complex(pairs)), pairs))


# ------------------------------------------------------------------ complex layers


def crelu(z):
    """CReLU: ReLU on the real and the imaginary parts separately."""
    return torch.complex(F.relu(z.real), F.relu(z.imag))


def modrelu(z, b, eps=0.0):
    """modReLU: relu(|z| + b) with z's phase (b < 0 makes a dead zone around 0)."""
    if eps:
        mag = z.abs()
        return F.relu(mag + b) * (z / (mag + eps))
    return torch.polar(F.relu(z.abs() + b), z.angle())


def cardioid(z):
    """The cardioid: scales z by (1 + cos(angle z)) / 2, real inputs keep their ReLU."""
    return 0.5 * (1 + torch.cos(z.angle())) * z


class CReLU(nn.Module):
    def forward(self, z):
        return crelu(z)


class ModReLU(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.b = nn.Parameter(torch.full((features,), -0.1))

    def forward(self, z):  # (B, C, L) or (B, C)
        b = self.b.view(-1, *([1] * (z.dim() - 2)))
        return modrelu(z, b)


class ComplexLinear(nn.Module):
    """W = W_re + i W_im from two real parameters (works with every real optimizer)."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        scale = 1 / math.sqrt(2 * in_features)
        self.weight_re = nn.Parameter(torch.randn(out_features, in_features) * scale)
        self.weight_im = nn.Parameter(torch.randn(out_features, in_features) * scale)
        if bias:
            self.bias_re = nn.Parameter(torch.zeros(out_features))
            self.bias_im = nn.Parameter(torch.zeros(out_features))
        else:
            self.register_parameter("bias_re", None)
            self.register_parameter("bias_im", None)

    @property
    def weight(self):
        return torch.complex(self.weight_re, self.weight_im)

    def forward(self, z):
        out = z @ self.weight.transpose(0, 1)  # a plain transpose: no conjugation
        if self.bias_re is not None:
            out = out + torch.complex(self.bias_re, self.bias_im)
        return out


class ComplexConv1d(nn.Module):
    """(A + iB)(x + iy) = (Ax - By) + i(Ay + Bx) with two real convolutions."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0):
        super().__init__()
        self.conv_re = nn.Conv1d(in_channels, out_channels, kernel_size, stride, padding,
                                 bias=False)
        self.conv_im = nn.Conv1d(in_channels, out_channels, kernel_size, stride, padding,
                                 bias=False)

    def forward(self, z):
        x, y = z.real, z.imag
        return torch.complex(self.conv_re(x) - self.conv_im(y), self.conv_re(y) + self.conv_im(x))


def complex_conv1d(x, weight, **kwargs):
    """conv1d of complex x and weight from four real convolutions of their parts."""
    xr, xi, wr, wi = x.real, x.imag, weight.real, weight.imag
    return torch.complex(F.conv1d(xr, wr, **kwargs) - F.conv1d(xi, wi, **kwargs),
                         F.conv1d(xr, wi, **kwargs) + F.conv1d(xi, wr, **kwargs))


def complex_bn_lite(z, weight, bias, eps=1e-5):
    """Batch statistics over (batch, length) of a (B, C, L) complex tensor."""
    centred = z - z.mean(dim=(0, 2), keepdim=True)
    var = centred.abs().pow(2).mean(dim=(0, 2), keepdim=True)
    return centred / torch.sqrt(var + eps) * weight[:, None] + bias[:, None]


class ComplexBatchNorm1dLite(nn.Module):
    """Centres by the complex mean and scales by the mean squared modulus (no whitening)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias_re = nn.Parameter(torch.zeros(num_features))
        self.bias_im = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features, dtype=torch.cfloat))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, z):  # (B, C, L)
        if self.training:
            mean = z.mean(dim=(0, 2))
            centred = z - mean[None, :, None]
            var = centred.abs().pow(2).mean(dim=(0, 2))
            with torch.no_grad():
                m = self.momentum
                self.running_mean.mul_(1 - m).add_(mean.detach().to(self.running_mean.dtype),
                                                   alpha=m)
                self.running_var.mul_(1 - m).add_(var.detach().to(self.running_var.dtype),
                                                  alpha=m)
        else:
            centred = z - self.running_mean[None, :, None]
            var = self.running_var
        z_hat = centred / torch.sqrt(var + self.eps)[None, :, None]
        bias = torch.complex(self.bias_re, self.bias_im)
        return z_hat * self.weight[None, :, None] + bias[None, :, None]


class ComplexSignalNet(nn.Module):
    """Complex conv -> modReLU -> complex BN -> complex conv -> CReLU -> mean -> |linear|."""

    def __init__(self, n_classes=4, width=8):
        super().__init__()
        self.conv1 = ComplexConv1d(1, width, 5, padding=2)
        self.act1 = ModReLU(width)
        self.bn = ComplexBatchNorm1dLite(width)
        self.conv2 = ComplexConv1d(width, width, 5, padding=2)
        self.act2 = CReLU()
        self.fc = ComplexLinear(width, n_classes)

    def forward(self, z):  # (B, 1, L) complex
        h = self.bn(self.act1(self.conv1(z)))
        h = self.act2(self.conv2(h)).mean(dim=-1)
        return self.fc(h).abs()  # logits: the modulus is phase-invariant


# (recorded) the two-real-parameter layers equal the native cfloat ones with copied weights
torch.manual_seed(1)
two_real = ComplexLinear(5, 3)
with torch.no_grad():
    two_real.bias_re.normal_()
    two_real.bias_im.normal_()
native = nn.Linear(5, 3, dtype=torch.cfloat)
with torch.no_grad():
    native.weight.copy_(two_real.weight)
    native.bias.copy_(torch.complex(two_real.bias_re, two_real.bias_im))
x_lin = torch.randn(4, 5, dtype=torch.cfloat)
target_lin = torch.randn(4, 3, dtype=torch.cfloat)
out_two, out_native = two_real(x_lin), native(x_lin)
loss_two = (out_two - target_lin).abs().pow(2).mean()
loss_native = (out_native - target_lin).abs().pow(2).mean()
loss_two.backward()
loss_native.backward()
linear_results = {
    "out_two_real": torch.view_as_real(out_two.detach()),
    "out_native": torch.view_as_real(out_native.detach()),
    "grad_two_real": torch.stack([two_real.weight_re.grad, two_real.weight_im.grad], -1),
    # a real loss: the complex weight's gradient is dL/dW_re + i dL/dW_im
    "grad_native": torch.view_as_real(native.weight.grad),
    "grad_native_bias": torch.view_as_real(native.bias.grad),
}
fixed_results["linear"] = linear_results

conv_two = ComplexConv1d(2, 3, 3, padding=1)
conv_native = nn.Conv1d(2, 3, 3, padding=1, bias=False, dtype=torch.cfloat)
with torch.no_grad():
    conv_native.weight.copy_(torch.complex(conv_two.conv_re.weight, conv_two.conv_im.weight))
x_conv = torch.randn(2, 2, 7, dtype=torch.cfloat)
conv_out_two, conv_out_native = conv_two(x_conv), conv_native(x_conv)
conv_out_two.abs().sum().backward()
conv_out_native.abs().sum().backward()
grad_two_real = torch.stack([conv_two.conv_re.weight.grad, conv_two.conv_im.weight.grad], -1)
native_conv_grad_matches = torch.allclose(torch.view_as_real(conv_native.weight.grad),
                                          grad_two_real, rtol=1e-4, atol=1e-5)
conv_native.weight.grad = None
complex_conv1d(x_conv, conv_native.weight, padding=1).abs().sum().backward()
fixed_results["conv"] = {
    "out_two_real": torch.view_as_real(conv_out_two.detach()),
    "out_native": torch.view_as_real(conv_out_native.detach()),
    "grad_two_real": grad_two_real,
    "grad_parts": torch.view_as_real(conv_native.weight.grad),
}

# (recorded) the activations and their gradients on fixed inputs
za = torch.randn(3, 8, dtype=torch.cfloat, requires_grad=True)
ba = torch.full((8,), -0.5, requires_grad=True)
activations = {
    "crelu": crelu(za),
    "modrelu": modrelu(za, ba),
    "modrelu_eps": modrelu(za, ba, eps=1e-8),
    "cardioid": cardioid(za),
}
act_grads = {}
for name, out in activations.items():
    gz, gb = torch.autograd.grad(out.abs().pow(2).sum() + out.real.sum(), (za, ba),
                                 allow_unused=True)
    act_grads[name] = torch.view_as_real(gz)
    if name.startswith("modrelu"):
        act_grads[name + "_bias"] = gb
fixed_results["activations"] = {k: torch.view_as_real(o.detach()) for k, o in activations.items()}
fixed_results["activation_grads"] = act_grads
# modReLU kills the small moduli; the survivors keep their phase
dead_fraction = float((activations["modrelu"].abs() == 0).float().mean())
phase_kept = bool(torch.allclose(
    torch.sgn(activations["modrelu"])[activations["modrelu"].abs() > 0],
    torch.sgn(za.detach())[activations["modrelu"].abs() > 0], atol=1e-5))

# complex batch-norm-lite: zero complex mean, unit mean squared modulus
bn = ComplexBatchNorm1dLite(4)
zb = torch.randn(8, 4, 10, dtype=torch.cfloat) * 3 + (1 - 2j)
bn_out = bn(zb)
bn_stats = {
    "mean_abs": float(bn_out.detach().mean(dim=(0, 2)).abs().max()),
    "power": bn_out.detach().abs().pow(2).mean(dim=(0, 2)),
    "running_mean": torch.view_as_real(bn.running_mean.clone()),
    "running_var": bn.running_var.clone(),
}
with torch.no_grad():
    bn_functional_difference = float((bn_out - complex_bn_lite(
        zb, bn.weight, torch.complex(bn.bias_re, bn.bias_im))).abs().max())
bn.eval()
bn_eval_out = bn(zb)
fixed_results["bn"] = {"out": torch.view_as_real(bn_out.detach()),
                       "eval_out": torch.view_as_real(bn_eval_out.detach()),
                       "running_mean": bn_stats["running_mean"],
                       "running_var": bn_stats["running_var"]}


# ------------------------------------------------------------ gradcheck, complex128

torch.manual_seed(2)
zc = torch.randn(2, 5, dtype=torch.cdouble, requires_grad=True)
bc = torch.full((5,), -0.3, dtype=torch.double, requires_grad=True)
Wc = torch.randn(3, 5, dtype=torch.cdouble, requires_grad=True)
biasc = torch.randn(3, dtype=torch.cdouble, requires_grad=True)
zbn = torch.randn(2, 5, 3, dtype=torch.cdouble, requires_grad=True)
wbn = torch.rand(5, dtype=torch.double, requires_grad=True)
bbn = torch.randn(5, dtype=torch.cdouble, requires_grad=True)
gradcheck_results = {
    "modrelu": gradcheck(modrelu, (zc, bc)),
    "crelu": gradcheck(crelu, (zc,)),
    "cardioid": gradcheck(cardioid, (zc,)),
    "linear": gradcheck(F.linear, (zc, Wc, biasc)),
    "view_as_real": gradcheck(lambda p: torch.view_as_real(torch.view_as_complex(p) ** 2),
                              (torch.randn(3, 2, dtype=torch.double, requires_grad=True),)),
    "bn_lite": gradcheck(complex_bn_lite, (zbn, wbn, bbn)),
}


# ------------------------------------------- training the complex networks (recorded)


def make_tones(n, length=32, noise=0.3, generator=None):
    """Complex baseband tones at -3, -1, +1, +3 cycles per window, random phase and gain."""
    freqs = torch.tensor([-3.0, -1.0, 1.0, 3.0])
    labels = torch.randint(0, 4, (n,), generator=generator)
    t = torch.arange(length, dtype=torch.float32)
    phase = torch.rand(n, 1, generator=generator) * 2 * math.pi
    gain = 0.5 + torch.rand(n, 1, generator=generator)
    angle = 2 * math.pi * freqs[labels][:, None] * t / length + phase
    signal = torch.polar(gain.expand(-1, length), angle)
    noise_part = torch.randn(n, length, dtype=torch.cfloat, generator=generator) * noise
    return (signal + noise_part).unsqueeze(1), labels


data_gen = torch.Generator().manual_seed(3)
train_z, train_y = make_tones(128, generator=data_gen)
test_z, test_y = make_tones(64, generator=data_gen)

torch.manual_seed(4)
net = ComplexSignalNet()
net_optimizer = optim.Adam(net.parameters(), lr=1e-2)
net_losses = []
for _epoch in range(4):
    perm = torch.randperm(128)
    for i in range(0, 128, 32):
        idx = perm[i:i + 32]
        logits = net(train_z[idx])
        loss = F.cross_entropy(logits, train_y[idx])
        net_optimizer.zero_grad()
        loss.backward()
        net_optimizer.step()
        net_losses.append(loss.item())
net.eval()
with torch.no_grad():
    test_logits = net(test_z)
net_accuracy = float((test_logits.argmax(-1) == test_y).float().mean())
# a conjugated input flips every frequency: -1 <-> +1, -3 <-> +3
with torch.no_grad():
    conj_pred = net(test_z.conj()).argmax(-1)
conj_flip_accuracy = float((conj_pred == 3 - test_y).float().mean())

# a native complex FIR filter identified from input/output pairs under SGD
torch.manual_seed(5)
true_taps = torch.randn(1, 1, 5, dtype=torch.cfloat)
fir_x = torch.randn(16, 1, 40, dtype=torch.cfloat)
with torch.no_grad():
    fir_y = F.conv1d(fir_x, true_taps, padding=2)
fir = nn.Conv1d(1, 1, 5, padding=2, bias=False, dtype=torch.cfloat)
fir_optimizer = optim.SGD(fir.parameters(), lr=0.1, momentum=0.7)
fir_losses = []
for _step in range(40):
    pred = fir(fir_x)
    loss = F.mse_loss(torch.view_as_real(pred), torch.view_as_real(fir_y))
    fir_optimizer.zero_grad()
    loss.backward()
    fir_optimizer.step()
    fir_losses.append(loss.item())
fir_tap_error = float((fir.weight.detach() - true_taps).abs().max())
fixed_results["net_losses"] = torch.tensor(net_losses[:4])
fixed_results["fir_losses"] = torch.tensor(fir_losses[:10])


# ------------------------------------------------------------------------------- S4D


class S4DKernel(nn.Module):
    """The diagonal SSM kernel: A = -exp(log_A_real) + i A_imag, B = 1, C complex."""

    def __init__(self, d_model, d_state=16, dt_min=1e-3, dt_max=1e-1, lr=None,
                 complex_c=False):
        super().__init__()
        H, N = d_model, d_state // 2
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N, dtype=torch.cfloat) * 0.5**0.5
        if complex_c:
            self.C = nn.Parameter(C)
        else:  # stored as (H, N, 2) reals: the real optimizers step it
            self.C = nn.Parameter(torch.view_as_real(C))
        self.complex_c = complex_c
        self.register("log_dt", log_dt, lr)
        self.register("log_A_real", torch.log(0.5 * torch.ones(H, N)), lr)
        self.register("A_imag", math.pi * torch.arange(N).float().repeat(H, 1), lr)

    def register(self, name, tensor, lr=None):
        """A buffer when lr == 0, otherwise a parameter with its own optimizer settings."""
        if lr == 0.0:
            self.register_buffer(name, tensor)
            return
        self.register_parameter(name, nn.Parameter(tensor))
        hp = {"weight_decay": 0.0}
        if lr is not None:
            hp["lr"] = lr
        getattr(self, name)._optim = hp

    def complex_C(self):
        return self.C if self.complex_c else torch.view_as_complex(self.C)

    def discretize(self):
        """Zero-order hold: dA = exp(dt A), dB = (dA - 1) / A (B = 1)."""
        dt = torch.exp(self.log_dt)  # (H,)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H, N)
        dtA = A * dt.unsqueeze(-1)
        dA = torch.exp(dtA)
        dB = (dA - 1.0) / A
        return dtA, dA, dB, self.complex_C()

    def forward(self, L, method="exp"):
        dtA, dA, dB, C = self.discretize()
        steps = torch.arange(L, device=dtA.device)
        if method == "exp":  # Vandermonde by exp of the outer product dtA x l
            vandermonde = torch.exp(dtA.unsqueeze(-1) * steps)  # (H, N, L)
        elif method == "pow":
            vandermonde = torch.pow(dA.unsqueeze(-1), steps)
        else:  # "cumprod": 1, dA, dA^2, ...
            ones = torch.ones_like(dA).unsqueeze(-1)
            vandermonde = torch.cat([ones, dA.unsqueeze(-1).expand(*dA.shape, L - 1)], -1)
            vandermonde = torch.cumprod(vandermonde, dim=-1)
        # the conjugate pairs of the real SSM give 2 Re(...)
        return 2 * torch.einsum("hn,hnl->hl", C * dB, vandermonde).real


def fft_conv(u, k):
    """Causal convolution y_t = sum_{j <= t} k_{t-j} u_j by FFTs padded to 2L."""
    L = u.size(-1)
    k_f = torch.fft.rfft(k, n=2 * L)
    u_f = torch.fft.rfft(u, n=2 * L)
    return torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]


def direct_conv(u, k):
    """The same causal convolution by a grouped F.conv1d (a flipped kernel, left padding)."""
    H, L = k.shape
    return F.conv1d(F.pad(u, (L - 1, 0)), k.flip(-1).unsqueeze(1), groups=H)


class S4D(nn.Module):
    def __init__(self, d_model, d_state=16, dropout=0.0, **kernel_args):
        super().__init__()
        self.h, self.n = d_model, d_state // 2
        self.D = nn.Parameter(torch.randn(d_model))
        self.kernel = S4DKernel(d_model, d_state=d_state, **kernel_args)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.output_linear = nn.Sequential(nn.Conv1d(d_model, 2 * d_model, kernel_size=1),
                                           nn.GLU(dim=-2))

    def forward(self, u):  # (B, H, L)
        k = self.kernel(u.size(-1))
        y = fft_conv(u, k) + u * self.D.unsqueeze(-1)
        return self.output_linear(self.dropout(self.activation(y)))

    def default_state(self, batch):
        dtype = torch.cdouble if self.D.dtype == torch.float64 else torch.cfloat
        return torch.zeros(batch, self.h, self.n, dtype=dtype)

    def step(self, u, state):  # u (B, H), state (B, H, N) complex
        _, dA, dB, C = self.kernel.discretize()
        state = dA * state + dB * u.unsqueeze(-1)
        y = 2 * torch.einsum("hn,bhn->bh", C, state).real + u * self.D
        y = self.dropout(self.activation(y))
        return self.output_linear(y.unsqueeze(-1)).squeeze(-1), state


class S4DModel(nn.Module):
    def __init__(self, d_input=1, d_output=1, d_model=16, n_layers=2, d_state=16,
                 dropout=0.0, prenorm=False, lr=None):
        super().__init__()
        self.prenorm = prenorm
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.dropouts = nn.ModuleList()
        for _ in range(n_layers):
            self.s4_layers.append(S4D(d_model, d_state=d_state, dropout=dropout, lr=lr))
            self.norms.append(nn.LayerNorm(d_model))
            self.dropouts.append(nn.Dropout(dropout))
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x):  # (B, L, d_input) -> (B, L, d_output)
        x = self.encoder(x).transpose(-1, -2)  # (B, H, L)
        for layer, norm, dropout in zip(self.s4_layers, self.norms, self.dropouts):
            z = x
            if self.prenorm:
                z = norm(z.transpose(-1, -2)).transpose(-1, -2)
            z = dropout(layer(z))
            x = z + x
            if not self.prenorm:
                x = norm(x.transpose(-1, -2)).transpose(-1, -2)
        return self.decoder(x.transpose(-1, -2))

    def step(self, x_t, states):  # x_t (B, d_input)
        x = self.encoder(x_t)
        new_states = []
        for layer, norm, state in zip(self.s4_layers, self.norms, states):
            z = norm(x) if self.prenorm else x
            z, state = layer.step(z, state)
            x = z + x
            if not self.prenorm:
                x = norm(x)
            new_states.append(state)
        return self.decoder(x), new_states

    def recurrent(self, x):
        """The model run one step at a time (a Python loop over time)."""
        states = [layer.default_state(x.size(0)) for layer in self.s4_layers]
        outs = []
        for t in range(x.size(1)):
            out, states = self.step(x[:, t], states)
            outs.append(out)
        return torch.stack(outs, dim=1), states


def setup_optimizer(model, lr, weight_decay, epochs):
    """AdamW on the ordinary parameters; one group per distinct ``_optim`` setting."""
    all_parameters = list(model.parameters())
    plain = [p for p in all_parameters if not hasattr(p, "_optim")]
    optimizer = optim.AdamW(plain, lr=lr, weight_decay=weight_decay)
    settings = []
    for p in all_parameters:
        hp = getattr(p, "_optim", None)
        if hp is not None and hp not in settings:
            settings.append(hp)
    for hp in settings:
        group = [p for p in all_parameters if getattr(p, "_optim", None) == hp]
        optimizer.add_param_group({"params": group, **hp})
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
    return optimizer, scheduler


# (recorded) the kernel three ways, the convolution two ways, float32 and float64
torch.manual_seed(6)
kernel = S4DKernel(4, d_state=8, dt_min=0.01, dt_max=0.1)
L_fix = 24
K_exp = kernel(L_fix)
s4d_kernels = {"exp": K_exp.detach(), "pow": kernel(L_fix, "pow").detach(),
               "cumprod": kernel(L_fix, "cumprod").detach()}
u_fix = torch.randn(3, 4, L_fix)
y_fft = fft_conv(u_fix, K_exp)
y_direct = direct_conv(u_fix, K_exp)
(y_fft ** 2).sum().backward()
fixed_results["s4d_kernel"] = {
    "K": K_exp.detach(),
    "y_fft": y_fft.detach(),
    "grads": {name: p.grad.clone() for name, p in kernel.named_parameters()},
}

kernel64 = S4DKernel(4, d_state=8, dt_min=0.01, dt_max=0.1).double()
u64 = torch.randn(3, 4, L_fix, dtype=torch.double)
kernel_forms64 = {m: kernel64(L_fix, m).detach() for m in ("exp", "pow", "cumprod")}
conv_forms64 = {"fft": fft_conv(u64, kernel_forms64["exp"]),
                "direct": direct_conv(u64, kernel_forms64["exp"])}

# the kernel is the impulse response of the recurrence x_t = dA x_{t-1} + dB u_t
with torch.no_grad():
    _, dA64, dB64, C64 = kernel64.discretize()
    state = torch.zeros_like(dA64)
    impulse = []
    for t in range(L_fix):
        state = dA64 * state + dB64 * (1.0 if t == 0 else 0.0)
        impulse.append(2 * (C64 * state).sum(-1).real)
    impulse_response = torch.stack(impulse, dim=-1)

# a complex C parameter: its gradient is the real-pair parameter's, as complex
torch.manual_seed(7)
k_pairs = S4DKernel(3, d_state=8).double()
torch.manual_seed(7)
k_complex = S4DKernel(3, d_state=8, complex_c=True)
k_complex.double()
# .double() casts floating-point tensors only (and .to(cdouble) would make log_dt complex)
k_complex.C.data = k_complex.C.data.to(torch.cdouble)
u_c = torch.randn(2, 3, 16, dtype=torch.double)
for k in (k_pairs, k_complex):
    fft_conv(u_c, k(16)).pow(2).mean().backward()
complex_c_grad = k_complex.C.grad.clone()
pairs_c_grad = k_pairs.C.grad.clone()
# and a complex A: the chain rule back to log_A_real and A_imag is the Wirtinger one
A_leaf = (-torch.exp(k_pairs.log_A_real) + 1j * k_pairs.A_imag).detach().requires_grad_()
dt = torch.exp(k_pairs.log_dt.detach())
dtA = A_leaf * dt.unsqueeze(-1)
K_a = 2 * torch.einsum("hn,hnl->hl", torch.view_as_complex(k_pairs.C.detach())
                       * (torch.exp(dtA) - 1) / A_leaf,
                       torch.exp(dtA.unsqueeze(-1) * torch.arange(16))).real
fft_conv(u_c, K_a).pow(2).mean().backward()
complex_A_grad = A_leaf.grad.clone()
fixed_results["complex_param_grads"] = {
    "C_complex": torch.view_as_real(complex_c_grad),
    "C_pairs": pairs_c_grad,
    "A": torch.view_as_real(complex_A_grad),
    "log_A_real": k_pairs.log_A_real.grad.clone(),
    "A_imag": k_pairs.A_imag.grad.clone(),
}


def kernel_fn(log_dt, log_A_real, A_imag, C_pairs, L):
    dtA = (-torch.exp(log_A_real) + 1j * A_imag) * torch.exp(log_dt).unsqueeze(-1)
    A = -torch.exp(log_A_real) + 1j * A_imag
    C = torch.view_as_complex(C_pairs)
    return 2 * torch.einsum("hn,hnl->hl", C * (torch.exp(dtA) - 1) / A,
                            torch.exp(dtA.unsqueeze(-1) * torch.arange(L))).real


torch.manual_seed(8)
gc_inputs = (torch.log(torch.rand(2, dtype=torch.double) * 0.1 + 0.01),
             torch.log(0.5 * torch.ones(2, 3, dtype=torch.double)),
             math.pi * torch.arange(3, dtype=torch.double).repeat(2, 1),
             torch.randn(2, 3, 2, dtype=torch.double))
gc_inputs = tuple(t.requires_grad_() for t in gc_inputs)
u_gc = torch.randn(2, 2, 6, dtype=torch.double, requires_grad=True)
s4d_gradcheck = {
    "kernel": gradcheck(lambda *a: kernel_fn(*a, 6), gc_inputs),
    "fft_conv": gradcheck(lambda u, *a: fft_conv(u, kernel_fn(*a, 6)), (u_gc, *gc_inputs)),
}

# (recorded) the S4D model: FFT form vs the recurrent loop, fixed-weight outputs and grads
torch.manual_seed(9)
model_fix = S4DModel(d_model=8, n_layers=2, d_state=8, prenorm=True, lr=1e-3)
x_fix = torch.randn(2, 20, 1)
out_fix = model_fix(x_fix)
out_fix.pow(2).mean().backward()
fixed_results["s4d_model"] = {
    "out": out_fix.detach(),
    "grads": {name: p.grad.clone() for name, p in model_fix.named_parameters()},
}
with torch.no_grad():
    rec_fix, final_states = model_fix.recurrent(x_fix)
fixed_results["s4d_model"]["recurrent"] = rec_fix
model64 = S4DModel(d_model=8, n_layers=2, d_state=8, prenorm=False).double()
x64 = torch.randn(2, 20, 1, dtype=torch.double)
with torch.no_grad():
    modes64 = {"fft": model64(x64), "recurrent": model64.recurrent(x64)[0]}


# ------------------------------------------------- training S4D on a causal filter task


def filter_task(n, L=64, generator=None):
    """White noise in; out: three times its leaky average (decay 0.9), a causal filter."""
    u = torch.randn(n, L, generator=generator)
    y = torch.zeros(n, L)
    acc = torch.zeros(n)
    for t in range(L):
        acc = 0.9 * acc + 0.1 * u[:, t]
        y[:, t] = 3 * acc
    return u.unsqueeze(-1), y.unsqueeze(-1)


data_gen = torch.Generator().manual_seed(10)
train_u, train_target = filter_task(64, generator=data_gen)
val_u, val_target = filter_task(16, generator=data_gen)

torch.manual_seed(11)
model = S4DModel(d_model=16, n_layers=2, d_state=16, dropout=0.0, prenorm=True, lr=1e-2)
epochs = 6
optimizer, scheduler = setup_optimizer(model, lr=3e-2, weight_decay=0.01, epochs=epochs)
s4d_losses, s4d_lrs = [], []
for _epoch in range(epochs):
    model.train()
    perm = torch.randperm(64)
    for i in range(0, 64, 16):
        idx = perm[i:i + 16]
        loss = F.mse_loss(model(train_u[idx]), train_target[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        s4d_losses.append(loss.item())
    s4d_lrs.append([group["lr"] for group in optimizer.param_groups])
    scheduler.step()
model.eval()
with torch.no_grad():
    val_pred = model(val_u)
    val_loss = F.mse_loss(val_pred, val_target).item()
    val_baseline = F.mse_loss(torch.zeros_like(val_target), val_target).item()
    rec_pred, _ = model.recurrent(val_u[:4])
trained_mode_difference = float((rec_pred - val_pred[:4]).abs().max())
fixed_results["s4d_losses"] = torch.tensor(s4d_losses[:8])

if __name__ == "__main__":
    print("wirtinger |z|^2 grad == 2z:",
          torch.allclose(wirtinger["abs_sq"], 2 * z.detach()))
    print("conj bits:", conj_bits, "gradcheck:", gradcheck_results, s4d_gradcheck)
    print(f"complex net losses {net_losses[0]:.3f} -> {net_losses[-1]:.3f}, "
          f"test accuracy {net_accuracy:.2f}, conj flips {conj_flip_accuracy:.2f}")
    print(f"FIR losses {fir_losses[0]:.3f} -> {fir_losses[-1]:.5f}, tap error {fir_tap_error:.4f}")
    print(f"S4D losses {s4d_losses[0]:.3f} -> {s4d_losses[-1]:.3f}, val {val_loss:.3f} "
          f"(baseline {val_baseline:.3f}), recurrent vs FFT {trained_mode_difference:.2e}")
