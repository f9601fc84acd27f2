# ruff: noqa: N812, N806 (the usual F alias, matrix names in capitals)
"""Tensor networks and differentiable linear algebra, written for these tests the way
tensor-network machine-learning code (Stoudenmire-Schwab MPS classifiers, TT-SVD and
tensorised layers, TensorLy-style Tucker layers) and autograd tests of torch.linalg write
torch code (not a copy of any of them):

- a matrix product state classifier: the local feature map ``[cos(pi x / 2), sin(pi x / 2)]``
  (``torch.stack``), cores as ``nn.ParameterList`` near the identity, a label leg on the
  centre core, contraction site by site with ``torch.einsum`` and with ``torch.tensordot``
  plus ``torch.bmm``, ``F.cross_entropy``, a few ``torch.optim.Adam`` steps;
- canonical forms: a left sweep with ``torch.linalg.qr`` (``mode="reduced"``), right-to-left
  compression with ``torch.linalg.svd(full_matrices=False)`` keeping the top-k singular
  values, the norm through transfer matrices (``torch.einsum``), TT-SVD of a full tensor
  (``reshape``/``permute``) and the truncation error as the discarded singular values;
- gradients through ``torch.linalg.svd``/``svdvals``/``qr``/``eigh``/``eigvalsh``/
  ``cholesky``/``solve``/``solve_triangular``/``cholesky_solve``/``lstsq``/``det``/
  ``slogdet``/``inv``/``matrix_exp``/``pinv``/``matrix_norm``, on well-conditioned float64
  inputs with well-separated spectra, checked with ``torch.autograd.gradcheck`` (and
  ``gradgradcheck`` for a few) through gauge-invariant functions (projectors, ``U diag(f(S))
  V^H``, ``Q`` with a sign-fixed ``R``);
- a Tucker layer (core and four factor matrices as ``nn.Parameter``; the weight rebuilt by
  ``torch.einsum``), initialised by a truncated HOSVD; a tensor-train layer applying its cores
  to the reshaped input one at a time and through the rebuilt weight; a short regression;
- power iteration and Lanczos with full re-orthogonalisation under ``torch.no_grad()`` with
  ``torch.linalg.vector_norm``, checked against ``torch.linalg.eigvalsh`` and
  ``torch.linalg.matrix_norm(ord=2)``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ---------------------------------------------------------------------- synthetic data


def make_data(n, n_sites, generator):
    """Pixels in [0, 1]; the class is whether the left half is brighter than the right."""
    x = torch.rand(n, n_sites, generator=generator)
    half = n_sites // 2
    y = (x[:, :half].mean(1) > x[:, half:].mean(1)).long()
    return x, y


def feature_map(x):
    """The local map of Stoudenmire & Schwab: each pixel becomes a unit 2-vector."""
    return torch.stack([torch.cos(math.pi * x / 2), torch.sin(math.pi * x / 2)], dim=-1)


# ------------------------------------------------------------------------- MPS model


class MPSClassifier(nn.Module):
    """An open-boundary MPS with bond dimension D; the label leg sits on the centre core."""

    def __init__(self, n_sites, n_classes, bond_dim, phys_dim=2, init_std=1e-2):
        super().__init__()
        self.n_sites, self.n_classes, self.bond_dim = n_sites, n_classes, bond_dim
        self.label_site = n_sites // 2
        cores = []
        for i in range(n_sites):
            left = 1 if i == 0 else bond_dim
            right = 1 if i == n_sites - 1 else bond_dim
            eye = torch.eye(left, right)
            core = eye.unsqueeze(1).repeat(1, phys_dim, 1) / phys_dim ** 0.5
            core = core + init_std * torch.randn(left, phys_dim, right)
            cores.append(nn.Parameter(core))
        self.cores = nn.ParameterList(cores)
        D = bond_dim
        label = torch.eye(D).unsqueeze(1).repeat(1, n_classes, 1)
        label = label + init_std * torch.randn(D, n_classes, D)
        self.label_core = nn.Parameter(label)

    def forward(self, phi):
        """phi: (B, n_sites, d) -> logits (B, n_classes), contracted with einsum."""
        B = phi.shape[0]
        left = torch.ones(B, 1, dtype=phi.dtype)
        for i in range(self.label_site):
            left = torch.einsum("bl,lpr,bp->br", left, self.cores[i], phi[:, i])
        right = torch.ones(B, 1, dtype=phi.dtype)
        for i in range(self.n_sites - 1, self.label_site - 1, -1):
            right = torch.einsum("lpr,bp,br->bl", self.cores[i], phi[:, i], right)
        return torch.einsum("bl,lcr,br->bc", left, self.label_core, right)

    def forward_tensordot(self, phi):
        """The same contraction as matrices per sample: tensordot with phi, then bmm."""
        B = phi.shape[0]
        mats = []
        for i, core in enumerate(self.cores):
            # (B, d) . (l, d, r) over d -> (B, l, r)
            mats.append(torch.tensordot(phi[:, i], core, dims=([1], [1])))
        left = torch.ones(B, 1, 1, dtype=phi.dtype)
        for i in range(self.label_site):
            left = torch.bmm(left, mats[i])
        right = torch.ones(B, 1, 1, dtype=phi.dtype)
        for i in range(self.n_sites - 1, self.label_site - 1, -1):
            right = torch.bmm(mats[i], right)
        # (B, 1, l) x (l, c, r) -> (B, 1, c, r), then with (B, r, 1)
        mid = torch.tensordot(left.squeeze(1), self.label_core, dims=1)  # (B, c, r)
        return torch.bmm(mid, right).squeeze(-1)


def mps_tensors_for_label(model, c):
    """The plain MPS of class c: the label matrix absorbed into the core right of it."""
    cores = [core.detach().clone() for core in model.cores]
    s = model.label_site
    cores[s] = torch.einsum("lm,mpr->lpr", model.label_core[:, c].detach(), cores[s])
    return cores


def contract_product_state(cores, phi):
    """<phi_1 ... phi_n | MPS> for a batch of product states (B, n, d)."""
    v = torch.ones(phi.shape[0], 1, dtype=cores[0].dtype)
    for i, core in enumerate(cores):
        v = torch.einsum("bl,lpr,bp->br", v, core, phi[:, i])
    return v.squeeze(-1)


def mps_norm(cores):
    """sqrt(<MPS|MPS>) with transfer matrices."""
    env = torch.ones(1, 1, dtype=cores[0].dtype)
    for core in cores:
        env = torch.einsum("ab,apc,bpd->cd", env, core, core)
    return torch.sqrt(env.squeeze())


def mps_inner(cores_a, cores_b):
    env = torch.ones(1, 1, dtype=cores_a[0].dtype)
    for a, b in zip(cores_a, cores_b):
        env = torch.einsum("ab,apc,bpd->cd", env, a, b)
    return env.squeeze()


def left_canonicalize(cores):
    """QR sweep left to right: every core but the last becomes a left isometry."""
    cores = [c.clone() for c in cores]
    for i in range(len(cores) - 1):
        l, d, r = cores[i].shape
        Q, R = torch.linalg.qr(cores[i].reshape(l * d, r), mode="reduced")
        cores[i] = Q.reshape(l, d, Q.shape[1])
        cores[i + 1] = torch.tensordot(R, cores[i + 1], dims=([1], [0]))
    return cores


def right_truncate(cores, max_bond, cutoff=0.0):
    """SVD sweep right to left on a left-canonical MPS, keeping the top-k singular values.
    Returns the new cores, the singular values at each bond and the discarded weights."""
    cores = [c.clone() for c in cores]
    spectra, discarded = [], []
    for i in range(len(cores) - 1, 0, -1):
        l, d, r = cores[i].shape
        U, S, Vh = torch.linalg.svd(cores[i].reshape(l, d * r), full_matrices=False)
        keep = min(max_bond, int((S > cutoff * S[0]).sum()))
        discarded.append(torch.sum(S[keep:] ** 2))
        spectra.append(S)
        U, S, Vh = U[:, :keep], S[:keep], Vh[:keep]
        cores[i] = Vh.reshape(keep, d, r)
        cores[i - 1] = torch.einsum("lpm,mk->lpk", cores[i - 1], U * S)
    return cores, spectra[::-1], discarded[::-1]


def tt_svd(full, eps=1e-12, max_rank=None):
    """Oseledets' TT-SVD of a full tensor: sequential truncated SVDs of its unfoldings."""
    dims = full.shape
    cores, r = [], 1
    rest = full.reshape(1, -1)
    ranks = []
    for n in dims[:-1]:
        mat = rest.reshape(r * n, -1)
        U, S, Vh = torch.linalg.svd(mat, full_matrices=False)
        rank = int((S > eps * S[0]).sum())
        if max_rank is not None:
            rank = min(rank, max_rank)
        ranks.append(rank)
        cores.append(U[:, :rank].reshape(r, n, rank))
        rest = S[:rank, None] * Vh[:rank]
        r = rank
    cores.append(rest.reshape(r, dims[-1], 1))
    return cores, ranks


