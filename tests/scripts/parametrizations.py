"""Constrained weights with ``nn.utils.parametrize``, written for these tests in the way the
PyTorch parametrizations tutorial is commonly written (modelled on the API usage of that
tutorial, not a copy of it):

- symmetric, skew-symmetric, Cayley-map and matrix-exponential parametrizations registered
  (and chained) on ``nn.Linear`` / ``nn.Conv2d``; the ``parametrizations`` container, its
  ``original``, ``named_parameters`` and the module repr;
- ``parametrize.cached()`` against recomputation on every access;
- ``right_inverse`` (weights assigned through the constraint; a mask buffer drawn with
  ``torch.bernoulli``; a right_inverse returning two tensors -> original0/original1, with
  ``linalg.svd`` and ``linalg.matrix_rank``), ``nn.init.orthogonal_``;
- ``remove_parametrizations`` (with and without ``leave_parametrized``), ``is_parametrized``,
  and Adam fitting a rotation through skew -> matrix_exp.
"""
import jitgrad as torch
from jitgrad import nn
from jitgrad.nn.utils import parametrize

torch.manual_seed(0)
reg = parametrize.register_parametrization


class Sym(nn.Module):
    def forward(self, m):
        return m.triu() + m.triu(1).transpose(-1, -2)


class SkewPart(nn.Module):
    def forward(self, m):
        upper = m.triu(1)
        return upper - upper.transpose(-1, -2)


class Skew(SkewPart):
    def right_inverse(self, s):
        return s.triu(1)  # the entries forward reads


