"""Written for these tests in the way PointNet code for PyTorch is commonly written (modelled on
the API usage of fxia22/pointnet.pytorch, not a copy of it): a point-cloud classifier and
segmenter with learned input and feature transforms, trained to tell synthetic shapes apart.

Exercised: pointwise ``nn.Conv1d(c_in, c_out, 1)`` with ``nn.BatchNorm1d`` over (batch,
channels, points) and over (batch, features); transform nets whose k x k output adds an identity
built with ``torch.from_numpy(...).repeat(batch, 1)`` and ``view``; ``torch.bmm`` of the points
(``transpose(2, 1)``) with the transforms; the max over points (``max(dim, keepdim=True)[0]``),
``expand`` and ``torch.cat`` for per-point features; ``nn.Dropout``; ``F.log_softmax`` and
``F.nll_loss``; the orthogonality regularizer mean(||A A^T - I||_F) with ``torch.norm(...,
dim=(1, 2))``; the legacy ``torch.autograd.Variable``; a ``torch.utils.data.Dataset`` returning
``torch.from_numpy`` arrays behind ``DataLoader``s (shuffled); ``optim.Adam`` with
``lr_scheduler.StepLR`` stepped at each epoch's start (torch warns that it runs before
``optimizer.step()``); ``pred.data.max(1)[1].eq(target.data).cpu().sum()``; ``torch.save`` of the
state_dict after each epoch and ``torch.load``; ``model.double()``, ``train()``/``eval()``.

The data are synthetic (nothing is downloaded): each cloud is a fixed random draw of 200 points
on the surface of a sphere, a cube or a cylinder; a dataset item samples 64 of them with NumPy,
centres them and scales them into the unit ball, and training items are also turned about the
vertical axis and jittered. The widths are small (32, 64, 512 pointwise channels; 256, 128
hidden features; the feature transform is 32 x 32, so per-point features are 512 + 32 = 544) to
fit the test's time.

Sections marked "(recorded)" keep the shapes, losses, accuracies and learning rates for the tests.
The section marked "(added)" runs fixed-weight models (weights drawn by NumPy, dropout off:
jitgrad's random numbers are not torch's) on six test clouds in float64 (BatchNorm over six clouds
and the max over points make float32 ill-conditioned in both libraries, and the biases before a
BatchNorm get zero gradients whose float32 rounding Adam would blow up to lr-sized steps): the
classifier's log-probabilities, transforms, loss with the regularizer, gradients, two Adam steps
under a StepLR, BatchNorm statistics and an eval-mode pass; the segmenter's per-point
log-probabilities and gradients.
"""

import argparse
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
import jitgrad.utils.data as data
from jitgrad.autograd import Variable

# ---------------------------------------------------------------------------------- model

WIDTHS = (32, 64, 512)  # the pointwise channels
HIDDEN = (256, 128)  # the fully connected features after the max over points


def conv_block(c_in, c_out):
    """A shared per-point layer: a 1-wide convolution, BatchNorm and ReLU."""
    return nn.Sequential(nn.Conv1d(c_in, c_out, 1), nn.BatchNorm1d(c_out), nn.ReLU())


def dense_block(n_in, n_out):
    return nn.Sequential(nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out), nn.ReLU())


class TransformNet(nn.Module):
    """Predicts a k x k matrix per cloud of (batch, k, points); it starts near the identity."""

    def __init__(self, k):
        super().__init__()
        self.k = k
        self.per_point = nn.Sequential(conv_block(k, WIDTHS[0]), conv_block(*WIDTHS[:2]),
                                       conv_block(*WIDTHS[1:]))
        self.per_cloud = nn.Sequential(dense_block(WIDTHS[2], HIDDEN[0]), dense_block(*HIDDEN))
        self.to_matrix = nn.Linear(HIDDEN[1], k * k)

    def forward(self, x):
        pooled = self.per_point(x).max(2, keepdim=True)[0].view(x.size(0), -1)
        flat = self.to_matrix(self.per_cloud(pooled))
        identity = torch.from_numpy(np.eye(self.k, dtype=np.float32).reshape(1, -1))
        return (flat + identity.repeat(x.size(0), 1)).view(-1, self.k, self.k)