def tt_full(cores):
    out = cores[0]
    for core in cores[1:]:
        out = torch.tensordot(out, core, dims=1)
    return out.squeeze(0).squeeze(-1)


# ---------------------------------------------------------- MPS classifier (recorded)

n_sites, n_classes, bond_dim = 8, 2, 6
gen = torch.Generator().manual_seed(1)
x_train, y_train = make_data(96, n_sites, gen)
x_test, y_test = make_data(64, n_sites, gen)
phi_train, phi_test = feature_map(x_train), feature_map(x_test)

torch.manual_seed(2)
mps = MPSClassifier(n_sites, n_classes, bond_dim)
with torch.no_grad():
    logits_einsum = mps(phi_train[:8])
    logits_tensordot = mps.forward_tensordot(phi_train[:8])
fixed_results["mps_init_logits"] = logits_einsum
fixed_results["mps_init_logits_tensordot"] = logits_tensordot
contraction_difference = float((logits_einsum - logits_tensordot).abs().max())

loss0 = F.cross_entropy(mps(phi_train), y_train)
loss0.backward()
fixed_results["mps_init_loss"] = loss0.detach()
fixed_results["mps_grads"] = {name: p.grad.clone() for name, p in mps.named_parameters()}
mps.zero_grad()

optimizer = torch.optim.Adam(mps.parameters(), lr=2e-2)
losses = []
for _ in range(40):
    optimizer.zero_grad()
    loss = F.cross_entropy(mps(phi_train), y_train)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

