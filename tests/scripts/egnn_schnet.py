# ruff: noqa: N812, N801 (the usual F alias, EGNN's E_GCL layer name)
"""Geometric deep learning for molecules written by hand (no torch_geometric), the way public
EGNN (Satorras et al.) and SchNet/SchNetPack-style PyTorch code writes torch code (not a copy of
any of them):

- synthetic molecules: atoms on a jittered lattice chosen by ``torch.randperm``, atom types by
  ``torch.randint``, a Lennard-Jones potential with Lorentz-Berthelot mixing over the pairs of
  ``torch.triu_indices``, reference forces both analytic and by ``torch.autograd.grad``;
- batching small molecules into one graph: ``torch.cat`` of positions/types, the ``batch``
  vector from ``torch.repeat_interleave``, edge indices shifted by ``torch.cumsum`` of the atom
  counts, fully connected edges from ``torch.meshgrid`` and from ``torch.combinations``;
- segment sums/means as ``new_zeros(...).scatter_add_`` with an ``expand``-ed index,
  ``torch.zeros(...).index_add`` / ``index_add_``, ``scatter_reduce(reduce="sum"/"mean",
  include_self=False)``, ``torch.segment_reduce(lengths=...)``, ``torch.bincount`` counts;
- an E(n)-equivariant GNN: edge MLP on ``h_i, h_j, ||x_i - x_j||^2``, the coordinate update
  ``x_i += mean_j (x_i - x_j) phi_x(m_ij)`` (``xavier_uniform_`` with a tiny gain), attention
  gates by ``nn.Sigmoid``, ``nn.SiLU``, normalised coordinate differences with a ``detach``-ed
  norm; rotation/reflection/translation equivariance checked numerically in float64 with an
  orthogonal matrix from ``torch.linalg.qr`` (``torch.linalg.det`` for a proper rotation);
- SchNet continuous-filter convolutions: Gaussian radial basis (``torch.linspace`` offsets,
  ``register_buffer``), cosine cutoff, shifted softplus (``F.softplus - log 2``), a radius
  graph by masking ``torch.cdist`` under ``torch.no_grad`` (``fill_diagonal_``,
  ``nonzero(as_tuple=True)``), distances by ``Tensor.norm``, atom embeddings and atom
  reference energies by ``nn.Embedding`` fitted by ``torch.linalg.lstsq`` on the composition
  counted with ``index_put_(..., accumulate=True)`` (``weight.data.copy_``), a dense variant through
  ``torch.cdist`` and ``torch.einsum``;
- energies and forces ``F = -torch.autograd.grad(E.sum(), pos, create_graph=True)[0]``, an
  energy+force-matching loss whose ``backward`` is a double backward, ``Adam`` and
  ``ReduceLROnPlateau``, ``clip_grad_norm_``; ``torch.autograd.gradcheck`` / ``gradgradcheck``
  of the SchNet energy in float64, rotation invariance of energies and equivariance of forces.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------ Lennard-Jones data

N_TYPES = 3
LJ_SIGMA = torch.tensor([0.9, 1.0, 1.1])
LJ_EPSILON = torch.tensor([0.6, 1.0, 0.8])


def random_molecule(n_atoms, spacing=1.35, jitter=0.08):
    """Atoms on random sites of a 3x3x3 lattice, jittered; types uniformly at random."""
    grid = torch.stack(torch.meshgrid(torch.arange(3.0), torch.arange(3.0), torch.arange(3.0),
                                      indexing="ij"), dim=-1).reshape(-1, 3)
    sites = grid[torch.randperm(grid.size(0))[:n_atoms]]
    pos = sites * spacing + jitter * torch.randn(n_atoms, 3)
    pos = pos - pos.mean(dim=0, keepdim=True)
    z = torch.randint(0, N_TYPES, (n_atoms,))
    return {"z": z, "pos": pos}


def lj_energy(z, pos, batch, num_molecules):
    """Sum over pairs i < j of the same molecule of 4 eps_ij ((s/r)^12 - (s/r)^6)."""
    i, j = torch.triu_indices(pos.size(0), pos.size(0), offset=1)
    same = batch[i] == batch[j]
    i, j = i[same], j[same]
    sigma = 0.5 * (LJ_SIGMA[z[i]] + LJ_SIGMA[z[j]])
    eps = torch.sqrt(LJ_EPSILON[z[i]] * LJ_EPSILON[z[j]])
    r = (pos[i] - pos[j]).norm(dim=-1)
    s6 = (sigma / r) ** 6
    pair = 4 * eps * (s6 * s6 - s6)
    return torch.zeros(num_molecules, dtype=pos.dtype).index_add(0, batch[i], pair)


def lj_forces_analytic(z, pos, batch):
    """F_i = sum_j 24 eps (2 (s/r)^12 - (s/r)^6) / r^2 (x_i - x_j), over j in i's molecule."""
    diff = pos[:, None, :] - pos[None, :, :]
    r2 = (diff ** 2).sum(-1)
    same = (batch[:, None] == batch[None, :]) & ~torch.eye(pos.size(0), dtype=torch.bool)
    sigma = 0.5 * (LJ_SIGMA[z][:, None] + LJ_SIGMA[z][None, :])
    eps = torch.sqrt(LJ_EPSILON[z][:, None] * LJ_EPSILON[z][None, :])
    s6 = (sigma ** 2 / r2.masked_fill(~same, 1.0)) ** 3
    coeff = 24 * eps * (2 * s6 * s6 - s6) / r2.masked_fill(~same, 1.0)
    coeff = torch.where(same, coeff, torch.zeros_like(coeff))
    return (coeff[..., None] * diff).sum(1)