class Cayley(nn.Module):
    """Skew-symmetric -> orthogonal: (I - S)^-1 (I + S)."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("eye", torch.eye(n))

    def forward(self, s):
        return torch.linalg.solve(self.eye - s, self.eye + s)


class InvertibleCayley(Cayley):
    def right_inverse(self, q):
        return torch.linalg.solve(q + self.eye, self.eye - q)


class Expm(nn.Module):
    def forward(self, m):
        return torch.matrix_exp(m)


def orthogonality(q):
    return torch.dist(q.T @ q, torch.eye(q.shape[0])).item()


# a symmetric linear map
lin = nn.Linear(3, 3)
print("plain:", lin)
reg(lin, "weight", Sym())
parametrized_repr = repr(lin)
print("constrained:", parametrized_repr)
print(lin.parametrizations, lin.parametrizations.weight[0], sep="\n")
assert torch.allclose(lin.weight, lin.weight.T)
param_names = list(dict(lin.named_parameters()))
dist_to_original = torch.dist(lin.weight, Sym()(lin.parametrizations.weight.original)).item()

conv = nn.Conv2d(in_channels=5, out_channels=8, kernel_size=3)
reg(conv, "weight", SkewPart())  # acts on the trailing 3x3 of every kernel
print(conv.weight[1, 0])
cnn_skew = torch.allclose(conv.weight, -conv.weight.transpose(-1, -2))

# orthogonal weights, two ways
rot = nn.Linear(3, 3)
reg(rot, "weight", SkewPart())
reg(rot, "weight", Cayley(3))
cayley_orthogonality = orthogonality(rot.weight)
rot2 = nn.Linear(3, 3)
reg(rot2, "weight", SkewPart())
reg(rot2, "weight", Expm())
exp_orthogonality = orthogonality(rot2.weight)

# symmetric positive definite: exp of a symmetric matrix
spd = nn.Linear(3, 3)
reg(spd, "weight", Sym())
reg(spd, "weight", Expm())
eigs = torch.linalg.eigvalsh(spd.weight)
spd_ok = bool((eigs > 0.0).all()) and torch.dist(spd.weight, spd.weight.T).item() < 1e-5

# how often a parametrization runs, with and without the cache
calls = {"n": 0}


class Counting(nn.Module):
    def forward(self, m):
        calls["n"] += 1
        return m


counted = nn.Linear(4, 4)
reg(counted, "weight", Counting())  # (registration evaluates it once)
_ = counted.weight.T @ counted.weight
_ = counted.weight.mean()
uncached_computations = calls["n"]
with parametrize.cached():
    _ = counted.weight.T @ counted.weight
    _ = counted.weight.mean()
cached_computations = calls["n"] - uncached_computations

# assigning through right_inverse
skew_layer = nn.Linear(3, 3)
reg(skew_layer, "weight", Skew())
m = torch.rand(3, 3)
wanted = m - m.T
skew_layer.weight = wanted
skew_assign_dist = torch.dist(skew_layer.weight, wanted).item()

orth_layer = nn.Linear(3, 3)
reg(orth_layer, "weight", Skew())
reg(orth_layer, "weight", InvertibleCayley(3))
q = nn.init.orthogonal_(torch.empty(3, 3))
if q.det() < 0.0:
    q[:, 0].neg_()  # the Cayley map only reaches rotations
orth_layer.weight = q
cayley_assign_dist = torch.dist(orth_layer.weight, q).item()


class RandomMask(nn.Module):
    def __init__(self, like, keep=0.8):
        super().__init__()
        self.mask = torch.bernoulli(torch.full_like(like, keep))

    def forward(self, w):
        return w * self.mask

    def right_inverse(self, w):
        return w


sparse = nn.Linear(3, 4)
init = torch.rand_like(sparse.weight)
reg(sparse, "weight", RandomMask(sparse.weight))
sparse.weight = init
pruning_param_ok = torch.equal(sparse.weight, init * sparse.parametrizations.weight[0].mask)

# taking the constraint away again
kept = nn.Linear(3, 3)
reg(kept, "weight", SkewPart())
before = kept.weight.detach().clone()
parametrize.remove_parametrizations(kept, "weight")
removed_kept_values = torch.equal(kept.weight, before)
removed_is_parameter = isinstance(kept.weight, nn.Parameter)
removed_repr = repr(kept)

dropped = nn.Linear(3, 3)
reg(dropped, "weight", SkewPart())
raw = dropped.parametrizations.weight.original.detach().clone()
parametrize.remove_parametrizations(dropped, "weight", leave_parametrized=False)
unparametrized_is_original = torch.equal(dropped.weight, raw)


class OuterProduct(nn.Module):
    def forward(self, u, v):
        return u.unsqueeze(-1) @ v.unsqueeze(-2)

    def right_inverse(self, w):
        # the best rank-one approximation, split evenly between the two factors
        u, s, vh = torch.linalg.svd(w, full_matrices=False)
        root = s[0].sqrt().unsqueeze(-1)
        return u[..., :, 0] * root, vh[..., 0, :] * root


low_rank = nn.Linear(4, 4)
reg(low_rank, "weight", OuterProduct())
rank_one = torch.linalg.matrix_rank(low_rank.weight).item()
rank_one_names = sorted(name for name, _ in low_rank.named_parameters())
is_parametrized = (parametrize.is_parametrized(low_rank),
                   parametrize.is_parametrized(low_rank, "bias"))

# learn a rotation while staying orthogonal
torch.manual_seed(0)
truth = torch.linalg.qr(torch.randn(3, 3))[0]
if truth.det() < 0:
    truth[:, 0].neg_()
learner = nn.Linear(3, 3, bias=False)
reg(learner, "weight", SkewPart())
reg(learner, "weight", Expm())
adam = torch.optim.Adam(learner.parameters(), lr=0.05)
pts = torch.randn(64, 3)
fit_losses = []
for _ in range(150):
    err = (learner(pts) - pts @ truth.T).pow(2).mean()
    adam.zero_grad()
    err.backward()
    adam.step()
    fit_losses.append(err.item())
fit_orthogonality = orthogonality(learner.weight.detach())
print(f"fit {fit_losses[0]:.4f} -> {fit_losses[-1]:.6f}")

# fixed float64 weights, recorded for the comparison with torch
probe = nn.Linear(3, 3).double()
with torch.no_grad():
    probe.weight.copy_(0.4 * torch.cos(torch.arange(9, dtype=torch.double) + 1).view(3, 3))
    probe.bias.fill_(0.1)
reg(probe, "weight", Skew())
reg(probe, "weight", InvertibleCayley(3).double())
probe_in = torch.linspace(1, -1, 6, dtype=torch.double).view(2, 3)
probe_out = probe(probe_in)
(probe_out**3).sum().backward()
fixed_results = {"weight": probe.weight.tolist(), "out": probe_out.tolist(),
                 "grad": probe.parametrizations.weight.original.grad.tolist()}
fixed_results_keys = sorted(probe.state_dict().keys())