with torch.no_grad():
    train_accuracy = (mps(phi_train).argmax(1) == y_train).float().mean().item()
    test_logits = mps(phi_test)
    test_accuracy = (test_logits.argmax(1) == y_test).float().mean().item()
    test_logits_tensordot = mps.forward_tensordot(phi_test)

# ----------------------------------------- canonical forms and truncation (float64, recorded)


def random_mps(n, bond, phys=2, generator=None, dtype=torch.float64):
    cores = []
    for i in range(n):
        left = 1 if i == 0 else bond
        right = 1 if i == n - 1 else bond
        core = torch.randn(left, phys, right, dtype=dtype, generator=generator)
        cores.append(core / math.sqrt(left * phys))
    return cores


cores64 = random_mps(n_sites, 8, generator=torch.Generator().manual_seed(11))
phi64 = feature_map(x_test.double())
amp_before = contract_product_state(cores64, phi64)
norm_before = mps_norm(cores64)

left = left_canonicalize(cores64)
isometry_errors = []
for core in left[:-1]:
    l, d, r = core.shape
    M = core.reshape(l * d, r)
    isometry_errors.append(float((M.T @ M - torch.eye(r, dtype=M.dtype)).abs().max()))
amp_left = contract_product_state(left, phi64)
# in left-canonical form the whole norm sits in the last core
norm_last_core = torch.linalg.vector_norm(left[-1])

bond_full, spectra, _ = right_truncate(left, max_bond=64)
truncated, _, discarded = right_truncate(left, max_bond=3)
amp_full = contract_product_state(bond_full, phi64)
full_bonds = [c.shape[2] for c in bond_full[:-1]]
trunc_bonds = [c.shape[2] for c in truncated[:-1]]
# the squared distance to the truncated state is the sum of what each SVD discarded
distance_sq = float(mps_norm(left) ** 2 + mps_norm(truncated) ** 2
                    - 2 * mps_inner(left, truncated))
discarded_total = float(sum(float(d) for d in discarded))

fixed_results["mps64_amplitudes"] = amp_before
fixed_results["mps64_norm"] = norm_before
fixed_results["mps64_bond_spectra"] = {str(i): s for i, s in enumerate(spectra)}
fixed_results["mps64_truncated_amplitudes"] = contract_product_state(truncated, phi64)
fixed_results["mps64_truncated_norm"] = mps_norm(truncated)

# the trained classifier, one MPS per class: canonicalising keeps its logits, and bond
# dimension 2 keeps most of its accuracy
class_mps = [left_canonicalize([c.double() for c in mps_tensors_for_label(mps, c)])
             for c in range(n_classes)]
canonical_logits = torch.stack([contract_product_state(m, phi64) for m in class_mps], 1)
compressed = [right_truncate(m, max_bond=2)[0] for m in class_mps]
compressed_logits = torch.stack([contract_product_state(m, phi64) for m in compressed], 1)
compressed_accuracy = (compressed_logits.argmax(1) == y_test).double().mean().item()

