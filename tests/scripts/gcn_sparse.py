"""Node classification with a two-layer graph convolutional network (Kipf & Welling) over a
sparse adjacency, written for these tests in the way GCN code for PyTorch (pygcn-style) is
commonly written (modelled on the API usage of such code, not a copy of it):

- a symmetric-normalised ``D^-1/2 (A + I) D^-1/2`` built with ``index_add`` and ``pow(-0.5)``,
  stored as ``torch.sparse_coo_tensor(...).coalesce()``
- graph-convolution layers with ``nn.Parameter``s set by ``uniform_``, ``torch.mm`` and
  ``torch.spmm``; ``F.dropout(training=...)``, ``F.log_softmax``/``F.nll_loss`` on a node mask,
  Adam with ``weight_decay``; ``max(1)[1].type_as``, ``eq``, ``double``
- ``torch.sparse.mm`` against ``to_dense() @``; ``_nnz()`` and ``layout``
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)
rng = np.random.default_rng(0)

N, FEATURES, HIDDEN, CLASSES = 60, 16, 16, 2
group = np.repeat([0, 1], N // 2)  # two communities of 30 nodes

# a stochastic block model: an edge with probability 0.2 inside a community, 0.01 across
p_edge = np.where(group[:, None] == group[None, :], 0.2, 0.01)
half = np.triu(rng.random((N, N)) < p_edge, k=1)
src, dst = np.nonzero(half | half.T)

# the edges plus a self loop at every node
rows = np.concatenate([src, np.arange(N)])
cols = np.concatenate([dst, np.arange(N)])
index = torch.tensor(np.stack([rows, cols]))
degree = torch.zeros(N).index_add(0, index[0], torch.ones(len(rows)))
scale = degree.pow(-0.5)
adj = torch.sparse_coo_tensor(index, scale[index[0]] * scale[index[1]], (N, N)).coalesce()

labels = torch.tensor(group)
features = torch.randn(N, FEATURES) + labels.to(torch.float32).unsqueeze(1)  # a weak hint
train_nodes = torch.tensor(np.r_[0:10, 30:40])
test_nodes = torch.tensor(np.r_[10:30, 40:60])


class GraphConv(nn.Module):
    """H' = A_hat (H W) + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        bound = 1.0 / math.sqrt(n_out)
        self.W = nn.Parameter(torch.empty(n_in, n_out))
        self.b = nn.Parameter(torch.empty(n_out))
        for p in (self.W, self.b):
            p.data.uniform_(-bound, bound)

    def forward(self, h, a_hat):
        return torch.spmm(a_hat, torch.mm(h, self.W)) + self.b


class TwoLayerGCN(nn.Module):
    def __init__(self, p_drop=0.5):
        super().__init__()
        self.first = GraphConv(FEATURES, HIDDEN)
        self.second = GraphConv(HIDDEN, CLASSES)
        self.p_drop = p_drop

    def forward(self, h, a_hat):
        h = F.dropout(F.relu(self.first(h, a_hat)), self.p_drop, training=self.training)
        return F.log_softmax(self.second(h, a_hat), dim=1)


def hit_rate(logp, truth):
    guess = logp.max(1)[1].type_as(truth)
    return guess.eq(truth).double().sum().item() / len(truth)


gcn = TwoLayerGCN()
adam = torch.optim.Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
losses = []
for _ in range(100):
    gcn.train()
    adam.zero_grad()
    loss = F.nll_loss(gcn(features, adj)[train_nodes], labels[train_nodes])
    loss.backward()
    adam.step()
    losses.append(loss.item())

gcn.eval()
test_acc = hit_rate(gcn(features, adj)[test_nodes], labels[test_nodes])
sparse_layer = torch.sparse.mm(adj, features)
dense_layer = adj.to_dense() @ features
print(f"train loss {losses[0]:.3f} -> {losses[-1]:.3f}; test accuracy {test_acc:.2f}; "
      f"{adj._nnz()} stored entries, {adj.layout}")
