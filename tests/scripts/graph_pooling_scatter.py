"""Graph classification with message passing and global pooling written without PyG, the way
PyG-free GNN code (GCN/GAT tutorials, "GNNs from scratch" notebooks) writes torch code (not a
copy of any of them):

- a mini-batch of small graphs as one disconnected graph: ``torch.cat`` of node features,
  edge indices shifted by ``torch.cumsum`` of the node counts, the ``batch`` vector from
  ``torch.repeat_interleave``;
- global mean/max/sum pooling through ``Tensor.scatter_reduce(0, index, src,
  reduce="mean"/"amax"/"sum", include_self=False)`` (an index ``expand``-ed over features,
  a graph with no nodes), ``index_add_`` and ``scatter_add``, node counts from
  ``torch.bincount(batch, minlength=...)``;
- GCN degree normalisation ``D^-1/2 (A + I) D^-1/2``: self loops, degrees by ``bincount`` and by
  ``torch.sparse.sum(...).to_dense()``, ``pow(-0.5)`` with the infinities masked, propagation by
  ``torch.sparse_coo_tensor`` + ``torch.sparse.mm`` and by gather + ``index_add_``
  (gradients to learnable edge weights through the sparse values);
- GAT-style attention with a softmax over the edges grouped by destination: the per-node
  maximum by ``scatter_reduce(..., "amax", include_self=False)`` for stability, ``exp``, the
  denominator by ``index_add``, several heads;
- ``torch.unique(..., return_inverse=True)`` relabelling a sampled subgraph's nodes,
  ``torch.isin`` for the neighbourhood;
- ``torch.autograd.gradcheck`` of the scatter pools, the grouped softmax and the sparse
  propagation in float64; a GCN+GAT classifier trained with ``Adam`` on cycles, stars and
  wheels.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ----------------------------------------------------------------------------- graph data


def undirected(edges):
    edges = torch.tensor(edges, dtype=torch.long).t()
    return torch.cat([edges, edges.flip(0)], dim=1)


def make_graph(kind, n):
    ring = [(i, (i + 1) % n) for i in range(n)]
    if kind == "cycle":
        return undirected(ring)
    if kind == "star":
        return undirected([(0, i) for i in range(1, n)])
    # wheel: a ring over nodes 1..n-1 and a hub 0
    rim = [(1 + i, 1 + (i + 1) % (n - 1)) for i in range(n - 1)]
    return undirected(rim + [(0, i) for i in range(1, n)])


KINDS = ("cycle", "star", "wheel")


def make_dataset(n_graphs, generator):
    graphs = []
    for i in range(n_graphs):
        label = i % 3
        n = int(torch.randint(5, 10, (1,), generator=generator))
        perm = torch.randperm(n, generator=generator)  # shuffled node order
        edge_index = perm[make_graph(KINDS[label], n)]
        x = torch.cat([torch.ones(n, 1), 0.1 * torch.randn(n, 2, generator=generator)], dim=1)
        graphs.append((x, edge_index, label))
    return graphs


def collate(graphs):
    """One big disconnected graph: node features stacked, edges shifted by each graph's first
    node, and ``batch`` giving every node's graph."""
    xs, edges, labels = zip(*graphs)
    counts = torch.tensor([len(x) for x in xs])
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, dim=0)])
    edge_index = torch.cat([e + ptr[i] for i, e in enumerate(edges)], dim=1)
    batch = torch.repeat_interleave(torch.arange(len(graphs)), counts)
    return torch.cat(xs), edge_index, batch, torch.tensor(labels), ptr


# ------------------------------------------------------------------------- scatter helpers


def broadcast_index(index, src):
    return index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)


def global_mean_pool(x, batch, size):
    out = x.new_zeros(size, x.size(1))
    return out.scatter_reduce(0, broadcast_index(batch, x), x, reduce="mean", include_self=False)


def global_max_pool(x, batch, size):
    out = x.new_zeros(size, x.size(1))
    return out.scatter_reduce(0, broadcast_index(batch, x), x, reduce="amax", include_self=False)


def global_add_pool(x, batch, size):
    return torch.zeros(size, x.size(1), dtype=x.dtype).index_add_(0, batch, x)


def global_mean_pool_bincount(x, batch, size):
    counts = torch.bincount(batch, minlength=size).clamp(min=1).to(x.dtype)
    summed = torch.zeros(size, x.size(1), dtype=x.dtype).scatter_add(0, broadcast_index(batch, x),
                                                                     x)
    return summed / counts.unsqueeze(-1)


