"""A masked autoregressive flow (MAF, Papamakarios et al. 2017) on a 2-D two-moons density,
written for these tests in the way common normalizing-flow code (karpathy's
pytorch-normalizing-flows and pytorch-made) commonly writes torch code (modelled on their API
usage, not a copy of either):

- MADE: a ``MaskedLinear(nn.Linear)`` whose mask is a buffer (``register_buffer``), set by
  ``self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))`` and applied as
  ``F.linear(input, self.mask * self.weight, self.bias)`` (a uint8 mask times float weights);
  masks from degree assignment (``torch.arange``/``torch.randperm`` input orders, hidden
  degrees by ``torch.randint``, ``[:, None] <= [None, :]`` comparisons, ``.numpy()``,
  ``np.concatenate`` for the repeated outputs), ``nn.Sequential`` built from a list with
  ``pop()``, and ``torch.autograd.functional.jacobian`` to check the autoregressive property;
- MAF layers: ``st.split(dim, dim=1)``, ``x * torch.exp(s) + t``, the order reversed between
  layers by ``z.flip(dims=(1,))`` / ``torch.flip``, ``torch.sum(s, dim=1)`` log-determinants,
  and the sequential inverse, one dimension at a time (``x[:, i] = ...`` into
  ``torch.zeros_like(z)``, ``self.net(x.clone())``, ``log_det += -s[:, i]``);
- an ActNorm with data-dependent initialisation (``self.s.data = (-torch.log(x.std(dim=0,
  keepdim=True))).detach()``) on ``nn.Parameter(torch.randn(1, dim))`` shifts and scales;
- ``NormalizingFlow`` over an ``nn.ModuleList`` (forward and backward lists of ``zs``) and a
  ``NormalizingFlowModel`` with a ``MultivariateNormal(torch.zeros(2), torch.eye(2))`` prior,
  ``prior.log_prob(z).view(n, -1).sum(1)``, ``prior.sample((n,))``, and the same density with a
  ``Normal(torch.zeros(2), torch.ones(2))`` prior summed over dimensions;
- training with ``optim.Adam(weight_decay=1e-5)`` on ``-torch.sum(logprob)`` over batches of two
  moons made with numpy, ``model.eval()`` and samples under ``torch.no_grad()``;
- fixed-weight results (per-sample log-likelihoods, the loss and its gradients, the
  invertibility x -> z -> x and its log-determinants, a gradient through the sequential
  inverse, an Adam step, seeded samples) for the torch comparison.
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad import optim
from jitgrad.distributions import MultivariateNormal, Normal

torch.manual_seed(0)
np.random.seed(0)


# ------------------------------------------------------------------------------------- MADE
class MaskedLinear(nn.Linear):
    """A Linear layer whose weight is multiplied by a fixed 0/1 mask."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("mask", torch.ones(out_features, in_features))

    def set_mask(self, mask):
        self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))

    def forward(self, input):
        return F.linear(input, self.mask * self.weight, self.bias)


class MADE(nn.Module):
    def __init__(self, nin, hidden_sizes, nout, natural_ordering=True):
        super().__init__()
        self.nin = nin
        self.nout = nout
        self.hidden_sizes = hidden_sizes
        assert self.nout % self.nin == 0, "nout must be integer multiple of nin"
        self.net = []
        hs = [nin] + hidden_sizes + [nout]
        for h0, h1 in zip(hs, hs[1:]):
            self.net.extend([MaskedLinear(h0, h1), nn.ReLU()])
        self.net.pop()  # no ReLU on the output
        self.net = nn.Sequential(*self.net)
        self.natural_ordering = natural_ordering
        self.m = {}
        self.update_masks()

    def update_masks(self):
        L = len(self.hidden_sizes)
        # each input gets an index in the ordering, each hidden unit a degree in [min, nin - 1)
        self.m[-1] = torch.arange(self.nin) if self.natural_ordering \
            else torch.randperm(self.nin)
        for layer in range(L):
            low = int(self.m[layer - 1].min())
            self.m[layer] = torch.randint(low, self.nin - 1, (self.hidden_sizes[layer],))
        masks = [(self.m[layer - 1][:, None] <= self.m[layer][None, :]).numpy()
                 for layer in range(L)]
        masks.append((self.m[L - 1][:, None] < self.m[-1][None, :]).numpy())
        if self.nout > self.nin:  # the outputs are several blocks of nin (s and t)
            k = int(self.nout / self.nin)
            masks[-1] = np.concatenate([masks[-1]] * k, axis=1)
        layers = [m for m in self.net.modules() if isinstance(m, MaskedLinear)]
        for layer, mask in zip(layers, masks):
            layer.set_mask(mask)

    def forward(self, x):
        return self.net(x)