def collate(molecules):
    """Concatenate molecules into one disconnected graph with a batch vector."""
    counts = torch.tensor([m["z"].numel() for m in molecules])
    z = torch.cat([m["z"] for m in molecules])
    pos = torch.cat([m["pos"] for m in molecules])
    batch = torch.repeat_interleave(torch.arange(len(molecules)), counts)
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, dim=0)])
    out = {"z": z, "pos": pos, "batch": batch, "ptr": ptr, "counts": counts,
           "num_molecules": len(molecules)}
    if "energy" in molecules[0]:
        out["energy"] = torch.stack([m["energy"] for m in molecules])
        out["forces"] = torch.cat([m["forces"] for m in molecules])
    return out


def label(molecules):
    """Energies and forces by autograd through the LJ potential, one molecule at a time."""
    for m in molecules:
        pos = m["pos"].clone().requires_grad_(True)
        zero = torch.zeros(m["z"].numel(), dtype=torch.long)
        energy = lj_energy(m["z"], pos, zero, 1)[0]
        (grad,) = torch.autograd.grad(energy, pos)
        m["energy"], m["forces"] = energy.detach(), -grad
    return molecules


sizes = torch.randint(3, 7, (24,)).tolist()
dataset = label([random_molecule(n) for n in sizes])
train_set, val_set = dataset[:16], dataset[16:]
train_batch, val_batch = collate(train_set), collate(val_set)

# the autograd forces equal the analytic ones; their per-molecule sum is zero
analytic = lj_forces_analytic(train_batch["z"], train_batch["pos"], train_batch["batch"])
lj_force_error = (analytic - train_batch["forces"]).abs().max().item()
net_force = torch.zeros(16, 3).index_add_(0, train_batch["batch"], train_batch["forces"])
lj_net_force = net_force.abs().max().item()
batched_energy = lj_energy(train_batch["z"], train_batch["pos"], train_batch["batch"], 16)
lj_batched_error = (batched_energy - train_batch["energy"]).abs().max().item()
fixed_results["lj_energy"] = train_batch["energy"]  # (recorded)
fixed_results["lj_forces"] = train_batch["forces"]  # (recorded)

# ------------------------------------------------------------------------- edges and scatter


def full_edges(counts, ptr, method="meshgrid"):
    """All ordered pairs i != j inside each molecule, offset by the molecule's first atom."""
    rows, cols = [], []
    for n, start in zip(counts.tolist(), ptr[:-1].tolist()):
        idx = torch.arange(n)
        if method == "meshgrid":
            r, c = torch.meshgrid(idx, idx, indexing="ij")
            keep = r != c
            r, c = r[keep], c[keep]
        else:
            pairs = torch.combinations(idx, r=2)
            r = torch.cat([pairs[:, 0], pairs[:, 1]])
            c = torch.cat([pairs[:, 1], pairs[:, 0]])
        rows.append(r + start)
        cols.append(c + start)
    return torch.stack([torch.cat(rows), torch.cat(cols)])


