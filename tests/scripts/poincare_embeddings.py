# ruff: noqa: N812 (the usual F alias)
"""Poincaré embeddings of a small WordNet-like mammal hierarchy (Nickel & Kiela, 2017), written
for these tests the way public PyTorch code of the kind writes it (facebookresearch's
poincare-embeddings and its many re-implementations; not a copy of any):

- the hierarchy's transitive closure by boolean matrix products (``torch.matmul`` on
  ``float`` adjacency, ``|`` until a fixed point), the closure's (u, v) pairs by
  ``nonzero``, the node counts that weight the burn-in negatives;
- the distance as a ``torch.autograd.Function`` (``ctx.save_for_backward``, the closed-form
  gradient with ``clamp(min=eps)``, log form of arcosh) and as plain autograd through
  ``torch.acosh`` with ``clamp_min``; ``gradcheck`` in float64;
- ``nn.Embedding`` with ``sparse=True`` (a ``sparse_coo`` gradient: ``coalesce``,
  ``_indices``, ``_values``, ``torch.sparse_coo_tensor``) and with ``sparse=False``;
  initialisation by ``uniform_(-1e-3, 1e-3)``;
- Riemannian SGD as a ``torch.optim.Optimizer`` subclass (``param_groups``, ``self.state``,
  ``@torch.no_grad()`` step, ``p.grad.data``): the Euclidean gradient rescaled by
  ``(1 - |p|^2)^2 / 4``, a retraction ``p.add_(d_p)`` (or the exact exponential map through
  Möbius addition), then ``renorm_`` back into the ball; a burn-in phase at a tenth of the
  rate with negatives drawn by ``torch.multinomial`` from the counts, then uniform negatives
  by ``torch.randint``, resampled where they hit a true neighbour;
- the ranking loss as ``F.cross_entropy`` over ``-distance`` with the positive at index 0;
  reconstruction mean rank and mean average precision, and norms growing with depth.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.autograd import Function

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------------ data

HIERARCHY = {
    "mammal": ["carnivore", "ungulate", "primate", "rodent"],
    "carnivore": ["canine", "feline"],
    "canine": ["dog", "wolf", "fox"],
    "feline": ["cat", "lion", "tiger"],
    "ungulate": ["horse", "cow", "deer"],
    "primate": ["monkey", "ape"],
    "ape": ["gorilla", "chimpanzee"],
    "rodent": ["mouse", "rat", "squirrel"],
}
names = ["mammal"]
for children in HIERARCHY.values():
    names.extend(c for c in children if c not in names)
index = {n: i for i, n in enumerate(names)}
n_nodes = len(names)
depth = torch.zeros(n_nodes, dtype=torch.long)
for parent, children in HIERARCHY.items():
    for c in children:
        depth[index[c]] = depth[index[parent]] + 1

# hypernymy closure: child -> every ancestor (WordNet's "is-a" transitive closure)
adj = torch.zeros(n_nodes, n_nodes, dtype=torch.bool)
for parent, children in HIERARCHY.items():
    for c in children:
        adj[index[c], index[parent]] = True
closure = adj.clone()
while True:
    grown = closure | (closure.float() @ adj.float() > 0)
    if torch.equal(grown, closure):
        break
    closure = grown
pairs = closure.nonzero()  # (n_pairs, 2): (hyponym, hypernym)
n_pairs = pairs.shape[0]
# neighbours either way: a sampled negative must not be one of them (nor the node itself)
related = closure | closure.t() | torch.eye(n_nodes, dtype=torch.bool)
counts = torch.bincount(pairs.flatten(), minlength=n_nodes).double()
unigram = counts ** 0.75


# ------------------------------------------------------------------------ manifold


class PoincareDistance(Function):
    """arcosh(1 + 2 |u - v|^2 / ((1 - |u|^2)(1 - |v|^2))) with the closed-form gradient."""

    @staticmethod
    def forward(ctx, u, v, eps):
        squnorm = torch.clamp(torch.sum(u * u, dim=-1), 0, 1 - eps)
        sqvnorm = torch.clamp(torch.sum(v * v, dim=-1), 0, 1 - eps)
        sqdist = torch.sum(torch.pow(u - v, 2), dim=-1)
        ctx.eps = eps
        ctx.save_for_backward(u, v, squnorm, sqvnorm, sqdist)
        x = sqdist / ((1 - squnorm) * (1 - sqvnorm)) * 2 + 1
        z = torch.sqrt(torch.pow(x, 2) - 1)
        return torch.log(x + z)

    @staticmethod
    def backward(ctx, grad_output):
        u, v, squnorm, sqvnorm, sqdist = ctx.saved_tensors
        g = grad_output.unsqueeze(-1)
        gu = PoincareDistance.partial(u, v, squnorm, sqvnorm, sqdist, ctx.eps)
        gv = PoincareDistance.partial(v, u, sqvnorm, squnorm, sqdist, ctx.eps)
        return g.expand_as(gu) * gu, g.expand_as(gv) * gv, None

    @staticmethod
    def partial(x, y, sqnormx, sqnormy, sqdist, eps):
        alpha = 1 - sqnormx
        beta = 1 - sqnormy
        gamma = 1 + 2 * sqdist / (alpha * beta)
        a = ((sqnormy - 2 * torch.sum(x * y, dim=-1) + 1) / torch.pow(alpha, 2)).unsqueeze(-1)
        a = a.expand_as(x) * x - y / alpha.unsqueeze(-1).expand_as(y)
        z = torch.sqrt(torch.pow(gamma, 2) - 1)
        z = torch.clamp(z * beta, min=eps).unsqueeze(-1)
        return 4 * a / z.expand_as(x)


def poincare_distance_acosh(u, v, eps=1e-5):
    """The same distance through autograd, ``torch.acosh`` kept off its singular point."""
    sqdist = (u - v).pow(2).sum(dim=-1)
    squnorm = u.pow(2).sum(dim=-1).clamp(max=1 - eps)
    sqvnorm = v.pow(2).sum(dim=-1).clamp(max=1 - eps)
    x = 1 + 2 * sqdist / ((1 - squnorm) * (1 - sqvnorm))
    return torch.acosh(x.clamp_min(1 + eps))


def mobius_add(x, y):
    xy = (x * y).sum(dim=-1, keepdim=True)
    x2 = x.pow(2).sum(dim=-1, keepdim=True)
    y2 = y.pow(2).sum(dim=-1, keepdim=True)
    num = (1 + 2 * xy + y2) * x + (1 - x2) * y
    return num / (1 + 2 * xy + x2 * y2).clamp_min(1e-15)


class PoincareManifold:
    def __init__(self, eps=1e-5, max_norm=None):
        self.eps = eps
        self.max_norm = max_norm if max_norm is not None else 1 - eps

    def distance(self, u, v):
        return PoincareDistance.apply(u, v, self.eps)

    def normalize(self, w):
        """Project back into the ball: rows longer than ``max_norm`` are scaled onto it."""
        d = w.size(-1)
        w.view(-1, d).renorm_(2, 0, self.max_norm)
        return w

    def init_weights(self, w, irange=1e-3):
        w.data.uniform_(-irange, irange)

    def rgrad(self, p, d_p):
        """Riemannian gradient: the Euclidean one times the inverse metric (1 - |p|^2)^2 / 4."""
        if d_p.is_sparse:
            rows = d_p._indices()[0].squeeze()
            p_sqnorm = torch.sum(p[rows] ** 2, dim=1, keepdim=True).expand_as(d_p._values())
            values = d_p._values() * ((1 - p_sqnorm) ** 2) / 4
            return torch.sparse_coo_tensor(d_p._indices(), values, d_p.size())
        p_sqnorm = torch.sum(p ** 2, dim=-1, keepdim=True)
        return d_p * ((1 - p_sqnorm) ** 2 / 4).expand_as(d_p)

    def retraction(self, p, d_p):
        p.add_(d_p)

    def expmap(self, p, d_p):
        """The exact exponential map at p (rows touched by a sparse update only)."""
        if d_p.is_sparse:
            rows = d_p._indices()[0]
            p.index_copy_(0, rows, self._expmap_dense(p[rows], d_p._values()))
        else:
            p.copy_(self._expmap_dense(p, d_p))

    def _expmap_dense(self, x, v):
        # exp_x(v) = x (+) tanh(lambda_x |v| / 2) v / |v|, lambda_x = 2 / (1 - |x|^2);
        # v = -lr * rgrad is the tangent step
        lam = 2 / (1 - x.pow(2).sum(dim=-1, keepdim=True)).clamp_min(self.eps)
        norm = v.norm(dim=-1, keepdim=True).clamp_min(1e-15)
        second = torch.tanh(lam * norm / 2) * v / norm
        return mobius_add(x, second)


# ------------------------------------------------------------------------- optimiser


class RiemannianSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.3, manifold=None, retraction="euclidean"):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = dict(lr=lr, manifold=manifold, retraction=retraction)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None, lr=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            manifold = group["manifold"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad.data
                if d_p.is_sparse:
                    d_p = d_p.coalesce()
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                state["step"] += 1
                d_p = manifold.rgrad(p.data, d_p)
                d_p.mul_(-(lr if lr is not None else group["lr"]))
                if group["retraction"] == "expmap":
                    manifold.expmap(p.data, d_p)
                else:
                    manifold.retraction(p.data, d_p)
                manifold.normalize(p.data)
        return loss


# ----------------------------------------------------------------------------- model


class PoincareEmbedding(nn.Module):
    def __init__(self, size, dim, manifold, sparse=True):
        super().__init__()
        self.manifold = manifold
        self.lt = nn.Embedding(size, dim, sparse=sparse)
        self.manifold.init_weights(self.lt.weight)

    def forward(self, inputs):
        """inputs (B, 2 + n_neg): [u, v, negatives...]; returns -d(u, .) as logits."""
        e = self.lt(inputs)
        o = e.narrow(1, 1, e.size(1) - 1)
        s = e.narrow(1, 0, 1).expand_as(o)
        return -self.manifold.distance(s, o)

    def loss(self, logits, targets):
        return F.cross_entropy(logits, targets)

    @torch.no_grad()
    def distance_matrix(self):
        w = self.lt.weight
        return poincare_distance_acosh(w[:, None, :], w[None, :, :], self.manifold.eps)


def sample_negatives(u, n_neg, burnin, generator=None, tries=5):
    """Negatives for each anchor u: from the counts during burn-in, uniform after; a draw
    that hits a neighbour of u is redrawn (a few times at most), as the reference
    sampler does."""
    def draw():
        if burnin:
            flat = torch.multinomial(unigram, u.shape[0] * n_neg, replacement=True,
                                     generator=generator)
            return flat.view(u.shape[0], n_neg)
        return torch.randint(0, n_nodes, (u.shape[0], n_neg), generator=generator)

    negs = draw()
    for _ in range(tries):
        bad = related[u[:, None], negs]
        if not bad.any():
            break
        negs = torch.where(bad, draw(), negs)
    return negs


def make_batch(idx, n_neg, burnin, generator=None):
    u, v = pairs[idx, 0], pairs[idx, 1]
    negs = sample_negatives(u, n_neg, burnin, generator)
    inputs = torch.cat([u[:, None], v[:, None], negs], dim=1)
    targets = torch.zeros(idx.shape[0], dtype=torch.long)
    return inputs, targets


@torch.no_grad()
def reconstruction(model):
    """Mean rank and MAP of each node's true hypernyms among its non-neighbours."""
    dist = model.distance_matrix()
    ranks, aps = [], []
    for u in range(n_nodes):
        positives = closure[u].nonzero().flatten()
        if positives.numel() == 0:
            continue
        candidates = ~related[u]
        d_pos = dist[u, positives]
        d_neg = dist[u][candidates]
        # rank of each positive among the negatives (1 = closer than all of them)
        rank = (d_neg[None, :] < d_pos[:, None]).sum(dim=1) + 1
        ranks.append(rank.float())
        order = torch.sort(d_pos).values
        rank_all = (d_neg[None, :] < order[:, None]).sum(dim=1) + torch.arange(
            1, order.numel() + 1)
        precision = torch.arange(1, order.numel() + 1).float() / rank_all.float()
        aps.append(precision.mean())
    return torch.cat(ranks).mean().item(), torch.stack(aps).mean().item()