def apply_transform(x, matrix):
    """(batch, k, points) -> the points' k-vectors times the (batch, k, k) matrix."""
    return torch.bmm(x.transpose(2, 1), matrix).transpose(2, 1)


class PointFeatures(nn.Module):
    """The shared encoder: a global feature per cloud, or per point (global one + local one)."""

    def __init__(self, global_only=True, feature_transform=False):
        super().__init__()
        self.global_only = global_only
        self.input_transform = TransformNet(3)
        self.embed = conv_block(3, WIDTHS[0])
        self.feature_transform = TransformNet(WIDTHS[0]) if feature_transform else None
        self.lift = nn.Sequential(conv_block(*WIDTHS[:2]), nn.Conv1d(*WIDTHS[1:], 1),
                                  nn.BatchNorm1d(WIDTHS[2]))

    def forward(self, x):
        trans = self.input_transform(x)
        local = self.embed(apply_transform(x, trans))
        trans_feat = None
        if self.feature_transform is not None:
            trans_feat = self.feature_transform(local)
            local = apply_transform(local, trans_feat)
        pooled = self.lift(local).max(2, keepdim=True)[0]
        if self.global_only:
            return pooled.view(-1, WIDTHS[2]), trans, trans_feat
        per_point = torch.cat([pooled.expand(-1, -1, x.size(2)), local], 1)
        return per_point, trans, trans_feat


class ShapeClassifier(nn.Module):
    def __init__(self, num_classes=2, feature_transform=False):
        super().__init__()
        self.features = PointFeatures(True, feature_transform)
        self.fc_a, self.bn_a = nn.Linear(WIDTHS[2], HIDDEN[0]), nn.BatchNorm1d(HIDDEN[0])
        self.fc_b, self.bn_b = nn.Linear(*HIDDEN), nn.BatchNorm1d(HIDDEN[1])
        self.drop = nn.Dropout(p=0.3)
        self.fc_out = nn.Linear(HIDDEN[1], num_classes)

    def forward(self, x):
        feats, trans, trans_feat = self.features(x)
        h = F.relu(self.bn_a(self.fc_a(feats)))
        h = F.relu(self.bn_b(self.drop(self.fc_b(h))))
        return F.log_softmax(self.fc_out(h), dim=1), trans, trans_feat


class PointSegmenter(nn.Module):
    """Per-point log-probabilities over ``num_parts`` labels, (batch, points, num_parts)."""

    def __init__(self, num_parts=2, feature_transform=False):
        super().__init__()
        self.num_parts = num_parts
        self.features = PointFeatures(False, feature_transform)
        self.per_point = nn.Sequential(conv_block(WIDTHS[2] + WIDTHS[0], 256),
                                       conv_block(256, 128), conv_block(128, 64),
                                       nn.Conv1d(64, num_parts, 1))

    def forward(self, x):
        feats, trans, trans_feat = self.features(x)
        scores = self.per_point(feats).transpose(2, 1).contiguous()
        logp = F.log_softmax(scores.view(-1, self.num_parts), dim=-1)
        return logp.view(x.size(0), x.size(2), self.num_parts), trans, trans_feat


def orthogonality_penalty(matrices):
    """Mean over the batch of the Frobenius norm of A A^T - I (0 for orthogonal matrices)."""
    k = matrices.size(1)
    eye = torch.eye(k, dtype=matrices.dtype).unsqueeze(0)
    gram = torch.bmm(matrices, matrices.transpose(2, 1))
    return torch.norm(gram - eye, dim=(1, 2)).mean()


# (recorded) the output shapes of each part on four random clouds of 64 points
torch.manual_seed(0)
shapes = {}
clouds = Variable(torch.rand(4, 3, 64))
matrices = TransformNet(3)(clouds)
shapes["input transform"] = tuple(matrices.size())
print("penalty of a fresh input transform", orthogonality_penalty(matrices).item())
shapes["feature transform"] = tuple(TransformNet(32)(Variable(torch.rand(4, 32, 64))).size())
shapes["global features"] = tuple(PointFeatures(global_only=True)(clouds)[0].size())
shapes["point features"] = tuple(PointFeatures(global_only=False)(clouds)[0].size())
shapes["class scores"] = tuple(ShapeClassifier(num_classes=5)(clouds)[0].size())
shapes["part scores"] = tuple(PointSegmenter(num_parts=3)(clouds)[0].size())
print(shapes)