def unsorted_segment_sum(data, segment_ids, num_segments):
    result = data.new_zeros((num_segments, data.size(1)))
    index = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    return result.scatter_add_(0, index, data)


def unsorted_segment_mean(data, segment_ids, num_segments):
    index = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result = data.new_zeros((num_segments, data.size(1))).scatter_add_(0, index, data)
    count = data.new_zeros((num_segments, data.size(1))).scatter_add_(0, index,
                                                                      torch.ones_like(data))
    return result / count.clamp(min=1)


def segment_sum_index_add(data, segment_ids, num_segments):
    return torch.zeros(num_segments, *data.shape[1:], dtype=data.dtype).index_add(0, segment_ids,
                                                                                 data)


def segment_mean_scatter_reduce(data, segment_ids, num_segments):
    index = segment_ids.unsqueeze(-1).expand_as(data)
    return data.new_zeros(num_segments, data.size(1)).scatter_reduce(
        0, index, data, reduce="mean", include_self=False)


edges_mesh = full_edges(train_batch["counts"], train_batch["ptr"])
edges_comb = full_edges(train_batch["counts"], train_batch["ptr"], method="combinations")
n_train_atoms = train_batch["z"].numel()
edge_sets_agree = (
    sorted(zip(*edges_mesh.tolist())) == sorted(zip(*edges_comb.tolist()))
    and edges_mesh.size(1) == int((train_batch["counts"] * (train_batch["counts"] - 1)).sum()))

data = torch.randn(edges_mesh.size(1), 4)
segment_results = {
    "scatter_add": unsorted_segment_sum(data, edges_mesh[0], n_train_atoms),
    "index_add": segment_sum_index_add(data, edges_mesh[0], n_train_atoms),
    "mean": unsorted_segment_mean(data, edges_mesh[0], n_train_atoms),
    "scatter_reduce_mean": segment_mean_scatter_reduce(data, edges_mesh[0], n_train_atoms),
}
degree = torch.bincount(edges_mesh[0], minlength=n_train_atoms)
segment_results["mean_bincount"] = segment_results["index_add"] / degree.unsqueeze(-1)
fixed_results["segment"] = {k: v.clone() for k, v in segment_results.items()}  # (recorded)

# ------------------------------------------------------------------------------------ EGNN


class E_GCL(nn.Module):
    """One E(n)-equivariant graph convolution: invariant messages, equivariant position update."""

    def __init__(self, in_nf, out_nf, hidden_nf, act_fn=None, residual=True, attention=False,
                 normalize=False, coords_agg="mean", tanh=False, coords_range=1.0):
        super().__init__()
        act_fn = act_fn if act_fn is not None else nn.SiLU()
        self.residual, self.attention, self.normalize = residual, attention, normalize
        self.coords_agg, self.tanh, self.coords_range = coords_agg, tanh, coords_range
        self.epsilon = 1e-8
        self.edge_mlp = nn.Sequential(nn.Linear(2 * in_nf + 1, hidden_nf), act_fn,
                                      nn.Linear(hidden_nf, hidden_nf), act_fn)
        self.node_mlp = nn.Sequential(nn.Linear(hidden_nf + in_nf, hidden_nf), act_fn,
                                      nn.Linear(hidden_nf, out_nf))
        last = nn.Linear(hidden_nf, 1, bias=False)
        torch.nn.init.xavier_uniform_(last.weight, gain=0.001)
        coord_layers = [nn.Linear(hidden_nf, hidden_nf), act_fn, last]
        if tanh:
            coord_layers.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*coord_layers)
        if attention:
            self.att_mlp = nn.Sequential(nn.Linear(hidden_nf, 1), nn.Sigmoid())

    def edge_model(self, source, target, radial):
        out = self.edge_mlp(torch.cat([source, target, radial], dim=1))
        if self.attention:
            out = out * self.att_mlp(out)
        return out

    def node_model(self, h, edge_index, edge_feat):
        row, _ = edge_index
        agg = unsorted_segment_sum(edge_feat, row, num_segments=h.size(0))
        out = self.node_mlp(torch.cat([h, agg], dim=1))
        return h + out if self.residual else out

    def coord_model(self, coord, edge_index, coord_diff, edge_feat):
        row, _ = edge_index
        phi = self.coord_mlp(edge_feat)
        if self.tanh:
            phi = phi * self.coords_range
        trans = coord_diff * phi
        if self.coords_agg == "sum":
            agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
        else:
            agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
        return coord + agg

    def coord2radial(self, edge_index, coord):
        row, col = edge_index
        coord_diff = coord[row] - coord[col]
        radial = torch.sum(coord_diff ** 2, 1).unsqueeze(1)
        if self.normalize:
            norm = torch.sqrt(radial).detach() + self.epsilon
            coord_diff = coord_diff / norm
        return radial, coord_diff

    def forward(self, h, edge_index, coord):
        row, col = edge_index
        radial, coord_diff = self.coord2radial(edge_index, coord)
        edge_feat = self.edge_model(h[row], h[col], radial)
        coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
        h = self.node_model(h, edge_index, edge_feat)
        return h, coord


