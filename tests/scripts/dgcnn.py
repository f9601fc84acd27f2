"""Written for these tests in the way dynamic-graph point-cloud code for PyTorch is commonly
written (modelled on the API usage of WangYueFt/dgcnn, not a copy of it): an EdgeConv classifier
and a PointNet-style baseline on synthetic shapes, with a label-smoothed loss.

Exercised: k nearest neighbours from a pairwise-distance ``torch.matmul`` and ``topk``; the
neighbours' coordinates fetched by flat index (a per-cloud ``arange`` offset, ``view(-1)``,
indexing a ``(batch * points, channels)`` view) and the edge features ``cat((neighbour - x,
x))`` permuted to (batch, 2C, points, k); EdgeConv blocks of ``nn.Conv2d(..., 1, bias=False)``,
``nn.BatchNorm2d`` and ``nn.LeakyReLU(0.2)`` with the max over neighbours; ``nn.Conv1d`` +
``nn.BatchNorm1d``; ``F.adaptive_max_pool1d`` and ``F.adaptive_avg_pool1d`` (and ``squeeze()``
after one); ``nn.Linear(bias=False)``, ``nn.Dropout``; label smoothing by
``full_like(...).scatter(1, labels.view(-1, 1), value)`` against ``F.log_softmax`` (and plain
``F.cross_entropy``); ``nn.DataParallel`` (its "module." state_dict keys); ``optim.SGD(lr * 100,
momentum, weight_decay=1e-4)`` with ``CosineAnnealingLR(T_max=epochs, eta_min=lr)`` stepped at
each epoch's start (torch warns that it runs before ``optimizer.step()``); a ``Dataset`` with
NumPy augmentation (random scale and shift, shuffled point order) behind ``DataLoader``s
(shuffled with ``drop_last`` for training); scikit-learn's accuracy and balanced accuracy;
``torch.save`` of the best state_dict and a fresh model that ``load_state_dict``s it to score the
test set again.

The data are synthetic (nothing is downloaded): clouds of 128 points on the surfaces of a cube,
a cylinder and a sphere, 24 of each to train and 8 to test, of which each item keeps the first
48 points. The model is small (EdgeConv widths 32, 32, 64, 64; 64 embedding channels; k = 6;
hidden widths 128 and 64 under dropout 0.3, as 0.5 leaves so narrow a head barely learning in 8
epochs) and trains for 8 epochs to fit the test's time.

Sections marked "(recorded)" keep the per-epoch losses, accuracies and learning rates for the
tests. The section marked "(added)" runs fixed-weight models (weights drawn by NumPy, dropout 0:
jitgrad's random numbers are not torch's) in float64 (BatchNorm over a few clouds makes float32
ill-conditioned) on six test clouds: the neighbours and edge features, the EdgeConv model's
logits, loss, gradients, two SGD steps under the cosine schedule, BatchNorm statistics and an
eval-mode pass, and the baseline's eval logits and plain loss, to compare with torch.
"""

import argparse
import copy
import os
import tempfile

import numpy as np
import sklearn.metrics as metrics

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.optim.lr_scheduler import CosineAnnealingLR
from jitgrad.utils.data import DataLoader, Dataset

# ------------------------------------------------------------------------------- the data


def shape_surface(label, count, rng):
    """``count`` points on a cube (0), a cylinder (1) or a sphere (2), as float32 (count, 3)."""
    if label == 0:
        pts = rng.uniform(-1.0, 1.0, (count, 3))
        pts[np.arange(count), rng.integers(0, 3, count)] = rng.choice([-1.0, 1.0], count)
    elif label == 1:
        turn = rng.uniform(0.0, 2 * np.pi, count)
        pts = np.stack([np.cos(turn), np.sin(turn), rng.uniform(-1.0, 1.0, count)], axis=1)
    else:
        pts = rng.normal(size=(count, 3))
        pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    return (0.8 * pts).astype(np.float32)


def make_clouds(split):
    """(clouds, labels): float32 (n, 128, 3) and int64 (n,), the shapes in blocks of one label."""
    per_shape = 24 if split == "train" else 8
    rng = np.random.default_rng(7 if split == "train" else 8)
    labels = np.repeat(np.arange(3), per_shape)
    return np.stack([shape_surface(lab, 128, rng) for lab in labels]), labels.astype(np.int64)