# TT-SVD of a tensor of exact rank 2: f(x) = sin(sum_k x_k 2^-k) on 2^8 binary inputs
bits = torch.cartesian_prod(*[torch.tensor([0.0, 1.0], dtype=torch.float64)] * 8)
weights_2k = 2.0 ** -torch.arange(1, 9, dtype=torch.float64)
sin_tensor = torch.sin(3.0 * (bits @ weights_2k)).reshape([2] * 8)
sin_cores, sin_ranks = tt_svd(sin_tensor)
sin_error = float((tt_full(sin_cores) - sin_tensor).abs().max())

torch.manual_seed(3)
noisy = sin_tensor + 0.05 * torch.randn(sin_tensor.shape, dtype=torch.float64)
noisy_cores, noisy_ranks = tt_svd(noisy, max_rank=3)
noisy_error = float(torch.linalg.vector_norm(tt_full(noisy_cores) - noisy))
noisy_to_clean = float(torch.linalg.vector_norm(tt_full(noisy_cores) - sin_tensor))
fixed_results["tt_noisy_reconstruction"] = tt_full(noisy_cores)
fixed_results["tt_sin_core_norms"] = torch.stack(
    [torch.linalg.vector_norm(c) for c in sin_cores])

# ------------------------------------------------------ gradients through torch.linalg

torch.manual_seed(4)
dt = torch.float64


def well_separated(n, low=1.0, high=4.0, dtype=dt):
    """A random orthogonal Q times evenly spaced singular values, times another Q."""
    Q1, _ = torch.linalg.qr(torch.randn(n, n, dtype=dtype))
    Q2, _ = torch.linalg.qr(torch.randn(n, n, dtype=dtype))
    s = torch.linspace(high, low, n, dtype=dtype)
    return Q1 @ torch.diag(s) @ Q2.T


def spd(n, dtype=dt):
    X = torch.randn(n, n, dtype=dtype)
    return X @ X.T + n * torch.eye(n, dtype=dtype)


def symmetric_spread(n, dtype=dt):
    Q, _ = torch.linalg.qr(torch.randn(n, n, dtype=dtype))
    return Q @ torch.diag(torch.arange(1, n + 1, dtype=dtype) * 1.5 - 4.0) @ Q.T


def svd_projected(A):
    """Gauge-invariant functions of the SVD: the singular values, U f(S) V^H, and the
    projector on the top-2 left singular subspace."""
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    smooth = U @ torch.diag_embed(torch.tanh(S)) @ Vh
    P = U[..., :2] @ U[..., :2].transpose(-2, -1)
    return S, smooth, P


def svdvals_nuclear(A):
    return torch.linalg.svdvals(A).sum(-1), torch.linalg.matrix_norm(A, ord="nuc")


def qr_fixed(A):
    """Q and R with R's diagonal made positive (the unique factorisation)."""
    Q, R = torch.linalg.qr(A)
    sign = torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))
    return Q * sign.unsqueeze(-2), R * sign.unsqueeze(-1)


def eigh_invariants(X):
    A = 0.5 * (X + X.transpose(-2, -1))
    w, V = torch.linalg.eigh(A)
    top = V[..., -1:]
    return w, top @ top.transpose(-2, -1), torch.linalg.eigvalsh(A, UPLO="U")


def cholesky_logdet(X):
    A = X @ X.transpose(-2, -1) + 3.0 * torch.eye(X.shape[-1], dtype=X.dtype)
    L = torch.linalg.cholesky(A)
    return L, 2.0 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)


def cholesky_solves(X, B):
    A = X @ X.transpose(-2, -1) + 3.0 * torch.eye(X.shape[-1], dtype=X.dtype)
    L = torch.linalg.cholesky(A)
    y = torch.linalg.solve_triangular(L, B, upper=False)
    x = torch.linalg.solve_triangular(L.transpose(-2, -1), y, upper=True)
    return x, torch.cholesky_solve(B, L)


def solve_fn(A, B):
    return torch.linalg.solve(A, B), torch.linalg.inv(A) @ B


def lstsq_fn(A, B):
    return torch.linalg.lstsq(A, B).solution


def det_fn(A):
    sign, logabsdet = torch.linalg.slogdet(A)
    return torch.linalg.det(A), sign * torch.exp(logabsdet), logabsdet


def expm_fn(A):
    return torch.linalg.matrix_exp(0.3 * A)


def pinv_fn(A):
    return torch.linalg.pinv(A)


