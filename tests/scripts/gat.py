"""Node classification with a two-layer graph attention network, written for these tests in the
way pytorch/examples commonly writes torch code (modelled on the API usage of its gat example,
not a copy of it):

- a Cora-format reader: np.genfromtxt, torch.FloatTensor features scaled row-wise through a
  sparse diagonal (torch.diag(...).to_sparse() @ features, inf set to 0 by a mask), labels from
  np.unique(return_inverse=True) as torch.LongTensor, torch.sparse_coo_tensor(dtype=int64)
  edges plus torch.eye self-loops;
- an attention layer with nn.Parameter(torch.empty(size=...)) weights (nn.init.xavier_normal_),
  torch.mm, F.dropout(training=...), view/permute, torch.matmul scores with ``.mT``,
  nn.LeakyReLU, torch.where over the adjacency with torch.ones_like fill, F.softmax, heads
  concatenated (contiguous().view) or averaged; F.elu and F.log_softmax on top;
- an argparse command line (given in the script), torch.accelerator / torch.device, randperm
  splits, Adam(weight_decay=...), nn.NLLLoss, masked accuracy;
- the data summary and a fixed-weight output and its gradients, for the torch comparison.

A synthetic graph written in Cora's two files stands in for the Cora download.
"""
import argparse
import os
import tempfile
import time

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.optim import Adam

TOPICS = ["Databases", "Graphics", "Networks", "Robotics", "Security", "Systems", "Vision"]