def scale_and_shift(cloud):
    """Random per-axis stretch in [2/3, 3/2] and shift in [-0.2, 0.2]."""
    stretch = np.random.uniform(2.0 / 3.0, 1.5, size=3)
    shift = np.random.uniform(-0.2, 0.2, size=3)
    return (cloud * stretch + shift).astype(np.float32)


class ShapeSet(Dataset):
    def __init__(self, split, n_points):
        self.clouds, self.labels = make_clouds(split)
        self.n_points, self.augment = n_points, split == "train"

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        cloud = self.clouds[i, :self.n_points]
        if self.augment:
            cloud = scale_and_shift(cloud)
            cloud = cloud[np.random.permutation(len(cloud))]
        return cloud, self.labels[i]


# ---------------------------------------------------------------------------------- model


def nearest(x, k):
    """The indices (batch, points, k) of each point's k nearest points in x (batch, C, points),
    itself first."""
    sq = (x * x).sum(dim=1, keepdim=True)
    neg_dist = 2 * torch.matmul(x.transpose(2, 1), x) - sq - sq.transpose(2, 1)
    return neg_dist.topk(k=k, dim=-1)[1]


def edge_features(x, k, idx=None):
    """(batch, C, points) -> (batch, 2C, points, k): for each neighbour, (neighbour - point,
    point)."""
    batch, channels, n = x.shape
    if idx is None:
        idx = nearest(x, k)
    offsets = torch.arange(batch, device=x.device).view(batch, 1, 1) * n
    rows = (idx + offsets).view(-1)
    pts = x.transpose(2, 1).contiguous()
    neighbours = pts.view(batch * n, channels)[rows].view(batch, n, k, channels)
    centre = pts.unsqueeze(2).expand(-1, -1, k, -1)
    return torch.cat((neighbours - centre, centre), dim=3).permute(0, 3, 1, 2).contiguous()


class EdgeConv(nn.Module):
    """A shared MLP over each (point, neighbour) edge, then the max over the k neighbours."""

    def __init__(self, c_in, c_out, k):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(nn.Conv2d(2 * c_in, c_out, kernel_size=1, bias=False),
                                 nn.BatchNorm2d(c_out), nn.LeakyReLU(negative_slope=0.2))

    def forward(self, x):
        return self.mlp(edge_features(x, self.k)).max(dim=-1, keepdim=False)[0]


def classifier_head(n_in, widths, n_out, dropout):
    """Linear + BatchNorm + LeakyReLU + Dropout per width (no bias on the first: its BatchNorm
    would cancel it), then the output Linear."""
    layers = []
    for i, width in enumerate(widths):
        layers += [nn.Linear(n_in, width, bias=i > 0), nn.BatchNorm1d(width),
                   nn.LeakyReLU(negative_slope=0.2), nn.Dropout(p=dropout)]
        n_in = width
    return nn.Sequential(*layers, nn.Linear(n_in, n_out))


class EdgeConvNet(nn.Module):
    WIDTHS = (32, 32, 64, 64)

    def __init__(self, args, n_classes):
        super().__init__()
        c_in, blocks = 3, []
        for width in self.WIDTHS:
            blocks.append(EdgeConv(c_in, width, args.k))
            c_in = width
        self.blocks = nn.ModuleList(blocks)
        self.embed = nn.Sequential(nn.Conv1d(sum(self.WIDTHS), args.emb_dims, 1, bias=False),
                                   nn.BatchNorm1d(args.emb_dims), nn.LeakyReLU(0.2))
        self.head = classifier_head(2 * args.emb_dims, (128, 64), n_classes, args.dropout)

    def forward(self, x):
        stages = []
        for block in self.blocks:
            x = block(x)
            stages.append(x)
        x = self.embed(torch.cat(stages, dim=1))
        batch = x.size(0)
        pooled = torch.cat((F.adaptive_max_pool1d(x, 1).view(batch, -1),
                            F.adaptive_avg_pool1d(x, 1).view(batch, -1)), 1)
        return self.head(pooled)