# ----------------------------------------------------- fixed-weight checks (recorded)

fixed_results["n_pairs"] = n_pairs
fixed_results["counts"] = counts
fixed_results["closure_rows"] = closure.sum(dim=1)

manifold = PoincareManifold()
u = (torch.rand(10, 5, dtype=torch.float64) - 0.5) * 0.6
v = (torch.rand(10, 5, dtype=torch.float64) - 0.5) * 0.6
v[3] = u[3]  # d(u, u) = 0: the Function's clamp keeps its gradient finite
u.requires_grad_()
v.requires_grad_()
upstream = torch.rand(10, dtype=torch.float64)
d_fn = manifold.distance(u, v)
g_fn = torch.autograd.grad(d_fn, (u, v), upstream)
d_acosh = poincare_distance_acosh(u, v)
fixed_results["distance"] = d_fn.detach()
fixed_results["distance_acosh"] = d_acosh.detach()
fixed_results["distance_grads"] = {"u": g_fn[0], "v": g_fn[1]}
# away from u == v the two gradients agree
keep = torch.arange(10) != 3
g_acosh = torch.autograd.grad(d_acosh[keep], (u, v), upstream[keep])
distance_grad_gap = max((g_fn[0][keep] - g_acosh[0][keep]).abs().max().item(),
                        (g_fn[1][keep] - g_acosh[1][keep]).abs().max().item())
