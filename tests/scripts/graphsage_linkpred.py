# ruff: noqa: N812 (the usual F alias)
"""GraphSAGE (Hamilton et al.) for node classification and link prediction on a synthetic
stochastic block model, written for these tests the way PyG-free torch code writes it (an
``edge_index`` LongTensor of shape (2, E), messages gathered by ``x[src]`` and scattered to
``dst``; not a copy of any library):

- neighbour aggregation three ways: sum by ``Tensor.index_add_``, mean by ``scatter_add_``
  over an expanded index divided by ``torch.bincount`` degrees (``clamp(min=1)``), max by
  ``scatter_reduce(reduce="amax", include_self=False)``, and mean again by
  ``scatter_reduce(reduce="mean", include_self=False)``; a second, sparse path through
  ``torch.sparse_coo_tensor`` + ``torch.sparse.mm`` compared with it in value and gradient;
- ``SAGEConv`` with root and neighbour ``nn.Linear``s, bipartite ``(x_src, x_dst)`` inputs,
  ``F.normalize``; CSR built by ``argsort`` + ``bincount`` + ``cumsum``;
- GraphSAGE neighbour sampling with ``torch.multinomial`` over dense rows (with replacement)
  and with ``torch.rand``/``torch.randint`` offsets into the CSR rows, ``torch.unique`` with
  ``return_inverse``/``return_counts`` to relabel the sampled subgraph and merge duplicate
  edges, ``torch.randperm`` mini-batches, ``F.cross_entropy`` on the batch's target nodes;
- link prediction: held-out edges, negative sampling with ``torch.randint``, a dot-product
  decoder, ``nn.BCEWithLogitsLoss``, ROC AUC computed by hand through ``torch.argsort``,
  ``torch.diff``/``nonzero`` at distinct scores, ``torch.cumsum`` + ``torch.trapz``, and as
  the Mann-Whitney rank statistic.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------------- graph

N_BLOCKS, BLOCK_SIZE, N_FEATURES = 4, 40, 16
N = N_BLOCKS * BLOCK_SIZE
P_IN, P_OUT = 0.15, 0.004

block = torch.arange(N) // BLOCK_SIZE
probs = torch.where(block[:, None] == block[None, :], torch.tensor(P_IN), torch.tensor(P_OUT))
upper = torch.triu(torch.rand(N, N) < probs, diagonal=1)
adjacency = upper | upper.t()
edge_index = adjacency.nonzero().t().contiguous()  # both directions, row-major order
num_edges = edge_index.size(1)
# features: a weak class mean in noise; the neighbours' average sharpens it
class_means = torch.randn(N_BLOCKS, N_FEATURES) * 0.6
x = class_means[block] + torch.randn(N, N_FEATURES)
y = block.clone()


def degree(index, num_nodes, dtype=torch.float32):
    return torch.bincount(index, minlength=num_nodes).to(dtype)


def aggregate(x_src, edge_index, num_dst, aggr):
    """Messages x_src[src] reduced onto their dst nodes (rows 0..num_dst-1)."""
    src, dst = edge_index[0], edge_index[1]
    msg = x_src.index_select(0, src)
    out = torch.zeros(num_dst, x_src.size(1), dtype=x_src.dtype)
    if aggr == "sum":
        return out.index_add_(0, dst, msg)
    index = dst.unsqueeze(-1).expand_as(msg)
    if aggr == "mean":
        out = out.scatter_add_(0, index, msg)
        return out / degree(dst, num_dst, x_src.dtype).clamp(min=1).unsqueeze(-1)
    if aggr == "max":
        return out.scatter_reduce(0, index, msg, reduce="amax", include_self=False)
    if aggr == "mean_reduce":
        return out.scatter_reduce(0, index, msg, reduce="mean", include_self=False)
    raise ValueError(aggr)


def sparse_aggregate(x_src, edge_index, num_dst, aggr):
    """The same sum or mean as a (num_dst, num_src) sparse matrix times x_src."""
    src, dst = edge_index[0], edge_index[1]
    values = torch.ones(src.numel(), dtype=x_src.dtype)
    if aggr == "mean":
        values = values / degree(dst, num_dst, x_src.dtype).clamp(min=1)[dst]
    adj = torch.sparse_coo_tensor(torch.stack([dst, src]), values, (num_dst, x_src.size(0)))
    return torch.sparse.mm(adj.coalesce(), x_src)


class SAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, aggr="mean", normalize=False, sparse=False):
        super().__init__()
        self.aggr, self.normalize, self.sparse = aggr, normalize, sparse
        self.lin_l = nn.Linear(in_channels, out_channels)  # neighbours
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)  # the node itself

    def forward(self, x, edge_index):
        if isinstance(x, torch.Tensor):
            x = (x, x)
        x_src, x_dst = x
        fn = sparse_aggregate if self.sparse else aggregate
        out = self.lin_l(fn(x_src, edge_index, x_dst.size(0), self.aggr)) + self.lin_r(x_dst)
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out


class GraphSAGE(nn.Module):
    def __init__(self, in_channels, hidden, out_channels, aggr="mean", dropout=0.0):
        super().__init__()
        self.convs = nn.ModuleList([SAGEConv(in_channels, hidden, aggr),
                                    SAGEConv(hidden, out_channels, aggr)])
        self.dropout = dropout

    def set_sparse(self, sparse):
        for conv in self.convs:
            conv.sparse = sparse

    def forward(self, x, adjs):
        """``adjs``: one edge_index per layer, or a single one for the full graph."""
        if isinstance(adjs, torch.Tensor):
            adjs = [adjs] * len(self.convs)
        for i, (conv, edge_index) in enumerate(zip(self.convs, adjs)):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.relu(x)
                x = F.dropout(x, p=self.dropout, training=self.training)
        return x


# ---------------------------------------------------------------------- CSR, sampling

perm = torch.argsort(edge_index[1] * N + edge_index[0])  # sorted by dst, then src
csr_col = edge_index[0][perm]  # the sources, grouped by destination
deg = torch.bincount(edge_index[1], minlength=N)
rowptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(deg, 0)])
csr_ok = bool(torch.equal(rowptr[-1], torch.tensor(num_edges))) and bool(
    (csr_col[rowptr[5]:rowptr[6]] == adjacency[5].nonzero().flatten()).all())


def sample_multinomial(nodes, fanout):
    """``fanout`` neighbours per node, with replacement, from the dense adjacency rows; an
    isolated node samples itself."""
    weights = adjacency[nodes].float()
    isolated = weights.sum(1) == 0
    weights[isolated, nodes[isolated]] = 1.0
    return torch.multinomial(weights, fanout, replacement=True)  # (len(nodes), fanout)


def sample_offsets(nodes, fanout):
    """The same through random offsets into each node's CSR row (GraphSAGE's uniform
    sampler), an isolated node standing in for itself."""
    d = deg[nodes]
    offsets = (torch.rand(nodes.numel(), fanout) * d.unsqueeze(1)).long()
    picked = csr_col[(rowptr[nodes].unsqueeze(1) + offsets).clamp(max=num_edges - 1)]
    return torch.where(d.unsqueeze(1) > 0, picked, nodes.unsqueeze(1).expand(-1, fanout))


def sample_subgraph(batch, fanouts, sampler):
    """Relabelled 2-hop computation graph of ``batch``: (n_id, edge_index per layer, the
    batch's local rows, the duplicate-edge counts, the sampled edges per layer)."""
    hop_targets = [batch]
    hop_edges = []
    for fanout in fanouts:
        targets = hop_targets[-1]
        nbrs = sampler(targets, fanout)
        src = nbrs.flatten()
        dst = targets.repeat_interleave(fanout)
        hop_edges.append(torch.stack([src, dst]))
        hop_targets.append(torch.unique(torch.cat([targets, src])))
    n_id = hop_targets[-1]
    all_nodes = torch.cat([n_id, batch])
    _, inverse = torch.unique(all_nodes, return_inverse=True)
    local_batch = inverse[n_id.numel():]
    adjs, counts = [], []
    for e in reversed(hop_edges):  # the outer hop feeds the first layer
        key, count = torch.unique(e[0] * N + e[1], return_counts=True)  # merge duplicates
        merged = torch.stack([key // N, key % N])
        _, local = torch.unique(torch.cat([n_id, merged.flatten()]), return_inverse=True)
        adjs.append(local[n_id.numel():].view(2, -1))
        counts.append(count)
    return n_id, adjs, local_batch, counts, [e.size(1) for e in reversed(hop_edges)]


# ------------------------------------------------- fixed-weight checks (recorded)

torch.manual_seed(1)
agg_in = torch.randn(N, 5, dtype=torch.float64, requires_grad=True)
agg_upstream = torch.randn(N, 5, dtype=torch.float64)
agg_outputs, agg_grads = {}, {}
for name in ("sum", "mean", "max", "mean_reduce"):
    out = aggregate(agg_in, edge_index, N, name)
    agg_outputs[name] = out.detach()
    agg_grads[name] = torch.autograd.grad(out, agg_in, agg_upstream)[0]
for name in ("sum", "mean"):
    out = sparse_aggregate(agg_in, edge_index, N, name)
    agg_outputs["sparse_" + name] = out.detach()
    agg_grads["sparse_" + name] = torch.autograd.grad(out, agg_in, agg_upstream)[0]
fixed_results["aggregate"] = {k: v for k, v in agg_outputs.items() if "sparse" not in k}
fixed_results["aggregate_grads"] = {k: v for k, v in agg_grads.items() if "sparse" not in k}
# the max aggregation by hand, a Python loop over nodes
max_loop = torch.stack([
    agg_in.detach()[adjacency[i]].max(0).values if adjacency[i].any()
    else torch.zeros(5, dtype=torch.float64) for i in range(N)])

small_edges = edge_index[:, (edge_index < 12).all(0)]
gradcheck_results = {
    name: torch.autograd.gradcheck(
        lambda t, name=name: aggregate(t, small_edges, 12, name),
        (torch.randn(12, 3, dtype=torch.float64, requires_grad=True),))
    for name in ("sum", "mean", "max", "mean_reduce")}
gradcheck_results["sparse_mean"] = torch.autograd.gradcheck(
    lambda t: sparse_aggregate(t, small_edges, 12, "mean"),
    (torch.randn(12, 3, dtype=torch.float64, requires_grad=True),))

# a two-layer GraphSAGE on fixed weights: embeddings, the scatter vs sparse path, gradients
torch.manual_seed(2)
fixed_model = GraphSAGE(N_FEATURES, 16, N_BLOCKS)
fixed_model.eval()
path_logits, path_grads = {}, {}
for sparse in (False, True):
    fixed_model.set_sparse(sparse)
    fixed_model.zero_grad()
    logits = fixed_model(x, edge_index)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    path_logits[sparse] = logits.detach()
    path_grads[sparse] = {n: p.grad.clone() for n, p in fixed_model.named_parameters()}
fixed_model.set_sparse(False)
fixed_results["embeddings"] = path_logits[False]
fixed_results["loss"] = loss.item()
fixed_results["grads"] = path_grads[False]
normalized = SAGEConv(N_FEATURES, 8, aggr="max", normalize=True)
fixed_results["normalized_max_conv"] = normalized(x, edge_index).detach()
fixed_model.zero_grad()

# ------------------------------------------------- mini-batched node classification

torch.manual_seed(3)
node_perm = torch.randperm(N)
train_nodes, test_nodes = node_perm[: N // 2], node_perm[N // 2:]
fanouts = [5, 5]
node_model = GraphSAGE(N_FEATURES, 32, N_BLOCKS, dropout=0.2)
node_optimizer = torch.optim.Adam(node_model.parameters(), lr=0.01, weight_decay=5e-4)
node_losses, subgraph_sizes, duplicates_ok = [], [], True
epochs, batch_size = 12, 20
for epoch in range(epochs):
    node_model.train()
    sampler = sample_multinomial if epoch % 2 == 0 else sample_offsets
    order = train_nodes[torch.randperm(train_nodes.numel())]
    for batch in order.split(batch_size):
        n_id, adjs, local_batch, counts, sampled = sample_subgraph(batch, fanouts, sampler)
        duplicates_ok &= [int(c.sum()) for c in counts] == sampled
        subgraph_sizes.append(n_id.numel())
        out = node_model(x[n_id], adjs)[local_batch]
        loss = F.cross_entropy(out, y[batch])
        node_optimizer.zero_grad()
        loss.backward()
        node_optimizer.step()
        node_losses.append(loss.item())

# the sampled subgraph's bookkeeping on one batch
check_batch = train_nodes[:batch_size]
n_id, adjs, local_batch, counts, sampled = sample_subgraph(check_batch, fanouts,
                                                          sample_multinomial)
sample_counts = [int(c.sum()) for c in counts]
merged_duplicates = sum(int((c > 1).sum()) for c in counts)
batch_relabelled = bool(torch.equal(n_id[local_batch], check_batch))
edges_are_real = all(bool(adjacency[n_id[a[1]], n_id[a[0]]].all()) for a in adjs)

node_model.eval()
with torch.no_grad():
    full_logits = node_model(x, edge_index)
node_accuracy = (full_logits[test_nodes].argmax(1) == y[test_nodes]).float().mean().item()
# features alone (no neighbours): what the graph adds
with torch.no_grad():
    no_graph = node_model(x, torch.zeros(2, 0, dtype=torch.long))
no_graph_accuracy = (no_graph[test_nodes].argmax(1) == y[test_nodes]).float().mean().item()

# ------------------------------------------------------------------- link prediction


def roc_auc(scores, labels):
    """Area under the ROC curve: sort by score, cumulative true/false positives at each
    distinct score (a tie between a positive and a negative counts a half), trapezoids."""
    order = torch.argsort(scores, descending=True, stable=True)
    hits = labels[order].to(torch.float64)
    ends = torch.cat([torch.nonzero(torch.diff(scores[order])).flatten(),
                      torch.tensor([scores.numel() - 1])])
    tps, fps = torch.cumsum(hits, 0)[ends], torch.cumsum(1 - hits, 0)[ends]
    tpr = torch.cat([torch.zeros(1, dtype=torch.float64), tps / tps[-1]])
    fpr = torch.cat([torch.zeros(1, dtype=torch.float64), fps / fps[-1]])
    return torch.trapz(tpr, fpr).item()


def rank_auc(scores, labels):
    """Mann-Whitney: P(score of a positive > score of a negative), ranks by argsort twice."""
    ranks = torch.argsort(torch.argsort(scores)).to(torch.float64) + 1
    pos = labels.bool()
    n_pos, n_neg = pos.sum().item(), (~pos).sum().item()
    return ((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)).item()


def decode(z, pairs):
    return (z[pairs[0]] * z[pairs[1]]).sum(dim=-1)


def negative_pairs(num, forbidden):
    pairs = torch.randint(0, N, (2, num))
    keep = ~forbidden[pairs[0], pairs[1]] & (pairs[0] != pairs[1])
    return pairs[:, keep]


torch.manual_seed(4)
und = edge_index[:, edge_index[0] < edge_index[1]]  # each undirected edge once
shuffled = und[:, torch.randperm(und.size(1))]
n_test = und.size(1) // 5
test_pos, train_pos = shuffled[:, :n_test], shuffled[:, n_test:]
train_edge_index = torch.cat([train_pos, train_pos.flip(0)], dim=1)

link_model = GraphSAGE(N_FEATURES, 32, 8, aggr="mean")
link_optimizer = torch.optim.Adam(link_model.parameters(), lr=0.01)
criterion = nn.BCEWithLogitsLoss()
link_losses = []
for _ in range(80):
    link_model.train()
    z = link_model(x, train_edge_index)
    neg = torch.randint(0, N, (2, train_pos.size(1)))
    pos_out, neg_out = decode(z, train_pos), decode(z, neg)
    scores = torch.cat([pos_out, neg_out])
    targets = torch.cat([torch.ones_like(pos_out), torch.zeros_like(neg_out)])
    loss = criterion(scores, targets)
    link_optimizer.zero_grad()
    loss.backward()
    link_optimizer.step()
    link_losses.append(loss.item())

link_model.eval()
with torch.no_grad():
    z = link_model(x, train_edge_index)
    test_neg = negative_pairs(4 * n_test, adjacency)[:, :n_test]
    test_scores = torch.cat([decode(z, test_pos), decode(z, test_neg)])
    test_labels = torch.cat([torch.ones(n_test), torch.zeros(test_neg.size(1))])
link_auc = roc_auc(test_scores, test_labels)
link_rank_auc = rank_auc(test_scores, test_labels)
# the AUC by brute force over every positive/negative pair
pos_s, neg_s = test_scores[:n_test], test_scores[n_test:]
link_pair_auc = (pos_s[:, None] > neg_s[None, :]).double().mean().item()
# a recorded AUC on fixed scores with a tie between a positive and a negative: 7.5 / 9
fixed_results["auc_fixed"] = roc_auc(torch.tensor([0.9, 0.8, 0.8, 0.3, 0.1, 0.5]),
                                     torch.tensor([1, 1, 0, 0, 0, 1]))

print(f"{N} nodes, {num_edges} directed edges; node accuracy {node_accuracy:.3f} "
      f"(no graph {no_graph_accuracy:.3f}), loss {node_losses[0]:.3f} -> {node_losses[-1]:.3f}; "
      f"link AUC {link_auc:.3f} (rank {link_rank_auc:.3f}), loss {link_losses[0]:.3f} -> "
      f"{link_losses[-1]:.3f}")