def spectral_norm_fn(A):
    return torch.linalg.matrix_norm(A, ord=2), torch.linalg.matrix_norm(A)


linalg_inputs = {
    "svd": (well_separated(5),),
    "svd_batched_tall": (torch.stack([well_separated(6)[:, :4], well_separated(6)[:, :4]]),),
    "svdvals": (well_separated(4),),
    "qr": (torch.randn(6, 4, dtype=dt) + 2 * torch.eye(6, 4, dtype=dt),),
    "eigh": (symmetric_spread(5),),
    "cholesky": (torch.randn(4, 4, dtype=dt),),
    "cholesky_solve": (torch.randn(4, 4, dtype=dt), torch.randn(4, 2, dtype=dt)),
    "solve": (well_separated(4), torch.randn(4, 3, dtype=dt)),
    "lstsq": (well_separated(6)[:, :3].contiguous(), torch.randn(6, 2, dtype=dt)),
    "det": (torch.stack([well_separated(3), -well_separated(3)]),),
    "matrix_exp": (torch.randn(4, 4, dtype=dt),),
    "pinv": (well_separated(5)[:, :3].contiguous(),),
    "matrix_norm": (well_separated(4),),
}
linalg_functions = {
    "svd": svd_projected,
    "svd_batched_tall": svd_projected,
    "svdvals": svdvals_nuclear,
    "qr": qr_fixed,
    "eigh": eigh_invariants,
    "cholesky": cholesky_logdet,
    "cholesky_solve": cholesky_solves,
    "solve": solve_fn,
    "lstsq": lstsq_fn,
    "det": det_fn,
    "matrix_exp": expm_fn,
    "pinv": pinv_fn,
    "matrix_norm": spectral_norm_fn,
}

gradcheck_results = {}
linalg_values, linalg_grads = {}, {}
for name, fn in linalg_functions.items():
    inputs = tuple(t.clone().requires_grad_() for t in linalg_inputs[name])
    gradcheck_results[name] = torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5)
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    # a fixed random cotangent per output, then the vector-Jacobian product
    g = torch.Generator().manual_seed(len(name))
    total = sum((o * torch.randn(o.shape, generator=g, dtype=dt)).sum() for o in outs)
    grads = torch.autograd.grad(total, inputs)
    linalg_values[name] = [o.detach() for o in outs]
    linalg_grads[name] = list(grads)



def svdvals_via_eigvalsh(A):
    # the singular values as square roots of the eigenvalues of A^T A
    return torch.sqrt(torch.linalg.eigvalsh(A.transpose(-2, -1) @ A)).sum(-1)


def nuclear_norm(A):
    return torch.linalg.matrix_norm(A, ord="nuc") + torch.linalg.svdvals(A)[..., 0].sum()


second_order = {"svdvals": svdvals_via_eigvalsh, "nuclear": nuclear_norm, "det": det_fn,
                "solve": solve_fn, "cholesky": cholesky_logdet}
gradgradcheck_results = {}
for name, fn in second_order.items():
    inputs = tuple(t.clone().requires_grad_() for t in linalg_inputs.get(name, linalg_inputs[
        "svdvals"]))
    gradgradcheck_results[name] = torch.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4)

fixed_results["linalg_values"] = {k: {str(i): v for i, v in enumerate(vs)}
                                  for k, vs in linalg_values.items()}
fixed_results["linalg_grads"] = {k: {str(i): v for i, v in enumerate(vs)}
                                 for k, vs in linalg_grads.items()}

# identities the decompositions satisfy
A_svd = linalg_inputs["svd"][0]
U_, S_, Vh_ = torch.linalg.svd(A_svd, full_matrices=False)
svd_reconstruction_error = float((U_ @ torch.diag(S_) @ Vh_ - A_svd).abs().max())
A_eig = linalg_inputs["eigh"][0]
w_, V_ = torch.linalg.eigh(A_eig)
eigh_reconstruction_error = float((V_ @ torch.diag(w_) @ V_.T - A_eig).abs().max())
A_det = linalg_inputs["det"][0]
det_signs = torch.linalg.slogdet(A_det).sign.tolist()
expm_inverse_error = float(
    (torch.linalg.matrix_exp(A_eig) @ torch.linalg.matrix_exp(-A_eig)
     - torch.eye(5, dtype=dt)).abs().max())
A_pinv = linalg_inputs["pinv"][0]
pinv_left_inverse_error = float(
    (torch.linalg.pinv(A_pinv) @ A_pinv - torch.eye(3, dtype=dt)).abs().max())