# ------------------------------------------------------------------------------- the data

SHAPES = ("sphere", "cube", "cylinder")


def surface_points(shape, count, rng):
    """``count`` points spread over the surface of ``shape`` (about unit size)."""
    if shape == "sphere":
        v = rng.normal(size=(count, 3))
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    if shape == "cube":
        v = rng.uniform(-1.0, 1.0, size=(count, 3))
        face = rng.integers(0, 3, size=count)
        v[np.arange(count), face] = rng.choice([-1.0, 1.0], size=count)
        return v
    angle = rng.uniform(0.0, 2 * np.pi, size=count)
    return np.stack([np.cos(angle), rng.uniform(-1.0, 1.0, size=count), np.sin(angle)], 1)


class ShapeClouds(data.Dataset):
    """``per_class`` clouds of each shape, in label order; items are (points, 3) float32 clouds
    and (1,) int64 labels."""

    def __init__(self, split, n_points, per_class, augment):
        self.n_points, self.augment = n_points, augment
        self.labels = np.repeat(np.arange(len(SHAPES)), per_class)
        first = 0 if split == "train" else 100_000
        self.surfaces = [surface_points(SHAPES[label], 200, np.random.default_rng(first + i))
                         for i, label in enumerate(self.labels)]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        surface = self.surfaces[index]
        pts = surface[np.random.choice(len(surface), self.n_points, replace=True)]
        pts = pts - pts.mean(axis=0, keepdims=True)
        pts = pts / np.sqrt((pts ** 2).sum(axis=1)).max()
        if self.augment:  # a turn about the vertical axis, then a little noise
            turn = np.random.uniform(0.0, 2 * np.pi)
            c, s = np.cos(turn), np.sin(turn)
            pts = pts @ np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])
            pts = pts + np.random.normal(0.0, 0.02, size=pts.shape)
        label = np.array([self.labels[index]], dtype=np.int64)
        return torch.from_numpy(pts.astype(np.float32)), torch.from_numpy(label)


# ------------------------------------------------------------------------------- training

parser = argparse.ArgumentParser(description="train a PointNet classifier on synthetic shapes")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--points", type=int, default=2500)
parser.add_argument("--epochs", type=int, default=250)
parser.add_argument("--out-dir", default="cls")
parser.add_argument("--feature-transform", action="store_true")
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args(["--batch-size", "16", "--points", "64", "--epochs", "10",
                          "--out-dir", tempfile.mkdtemp(prefix="pointnet_"),
                          "--feature-transform"])
torch.manual_seed(args.seed)
np.random.seed(args.seed)

train_set = ShapeClouds("train", args.points, per_class=32, augment=True)
test_set = ShapeClouds("test", args.points, per_class=16, augment=False)
train_loader = data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
test_loader = data.DataLoader(test_set, batch_size=args.batch_size, shuffle=True)
num_classes = len(SHAPES)
print(len(train_set), len(test_set), "clouds of", num_classes, "shapes")

model = ShapeClassifier(num_classes=num_classes, feature_transform=args.feature_transform)
optimizer = optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.999))
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)


def objective(net, points, target):
    pred, _, trans_feat = net(points)
    loss = F.nll_loss(pred, target)
    if trans_feat is not None:
        loss = loss + 0.001 * orthogonality_penalty(trans_feat)
    return loss, pred


def hits(pred, target):
    return pred.data.max(1)[1].eq(target.data).cpu().sum()