def scatter_softmax(src, index, num_nodes, detach_max=False):
    """Softmax of edge scores ``src`` (E, H) over the edges sharing a destination ``index``."""
    expanded = broadcast_index(index, src)
    shift = src.detach() if detach_max else src
    src_max = src.new_zeros((num_nodes,) + src.shape[1:]).scatter_reduce(
        0, expanded, shift, reduce="amax", include_self=False)
    out = (src - src_max[index]).exp()
    denom = torch.zeros_like(src_max).index_add(0, index, out)
    return out / (denom[index] + 1e-16)


def add_self_loops(edge_index, num_nodes):
    loop = torch.arange(num_nodes)
    return torch.cat([edge_index, torch.stack([loop, loop])], dim=1)


def gcn_norm(edge_index, num_nodes, edge_weight=None):
    """Self loops, then 1/sqrt(deg_i deg_j) per edge (deg counted at the destination)."""
    edge_index = add_self_loops(edge_index, num_nodes)
    row, col = edge_index
    if edge_weight is None:
        deg = torch.bincount(col, minlength=num_nodes).float()
        edge_weight = torch.ones(row.size(0))
    else:
        edge_weight = torch.cat([edge_weight, torch.ones(num_nodes)])
        deg = torch.zeros(num_nodes).index_add(0, col, edge_weight)
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt = deg_inv_sqrt.masked_fill(deg_inv_sqrt == float("inf"), 0)
    return edge_index, deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]


def propagate_sparse(edge_index, norm, h, num_nodes):
    """out_i = sum_j norm_ji h_j as a sparse (N, N) matrix times h."""
    row, col = edge_index
    adj = torch.sparse_coo_tensor(torch.stack([col, row]), norm, (num_nodes, num_nodes))
    return torch.sparse.mm(adj, h)


def propagate_index_add(edge_index, norm, h, num_nodes):
    row, col = edge_index
    messages = norm.unsqueeze(-1) * h[row]
    return torch.zeros(num_nodes, h.size(1), dtype=h.dtype).index_add_(0, col, messages)


# ----------------------------------------------------------------------------------- layers


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels, sparse=True):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.sparse = sparse

    def forward(self, x, edge_index, edge_weight=None):
        n = x.size(0)
        edge_index, norm = gcn_norm(edge_index, n, edge_weight)
        h = self.lin(x)
        propagate = propagate_sparse if self.sparse else propagate_index_add
        return propagate(edge_index, norm, h, n) + self.bias


class GATConv(nn.Module):
    def __init__(self, in_channels, out_channels, heads=2, negative_slope=0.2):
        super().__init__()
        self.heads, self.out_channels = heads, out_channels
        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.zeros(heads * out_channels))
        self.negative_slope = negative_slope
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x, edge_index, return_attention=False):
        n, H, C = x.size(0), self.heads, self.out_channels
        edge_index = add_self_loops(edge_index, n)
        src, dst = edge_index
        h = self.lin(x).view(n, H, C)
        alpha_src = (h * self.att_src).sum(-1)
        alpha_dst = (h * self.att_dst).sum(-1)
        scores = F.leaky_relu(alpha_src[src] + alpha_dst[dst], self.negative_slope)
        alpha = scatter_softmax(scores, dst, n)
        out = torch.zeros(n, H, C).index_add_(0, dst, alpha.unsqueeze(-1) * h[src])
        out = out.view(n, H * C) + self.bias
        return (out, alpha) if return_attention else out