class EGNN(nn.Module):
    def __init__(self, in_node_nf, hidden_nf, out_node_nf, n_layers=2, **layer_kwargs):
        super().__init__()
        self.embedding_in = nn.Linear(in_node_nf, hidden_nf)
        self.embedding_out = nn.Linear(hidden_nf, out_node_nf)
        self.layers = nn.ModuleList(
            [E_GCL(hidden_nf, hidden_nf, hidden_nf, **layer_kwargs) for _ in range(n_layers)])

    def forward(self, h, x, edge_index):
        h = self.embedding_in(h)
        for layer in self.layers:
            h, x = layer(h, edge_index, x)
        return self.embedding_out(h), x


def rotation_and_translation(dtype=torch.float64, proper=True):
    q, r = torch.linalg.qr(torch.randn(3, 3, dtype=dtype))
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # a unique (Haar) orthogonal matrix
    if proper and torch.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q, torch.randn(1, 3, dtype=dtype)


# equivariance of every EGNN variant, in float64 (recorded: the outputs and the errors' scale)
one_hot = F.one_hot(train_batch["z"], N_TYPES).to(torch.float64)
x64 = 1.5 * torch.randn(n_train_atoms, 3, dtype=torch.float64)
rot, shift = rotation_and_translation()
reflection, shift2 = rotation_and_translation(proper=False)
if torch.linalg.det(reflection) > 0:  # an improper orthogonal matrix: a rotoreflection
    reflection = reflection @ torch.diag(torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64))
orthogonality_error = (rot.T @ rot - torch.eye(3, dtype=torch.float64)).abs().max().item()
rotation_det = torch.linalg.det(rot).item()
reflection_det = torch.linalg.det(reflection).item()
variants = {
    "plain": {},
    "attention_normalize": {"attention": True, "normalize": True},
    "tanh_sum": {"tanh": True, "coords_range": 3.0, "coords_agg": "sum"},
}
equivariance = {}
egnn_outputs = {}
for name, kwargs in variants.items():
    net = EGNN(N_TYPES, 16, 4, n_layers=2, **kwargs).double()
    for p in net.parameters():  # larger coordinate weights than the init, to move x
        if p.dim() == 2 and p.size(0) == 1:
            nn.init.normal_(p, std=0.3)
    with torch.no_grad():
        h_out, x_out = net(one_hot, x64, edges_mesh)
        h_rot, x_rot = net(one_hot, x64 @ rot.T + shift, edges_mesh)
        h_ref, x_ref = net(one_hot, x64 @ reflection.T + shift2, edges_mesh)
    equivariance[name] = {
        "h_rotation": (h_rot - h_out).abs().max().item(),
        "x_rotation": (x_rot - (x_out @ rot.T + shift)).abs().max().item(),
        "h_reflection": (h_ref - h_out).abs().max().item(),
        "x_reflection": (x_ref - (x_out @ reflection.T + shift2)).abs().max().item(),
        "moved": (x_out - x64).abs().max().item(),
    }
    egnn_outputs[name] = (h_out, x_out)