losses, accuracies, test_accuracies, lrs = [], [], [], []  # (recorded)
step = 0
for epoch in range(args.epochs):
    scheduler.step()
    lrs.append(optimizer.param_groups[0]["lr"])
    for points, target in train_loader:
        points, target = points.transpose(2, 1), target[:, 0]
        model.train()
        optimizer.zero_grad()
        loss, pred = objective(model, points, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        accuracies.append(hits(pred, target).item() / float(points.size(0)))
        if step % 5 == 0:  # a look at one shuffled test batch
            points, target = next(iter(test_loader))
            points, target = points.transpose(2, 1), target[:, 0]
            model.eval()
            with torch.no_grad():
                loss, pred = objective(model, points, target)
            test_accuracies.append(hits(pred, target).item() / float(points.size(0)))
            print(f"[{epoch}, step {step}] test loss {loss.item():.3f}, "
                  f"accuracy {test_accuracies[-1]:.3f}")
        step += 1
    torch.save(model.state_dict(), os.path.join(args.out_dir, f"cls_model_{epoch}.pth"))

total_correct = total_testset = 0
model.eval()
for points, target in test_loader:
    points, target = points.transpose(2, 1), target[:, 0]
    pred, _, _ = model(points)
    total_correct += hits(pred, target).item()
    total_testset += points.size(0)
print(f"test accuracy {total_correct / float(total_testset):.3f}")


# (added) fixed-weight models in float64 on six test clouds, compared with torch's
def draw_weights(net, rng):
    """Matrices ~ N(0, 1/fan_in), BatchNorm scales ~ N(1, 0.1), other vectors ~ N(0, 0.1)."""
    with torch.no_grad():
        for module in net.modules():
            for name, weight in module.named_parameters(recurse=False):
                if weight.dim() > 1:
                    value = rng.normal(0.0, 1.0 / np.sqrt(weight[0].numel()), tuple(weight.shape))
                else:
                    scale = isinstance(module, nn.BatchNorm1d) and name == "weight"
                    value = rng.normal(1.0 if scale else 0.0, 0.1, tuple(weight.shape))
                weight.copy_(torch.tensor(value, dtype=torch.float32))
    return net


picks = (0, 16, 32, 1, 17, 33)
fixed_points = torch.stack([test_set[i][0] for i in picks]).transpose(2, 1).double()
fixed_target = torch.cat([test_set[i][1] for i in picks])
draw = np.random.default_rng(0)
fixed = draw_weights(ShapeClassifier(num_classes, feature_transform=True), draw).double()
fixed.drop.p = 0.0
fixed_opt = optim.Adam(fixed.parameters(), lr=0.001)
fixed_sched = optim.lr_scheduler.StepLR(fixed_opt, step_size=1, gamma=0.5)
fixed_results = {"losses": [], "lrs": []}
fixed.train()
for i in range(2):
    fixed_opt.zero_grad()
    pred, trans, trans_feat = fixed(fixed_points)
    penalty = orthogonality_penalty(trans_feat)
    loss = F.nll_loss(pred, fixed_target) + 0.001 * penalty
    loss.backward()
    if i == 0:
        fixed_results.update(pred=pred.detach(), trans=trans.detach(),
                             trans_feat=trans_feat.detach(), reg=penalty.item(),
                             grads={n: w.grad.clone() for n, w in fixed.named_parameters()})
    fixed_opt.step()
    fixed_sched.step()
    fixed_results["losses"].append(loss.item())
    fixed_results["lrs"].append(fixed_opt.param_groups[0]["lr"])
fixed_results["params"] = {n: w.detach().clone() for n, w in fixed.named_parameters()}
fixed_results["buffers"] = {n: b.clone() for n, b in fixed.named_buffers()}
fixed.eval()
with torch.no_grad():
    pred = fixed(fixed_points)[0]
fixed_results["eval_pred"] = pred
fixed_results["eval_choice"] = pred.data.max(1)[1]
fixed_results["eval_correct"] = hits(pred, fixed_target).item()

segmenter = draw_weights(PointSegmenter(num_parts=4, feature_transform=True), draw).double()
seg_out, _, seg_trans_feat = segmenter(fixed_points)
part_labels = torch.arange(6 * args.points) % 4
seg_loss = (F.nll_loss(seg_out.view(-1, 4), part_labels)
            + 0.001 * orthogonality_penalty(seg_trans_feat))
seg_loss.backward()
fixed_results.update(seg_out=seg_out.detach(), seg_loss=seg_loss.item(),
                     seg_grads={n: w.grad.clone() for n, w in segmenter.named_parameters()})