# ------------------------------------------------------------- Tucker and TT layers


class TuckerLinear(nn.Module):
    """A linear map whose (out, in) weight, seen as an (o1, o2, i1, i2) tensor, is a Tucker
    product of a small core and four factor matrices."""

    def __init__(self, out_shape, in_shape, ranks, bias=True):
        super().__init__()
        self.out_shape, self.in_shape = tuple(out_shape), tuple(in_shape)
        dims = self.out_shape + self.in_shape
        self.core = nn.Parameter(torch.randn(*ranks) * 0.1)
        self.factors = nn.ParameterList(
            [nn.Parameter(torch.randn(n, r) / math.sqrt(n)) for n, r in zip(dims, ranks)])
        out_features = math.prod(self.out_shape)
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def full_weight(self):
        U1, U2, U3, U4 = self.factors
        W = torch.einsum("abcd,ia,jb,kc,ld->ijkl", self.core, U1, U2, U3, U4)
        return W.reshape(math.prod(self.out_shape), math.prod(self.in_shape))

    @torch.no_grad()
    def init_from(self, W):
        """Truncated HOSVD: each factor is the leading left singular vectors of an unfolding,
        the core the projection of W on them."""
        T = W.reshape(self.out_shape + self.in_shape)
        for mode, factor in enumerate(self.factors):
            unfolding = T.movedim(mode, 0).reshape(T.shape[mode], -1)
            U, _, _ = torch.linalg.svd(unfolding, full_matrices=False)
            factor.copy_(U[:, :factor.shape[1]])
        U1, U2, U3, U4 = self.factors
        self.core.copy_(torch.einsum("ijkl,ia,jb,kc,ld->abcd", T, U1, U2, U3, U4))

    def forward(self, x):
        # contract the input with the in-factors first, never forming the weight
        U1, U2, U3, U4 = self.factors
        xt = x.reshape(x.shape[:-1] + self.in_shape)
        z = torch.einsum("...kl,kc,ld->...cd", xt, U3, U4)
        z = torch.einsum("...cd,abcd->...ab", z, self.core)
        y = torch.einsum("...ab,ia,jb->...ij", z, U1, U2).flatten(-2)
        return y if self.bias is None else y + self.bias


class TTLinear(nn.Module):
    """A tensor-train matrix: cores (r_{k-1}, m_k, n_k, r_k), out = prod m, in = prod n."""

    def __init__(self, out_modes, in_modes, rank):
        super().__init__()
        self.out_modes, self.in_modes = list(out_modes), list(in_modes)
        ranks = [1] + [rank] * (len(in_modes) - 1) + [1]
        cores = []
        for k, (m, n) in enumerate(zip(out_modes, in_modes)):
            std = (1.0 / (n * ranks[k])) ** 0.5
            cores.append(nn.Parameter(torch.randn(ranks[k], m, n, ranks[k + 1]) * std))
        self.cores = nn.ParameterList(cores)
        self.bias = nn.Parameter(torch.zeros(math.prod(out_modes)))

    def full_weight(self):
        W = self.cores[0]  # (1, m1, n1, r1)
        for core in self.cores[1:]:
            W = torch.einsum("amnr,rpqs->ampnqs", W, core)
            a, m, p, n, q, s = W.shape
            W = W.reshape(a, m * p, n * q, s)
        return W.squeeze(0).squeeze(-1)

    def forward(self, x):
        """Apply the cores one at a time: each consumes one input mode, emits one output."""
        B = x.shape[0]
        t = x.reshape([B, 1] + self.in_modes)  # (B, r0, n1, ..., nd)
        for core in self.cores:
            # contract the rank and the next input mode; the output mode goes to the end
            t = torch.tensordot(t, core, dims=([1, 2], [0, 2]))  # (B, rest..., m_k, r_k)
            t = t.movedim(-1, 1)  # (B, r_k, n_{k+1}.., m_1..m_k)
        return t.reshape(B, -1) + self.bias


torch.manual_seed(5)
tucker = TuckerLinear((4, 3), (3, 4), ranks=(3, 2, 2, 3))
tt = TTLinear((4, 3), (3, 4), rank=3)
x_layer = torch.randn(7, 12)
with torch.no_grad():
    tucker_out = tucker(x_layer)
    tucker_dense = x_layer @ tucker.full_weight().T + tucker.bias
    tt_out = tt(x_layer)
    tt_dense = x_layer @ tt.full_weight().T + tt.bias
tucker_forms_difference = float((tucker_out - tucker_dense).abs().max())
tt_forms_difference = float((tt_out - tt_dense).abs().max())