fixed_results["egnn"] = {name: {"h": h, "x": x} for name, (h, x) in egnn_outputs.items()}

# a non-equivariant baseline fails the same check (the MLP sees raw coordinates)
mlp_baseline = nn.Sequential(nn.Linear(3 + N_TYPES, 16), nn.SiLU(), nn.Linear(16, 3)).double()
with torch.no_grad():
    base = mlp_baseline(torch.cat([x64, one_hot], 1))
    base_rot = mlp_baseline(torch.cat([x64 @ rot.T + shift, one_hot], 1))
baseline_error = (base_rot - (base @ rot.T + shift)).abs().max().item()

# float32 EGNN with fixed weights: outputs and gradients (recorded)
torch.manual_seed(1)
egnn = EGNN(N_TYPES, 16, 1, n_layers=2, attention=True)
h0 = F.one_hot(train_batch["z"], N_TYPES).float()
x0 = train_batch["pos"].clone().requires_grad_(True)
h_fixed, x_fixed = egnn(h0, x0, edges_mesh)
energy_fixed = segment_sum_index_add(h_fixed, train_batch["batch"], 16).squeeze(-1)
egnn_objective = energy_fixed.pow(2).mean() + (x_fixed - x0).pow(2).sum()
egnn_objective.backward()
fixed_results["egnn_float32"] = {
    "h": h_fixed.detach(), "x": x_fixed.detach(), "energy": energy_fixed.detach(),
    "pos_grad": x0.grad.clone(),
    "grads": {n: p.grad.clone() for n, p in egnn.named_parameters()},
}

# ------------------------------------------------------------ EGNN: learn one relaxation step

STEP = 0.01


def relaxation_target(batch):
    """Positions after one steepest-descent step on the LJ energy."""
    return batch["pos"] + STEP * batch["forces"]


egnn_target = relaxation_target(train_batch)
egnn_val_target = relaxation_target(val_batch)
val_edges = full_edges(val_batch["counts"], val_batch["ptr"])
val_h = F.one_hot(val_batch["z"], N_TYPES).float()
identity_loss = F.mse_loss(train_batch["pos"], egnn_target).item()
identity_val_loss = F.mse_loss(val_batch["pos"], egnn_val_target).item()

torch.manual_seed(2)
egnn_model = EGNN(N_TYPES, 16, 1, n_layers=2, coords_agg="sum")
egnn_optimizer = torch.optim.Adam(egnn_model.parameters(), lr=2e-2)
egnn_losses = []
for _ in range(100):
    egnn_optimizer.zero_grad()
    _, x_pred = egnn_model(h0, train_batch["pos"], edges_mesh)
    loss = F.mse_loss(x_pred, egnn_target) / identity_loss
    loss.backward()
    egnn_optimizer.step()
    egnn_losses.append(loss.item())
with torch.no_grad():
    _, x_val = egnn_model(val_h, val_batch["pos"], val_edges)
    egnn_val_loss = (F.mse_loss(x_val, egnn_val_target) / identity_val_loss).item()
    # the learnt update is equivariant too
    _, x_val_rot = egnn_model(val_h, val_batch["pos"] @ rot.T.float() + shift.float(), val_edges)
    egnn_trained_equivariance = (x_val_rot - (x_val @ rot.T.float() + shift.float())).abs().max()
    egnn_trained_equivariance = egnn_trained_equivariance.item()

# ---------------------------------------------------------------------------------- SchNet


class GaussianRBF(nn.Module):
    def __init__(self, n_rbf, cutoff, start=0.0):
        super().__init__()
        offsets = torch.linspace(start, cutoff, n_rbf)
        widths = torch.full_like(offsets, (offsets[1] - offsets[0]).item())
        self.register_buffer("offsets", offsets)
        self.register_buffer("widths", widths)

    def forward(self, d):
        coeff = -0.5 / self.widths ** 2
        diff = d[..., None] - self.offsets
        return torch.exp(coeff * diff ** 2)


class CosineCutoff(nn.Module):
    def __init__(self, cutoff):
        super().__init__()
        self.cutoff = cutoff

    def forward(self, d):
        c = 0.5 * (torch.cos(d * math.pi / self.cutoff) + 1.0)
        return c * (d < self.cutoff).to(d.dtype)