# ------------------------------------------------------------------------------------ flows
class AffineConstantFlow(nn.Module):
    """z = x * exp(s) + t with s and t parameters (no dependence on x)."""

    def __init__(self, dim, scale=True, shift=True):
        super().__init__()
        self.s = nn.Parameter(torch.randn(1, dim, requires_grad=True)) if scale else None
        self.t = nn.Parameter(torch.randn(1, dim, requires_grad=True)) if shift else None

    def forward(self, x):
        s = self.s if self.s is not None else x.new_zeros(x.size())
        t = self.t if self.t is not None else x.new_zeros(x.size())
        z = x * torch.exp(s) + t
        log_det = torch.sum(s, dim=1)
        return z, log_det

    def backward(self, z):
        s = self.s if self.s is not None else z.new_zeros(z.size())
        t = self.t if self.t is not None else z.new_zeros(z.size())
        x = (z - t) * torch.exp(-s)
        log_det = torch.sum(-s, dim=1)
        return x, log_det


class ActNorm(AffineConstantFlow):
    """Initialised from the first batch so that its output has zero mean and unit variance."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.data_dep_init_done = False

    def forward(self, x):
        if not self.data_dep_init_done:
            assert self.s is not None and self.t is not None
            self.s.data = (-torch.log(x.std(dim=0, keepdim=True))).detach()
            self.t.data = (-(x * torch.exp(self.s)).mean(dim=0, keepdim=True)).detach()
            self.data_dep_init_done = True
        return super().forward(x)


class MAF(nn.Module):
    """Density estimation in parallel, sampling one dimension at a time."""

    def __init__(self, dim, parity, nh=24):
        super().__init__()
        self.dim = dim
        self.net = MADE(dim, [nh, nh], dim * 2)
        self.parity = parity

    def forward(self, x):
        st = self.net(x)
        s, t = st.split(self.dim, dim=1)
        z = x * torch.exp(s) + t
        # reverse the order, so that stacked MAFs condition each dimension on the others
        z = z.flip(dims=(1,)) if self.parity else z
        log_det = torch.sum(s, dim=1)
        return z, log_det

    def backward(self, z):
        x = torch.zeros_like(z)
        log_det = torch.zeros(z.size(0))
        z = torch.flip(z, [1]) if self.parity else z
        for i in range(self.dim):
            st = self.net(x.clone())  # clone: x is written in place below
            s, t = st.split(self.dim, dim=1)
            x[:, i] = (z[:, i] - t[:, i]) * torch.exp(-s[:, i])
            log_det += -s[:, i]
        return x, log_det


class NormalizingFlow(nn.Module):
    """A sequence of flows: x -> z forward, z -> x backward."""

    def __init__(self, flows):
        super().__init__()
        self.flows = nn.ModuleList(flows)

    def forward(self, x):
        m, _ = x.shape
        log_det = torch.zeros(m)
        zs = [x]
        for flow in self.flows:
            x, ld = flow.forward(x)
            log_det += ld
            zs.append(x)
        return zs, log_det

    def backward(self, z):
        m, _ = z.shape
        log_det = torch.zeros(m)
        xs = [z]
        for flow in self.flows[::-1]:
            z, ld = flow.backward(z)
            log_det += ld
            xs.append(z)
        return xs, log_det


class NormalizingFlowModel(nn.Module):
    """A (prior, flow) pair."""

    def __init__(self, prior, flows):
        super().__init__()
        self.prior = prior
        self.flow = NormalizingFlow(flows)

    def forward(self, x):
        zs, log_det = self.flow.forward(x)
        prior_logprob = self.prior.log_prob(zs[-1]).view(x.size(0), -1).sum(1)
        return zs, prior_logprob, log_det

    def backward(self, z):
        xs, log_det = self.flow.backward(z)
        return xs, log_det

    def sample(self, num_samples):
        z = self.prior.sample((num_samples,))
        xs, _ = self.flow.backward(z)
        return xs


# ------------------------------------------------------------------------------- two moons
def make_moons(n, rng, noise=0.05):
    n_out = n // 2
    n_in = n - n_out
    outer = np.stack([np.cos(np.linspace(0, np.pi, n_out)), np.sin(np.linspace(0, np.pi, n_out))])
    inner = np.stack([1 - np.cos(np.linspace(0, np.pi, n_in)),
                      1 - np.sin(np.linspace(0, np.pi, n_in)) - 0.5])
    x = np.concatenate([outer, inner], axis=1).T
    x = x[rng.permutation(n)] + rng.normal(scale=noise, size=(n, 2))
    return torch.from_numpy(x.astype(np.float32))


def build_model(n_layers=4, dim=2):
    flows = []
    for i in range(n_layers):
        flows += [ActNorm(dim=dim), MAF(dim=dim, parity=i % 2)]
    prior = MultivariateNormal(torch.zeros(dim), torch.eye(dim))
    return NormalizingFlowModel(prior, flows)


data_rng = np.random.RandomState(42)
model = build_model()
print("number of params:", sum(p.numel() for p in model.parameters()))

optimizer = optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-5)
test_x = make_moons(256, data_rng)
model.train()
losses = []
for k in range(250):
    x = make_moons(128, data_rng)
    zs, prior_logprob, log_det = model(x)
    logprob = prior_logprob + log_det
    loss = -torch.sum(logprob)  # NLL

    model.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item() / x.size(0))
    if k % 50 == 0:
        print(k, losses[-1])

model.eval()
with torch.no_grad():
    zs, prior_logprob, log_det = model(test_x)
    test_nll = -(prior_logprob + log_det).mean().item()
    latent = zs[-1]
    latent_mean, latent_std = latent.mean(dim=0), latent.std(dim=0)
    torch.manual_seed(7)
    samples = model.sample(512)[-1]
print("test nll", test_nll, "latent", latent_mean, latent_std)

# ------------------------------------------------------------------ (recorded) fixed weights
torch.manual_seed(3)
fixed = build_model(n_layers=3)
with torch.no_grad():  # larger weights than the init: the flow is far from the identity
    for mod in fixed.modules():
        if isinstance(mod, MaskedLinear):
            mod.weight.mul_(2.0)
fixed_x = make_moons(64, np.random.RandomState(1))
fixed_results = {}
zs, prior_logprob, log_det = fixed(fixed_x)  # (the first call initialises the ActNorms)
zs, prior_logprob, log_det = fixed(fixed_x)
fixed_results["prior_logprob"] = prior_logprob.detach().clone()
fixed_results["log_det"] = log_det.detach().clone()
fixed_loss = -torch.sum(prior_logprob + log_det)
fixed.zero_grad()
fixed_loss.backward()
fixed_results["loss"] = fixed_loss.item()
fixed_results["grads"] = {k: p.grad.clone() for k, p in fixed.named_parameters()}
fixed_results["actnorm_init"] = {k: p.detach().clone() for k, p in fixed.named_parameters()
                                 if k.endswith((".s", ".t"))}

# the same density with an independent Normal prior summed over the dimensions
normal = Normal(torch.zeros(2), torch.ones(2))
with torch.no_grad():
    z = fixed(fixed_x)[0][-1]
    fixed_results["normal_logprob"] = normal.log_prob(z).sum(1)
    fixed_results["mvn_logprob"] = fixed.prior.log_prob(z)
    fixed_results["manual_logprob"] = -0.5 * (z ** 2).sum(1) - math.log(2 * math.pi)

# invertibility: x -> z -> x, the log-determinants cancel
z = fixed(fixed_x)[0][-1].detach().requires_grad_()
xs, back_log_det = fixed.backward(z)
x_rec = xs[-1]
fixed_results["x_rec"] = x_rec.detach().clone()
fixed_results["inverse_error"] = (x_rec - fixed_x).abs().max().item()
fixed_results["back_log_det"] = back_log_det.detach().clone()
# a gradient through the sequential inverse (the in-place writes into zeros_like)
(x_rec ** 2).sum().backward()
fixed_results["inverse_grad"] = z.grad.clone()

# the MADE is autoregressive: its Jacobian is strictly lower-triangular in each output block
torch.manual_seed(5)
made = MADE(4, [16, 16], 8)
probe = torch.randn(4)
jac = torch.autograd.functional.jacobian(lambda v: made(v[None])[0], probe)
fixed_results["made_jacobian"] = jac
fixed_results["made_masks"] = [m.mask.clone() for m in made.net if isinstance(m, MaskedLinear)]

# one Adam step with weight decay from the fixed weights
step_opt = optim.Adam(fixed.parameters(), lr=1e-2, weight_decay=1e-5)
fixed.zero_grad()
zs, prior_logprob, log_det = fixed(fixed_x)
(-torch.sum(prior_logprob + log_det)).backward()
step_opt.step()
fixed_results["after_adam"] = {k: p.detach().clone() for k, p in fixed.named_parameters()}

# seeded samples
torch.manual_seed(11)
with torch.no_grad():
    fixed_results["samples"] = fixed.sample(8)[-1]
print("fixed loss", fixed_results["loss"], "inverse error", fixed_results["inverse_error"])