fixed_results["distance_acosh_grads"] = {"u": g_acosh[0], "v": g_acosh[1]}
gradcheck_distance = torch.autograd.gradcheck(
    lambda a, b: PoincareDistance.apply(a, b, 1e-5),
    (u[keep][:4].detach().requires_grad_(), v[keep][:4].detach().requires_grad_()))
# the distance is a metric: symmetric, and the triangle inequality holds
w = (torch.rand(10, 5, dtype=torch.float64) - 0.5) * 0.6
with torch.no_grad():
    d_uv, d_vu = manifold.distance(u, v), manifold.distance(v, u)
    d_uw, d_wv = manifold.distance(u, w), manifold.distance(w, v)
symmetric_gap = (d_uv - d_vu).abs().max().item()
triangle_holds = bool((d_uv <= d_uw + d_wv + 1e-12).all())
# the exponential map moves a geodesic distance of |v|_x = lambda_x |v| (2 |v| at 0)
origin = torch.zeros(1, 2, dtype=torch.float64)
origin_step = torch.tensor([[0.3, -0.4]], dtype=torch.float64)
moved = manifold._expmap_dense(origin, origin_step)
expmap_origin_gap = abs(manifold.distance(origin, moved).item() - 2 * 0.5)
point = torch.tensor([[0.5, 0.2]], dtype=torch.float64)
lam_point = 2 / (1 - point.pow(2).sum())
step_at_point = 0.1 * origin_step
expmap_point_gap = abs(manifold.distance(point, manifold._expmap_dense(point, step_at_point))
                       .item() - (lam_point * step_at_point.norm()).item())