class PointMLP(nn.Module):
    """The baseline: per-point convolutions, the max over points, an MLP."""

    def __init__(self, args, n_classes):
        super().__init__()
        layers, c_in = [], 3
        for width in (32, 32, 64, args.emb_dims):
            layers += [nn.Conv1d(c_in, width, 1, bias=False), nn.BatchNorm1d(width), nn.ReLU()]
            c_in = width
        self.per_point = nn.Sequential(*layers)
        self.head = classifier_head(args.emb_dims, (64,), n_classes, args.dropout)

    def forward(self, x):
        return self.head(F.adaptive_max_pool1d(self.per_point(x), 1).squeeze())


def smoothed_cross_entropy(logits, labels, smoothing=True, eps=0.2):
    """Cross-entropy against targets of 1 - eps on the label and eps / (classes - 1) elsewhere."""
    labels = labels.contiguous().view(-1)
    if not smoothing:
        return F.cross_entropy(logits, labels, reduction="mean")
    n_classes = logits.size(1)
    target = torch.full_like(logits, eps / (n_classes - 1))
    target = target.scatter(1, labels.view(-1, 1), 1.0 - eps)
    return -(target * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


class RunLog:
    """Prints each line and appends it to a file."""

    def __init__(self, path):
        self.file = open(path, "a")

    def __call__(self, text):
        print(text)
        self.file.write(text + "\n")
        self.file.flush()


# ------------------------------------------------------------------------------- training

parser = argparse.ArgumentParser(description="EdgeConv classification of synthetic shapes")
parser.add_argument("--model", default="edgeconv", choices=["edgeconv", "pointmlp"])
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--test-batch-size", type=int, default=16)
parser.add_argument("--epochs", type=int, default=250)
parser.add_argument("--lr", type=float, default=0.001, help="SGD runs at 100 x this")
parser.add_argument("--momentum", type=float, default=0.9)
parser.add_argument("--points", type=int, default=1024)
parser.add_argument("--dropout", type=float, default=0.5)
parser.add_argument("--emb-dims", type=int, default=1024)
parser.add_argument("-k", type=int, default=20, help="neighbours per point")
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--model-path", default="")
work_dir = tempfile.mkdtemp(prefix="dgcnn_")
args = parser.parse_args(["--points", "48", "-k", "6", "--emb-dims", "64", "--dropout", "0.3",
                          "--batch-size", "12", "--test-batch-size", "12", "--epochs", "8",
                          "--model-path", os.path.join(work_dir, "best.t7")])
torch.manual_seed(args.seed)
np.random.seed(args.seed)
log = RunLog(os.path.join(work_dir, "run.log"))
log(str(args))

MODELS = {"edgeconv": EdgeConvNet, "pointmlp": PointMLP}


def score(model, loader):
    """(labels, predictions) over a loader, in eval mode."""
    model.eval()
    truth, guesses = [], []
    with torch.no_grad():
        for clouds, labels in loader:
            logits = model(clouds.permute(0, 2, 1))
            truth.append(labels.numpy())
            guesses.append(logits.max(dim=1)[1].numpy())
    return np.concatenate(truth), np.concatenate(guesses)


history = {"train_loss": [], "train_acc": [], "test_acc": [], "test_avg_acc": [], "lr": []}


def train(args):
    train_loader = DataLoader(ShapeSet("train", args.points), batch_size=args.batch_size,
                              shuffle=True, drop_last=True)
    test_loader = DataLoader(ShapeSet("test", args.points), batch_size=args.test_batch_size)
    model = nn.DataParallel(MODELS[args.model](args, 3))
    opt = optim.SGD(model.parameters(), lr=args.lr * 100, momentum=args.momentum,
                    weight_decay=1e-4)
    schedule = CosineAnnealingLR(opt, args.epochs, eta_min=args.lr)
    best = 0.0
    for epoch in range(args.epochs):
        schedule.step()
        history["lr"].append(opt.param_groups[0]["lr"])  # (recorded)
        model.train()
        total, seen, truth, guesses = 0.0, 0, [], []
        for clouds, labels in train_loader:
            opt.zero_grad()
            logits = model(clouds.permute(0, 2, 1))
            loss = smoothed_cross_entropy(logits, labels)
            loss.backward()
            opt.step()
            total, seen = total + loss.item() * labels.size(0), seen + labels.size(0)
            truth.append(labels.numpy())
            guesses.append(logits.max(dim=1)[1].detach().numpy())
        truth, guesses = np.concatenate(truth), np.concatenate(guesses)
        history["train_loss"].append(total / seen)  # (recorded)
        history["train_acc"].append(metrics.accuracy_score(truth, guesses))
        test_truth, test_guesses = score(model, test_loader)
        test_acc = metrics.accuracy_score(test_truth, test_guesses)
        history["test_acc"].append(test_acc)
        history["test_avg_acc"].append(metrics.balanced_accuracy_score(test_truth, test_guesses))
        log(f"epoch {epoch}: loss {history['train_loss'][-1]:.4f}, "
            f"train acc {history['train_acc'][-1]:.3f}, test acc {test_acc:.3f}, "
            f"balanced {history['test_avg_acc'][-1]:.3f}")
        if test_acc >= best:
            best = test_acc
            torch.save(model.state_dict(), args.model_path)
    return model


def test(args):
    """A fresh model with the best checkpoint's weights, scored on the test set."""
    model = nn.DataParallel(MODELS[args.model](args, 3))
    model.load_state_dict(torch.load(args.model_path))
    truth, guesses = score(model, DataLoader(ShapeSet("test", args.points),
                                             batch_size=args.test_batch_size))
    acc = metrics.accuracy_score(truth, guesses)
    balanced = metrics.balanced_accuracy_score(truth, guesses)
    log(f"reloaded: test acc {acc:.3f}, balanced {balanced:.3f}")
    return acc


trained = train(args)
reloaded_acc = test(args)  # (recorded)
log.file.close()


# (added) fixed-weight models in float64 on six test clouds, compared with torch's
def draw_weights(net, rng):
    """Matrices ~ N(0, 1/fan_in), BatchNorm scales ~ N(1, 0.1), other vectors ~ N(0, 0.1)."""
    with torch.no_grad():
        for module in net.modules():
            for name, weight in module.named_parameters(recurse=False):
                if weight.dim() > 1:
                    value = rng.normal(0.0, 1.0 / np.sqrt(weight[0].numel()), tuple(weight.shape))
                else:
                    norm = isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d))
                    value = rng.normal(1.0 if norm and name == "weight" else 0.0, 0.1,
                                       tuple(weight.shape))
                weight.copy_(torch.tensor(value, dtype=torch.float32))
    return net