(tucker(x_layer).square().mean() + tt(x_layer).square().mean()).backward()
fixed_results["tucker_out"] = tucker_out
fixed_results["tt_out"] = tt_out
fixed_results["layer_grads"] = {
    **{"tucker." + n: p.grad.clone() for n, p in tucker.named_parameters()},
    **{"tt." + n: p.grad.clone() for n, p in tt.named_parameters()},
}

# HOSVD of a weight of exact multilinear rank (3, 2, 2, 3) recovers it
torch.manual_seed(6)
target_layer = TuckerLinear((4, 3), (3, 4), ranks=(3, 2, 2, 3), bias=False)
W_target = target_layer.full_weight().detach()
hosvd = TuckerLinear((4, 3), (3, 4), ranks=(3, 2, 2, 3), bias=False)
hosvd.init_from(W_target)
with torch.no_grad():
    hosvd_error = float((hosvd.full_weight() - W_target).abs().max())
factor_orthogonality = max(
    float((f.T @ f - torch.eye(f.shape[1])).abs().max())
    for f in (p.detach() for p in hosvd.factors))

# a soft orthogonality penalty on the factors, sum (s_i - 1)^2: zero, with a zero gradient,
# at the HOSVD's orthonormal factors (all singular values 1), and pulling perturbed ones back


def orthogonality_penalty(factors):
    # (the S of a full SVD: its singular vectors' cotangents are zero, and all singular values
    # are 1 at the HOSVD's factors, repeated)
    return sum(((torch.linalg.svd(f, full_matrices=False).S - 1.0) ** 2).sum() for f in factors)


penalty = orthogonality_penalty(hosvd.factors)
penalty_grads = torch.autograd.grad(penalty, list(hosvd.factors))
penalty_at_hosvd = penalty.item()
penalty_grad_max = max(float(g.abs().max()) for g in penalty_grads)
with torch.no_grad():
    for f in hosvd.factors:
        f.mul_(1.2)
penalty = orthogonality_penalty(hosvd.factors)
penalty_grads_scaled = torch.autograd.grad(penalty, list(hosvd.factors))
penalty_scaled = penalty.item()
# d/dF sum (s - 1)^2 = 2 U diag(s - 1) V^T = 2 (0.2 / 1.2) F at F = 1.2 * orthonormal
penalty_direction_error = max(
    float((g - 2 * (0.2 / 1.2) * f.detach()).abs().max())
    for g, f in zip(penalty_grads_scaled, hosvd.factors))
# the factors' columns carry the SVD's sign choice, and so do the gradients: G F^T does not
fixed_results["penalty_grads_scaled"] = {
    str(i): g @ f.detach().T for i, (g, f) in enumerate(zip(penalty_grads_scaled, hosvd.factors))}

# fit a TT layer and a Tucker layer to a linear map of TT rank 2 plus noise
teacher = TTLinear((4, 3), (3, 4), rank=2)
x_fit = torch.randn(128, 12)
with torch.no_grad():
    y_fit = teacher(x_fit) + 0.01 * torch.randn(128, 12)
student_tt = TTLinear((4, 3), (3, 4), rank=3)
student_tucker = TuckerLinear((4, 3), (3, 4), ranks=(4, 3, 3, 4))
fit_losses = {"tt": [], "tucker": []}
for name, student in (("tt", student_tt), ("tucker", student_tucker)):
    opt = torch.optim.Adam(student.parameters(), lr=3e-2)
    for _ in range(60):
        opt.zero_grad()
        loss = F.mse_loss(student(x_fit), y_fit)
        loss.backward()
        opt.step()
        fit_losses[name].append(loss.item())

# ------------------------------------------------- power iteration and Lanczos (no_grad)


@torch.no_grad()
def power_iteration(matvec, n, iters=100, dtype=torch.float64, generator=None):
    v = torch.randn(n, dtype=dtype, generator=generator)
    v = v / torch.linalg.vector_norm(v)
    estimate = torch.zeros((), dtype=dtype)
    for _ in range(iters):
        w = matvec(v)
        estimate = torch.dot(v, w)
        v = w / torch.linalg.vector_norm(w)
    return estimate, v


