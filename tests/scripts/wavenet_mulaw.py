# ruff: noqa: N812 (the usual F alias)
"""A small WaveNet (van den Oord et al.) on mu-law quantised sine, chirp and two-tone waves,
written for these tests the way WaveNet re-implementations in PyTorch (and torchaudio's
mu-law transforms, fast-wavenet's queues) write torch code (not a copy of any):

- mu-law companding: ``torch.sign``, ``torch.log1p``, ``torch.abs``, quantisation with
  ``+ 0.5`` and ``.long()``, decoding with ``torch.exp``; the round-trip error bound;
- one-hot inputs by ``F.one_hot(x, 256).permute(0, 2, 1).float()``;
- causal dilated ``nn.Conv1d`` (a subclass) padded on the left by ``F.pad``; gated
  ``tanh * sigmoid`` units from ``chunk(2, dim=1)``; residual and skip 1x1 convolutions with
  the ``sqrt(0.5)`` residual scale; a global conditioning ``nn.Embedding`` added through a 1x1
  conv broadcast over time; ``nn.Sequential`` post-processing with ``nn.ReLU``;
- ``F.cross_entropy`` over (B, 256, T) logits; Adam; ``clip_grad_norm_``;
- the receptive field computed from the dilations and measured as the support of the
  gradient of the last logit with respect to the input;
- fast generation: per-layer ``collections.deque(maxlen=...)`` queues of past activations and
  a ``torch.roll`` rolling buffer, each step an ``F.conv1d`` on the gathered taps; sampling
  with ``torch.softmax`` + ``torch.multinomial``; the cached step logits equal the full
  forward's on the generated sequence;
- ``torch.autograd.gradcheck`` through a residual block in float64.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math
from collections import deque

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}
QUANTIZATION = 256

# ------------------------------------------------------------------------------- mu-law


def mu_law_encode(x, quantization_channels=QUANTIZATION):
    """[-1, 1] floats to integers 0 .. quantization_channels - 1."""
    mu = torch.tensor(quantization_channels - 1.0, dtype=x.dtype)
    x = torch.clamp(x, -1.0, 1.0)
    x_mu = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / torch.log1p(mu)
    return ((x_mu + 1) / 2 * mu + 0.5).long()


def mu_law_decode(x_mu, quantization_channels=QUANTIZATION, dtype=torch.float32):
    mu = quantization_channels - 1.0
    x = x_mu.to(dtype) / mu * 2 - 1.0
    return torch.sign(x) * (torch.exp(torch.abs(x) * math.log1p(mu)) - 1.0) / mu


# ------------------------------------------------------------------------------- model


class CausalConv1d(nn.Conv1d):
    """A dilated Conv1d whose output at t sees inputs up to t: pad (k - 1) * d on the left."""

    def __init__(self, in_channels, out_channels, kernel_size, dilation=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation, bias=bias)
        self.left_padding = (kernel_size - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left_padding, 0)))


class ResidualBlock(nn.Module):
    def __init__(self, residual_channels, gate_channels, skip_channels, kernel_size, dilation,
                 gin_channels):
        super().__init__()
        self.dilated = CausalConv1d(residual_channels, 2 * gate_channels, kernel_size, dilation)
        self.cond = nn.Conv1d(gin_channels, 2 * gate_channels, 1, bias=False)
        self.res = nn.Conv1d(gate_channels, residual_channels, 1)
        self.skip = nn.Conv1d(gate_channels, skip_channels, 1)

    def gate(self, h):
        a, b = h.chunk(2, dim=1)
        return torch.tanh(a) * torch.sigmoid(b)

    def forward(self, x, g):
        """x (B, C, T), g (B, gin, 1): the conditioning is broadcast over time."""
        z = self.gate(self.dilated(x) + self.cond(g))
        return (x + self.res(z)) * math.sqrt(0.5), self.skip(z)


class WaveNet(nn.Module):
    def __init__(self, classes=QUANTIZATION, residual_channels=16, gate_channels=16,
                 skip_channels=32, kernel_size=2, dilations=(1, 2, 4, 8, 16) * 2,
                 n_globals=3, gin_channels=8):
        super().__init__()
        self.classes, self.kernel_size, self.dilations = classes, kernel_size, dilations
        self.embed_g = nn.Embedding(n_globals, gin_channels)
        self.first = CausalConv1d(classes, residual_channels, kernel_size)
        self.blocks = nn.ModuleList([
            ResidualBlock(residual_channels, gate_channels, skip_channels, kernel_size, d,
                          gin_channels) for d in dilations])
        self.post = nn.Sequential(nn.ReLU(), nn.Conv1d(skip_channels, skip_channels, 1),
                                  nn.ReLU(), nn.Conv1d(skip_channels, classes, 1))

    @property
    def receptive_field(self):
        return (self.kernel_size - 1) * (sum(self.dilations) + 1) + 1

    def forward_one_hot(self, x, g):
        """x (B, classes, T) float, g (B,) long: logits (B, classes, T)."""
        cond = self.embed_g(g).unsqueeze(-1)
        h = self.first(x)
        skips = 0
        for block in self.blocks:
            h, s = block(h, cond)
            skips = skips + s
        return self.post(skips)

    def forward(self, x, g):
        """x (B, T) quantised samples."""
        return self.forward_one_hot(F.one_hot(x, self.classes).permute(0, 2, 1).float(), g)


class FastGenerator:
    """Paine et al.'s fast generation: each causal conv keeps its past inputs, so a step costs
    one conv over the k taps instead of the whole receptive field."""

    def __init__(self, model, g, mode="deque"):
        self.model, self.mode = model, mode
        self.cond = model.embed_g(g).unsqueeze(-1)
        batch = g.shape[0]
        self.convs = [model.first] + [block.dilated for block in model.blocks]
        self.states = []
        for conv in self.convs:
            span = (conv.kernel_size[0] - 1) * conv.dilation[0]
            if mode == "deque":
                zeros = [torch.zeros(batch, conv.in_channels) for _ in range(span)]
                self.states.append(deque(zeros, maxlen=span))
            else:
                self.states.append(torch.zeros(batch, conv.in_channels, span + 1))

    def conv_step(self, i, x_t):
        conv = self.convs[i]
        if self.mode == "deque":
            queue = self.states[i]
            taps = list(queue)[::conv.dilation[0]] + [x_t]  # x[t - (k-1)d], .., x[t - d], x[t]
            queue.append(x_t)
            window = torch.stack(taps, dim=-1)  # (B, C, k)
            return F.conv1d(window, conv.weight, conv.bias).squeeze(-1)
        buffer = torch.roll(self.states[i], shifts=-1, dims=-1)
        buffer[:, :, -1] = x_t
        self.states[i] = buffer
        return F.conv1d(buffer, conv.weight, conv.bias, dilation=conv.dilation).squeeze(-1)

    def step(self, token):
        x_t = F.one_hot(token, self.model.classes).float()
        h = self.conv_step(0, x_t)
        skips = 0
        for i, block in enumerate(self.model.blocks, start=1):
            z = block.gate((self.conv_step(i, h) + block.cond(self.cond).squeeze(-1))[..., None])
            skips = skips + block.skip(z).squeeze(-1)
            h = (h + block.res(z).squeeze(-1)) * math.sqrt(0.5)
        return self.model.post(skips[..., None]).squeeze(-1)


@torch.no_grad()
def generate(model, g, n_samples, temperature=1.0, mode="deque", first=None, sample=True):
    """Autoregressive sampling from silence (or teacher-forced through ``first``): the input
    sequence and the logits of every step."""
    gen = FastGenerator(model, g, mode)
    token = mu_law_encode(torch.zeros(g.shape[0])) if first is None else first[:, 0]
    inputs, logits = [], []
    for t in range(n_samples):
        inputs.append(token)
        out = gen.step(token)
        logits.append(out)
        if first is not None and t + 1 < first.shape[1]:
            token = first[:, t + 1]
        elif sample:
            probs = torch.softmax(out / temperature, dim=-1)
            token = torch.multinomial(probs, 1).squeeze(1)
        else:
            token = out.argmax(-1)
    return torch.stack(inputs, dim=1), torch.stack(logits, dim=2)


# -------------------------------------------------------------------------------- data


def make_waves(kind, length):
    """kind 0: a sine, 1: a linear chirp, 2: two tones; random frequencies and amplitudes."""
    batch = kind.shape[0]
    t = torch.arange(length, dtype=torch.float32)
    f0 = 0.01 + 0.03 * torch.rand(batch, 1)
    f1 = 0.01 + 0.03 * torch.rand(batch, 1)
    phase = 2 * math.pi * torch.rand(batch, 1)
    amp = 0.4 + 0.5 * torch.rand(batch, 1)
    sine = torch.sin(2 * math.pi * f0 * t + phase)
    chirp = torch.sin(2 * math.pi * (f0 * t + 0.5 * (f1 - f0) / length * t ** 2) + phase)
    tones = 0.5 * (sine + torch.sin(2 * math.pi * 2.5 * f0 * t))
    kind = kind.unsqueeze(1)
    return amp * torch.where(kind == 0, sine, torch.where(kind == 1, chirp, tones))


def get_batch(batch_size, length=129):
    kind = torch.randint(0, 3, (batch_size,))
    q = mu_law_encode(make_waves(kind, length))
    return q[:, :-1], q[:, 1:], kind


# ----------------------------------------------------- fixed-weight checks (recorded)

ramp = torch.linspace(-1, 1, 101)
fixed_results["mu_law_ramp"] = mu_law_encode(ramp)
fixed_results["mu_law_decoded"] = mu_law_decode(fixed_results["mu_law_ramp"])
# the round trip on a dense grid, float64: |x - decode(encode(x))| against the bound
mu = QUANTIZATION - 1
grid = torch.linspace(-1, 1, 20001, dtype=torch.float64)
roundtrip = mu_law_decode(mu_law_encode(grid), dtype=torch.float64)
roundtrip_error = (grid - roundtrip).abs()
roundtrip_bound = (1 + mu * grid.abs()) * math.expm1(math.log1p(mu) / mu) / mu
roundtrip_ratio = (roundtrip_error / roundtrip_bound).max().item()
all_codes = torch.arange(QUANTIZATION)
codes_fixed = bool(torch.equal(mu_law_encode(mu_law_decode(all_codes, dtype=torch.float64)),
                               all_codes))

torch.manual_seed(1)
model = WaveNet()
n_params = sum(p.numel() for p in model.parameters())
xb, yb, kb = get_batch(4)
logits = model(xb, kb)
loss = F.cross_entropy(logits, yb)
loss.backward()
fixed_results["logits"] = logits.detach()
fixed_results["loss"] = loss.item()
fixed_results["grads"] = {n: p.grad.clone() for n, p in model.named_parameters() if n in (
    "embed_g.weight", "first.weight", "blocks.0.dilated.weight", "blocks.9.cond.weight",
    "blocks.5.res.bias", "post.3.weight")}
model.zero_grad()

# the receptive field: the last logit depends on exactly the last receptive_field inputs
one_hot = F.one_hot(xb[:1], QUANTIZATION).permute(0, 2, 1).float().requires_grad_()
model.forward_one_hot(one_hot, kb[:1])[0, :, -1].pow(2).sum().backward()
support = one_hot.grad.abs().sum(1)[0] > 0
measured_receptive_field = support.shape[0] - int(support.float().argmax())
support_contiguous = bool(support[-measured_receptive_field:].all())

# fast generation on fixed weights, teacher-forced with xb: every step's logits, both caches
fast_logits = {}
for mode in ("deque", "roll"):
    _, fast_logits[mode] = generate(model, kb, 40, mode=mode, first=xb[:, :40])
fixed_results["fast_logits"] = fast_logits["deque"]
with torch.no_grad():
    full_on_prefix = model(xb[:, :40], kb)

# gradcheck through a residual block in float64
block64 = ResidualBlock(3, 2, 4, 2, 2, 2).double()
gradcheck_block = torch.autograd.gradcheck(
    lambda h, g: torch.cat(block64(h, g), dim=1),
    (torch.randn(1, 3, 6, dtype=torch.float64, requires_grad=True),
     torch.randn(1, 2, 1, dtype=torch.float64, requires_grad=True)))

# ------------------------------------------------------------------------------ training

torch.manual_seed(2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses, grad_norms = [], []
max_iters, batch_size = 150, 8
model.train()
for it in range(max_iters):
    xb, yb, kb = get_batch(batch_size)
    loss = F.cross_entropy(model(xb, kb), yb)
    optimizer.zero_grad()
    loss.backward()
    grad_norms.append(nn.utils.clip_grad_norm_(model.parameters(), 5.0).item())
    optimizer.step()
    losses.append(loss.item())
    if it % 20 == 0 or it == max_iters - 1:
        print(f"iter {it}: loss {loss.item():.4f}")

model.eval()
torch.manual_seed(3)
xv, yv, kv = get_batch(16)
with torch.no_grad():
    val_logits = model(xv, kv)
val_loss = F.cross_entropy(val_logits, yv).item()
# the predicted sample is close to the true one (in quantisation steps)
val_step_error = (val_logits.argmax(1) - yv).abs().float().mean().item()

# sampling with the queue cache, then the full forward on what was sampled
torch.manual_seed(4)
g_gen = torch.tensor([0, 1, 2])
gen_inputs, gen_logits = generate(model, g_gen, 96, temperature=0.8)
torch.manual_seed(4)
gen_inputs_roll, gen_logits_roll = generate(model, g_gen, 96, temperature=0.8, mode="roll")
with torch.no_grad():
    full_logits = model(gen_inputs, g_gen)
cache_difference = (gen_logits - full_logits).abs().max().item()
last_step_difference = (gen_logits[:, :, -1] - full_logits[:, :, -1]).abs().max().item()
generated_wave = mu_law_decode(gen_inputs)
# a smooth wave moves a few quantisation steps per sample; uniform noise moves ~85
generated_step = (gen_inputs[:, 1:] - gen_inputs[:, :-1]).abs().float().mean().item()

print(f"{n_params} parameters, receptive field {model.receptive_field} "
      f"(measured {measured_receptive_field}); loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
      f"val {val_loss:.3f} (step error {val_step_error:.2f}); cache/full {cache_difference:.2e}, "
      f"generated step {generated_step:.2f}; mu-law bound ratio {roundtrip_ratio:.4f}")