# one forward/backward/step on fixed weights, sparse and dense gradients
batch_gen = torch.Generator().manual_seed(1)
idx = torch.randperm(n_pairs, generator=batch_gen)[:8]
inputs, targets = make_batch(idx, n_neg=6, burnin=True, generator=batch_gen)
fixed_results["batch_inputs"] = inputs
step_results = {}
for sparse in (True, False):
    torch.manual_seed(2)
    model = PoincareEmbedding(n_nodes, 5, manifold, sparse=sparse)
    with torch.no_grad():
        model.lt.weight.mul_(300)  # spread out (|w| < 0.52) so the metric factor matters
    optimizer = RiemannianSGD(model.parameters(), lr=0.5, manifold=manifold)
    logits = model(inputs)
    loss = model.loss(logits, targets)
    optimizer.zero_grad()
    loss.backward()
    grad = model.lt.weight.grad
    step_results[sparse] = {
        "layout": str(grad.layout),
        "logits": logits.detach(),
        "loss": loss.item(),
        "grad": grad.to_dense() if grad.is_sparse else grad.clone(),
        "grad_rows": grad.coalesce().indices()[0] if grad.is_sparse else None,
    }
    optimizer.step()
    step_results[sparse]["weight"] = model.lt.weight.detach().clone()
    step_results[sparse]["state_step"] = optimizer.state[model.lt.weight]["step"]
