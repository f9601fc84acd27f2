"""A 2-layer graph convolutional network (Kipf & Welling) on a random graph, in the style of
pygcn: the normalized adjacency is a sparse COO tensor and each layer is ``spmm(adj, X @ W)``.
Only the import differs from the torch version."""

import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)
rng = np.random.default_rng(0)

# a random graph of two communities: dense inside, sparse between
n_nodes, n_feat, n_hidden, n_class = 60, 16, 16, 2
labels_np = (np.arange(n_nodes) >= n_nodes // 2).astype(np.int64)
same = labels_np[:, None] == labels_np[None, :]
prob = np.where(same, 0.2, 0.01)
upper = np.triu(rng.random((n_nodes, n_nodes)) < prob, k=1)
edges = np.array(np.nonzero(upper | upper.T))

# A + I, symmetric normalization D^-1/2 (A + I) D^-1/2, kept sparse
rows = np.concatenate([edges[0], np.arange(n_nodes)])
cols = np.concatenate([edges[1], np.arange(n_nodes)])
indices = torch.tensor(np.stack([rows, cols]))
ones = torch.ones(rows.shape[0])
deg = torch.zeros(n_nodes).index_add(0, indices[0], ones)
d_inv_sqrt = deg.pow(-0.5)
values = d_inv_sqrt[indices[0]] * d_inv_sqrt[indices[1]]
adj = torch.sparse_coo_tensor(indices, values, (n_nodes, n_nodes)).coalesce()

features = torch.randn(n_nodes, n_feat) + torch.tensor(labels_np, dtype=torch.float32)[:, None]
labels = torch.tensor(labels_np)
idx_train = torch.tensor(np.r_[0:10, 30:40])
idx_test = torch.tensor(np.r_[10:30, 40:60])


class GraphConvolution(nn.Module):
    """Simple GCN layer: adj @ (input @ weight) + bias."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        stdv = 1.0 / math.sqrt(out_features)
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        return output + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum().item() / len(labels)


model = GCN(n_feat, n_hidden, n_class, dropout=0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

losses = []
for _epoch in range(100):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()
    losses.append(loss_train.item())

model.eval()
output = model(features, adj)
test_acc = accuracy(output[idx_test], labels[idx_test])
sparse_layer = torch.sparse.mm(adj, features)  # the same product through torch.sparse.mm
dense_layer = adj.to_dense() @ features
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}, test accuracy {test_acc:.3f}, "
      f"nnz {adj._nnz()}, layout {adj.layout}")