class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


def shifted_softplus(x):
    return F.softplus(x) - math.log(2.0)


class CFConv(nn.Module):
    """x_i' = sum_j x_j * W(r_ij), the filter an MLP of the radial basis times the cutoff."""

    def __init__(self, n_atom_basis, n_filters, n_rbf, cutoff):
        super().__init__()
        self.filter_network = nn.Sequential(nn.Linear(n_rbf, n_filters), ShiftedSoftplus(),
                                            nn.Linear(n_filters, n_filters))
        self.in2f = nn.Linear(n_atom_basis, n_filters, bias=False)
        self.f2out = nn.Linear(n_filters, n_atom_basis)
        self.cutoff = CosineCutoff(cutoff)

    def filters(self, rbf, d):
        return self.filter_network(rbf) * self.cutoff(d).unsqueeze(-1)

    def forward(self, h, edge_index, d, rbf):
        row, col = edge_index
        x = self.in2f(h)
        messages = x[col] * self.filters(rbf, d)
        agg = torch.zeros_like(x).index_add_(0, row, messages)
        return self.f2out(agg)

    def forward_dense(self, h, dist, rbf, mask):
        """The same on an (N, N) distance matrix, the pairs outside ``mask`` zeroed."""
        x = self.in2f(h)
        w = self.filters(rbf, dist) * mask.unsqueeze(-1).to(h.dtype)
        return self.f2out(torch.einsum("ijf,jf->if", w, x))


class Interaction(nn.Module):
    def __init__(self, n_atom_basis, n_filters, n_rbf, cutoff):
        super().__init__()
        self.cfconv = CFConv(n_atom_basis, n_filters, n_rbf, cutoff)
        self.dense = nn.Linear(n_atom_basis, n_atom_basis)

    def forward(self, h, edge_index, d, rbf):
        return self.dense(shifted_softplus(self.cfconv(h, edge_index, d, rbf)))

    def forward_dense(self, h, dist, rbf, mask):
        return self.dense(shifted_softplus(self.cfconv.forward_dense(h, dist, rbf, mask)))


def radius_graph(pos, batch, cutoff):
    """Directed edges between distinct atoms of one molecule closer than the cutoff."""
    with torch.no_grad():
        dist = torch.cdist(pos, pos)
        mask = (batch[:, None] == batch[None, :]) & (dist < cutoff)
        mask.fill_diagonal_(False)
        row, col = mask.nonzero(as_tuple=True)
    return torch.stack([row, col])