draw = np.random.default_rng(0)
small = copy.copy(args)
small.k, small.emb_dims, small.dropout = 4, 16, 0.0
fixed = nn.DataParallel(draw_weights(EdgeConvNet(small, 3), draw)).double()
fixed_data = torch.from_numpy(make_clouds("test")[0][[0, 8, 16, 1, 9, 17], :16])
fixed_data = fixed_data.double().permute(0, 2, 1)
fixed_label = torch.tensor([0, 1, 2, 0, 1, 2])
fixed_results = {"idx": nearest(fixed_data, k=4), "graph_feature": edge_features(fixed_data, 4),
                 "keys": list(fixed.state_dict()), "losses": [], "lrs": []}
fixed_opt = optim.SGD(fixed.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
fixed_schedule = CosineAnnealingLR(fixed_opt, T_max=2, eta_min=0.001)
fixed.train()
for i in range(2):
    fixed_opt.zero_grad()
    logits = fixed(fixed_data)
    loss = smoothed_cross_entropy(logits, fixed_label)
    loss.backward()
    if i == 0:
        fixed_results["logits"] = logits.detach()
        fixed_results["grads"] = {n: w.grad.clone() for n, w in fixed.named_parameters()}
    fixed_opt.step()
    fixed_schedule.step()
    fixed_results["losses"].append(loss.item())
    fixed_results["lrs"].append(fixed_opt.param_groups[0]["lr"])
fixed_results["params"] = {n: w.detach().clone() for n, w in fixed.named_parameters()}
fixed_results["buffers"] = {n: b.clone() for n, b in fixed.named_buffers()}
fixed.eval()
with torch.no_grad():
    fixed_results["eval_logits"] = fixed(fixed_data)
    baseline = draw_weights(PointMLP(small, 3), draw).double().eval()
    fixed_results["baseline_logits"] = baseline(fixed_data)
fixed_results["baseline_loss"] = smoothed_cross_entropy(fixed_results["baseline_logits"],
                                                        fixed_label, smoothing=False).item()