@torch.no_grad()
def lanczos(matvec, n, k, dtype=torch.float64, generator=None):
    """k steps with full re-orthogonalisation; the Ritz values are eigvalsh of T."""
    V = torch.zeros(k, n, dtype=dtype)
    alpha = torch.zeros(k, dtype=dtype)
    beta = torch.zeros(k, dtype=dtype)
    v = torch.randn(n, dtype=dtype, generator=generator)
    V[0] = v / torch.linalg.vector_norm(v, ord=2)
    for j in range(k):
        w = matvec(V[j])
        alpha[j] = torch.dot(w, V[j])
        w = w - V[: j + 1].T @ (V[: j + 1] @ w)  # full re-orthogonalisation
        w = w - V[: j + 1].T @ (V[: j + 1] @ w)  # twice is enough
        if j + 1 < k:
            beta[j] = torch.linalg.vector_norm(w)
            V[j + 1] = w / beta[j]
    T = torch.diag(alpha) + torch.diag(beta[:-1], 1) + torch.diag(beta[:-1], -1)
    return torch.linalg.eigvalsh(T), V


torch.manual_seed(7)
n_big = 80
Q_big, _ = torch.linalg.qr(torch.randn(n_big, n_big, dtype=torch.float64))
spectrum = torch.cat([torch.tensor([10.0, 7.0, 5.0], dtype=torch.float64),
                      torch.rand(n_big - 4, dtype=torch.float64) * 2.0 - 1.0,
                      torch.tensor([-6.0], dtype=torch.float64)])
H = Q_big @ torch.diag(spectrum) @ Q_big.T
H = 0.5 * (H + H.T)
exact = torch.linalg.eigvalsh(H)

gen_power = torch.Generator().manual_seed(8)
power_value, power_vector = power_iteration(lambda v: H @ v, n_big, iters=60,
                                            generator=gen_power)
power_residual = float(torch.linalg.vector_norm(H @ power_vector - power_value * power_vector))
ritz, lanczos_basis = lanczos(lambda v: H @ v, n_big, k=30,
                              generator=torch.Generator().manual_seed(9))
lanczos_orthogonality = float(
    (lanczos_basis @ lanczos_basis.T - torch.eye(30, dtype=torch.float64)).abs().max())
fixed_results["exact_extremes"] = torch.stack([exact[0], exact[-2], exact[-1]])
fixed_results["lanczos_extremes"] = torch.stack([ritz[0], ritz[-2], ritz[-1]])

# spectral norm of the trained TT layer's weight: power iteration on W^T W
W_tt = student_tt.full_weight().detach().double()
sigma_sq, _ = power_iteration(lambda v: W_tt.T @ (W_tt @ v), W_tt.shape[1], iters=200,
                              generator=torch.Generator().manual_seed(10))
tt_spectral_power = float(torch.sqrt(sigma_sq))
tt_spectral_exact = float(torch.linalg.matrix_norm(W_tt, ord=2))
tt_svdvals = torch.linalg.svdvals(W_tt)

if __name__ == "__main__":
    print(f"MPS: loss {losses[0]:.4f} -> {losses[-1]:.4f}, train acc {train_accuracy:.3f}, "
          f"test acc {test_accuracy:.3f}, einsum vs tensordot {contraction_difference:.2e}")
    print(f"canonical: isometry {max(isometry_errors):.2e}, "
          f"amplitude change {float((amp_left - amp_before).abs().max()):.2e}, "
          f"bonds {trunc_bonds}, distance^2 {float(distance_sq):.3e} "
          f"discarded {discarded_total:.3e}")
    print(f"TT-SVD ranks {sin_ranks} error {sin_error:.2e}; noisy ranks {noisy_ranks} "
          f"error {noisy_error:.3f} to clean {noisy_to_clean:.3f}")
    print("gradcheck", gradcheck_results, gradgradcheck_results)
    print(f"svd {svd_reconstruction_error:.1e} eigh {eigh_reconstruction_error:.1e} "
          f"det signs {det_signs} expm {expm_inverse_error:.1e} pinv "
          f"{pinv_left_inverse_error:.1e}")
    print(f"Tucker forms {tucker_forms_difference:.1e}, TT forms {tt_forms_difference:.1e}, "
          f"HOSVD {hosvd_error:.1e}, orthogonality {factor_orthogonality:.1e}")
    print("fit", {k: (round(v[0], 4), round(v[-1], 4)) for k, v in fit_losses.items()})
    print(f"power {float(power_value):.6f} residual {power_residual:.1e}; "
          f"Lanczos {ritz[-3:].tolist()} vs {exact[-3:].tolist()}, {ritz[0]:.4f} vs "
          f"{exact[0]:.4f}; orthogonality {lanczos_orthogonality:.1e}")
    print(f"TT spectral norm {tt_spectral_power:.6f} vs {tt_spectral_exact:.6f}")