class GraphClassifier(nn.Module):
    def __init__(self, in_channels=3, hidden=8, n_classes=3, sparse=True):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden, sparse=sparse)
        self.conv2 = GATConv(hidden, hidden // 2, heads=2)
        self.head = nn.Linear(3 * hidden, n_classes)

    def forward(self, x, edge_index, batch, num_graphs):
        h = F.relu(self.conv1(x, edge_index))
        h = F.elu(self.conv2(h, edge_index))
        pooled = torch.cat([global_mean_pool(h, batch, num_graphs),
                            global_max_pool(h, batch, num_graphs),
                            global_add_pool(h, batch, num_graphs) / 10], dim=1)
        return self.head(pooled)


# ------------------------------------------------------------- pooling on fixed data (recorded)

data_gen = torch.Generator().manual_seed(0)
train_graphs = make_dataset(24, data_gen)
test_graphs = make_dataset(12, data_gen)
x, edge_index, batch, labels, ptr = collate(train_graphs[:4])
num_nodes, num_graphs = x.size(0), 4
batch_info = {"counts": torch.bincount(batch).tolist(), "ptr": ptr.tolist(),
              "edges": edge_index.size(1), "nodes": num_nodes}
edges_within_graphs = bool((batch[edge_index[0]] == batch[edge_index[1]]).all())

torch.manual_seed(1)
feats = torch.randn(num_nodes, 3, dtype=torch.float64, requires_grad=True)
pools = {
    "mean": global_mean_pool(feats, batch, num_graphs),
    "max": global_max_pool(feats, batch, num_graphs),
    "sum": global_add_pool(feats, batch, num_graphs),
    "sum_scatter": feats.new_zeros(num_graphs, 3).scatter_reduce(
        0, broadcast_index(batch, feats), feats, reduce="sum", include_self=False),
    "mean_bincount": global_mean_pool_bincount(feats, batch, num_graphs),
}
fixed_results["pools"] = {k: v.detach() for k, v in pools.items()}
pool_loops = {
    "mean": torch.stack([feats[batch == g].mean(0) for g in range(num_graphs)]),
    "max": torch.stack([feats[batch == g].max(0).values for g in range(num_graphs)]),
    "sum": torch.stack([feats[batch == g].sum(0) for g in range(num_graphs)]),
}
pools_match_loops = all(torch.allclose(pools[k], pool_loops[k]) for k in pool_loops)
pool_weights = torch.linspace(-1, 1, num_graphs * 3, dtype=torch.float64).view(num_graphs, 3)
fixed_results["pool_grads"] = {
    k: torch.autograd.grad((v * pool_weights).sum(), feats)[0] for k, v in pools.items()}

# a graph with no nodes keeps the zero it started from (include_self=False has nothing to use)
empty_pool = {
    "mean": global_mean_pool(feats.detach(), batch, num_graphs + 1)[-1].tolist(),
    "max": global_max_pool(feats.detach(), batch, num_graphs + 1)[-1].tolist(),
    "counts": torch.bincount(batch, minlength=num_graphs + 1).tolist(),
}
# include_self=True counts the zero start in the mean (the PyG-free pitfall)
fixed_results["mean_include_self"] = feats.detach().new_zeros(num_graphs, 3).scatter_reduce(
    0, broadcast_index(batch, feats), feats.detach(), reduce="mean", include_self=True)

small = (feats[:9].detach().clone().requires_grad_(), batch[:9])
gradcheck_pools = {
    name: torch.autograd.gradcheck(lambda f, pool=pool: pool(f, small[1], 2), (small[0],))
    for name, pool in (("mean", global_mean_pool), ("max", global_max_pool),
                       ("sum", global_add_pool), ("mean_bincount", global_mean_pool_bincount))}


# ---------------------------------------------------- degree normalisation (recorded)

loops_index, norm = gcn_norm(edge_index, num_nodes)
fixed_results["gcn_norm"] = norm
adjacency = torch.sparse_coo_tensor(loops_index, torch.ones(loops_index.size(1)),
                                    (num_nodes, num_nodes))
sparse_degree = torch.sparse.sum(adjacency, dim=1).to_dense()
degree_agrees = torch.equal(sparse_degree, torch.bincount(loops_index[1]).float())
dense_adj = adjacency.to_dense()
d = dense_adj.sum(1).pow(-0.5)
dense_norm = d[:, None] * dense_adj * d[None, :]
h_fixed = torch.randn(num_nodes, 4)
fixed_results["propagate_sparse"] = propagate_sparse(loops_index, norm, h_fixed, num_nodes)
fixed_results["propagate_index_add"] = propagate_index_add(loops_index, norm, h_fixed, num_nodes)
propagate_dense = dense_norm.t() @ h_fixed
# an isolated node: degree zero before self loops would give inf; masked to zero
isolated = torch.tensor([[0, 1], [1, 0]])
_, isolated_norm = gcn_norm(isolated, 3, edge_weight=torch.zeros(2))
isolated_finite = bool(torch.isfinite(isolated_norm).all())

# learnable edge weights: gradients through the sparse values and through index_add agree
edge_w = torch.rand(edge_index.size(1), generator=torch.Generator().manual_seed(3))
grads_edge = {}
for name, propagate in (("sparse", propagate_sparse), ("index_add", propagate_index_add)):
    w = edge_w.clone().requires_grad_()
    h = h_fixed.clone().requires_grad_()
    e_index, e_norm = gcn_norm(edge_index, num_nodes, w)
    out = propagate(e_index, e_norm, h, num_nodes)
    (out * torch.linspace(0, 1, 4)).pow(2).sum().backward()
    grads_edge[name] = (w.grad, h.grad)
fixed_results["edge_weight_grad"] = grads_edge["sparse"][0]
fixed_results["edge_feature_grad"] = grads_edge["sparse"][1]

x64 = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
ring = undirected([(i, (i + 1) % 6) for i in range(6)])
ring_loops, ring_norm = gcn_norm(ring, 6)
ring_w = ring_norm.double().requires_grad_()
gradcheck_sparse = torch.autograd.gradcheck(
    lambda h, w: propagate_sparse(ring_loops, w, h, 6), (x64, ring_w))


# ------------------------------------------------------ grouped softmax (recorded)

torch.manual_seed(2)
scores = torch.randn(loops_index.size(1), 2, dtype=torch.float64, requires_grad=True)
dst = loops_index[1]
alpha = scatter_softmax(scores, dst, num_nodes)
alpha_detached = scatter_softmax(scores, dst, num_nodes, detach_max=True)
fixed_results["edge_softmax"] = alpha.detach()
alpha_sums = torch.zeros(num_nodes, 2, dtype=torch.float64).index_add(0, dst, alpha.detach())
loop_softmax = torch.empty_like(alpha)
for i in range(num_nodes):
    mask = dst == i
    loop_softmax[mask] = torch.softmax(scores[mask], dim=0)
softmax_matches_loop = torch.allclose(alpha, loop_softmax)
target = torch.linspace(0, 1, alpha.numel(), dtype=torch.float64).view_as(alpha)
fixed_results["edge_softmax_grad"] = torch.autograd.grad((alpha * target).sum(), scores)[0]
detach_grad = torch.autograd.grad((alpha_detached * target).sum(), scores)[0]
loop_grad = torch.autograd.grad((loop_softmax * target).sum(), scores)[0]
# huge scores: the max shift keeps exp finite
big = scatter_softmax(scores.detach() * 1000, dst, num_nodes)
big_finite = bool(torch.isfinite(big).all())
gradcheck_softmax = torch.autograd.gradcheck(
    lambda s: scatter_softmax(s, ring_loops[1], 6), (torch.randn(ring_loops.size(1), 2,
                                                                 dtype=torch.float64,
                                                                 requires_grad=True),))


# ------------------------------------------------------- subgraph relabelling (recorded)

seeds = torch.tensor([ptr[1], ptr[2] + 1])
in_hood = torch.isin(edge_index[1], seeds)
sub_edges = edge_index[:, in_hood]
nodes, relabelled = torch.unique(sub_edges, return_inverse=True)
_, flat_inverse, counts = torch.unique(sub_edges.flatten(), return_inverse=True,
                                       return_counts=True)
relabel_info = {"nodes": nodes.tolist(), "relabelled": relabelled.tolist(),
                "counts": counts.tolist(), "shape": tuple(relabelled.shape),
                "roundtrip": torch.equal(nodes[relabelled], sub_edges),
                "flat_agrees": torch.equal(flat_inverse.view(2, -1), relabelled)}
sub_x = x[nodes]
sub_batch = batch[nodes]
_, sub_graph_ids = torch.unique(sub_batch, return_inverse=True)
relabel_info["sub_graph_ids"] = sub_graph_ids.tolist()


# -------------------------------------------------------------- model on fixed weights

torch.manual_seed(0)
model = GraphClassifier()
dense_model = GraphClassifier(sparse=False)
dense_model.load_state_dict(model.state_dict())
logits = model(x, edge_index, batch, num_graphs)
loss = F.cross_entropy(logits, labels)
loss.backward()
fixed_results["logits"] = logits.detach()
fixed_results["loss"] = loss.detach()
fixed_results["grads"] = {name: p.grad.clone() for name, p in model.named_parameters()}
dense_logits = dense_model(x, edge_index, batch, num_graphs)
F.cross_entropy(dense_logits, labels).backward()
sparse_dense_difference = max(
    float((p.grad - q.grad).abs().max())
    for p, q in zip(model.parameters(), dense_model.parameters()))
_, attention = model.conv2(F.relu(model.conv1(x, edge_index)), edge_index,
                           return_attention=True)
attention_sums = torch.zeros(num_nodes, 2).index_add_(
    0, add_self_loops(edge_index, num_nodes)[1], attention.detach())
model.zero_grad()


# ------------------------------------------------------------------------------- training

x_train, ei_train, batch_train, y_train, _ = collate(train_graphs)
x_test, ei_test, batch_test, y_test, _ = collate(test_graphs)
optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
losses = []
for _step in range(40):
    optimizer.zero_grad()
    out = model(x_train, ei_train, batch_train, len(train_graphs))
    loss = F.cross_entropy(out, y_train)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    train_accuracy = float((model(x_train, ei_train, batch_train, len(train_graphs))
                            .argmax(1) == y_train).float().mean())
    test_pred = model(x_test, ei_test, batch_test, len(test_graphs)).argmax(1)
test_accuracy = float((test_pred == y_test).float().mean())
chance_loss = math.log(3)

print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, accuracy train {train_accuracy:.2f} "
      f"test {test_accuracy:.2f}")