def make_fake_cora(folder, papers=300, vocab=120, seed=4):
    """Papers of one topic share a pool of words and cite each other much more than others."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, len(TOPICS), papers)
    pools = rng.random((len(TOPICS), vocab)) < 0.12
    bag = pools[topic] & (rng.random((papers, vocab)) < 0.45)
    bag |= rng.random((papers, vocab)) < 0.02
    pid = rng.permutation(np.arange(1000, 1000 + 50 * papers, 50))[:papers]
    lines = []
    for i in range(papers):
        lines.append("\t".join([str(pid[i])] + [str(int(b)) for b in bag[i]] + [TOPICS[topic[i]]]))
    with open(os.path.join(folder, "cora.content"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "cora.cites"), "w") as fh:
        for i in range(papers):
            for _ in range(3):
                same = topic == topic[i] if rng.random() < 0.85 else topic != topic[i]
                fh.write(f"{pid[rng.choice(np.flatnonzero(same))]}\t{pid[i]}\n")
    return folder


def read_cora(folder, device="cpu"):
    table = np.genfromtxt(os.path.join(folder, "cora.content"), dtype=np.dtype(str))
    links = np.genfromtxt(os.path.join(folder, "cora.cites"), dtype=np.int32)

    x = torch.FloatTensor(table[:, 1:-1].astype(np.int32))
    inv = 1 / torch.sum(x, dim=1)
    inv[inv == float("inf")] = 0  # papers without words
    x = torch.diag(inv).to_sparse() @ x

    _, y = np.unique(table[:, -1], return_inverse=True)
    y = torch.LongTensor(y)

    row_of = {int(p): r for r, p in enumerate(table[:, 0].astype(np.int32))}
    pairs = np.array([[row_of[a], row_of[b]] for a, b in links], dtype=np.int32)
    n = len(row_of)
    adj = torch.sparse_coo_tensor(pairs.T, torch.ones(pairs.shape[0]), (n, n), dtype=torch.int64)
    adj = torch.eye(n) + adj
    return x.to(device), y.to(device), adj.to(device)


class AttentionLayer(nn.Module):
    def __init__(self, n_in, n_out, heads, concat=False, p_drop=0.4, slope=0.2):
        super().__init__()
        self.heads, self.concat, self.p_drop = heads, concat, p_drop
        if concat:
            assert n_out % heads == 0
            self.n_out = n_out
        self.per_head = n_out // heads if concat else n_out
        self.W = nn.Parameter(torch.empty(size=(n_in, heads * self.per_head)))
        self.a = nn.Parameter(torch.empty(size=(heads, 2 * self.per_head, 1)))
        self.act = nn.LeakyReLU(slope)
        self.normalise = nn.Softmax(dim=1)
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def scores(self, hh):
        left = torch.matmul(hh, self.a[:, :self.per_head, :])     # (heads, nodes, 1)
        right = torch.matmul(hh, self.a[:, self.per_head:, :])
        return self.act(left + right.mT)                          # (heads, nodes, nodes)

    def forward(self, h, adj):
        n = h.shape[0]
        hh = F.dropout(torch.mm(h, self.W), self.p_drop, training=self.training)
        hh = hh.view(n, self.heads, self.per_head).permute(1, 0, 2)
        e = self.scores(hh)
        e = torch.where(adj > 0, e, -9e16 * torch.ones_like(e))  # only along edges
        alpha = F.dropout(F.softmax(e, dim=-1), self.p_drop, training=self.training)
        out = torch.matmul(alpha, hh)
        if self.concat:
            return out.permute(1, 0, 2).contiguous().view(n, self.n_out)
        return out.mean(dim=0)


class GraphNet(nn.Module):
    def __init__(self, n_in, hidden, heads, classes, concat=False, p_drop=0.4, slope=0.2):
        super().__init__()
        self.first = AttentionLayer(n_in, hidden, heads, concat, p_drop, slope)
        self.second = AttentionLayer(hidden, classes, 1, False, p_drop, slope)

    def forward(self, x, adj):
        return F.log_softmax(self.second(F.elu(self.first(x, adj)), adj), dim=1)


def evaluate(net, loss_fn, x, adj, y, rows):
    net.eval()
    with torch.no_grad():
        out = net(x, adj)[rows]
        loss = loss_fn(out, y[rows])
        acc = (out.argmax(dim=1) == y[rows]).float().sum() / len(rows)
    return loss.item(), acc.item()


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="graph attention on a Cora-like graph")
    cli.add_argument("--epochs", type=int, default=200)
    cli.add_argument("--lr", type=float, default=0.005)
    cli.add_argument("--l2", type=float, default=5e-4)
    cli.add_argument("--dropout-p", type=float, default=0.6)
    cli.add_argument("--hidden-dim", type=int, default=64)
    cli.add_argument("--num-heads", type=int, default=8)
    cli.add_argument("--concat-heads", action="store_true")
    cli.add_argument("--report-every", type=int, default=20)
    cli.add_argument("--no-accel", action="store_true")
    cli.add_argument("--seed", type=int, default=13)
    args = cli.parse_args(["--epochs", "40", "--report-every", "10"])

    torch.manual_seed(args.seed)
    accel = torch.accelerator.is_available() and not args.no_accel
    device = torch.accelerator.current_accelerator() if accel else torch.device("cpu")

    features, labels, adj_mat = read_cora(make_fake_cora(tempfile.mkdtemp()), device=device)
    order = torch.randperm(len(labels)).to(device)
    test_rows, val_rows, train_rows = order[:120], order[120:180], order[180:]

    net = GraphNet(features.shape[1], args.hidden_dim, args.num_heads,
                   labels.max().item() + 1, concat=args.concat_heads,
                   p_drop=args.dropout_p).to(device)
    opt = Adam(net.parameters(), lr=args.lr, weight_decay=args.l2)
    nll = nn.NLLLoss()
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        net.train()
        opt.zero_grad()
        out = net(features, adj_mat)
        nll(out[train_rows], labels[train_rows]).backward()
        opt.step()
        if epoch % args.report_every == 0:
            tr = evaluate(net, nll, features, adj_mat, labels, train_rows)
            va = evaluate(net, nll, features, adj_mat, labels, val_rows)
            print(f"epoch {epoch} ({time.time() - t0:.3f}s) train {tr} validation {va}")
    loss_test, acc_test = evaluate(net, nll, features, adj_mat, labels, test_rows)
    loss_train_end, acc_train_end = evaluate(net, nll, features, adj_mat, labels, train_rows)
    print(f"test loss {loss_test:.4f} accuracy {acc_test:.4f}")

    # fixed weights, eval mode, on the loaded graph: output and gradients
    ref = GraphNet(features.shape[1], 16, 4, 7, concat=True).eval()
    with torch.no_grad():
        for k, p in enumerate(ref.parameters(), start=1):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p))
    ref_out = ref(features, adj_mat)
    nll(ref_out, labels).backward()
    fixed_result = {"out": ref_out.tolist(),
                    **{n: p.grad.tolist() for n, p in ref.named_parameters()}}
    data_summary = (tuple(features.shape), str(features.dtype), str(adj_mat.layout),
                    str(adj_mat.dtype), adj_mat.sum().item(), labels.tolist())