fixed_results["step_logits"] = step_results[True]["logits"]
fixed_results["step_loss"] = step_results[True]["loss"]
fixed_results["step_grad"] = step_results[True]["grad"]
fixed_results["step_weight"] = step_results[True]["weight"]
sparse_dense_weight_gap = (step_results[True]["weight"]
                           - step_results[False]["weight"]).abs().max().item()

# the exact exponential map step, sparse gradient
torch.manual_seed(2)
model = PoincareEmbedding(n_nodes, 5, manifold, sparse=True)
with torch.no_grad():
    model.lt.weight.mul_(300)
before = model.lt.weight.detach().clone()
optimizer = RiemannianSGD(model.parameters(), lr=0.5, manifold=manifold, retraction="expmap")
model.loss(model(inputs), targets).backward()
optimizer.step()
fixed_results["expmap_weight"] = model.lt.weight.detach().clone()
untouched = ~torch.isin(torch.arange(n_nodes), inputs.unique())
expmap_untouched_rows_same = torch.equal(model.lt.weight[untouched], before[untouched])

# near the boundary the projection keeps every row strictly inside the ball
edge = torch.randn(6, 5)
edge = edge / edge.norm(dim=1, keepdim=True) * torch.linspace(0.5, 1.5, 6)[:, None]
projected = manifold.normalize(edge.clone())
fixed_results["projected_norms"] = projected.norm(dim=1)

# ------------------------------------------------------------------------------ training


def train(sparse, epochs=200, burnin=10, lr=0.5, dim=5, n_neg=10, batch_size=16, seed=3):
    torch.manual_seed(seed)
    model = PoincareEmbedding(n_nodes, dim, manifold, sparse=sparse)
    optimizer = RiemannianSGD(model.parameters(), lr=lr, manifold=manifold)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for epoch in range(epochs):
        in_burnin = epoch < burnin
        epoch_lr = lr / 10 if in_burnin else lr
        perm = torch.randperm(n_pairs, generator=gen)
        total = 0.0
        for start in range(0, n_pairs, batch_size):
            idx = perm[start:start + batch_size]
            inputs, targets = make_batch(idx, n_neg, in_burnin, gen)
            optimizer.zero_grad()
            loss = model.loss(model(inputs), targets)
            loss.backward()
            optimizer.step(lr=epoch_lr)
            total += loss.item() * idx.shape[0]
        losses.append(total / n_pairs)
    return model, optimizer, losses


model, optimizer, losses = train(sparse=True)
dense_model, _, dense_losses = train(sparse=False)
sparse_dense_train_gap = (model.lt.weight - dense_model.lt.weight).abs().max().item()
mean_rank, mean_ap = reconstruction(model)
final_steps = optimizer.state[model.lt.weight]["step"]
# the optimiser's state (its step counts) and groups survive a state_dict round trip
restored = RiemannianSGD(dense_model.parameters(), lr=0.01, manifold=manifold)
restored.load_state_dict(optimizer.state_dict())
restored_group = {k: v for k, v in restored.param_groups[0].items() if k != "params"}
restored_steps = restored.state[dense_model.lt.weight]["step"]

with torch.no_grad():
    norms = model.lt.weight.norm(dim=1)
    max_norm = norms.max().item()
    mean_norm_by_depth = [norms[depth == d].mean().item() for d in range(int(depth.max()) + 1)]
    root_is_closest = norms.argmin().item() == index["mammal"]
    dist = model.distance_matrix()
    dist.fill_diagonal_(float("inf"))
    nearest = {n: names[dist[index[n]].argmin().item()]
               for n in ("dog", "lion", "gorilla", "mouse")}

print(f"pairs {n_pairs}, loss {losses[0]:.3f} -> {losses[-1]:.3f} (dense {dense_losses[-1]:.3f}),"
      f" mean rank {mean_rank:.2f}, MAP {mean_ap:.3f}, norms by depth "
      f"{[round(x, 2) for x in mean_norm_by_depth]}, nearest {nearest}")