class SchNet(nn.Module):
    def __init__(self, n_types=N_TYPES, n_atom_basis=16, n_filters=16, n_interactions=2,
                 n_rbf=12, cutoff=3.0, mean=0.0, stddev=1.0, readout="index_add"):
        super().__init__()
        self.cutoff, self.readout = cutoff, readout
        self.embedding = nn.Embedding(n_types, n_atom_basis)
        self.rbf = GaussianRBF(n_rbf, cutoff)
        self.interactions = nn.ModuleList(
            [Interaction(n_atom_basis, n_filters, n_rbf, cutoff) for _ in range(n_interactions)])
        self.atomwise = nn.Sequential(nn.Linear(n_atom_basis, n_atom_basis // 2),
                                      ShiftedSoftplus(), nn.Linear(n_atom_basis // 2, 1))
        self.atomref = nn.Embedding(n_types, 1)
        self.atomref.weight.data.zero_()
        self.register_buffer("mean", torch.tensor(mean))
        self.register_buffer("stddev", torch.tensor(stddev))

    def atom_energies(self, z, pos, batch):
        edge_index = radius_graph(pos, batch, self.cutoff)
        row, col = edge_index
        d = (pos[row] - pos[col]).norm(dim=-1)
        rbf = self.rbf(d)
        h = self.embedding(z)
        for interaction in self.interactions:
            h = h + interaction(h, edge_index, d, rbf)
        y = self.atomwise(h).squeeze(-1)
        return y * self.stddev + self.mean + self.atomref(z).squeeze(-1)

    def pool(self, y, batch, counts):
        num = counts.numel()
        if self.readout == "index_add":
            return torch.zeros(num, dtype=y.dtype).index_add(0, batch, y)
        if self.readout == "scatter_reduce":
            return y.new_zeros(num).scatter_reduce(0, batch, y, reduce="sum", include_self=False)
        return torch.segment_reduce(y, "sum", lengths=counts)

    def forward(self, z, pos, batch, counts):
        return self.pool(self.atom_energies(z, pos, batch), batch, counts)

    def forward_dense(self, z, pos, batch):
        """Per-atom energies from the (N, N) ``cdist`` matrix instead of an edge list."""
        dist = torch.cdist(pos, pos)
        mask = (batch[:, None] == batch[None, :]) & (dist < self.cutoff)
        mask = mask & ~torch.eye(pos.size(0), dtype=torch.bool)
        rbf = self.rbf(dist)
        h = self.embedding(z)
        for interaction in self.interactions:
            h = h + interaction.forward_dense(h, dist, rbf, mask)
        y = self.atomwise(h).squeeze(-1)
        return y * self.stddev + self.mean + self.atomref(z).squeeze(-1)


def energy_and_forces(model, z, pos, batch, counts, create_graph=True):
    pos = pos.clone().requires_grad_(True)
    energy = model(z, pos, batch, counts)
    (grad,) = torch.autograd.grad(energy.sum(), pos, create_graph=create_graph)
    return energy, -grad


def energy_force_loss(model, batch, rho=0.9):
    energy, forces = energy_and_forces(model, batch["z"], batch["pos"], batch["batch"],
                                       batch["counts"])
    per_atom = (energy - batch["energy"]) / batch["counts"]
    loss_e = per_atom.pow(2).mean()
    loss_f = F.mse_loss(forces, batch["forces"])
    return (1 - rho) * loss_e + rho * loss_f, loss_e, loss_f, energy, forces


# the radial basis, cutoff and shifted softplus on a grid (recorded)
rbf_layer = GaussianRBF(8, 3.0)
grid_d = torch.linspace(0.0, 3.5, 15)
fixed_results["rbf"] = rbf_layer(grid_d)
fixed_results["cosine_cutoff"] = CosineCutoff(3.0)(grid_d)
fixed_results["ssp"] = shifted_softplus(torch.linspace(-4, 4, 9))
ssp_at_zero = ShiftedSoftplus()(torch.zeros(1)).item()

# the radius graph: symmetric, in-molecule, every pair under the cutoff
edge_index = radius_graph(train_batch["pos"], train_batch["batch"], 3.0)
row, col = edge_index
pair_d = (train_batch["pos"][row] - train_batch["pos"][col]).norm(dim=-1)
radius_graph_ok = (
    bool((train_batch["batch"][row] == train_batch["batch"][col]).all())
    and bool((pair_d < 3.0).all())
    and sorted(zip(row.tolist(), col.tolist())) == sorted(zip(col.tolist(), row.tolist())))
radius_edges = edge_index.size(1)

# per-atom mean energy and std for the output scaling, atom references by least squares
per_atom_energy = train_batch["energy"] / train_batch["counts"]
energy_mean, energy_std = per_atom_energy.mean().item(), per_atom_energy.std().item()
composition = torch.zeros(16, N_TYPES).index_put_(
    (train_batch["batch"], train_batch["z"]), torch.ones(n_train_atoms), accumulate=True)

# fixed weights: energies, forces and the double-backward gradients (recorded)
torch.manual_seed(3)
schnet = SchNet(mean=energy_mean, stddev=energy_std)
loss, loss_e, loss_f, energy, forces = energy_force_loss(schnet, train_batch)
loss.backward()
fixed_results["schnet"] = {
    "energy": energy.detach(), "forces": forces.detach(), "loss": loss.detach(),
    "loss_e": loss_e.detach(), "loss_f": loss_f.detach(),
    "grads": {n: p.grad.clone() for n, p in schnet.named_parameters() if p.grad is not None},
}
schnet.zero_grad()

# the three readouts agree; the dense cdist model gives the same energies and forces
readouts = {}
for kind in ("index_add", "scatter_reduce", "segment_reduce"):
    schnet.readout = kind
    e_kind, f_kind = energy_and_forces(schnet, train_batch["z"], train_batch["pos"],
                                       train_batch["batch"], train_batch["counts"])
    readouts[kind] = (e_kind.detach(), f_kind.detach())
schnet.readout = "index_add"
dense_pos = train_batch["pos"].clone().requires_grad_(True)
dense_atoms = schnet.forward_dense(train_batch["z"], dense_pos, train_batch["batch"])
dense_energy = torch.zeros(16).index_add(0, train_batch["batch"], dense_atoms)
(dense_grad,) = torch.autograd.grad(dense_energy.sum(), dense_pos)
dense_energy_error = (dense_energy - energy).abs().max().item()
dense_force_error = (-dense_grad - forces).abs().max().item()
fixed_results["schnet_dense"] = {"energy": dense_energy.detach(), "forces": -dense_grad}

# invariance/equivariance: E(QX + t) = E(X), F(QX + t) = Q F(X); forces sum to zero
rot32, shift32 = rot.float(), shift.float()
e_rot, f_rot = energy_and_forces(schnet, train_batch["z"], train_batch["pos"] @ rot32.T + shift32,
                                 train_batch["batch"], train_batch["counts"], create_graph=False)
schnet_energy_invariance = (e_rot - energy).abs().max().item()
schnet_force_equivariance = (f_rot - forces @ rot32.T).abs().max().item()
schnet_net_force = segment_sum_index_add(forces, train_batch["batch"], 16).abs().max().item()

# gradcheck / gradgradcheck of the energy in float64 on one small molecule
torch.manual_seed(4)
tiny = SchNet(n_atom_basis=4, n_filters=4, n_interactions=1, n_rbf=4).double()
mol = dataset[0]
mol_z, mol_batch = mol["z"], torch.zeros(mol["z"].numel(), dtype=torch.long)
mol_counts = torch.tensor([mol["z"].numel()])
mol_pos = mol["pos"].double().requires_grad_(True)
gradcheck_energy = torch.autograd.gradcheck(
    lambda p: tiny(mol_z, p, mol_batch, mol_counts), (mol_pos,))
gradgradcheck_energy = torch.autograd.gradgradcheck(
    lambda p: tiny(mol_z, p, mol_batch, mol_counts), (mol_pos,))
gradcheck_rbf = torch.autograd.gradcheck(
    lambda d: tiny.interactions[0].cfconv.filters(tiny.rbf(d), d),
    (torch.linspace(0.5, 3.2, 5, dtype=torch.float64).requires_grad_(True),))

# ----------------------------------------------------------------- SchNet: energy + forces

torch.manual_seed(5)
model = SchNet(mean=energy_mean, stddev=energy_std)
# atom reference energies: the least-squares per-type energy of the composition
solution = torch.linalg.lstsq(composition, train_batch["energy"].unsqueeze(-1)).solution
model.atomref.weight.data.copy_(solution)
model.mean.fill_(0.0)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=5)
losses, energy_losses, force_losses = [], [], []
for _ in range(40):
    optimizer.zero_grad()
    loss, loss_e, loss_f, _, _ = energy_force_loss(model, train_batch)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
    optimizer.step()
    scheduler.step(loss.item())
    losses.append(loss.item())
    energy_losses.append(loss_e.item())
    force_losses.append(loss_f.item())
final_lr = optimizer.param_groups[0]["lr"]

val_energy, val_forces = energy_and_forces(model, val_batch["z"], val_batch["pos"],
                                           val_batch["batch"], val_batch["counts"],
                                           create_graph=False)
val_force_mse = F.mse_loss(val_forces, val_batch["forces"]).item()
val_force_baseline = val_batch["forces"].pow(2).mean().item()
trained_state = copy.deepcopy(model.state_dict())

print(f"LJ: force error {lj_force_error:.2e}, net force {lj_net_force:.2e}")
print("EGNN equivariance:", {k: max(v["h_rotation"], v["x_rotation"])
                             for k, v in equivariance.items()})
print(f"EGNN relaxation loss {egnn_losses[0]:.3f} -> {egnn_losses[-1]:.3f}, "
      f"val {egnn_val_loss:.3f}")
print(f"SchNet loss {losses[0]:.3f} -> {losses[-1]:.3f}; val force mse {val_force_mse:.3f} "
      f"(baseline {val_force_baseline:.3f})")
