# ruff: noqa: N812, N806 (the usual F alias; few-shot code's N/K/Q names)
"""Few-shot and meta-learning in three parts, written for these tests the way Prototypical
Networks code (Snell et al. 2017), OpenAI's Reptile sine-wave demo and hypernetwork / torch.func
meta-learning code write torch code (not a copy of any of them):

- Prototypical Networks on synthetic few-shot episodes: N-way K-shot support/query sampling
  with ``torch.randperm`` and ``torch.Generator`` (``manual_seed``, ``get_state``/``set_state``,
  ``torch.randn(generator=...)``), a conv4-style embedding (``nn.Conv2d``, ``nn.BatchNorm2d``,
  ``nn.MaxPool2d``, ``nn.Flatten``), prototypes as the mean of the support embeddings, squared
  Euclidean distances by hand (``unsqueeze``/``expand``/``pow``/``sum``) and by ``torch.cdist``
  (both ``compute_mode``\\ s, ``p=1``, batched over episodes and under ``vmap``),
  ``F.log_softmax`` over negative distances, ``gather``, ``max``, ``F.cross_entropy``,
  ``F.cosine_similarity``, accuracy by ``torch.eq``; Adam with ``StepLR``; evaluation on
  held-out classes under ``model.eval()`` and ``torch.no_grad()``;
- Reptile: inner SGD loops on ``copy.deepcopy``\\ d models (``p.data -= lr * p.grad.data`` and
  ``torch.optim.SGD``), the outer interpolation by ``state_dict``/``load_state_dict``, by
  ``p.data.add_`` under ``torch.no_grad`` and by ``Tensor.lerp_``, and the "Reptile gradient"
  (``p.grad = p.data - q.data``) fed to an outer Adam; ``parameters_to_vector``;
- a hypernetwork that maps a task embedding (``nn.Embedding``) to the flat weights of a small
  target MLP, cut by ``torch.split``/``view`` into a dict and applied with
  ``torch.func.functional_call`` (the target keeps a buffer that the dict leaves out) and by
  hand with ``F.linear``; a batched version with ``torch.func.vmap`` over tasks (a dict of
  batched weights, ``in_dims=(0, 0, 0)``), ``torch.func.grad`` (with ``has_aux``) for the
  MAML-style inner loop from the generated weights, second-order meta-gradients through it by
  ``torch.autograd.grad(create_graph=True)``, by ``vmap`` and by a nested ``torch.func.grad``;
  ``torch.autograd.gradcheck``/``gradgradcheck`` on the inner-loop in float64.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import warnings
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.func import functional_call, grad, vmap
from jitgrad.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(0)
fixed_results = {}

# ================================================================ Prototypical Networks


def make_dataset(n_classes, n_per_class, generator, size=8):
    """Each class is a random 'stroke' template on an 8x8 canvas; examples are noisy, randomly
    shifted copies of it: (n_classes, n_per_class, 1, size, size)."""
    templates = (torch.rand(n_classes, 1, size, size, generator=generator) > 0.6).float()
    images = templates.unsqueeze(1).repeat(1, n_per_class, 1, 1, 1)
    shifts = torch.randint(-1, 2, (n_classes, n_per_class, 2), generator=generator)
    out = torch.empty_like(images)
    for c in range(n_classes):
        for i in range(n_per_class):
            dy, dx = shifts[c, i].tolist()
            out[c, i] = torch.roll(images[c, i], shifts=(dy, dx), dims=(1, 2))
    noise = 0.3 * torch.randn(out.shape, generator=generator)
    return out + noise


def sample_episode(data, n_way, k_shot, n_query, generator):
    """An N-way K-shot episode: support (N, K, ...) and query (N, Q, ...)."""
    n_classes, n_examples = data.shape[:2]
    classes = torch.randperm(n_classes, generator=generator)[:n_way]
    support, query = [], []
    for c in classes:
        idx = torch.randperm(n_examples, generator=generator)[:k_shot + n_query]
        examples = data[c][idx]
        support.append(examples[:k_shot])
        query.append(examples[k_shot:])
    return torch.stack(support), torch.stack(query), classes


def conv_block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


class ProtoNet(nn.Module):
    def __init__(self, x_dim=1, hid_dim=16, z_dim=16):
        super().__init__()
        self.encoder = nn.Sequential(
            conv_block(x_dim, hid_dim),
            conv_block(hid_dim, z_dim),
            nn.Flatten(),
        )

    def forward(self, x):
        return self.encoder(x)


def euclidean_dist(x, y):
    """Squared distances between x (n, d) and y (m, d), as the original code writes it."""
    n, m, d = x.size(0), y.size(0), x.size(1)
    assert d == y.size(1)
    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)
    return torch.pow(x - y, 2).sum(2)


def proto_loss(model, support, query, dist="hand"):
    n_way, k_shot = support.shape[:2]
    n_query = query.size(1)
    target_inds = torch.arange(0, n_way).view(n_way, 1, 1).expand(n_way, n_query, 1).long()
    x = torch.cat([support.reshape(n_way * k_shot, *support.shape[2:]),
                   query.reshape(n_way * n_query, *query.shape[2:])], 0)
    z = model(x)
    z_dim = z.size(-1)
    z_proto = z[:n_way * k_shot].view(n_way, k_shot, z_dim).mean(1)
    zq = z[n_way * k_shot:]
    if dist == "hand":
        dists = euclidean_dist(zq, z_proto)
    else:
        dists = torch.cdist(zq, z_proto, compute_mode=dist).pow(2)
    log_p_y = F.log_softmax(-dists, dim=1).view(n_way, n_query, -1)
    loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
    _, y_hat = log_p_y.max(2)
    acc_val = torch.eq(y_hat, target_inds.squeeze()).float().mean()
    return loss_val, {"loss": loss_val.item(), "acc": acc_val.item()}, dists


data_gen = torch.Generator().manual_seed(1234)
all_classes = make_dataset(24, 12, data_gen)
train_classes, test_classes = all_classes[:16], all_classes[16:]
episode_gen = torch.Generator()
episode_gen.manual_seed(5)

# the generator's state replays an episode exactly
state = episode_gen.get_state()
first = sample_episode(train_classes, 5, 1, 3, episode_gen)
episode_gen.set_state(state)
again = sample_episode(train_classes, 5, 1, 3, episode_gen)
episode_replayed = bool(torch.equal(first[0], again[0]) and torch.equal(first[2], again[2]))
episode_classes = first[2].tolist()

protonet = ProtoNet()
optimizer = torch.optim.Adam(protonet.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
proto_losses, proto_accs = [], []
n_way, k_shot, n_query = 5, 2, 3
for _ in range(50):
    protonet.train()
    support, query, _ = sample_episode(train_classes, n_way, k_shot, n_query, episode_gen)
    optimizer.zero_grad()
    loss, output, _ = proto_loss(protonet, support, query)
    loss.backward()
    optimizer.step()
    scheduler.step()
    proto_losses.append(output["loss"])
    proto_accs.append(output["acc"])
proto_lrs = [group["lr"] for group in optimizer.param_groups]
print(f"protonet loss {np.mean(proto_losses[:10]):.3f} -> {np.mean(proto_losses[-10:]):.3f}")


def evaluate(model, data, episodes, n_way, k_shot, n_query, seed):
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    accs = []
    with torch.no_grad():
        for _ in range(episodes):
            support, query, _ = sample_episode(data, n_way, k_shot, n_query, gen)
            _, output, _ = proto_loss(model, support, query)
            accs.append(output["acc"])
    return float(np.mean(accs))


test_acc = evaluate(protonet, test_classes, 20, 5, 2, 3, seed=99)
untrained_acc = evaluate(ProtoNet(), test_classes, 20, 5, 2, 3, seed=99)
print(f"held-out 5-way 2-shot accuracy {test_acc:.3f} (untrained {untrained_acc:.3f})")

# ----------------------------------------------------------- (recorded) on fixed weights
fixed_proto = ProtoNet()
w_rng = np.random.default_rng(11)
with torch.no_grad():
    for p in fixed_proto.parameters():
        p.copy_(torch.from_numpy(w_rng.normal(0.0, 0.4, size=tuple(p.shape)).astype(np.float32)))
fixed_gen = torch.Generator().manual_seed(3)
f_support, f_query, f_classes = sample_episode(train_classes, 4, 3, 2, fixed_gen)
proto_fixed = {"classes": f_classes.clone(), "support": f_support.clone()}
fixed_proto.train()
for mode in ("hand", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
    fixed_proto.zero_grad()
    loss, output, dists = proto_loss(fixed_proto, f_support, f_query, dist=mode)
    loss.backward()
    proto_fixed[mode] = {
        "loss": loss.item(),
        "acc": output["acc"],
        "dists": dists.detach().clone(),
        "grads": {k: p.grad.clone() for k, p in fixed_proto.named_parameters()},
    }
# the running statistics after three train-mode forwards, then an eval-mode forward
proto_fixed["running_mean"] = fixed_proto.encoder[0][1].running_mean.clone()
proto_fixed["running_var"] = fixed_proto.encoder[1][1].running_var.clone()
fixed_proto.eval()
with torch.no_grad():
    proto_fixed["eval_embedding"] = fixed_proto(f_query[0]).clone()

# the same loss as cross-entropy over the negative distances (labels by repeat_interleave)
fixed_proto.train()
z = fixed_proto(torch.cat([f_support.flatten(0, 1), f_query.flatten(0, 1)]))
prototypes = z[:12].view(4, 3, -1).mean(dim=1)
logits = -torch.cdist(z[12:], prototypes) ** 2
labels = torch.arange(4).repeat_interleave(2)
proto_fixed["ce_loss"] = F.cross_entropy(logits, labels).item()
proto_fixed["cosine_logits"] = F.cosine_similarity(
    z[12:].unsqueeze(1), prototypes.unsqueeze(0), dim=-1).detach().clone()
proto_fixed["cdist_p1"] = torch.cdist(z[12:], prototypes, p=1).detach().clone()

# a batch of three episodes at once (eval mode: BatchNorm does not mix the episodes):
# batched torch.cdist over (B, N*Q, D) x (B, N, D), and vmap of the per-episode logits
fixed_proto.eval()
episodes = [sample_episode(train_classes, 4, 3, 2, fixed_gen)[:2] for _ in range(3)]
b_support = torch.stack([s for s, _ in episodes])  # (B, N, K, 1, 8, 8)
b_query = torch.stack([q for _, q in episodes])  # (B, N, Q, 1, 8, 8)
with torch.no_grad():
    zs = fixed_proto(b_support.flatten(0, 2)).view(3, 4, 3, -1)
    zq = fixed_proto(b_query.flatten(0, 2)).view(3, 8, -1)
b_protos = zs.mean(dim=2)
b_logits = -torch.cdist(zq, b_protos).pow(2)
proto_fixed["batched_logits"] = b_logits.clone()
proto_fixed["vmap_logits"] = vmap(lambda q, p: -euclidean_dist(q, p))(zq, b_protos).clone()
# (cdist has a batching rule: no warning)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    vmap_cdist = vmap(lambda q, p: -torch.cdist(q, p).pow(2))(zq, b_protos)
vmap_warnings = [str(w.message) for w in caught]
proto_fixed["vmap_cdist_logits"] = vmap_cdist.clone()
b_labels = torch.arange(4).repeat_interleave(2).expand(3, 8)
proto_fixed["batched_ce"] = F.cross_entropy(b_logits.transpose(1, 2), b_labels,
                                            reduction="none").clone()
proto_fixed["batched_acc"] = (b_logits.argmax(-1) == b_labels).float().mean(1).clone()
fixed_results["proto"] = proto_fixed

# ================================================================================ Reptile


def gen_task(rng):
    phase = rng.uniform(low=0, high=2 * np.pi)
    ampl = rng.uniform(0.1, 5)
    return lambda x: np.sin(x + phase) * ampl


def to_t(a):
    return torch.tensor(a, dtype=torch.float32)


def sine_model(hidden=24):
    return nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, 1))


def train_on_batch(model, x, y, inner_lr):
    model.zero_grad()
    ypred = model(x)
    loss = (ypred - y).pow(2).mean()
    loss.backward()
    for param in model.parameters():
        param.data -= inner_lr * param.grad.data
    return loss.item()


x_all = np.linspace(-5, 5, 50)[:, None]
reptile_rng = np.random.RandomState(0)
reptile = sine_model()
inner_lr, inner_epochs, outer_lr0, reptile_iters = 0.05, 2, 0.5, 100
reptile_losses = []
for iteration in range(reptile_iters):
    weights_before = copy.deepcopy(reptile.state_dict())
    f = gen_task(reptile_rng)
    y_all = f(x_all)
    inds = reptile_rng.permutation(len(x_all))
    task_losses = []
    for _ in range(inner_epochs):
        for start in range(0, len(x_all), 10):
            mb = inds[start:start + 10]
            task_losses.append(train_on_batch(reptile, to_t(x_all[mb]), to_t(y_all[mb]), inner_lr))
    reptile_losses.append(task_losses[-1])
    weights_after = reptile.state_dict()
    outer_lr = outer_lr0 * (1 - iteration / reptile_iters)
    reptile.load_state_dict({name: weights_before[name]
                             + (weights_after[name] - weights_before[name]) * outer_lr
                             for name in weights_before})

# evaluate: 32 SGD steps on 10 points of a new sine, the loss on the full curve before/after
eval_rng = np.random.RandomState(1)
reptile_eval, scratch_eval = [], []
scratch = sine_model()
for _ in range(4):
    f = gen_task(eval_rng)
    y_all = f(x_all)
    pts = eval_rng.choice(len(x_all), size=10, replace=False)
    clone = copy.deepcopy(reptile)
    with torch.no_grad():
        before = (clone(to_t(x_all)) - to_t(y_all)).pow(2).mean().item()
    for _ in range(32):
        train_on_batch(clone, to_t(x_all[pts]), to_t(y_all[pts]), inner_lr)
    with torch.no_grad():
        after = (clone(to_t(x_all)) - to_t(y_all)).pow(2).mean().item()
    reptile_eval.append((before, after))
    fresh = copy.deepcopy(scratch)
    for _ in range(32):
        train_on_batch(fresh, to_t(x_all[pts]), to_t(y_all[pts]), inner_lr)
    with torch.no_grad():
        scratch_eval.append((fresh(to_t(x_all)) - to_t(y_all)).pow(2).mean().item())
print("reptile before/after adaptation:", [(round(a, 3), round(b, 3)) for a, b in reptile_eval])
deepcopy_independent = all(p is not q and p.data_ptr() != q.data_ptr()
                           for p, q in zip(reptile.parameters(), clone.parameters()))

# ---------------------------------------------------------------- (recorded) on fixed weights
torch.manual_seed(21)
base = sine_model(hidden=8)
fixed_rng = np.random.RandomState(3)
tasks = []
for _ in range(3):
    f = gen_task(fixed_rng)
    xs = fixed_rng.uniform(-5, 5, size=(10, 1))
    tasks.append((to_t(xs), to_t(f(xs))))
reptile_fixed = {"init": parameters_to_vector(base.parameters()).detach().clone()}


def inner_sgd(model, x, y, steps, lr):
    """The inner loop with an optimizer, on a deep copy: returns the adapted copy."""
    learner = copy.deepcopy(model)
    opt = torch.optim.SGD(learner.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(learner(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return learner, losses


# (a) serial Reptile with lerp_, (b) the same step by p.data.add_ by hand, (c) batched Reptile
model_a, model_b = copy.deepcopy(base), copy.deepcopy(base)
inner_losses = []
for x, y in tasks:
    learner, losses = inner_sgd(model_a, x, y, steps=4, lr=0.05)
    inner_losses.append(losses)
    with torch.no_grad():
        for p, q in zip(model_a.parameters(), learner.parameters()):
            p.lerp_(q, 0.5)
    learner_b, _ = inner_sgd(model_b, x, y, steps=4, lr=0.05)
    for p, q in zip(model_b.parameters(), learner_b.parameters()):
        p.data.add_(q.data - p.data, alpha=0.5)
reptile_fixed["inner_losses"] = inner_losses
reptile_fixed["serial_lerp"] = parameters_to_vector(model_a.parameters()).detach().clone()
reptile_fixed["serial_add"] = parameters_to_vector(model_b.parameters()).detach().clone()

model_c = copy.deepcopy(base)
adapted = [inner_sgd(model_c, x, y, steps=4, lr=0.05)[0] for x, y in tasks]
with torch.no_grad():
    for name, p in model_c.named_parameters():
        mean_adapted = torch.stack([dict(m.named_parameters())[name] for m in adapted]).mean(0)
        p.lerp_(mean_adapted, torch.full_like(p, 0.25))
reptile_fixed["batched_lerp"] = parameters_to_vector(model_c.parameters()).detach().clone()

# (d) the Reptile "gradient" p - phi to an outer Adam, two outer steps
model_d = copy.deepcopy(base)
outer_opt = torch.optim.Adam(model_d.parameters(), lr=0.01)
for x, y in tasks[:2]:
    learner, _ = inner_sgd(model_d, x, y, steps=3, lr=0.05)
    outer_opt.zero_grad()
    for p, q in zip(model_d.parameters(), learner.parameters()):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        p.grad.data.add_(p.data - q.data)
    outer_opt.step()
reptile_fixed["adam"] = parameters_to_vector(model_d.parameters()).detach().clone()

# vector_to_parameters writes a flat vector back (here the lerp result into a fresh copy)
model_e = copy.deepcopy(base)
vector_to_parameters(reptile_fixed["serial_lerp"], model_e.parameters())
reptile_fixed["roundtrip"] = model_e(tasks[0][0]).detach().clone()
fixed_results["reptile"] = reptile_fixed

# ========================================================================== Hypernetwork


class TargetNet(nn.Module):
    """The small MLP whose weights the hypernetwork writes; it scales its input by a buffer
    that the generated dict leaves out (functional_call then uses the module's own)."""

    def __init__(self, hidden=12):
        super().__init__()
        self.fc1 = nn.Linear(1, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)
        self.register_buffer("input_scale", torch.tensor(0.2))

    def forward(self, x):
        x = x * self.input_scale
        x = torch.tanh(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.out(x)


target = TargetNet()
target_shapes = {k: tuple(p.shape) for k, p in target.named_parameters()}
target_numels = [math.prod(s) for s in target_shapes.values()]
n_target = sum(target_numels)


class HyperNet(nn.Module):
    """Task id -> embedding -> MLP -> the flat weights of the target net."""

    def __init__(self, n_tasks, emb_dim=4, hidden=32):
        super().__init__()
        self.embedding = nn.Embedding(n_tasks, emb_dim)
        self.body = nn.Sequential(nn.Linear(emb_dim, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_target)
        with torch.no_grad():
            self.head.weight.mul_(0.1)

    def forward(self, task_ids):
        return self.head(self.body(self.embedding(task_ids)))


def unflatten(flat):
    """A flat (..., n_target) vector to the target's parameter dict, batched or not."""
    chunks = torch.split(flat, target_numels, dim=-1)
    lead = flat.shape[:-1]
    return {k: c.reshape(*lead, *shape) for (k, shape), c in zip(target_shapes.items(), chunks)}


def target_by_hand(w, x):
    x = x * 0.2
    x = torch.tanh(F.linear(x, w["fc1.weight"], w["fc1.bias"]))
    x = torch.tanh(F.linear(x, w["fc2.weight"], w["fc2.bias"]))
    return F.linear(x, w["out.weight"], w["out.bias"])


def support_loss(weights, x, y):
    pred = functional_call(target, weights, (x,))
    return F.mse_loss(pred, y), pred


def adapt(weights, x, y, lr, steps):
    """MAML-style inner loop from the generated weights, by torch.func.grad."""
    for _ in range(steps):
        g, _ = grad(support_loss, has_aux=True)(weights, x, y)
        weights = {k: w - lr * g[k] for k, w in weights.items()}
    return weights


def task_loss(flat, xs, ys, xq, yq, lr=0.1, steps=1):
    adapted_w = adapt(unflatten(flat), xs, ys, lr, steps)
    return F.mse_loss(functional_call(target, adapted_w, (xq,)), yq)


def sine_tasks(rng, n, k):
    amp = rng.uniform(0.5, 2.0, size=(n, 1, 1))
    phase = rng.uniform(0, np.pi, size=(n, 1, 1))
    x = rng.uniform(-5, 5, size=(n, 2 * k, 1))
    y = amp * np.sin(x + phase)
    x, y = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32))
    return x[:, :k], y[:, :k], x[:, k:], y[:, k:]


# -------------------------------------------------------------------------- meta-training
n_tasks = 6
hyper = HyperNet(n_tasks)
task_data = sine_tasks(np.random.default_rng(0), n_tasks, 10)
task_ids = torch.arange(n_tasks)
batched_loss = vmap(task_loss, in_dims=(0, 0, 0, 0, 0))
hyper_opt = torch.optim.Adam(hyper.parameters(), lr=5e-3)
hyper_losses = []
for _ in range(60):
    hyper_opt.zero_grad()
    loss = batched_loss(hyper(task_ids), *task_data).mean()
    loss.backward()
    hyper_opt.step()
    hyper_losses.append(loss.item())
print(f"hypernet meta-loss {hyper_losses[0]:.3f} -> {hyper_losses[-1]:.3f}")

# ---------------------------------------------------------------- (recorded) on fixed weights
torch.manual_seed(31)
fixed_hyper = HyperNet(3, emb_dim=3, hidden=8)
h_rng = np.random.default_rng(17)
with torch.no_grad():
    for p in fixed_hyper.parameters():
        p.copy_(torch.from_numpy(h_rng.normal(0.0, 0.3, size=tuple(p.shape)).astype(np.float32)))
xs, ys, xq, yq = sine_tasks(np.random.default_rng(5), 3, 6)
ids = torch.tensor([0, 1, 2])
hyper_fixed = {}

flat = fixed_hyper(ids)
weights = unflatten(flat)
hyper_fixed["shapes"] = {k: list(v.shape) for k, v in weights.items()}
one = unflatten(flat[0])
hyper_fixed["functional_call"] = functional_call(target, one, (xs[0],)).detach().clone()
hyper_fixed["by_hand"] = target_by_hand(one, xs[0]).detach().clone()
# vmap over a dict of batched weights and a batch of inputs
pred_batched = vmap(lambda w, x: functional_call(target, w, (x,)))(weights, xs)
hyper_fixed["vmap_forward"] = pred_batched.detach().clone()
hyper_fixed["vmap_by_hand"] = vmap(target_by_hand, in_dims=(0, 0))(weights, xs).detach().clone()

# fixed-weight loss and gradients of the plain (no adaptation) loss
plain = torch.stack([F.mse_loss(functional_call(target, unflatten(flat[i]), (xq[i],)), yq[i])
                     for i in range(3)]).mean()
hyper_fixed["plain_loss"] = plain.item()
hyper_fixed["plain_grads"] = [g.clone() for g in torch.autograd.grad(
    plain, list(fixed_hyper.parameters()), retain_graph=True)]

# second-order meta-gradients: a loop with autograd.grad(create_graph=True) ...
meta_losses = []
for i in range(3):
    w = unflatten(flat[i])
    for _ in range(2):
        inner = F.mse_loss(functional_call(target, w, (xs[i],)), ys[i])
        gs = torch.autograd.grad(inner, list(w.values()), create_graph=True)
        w = {k: v - 0.1 * g for (k, v), g in zip(w.items(), gs)}
    meta_losses.append(F.mse_loss(functional_call(target, w, (xq[i],)), yq[i]))
loop_loss = torch.stack(meta_losses).mean()
hyper_fixed["loop_meta_loss"] = loop_loss.item()
hyper_fixed["loop_meta_grads"] = [g.clone() for g in torch.autograd.grad(
    loop_loss, list(fixed_hyper.parameters()), retain_graph=True)]

# ... by vmap over tasks of torch.func.grad's inner loop ...
vmapped = vmap(task_loss, in_dims=(0, 0, 0, 0, 0, None, None))(flat, xs, ys, xq, yq, 0.1, 2)
hyper_fixed["vmap_per_task"] = vmapped.detach().clone()
hyper_fixed["vmap_meta_grads"] = [g.clone() for g in torch.autograd.grad(
    vmapped.mean(), list(fixed_hyper.parameters()), retain_graph=True)]

# ... and first order (the inner gradients detached) for contrast
first_losses = []
for i in range(3):
    w = unflatten(flat[i])
    for _ in range(2):
        inner = F.mse_loss(functional_call(target, w, (xs[i],)), ys[i])
        gs = torch.autograd.grad(inner, list(w.values()), retain_graph=True)
        w = {k: v - 0.1 * g for (k, v), g in zip(w.items(), gs)}
    first_losses.append(F.mse_loss(functional_call(target, w, (xq[i],)), yq[i]))
hyper_fixed["first_order_grads"] = [g.clone() for g in torch.autograd.grad(
    torch.stack(first_losses).mean(), list(fixed_hyper.parameters()))]

# a nested torch.func.grad: the meta-gradient w.r.t. the hypernet's parameters as a dict
hyper_params = {k: v.detach() for k, v in fixed_hyper.named_parameters()}


def meta_objective(params):
    flat_w = functional_call(fixed_hyper, params, (ids,))
    return vmap(task_loss, in_dims=(0, 0, 0, 0, 0, None, None))(flat_w, xs, ys, xq, yq,
                                                                  0.1, 2).mean()


nested = grad(meta_objective)(hyper_params)
hyper_fixed["nested_meta_grads"] = [nested[k].clone() for k in hyper_params]
fixed_results["hyper"] = hyper_fixed

# gradcheck / gradgradcheck of one inner step + query loss in float64, w.r.t. the flat weights
# of a smaller target (hidden 3: 22 weights)
target64 = TargetNet(hidden=3).double()
shapes64 = {k: tuple(p.shape) for k, p in target64.named_parameters()}
numels64 = [math.prod(s) for s in shapes64.values()]


def one_step_query(flat64):
    w = {k: c.reshape(s) for (k, s), c in zip(shapes64.items(), torch.split(flat64, numels64))}
    inner = F.mse_loss(functional_call(target64, w, (xs[0].double(),)), ys[0].double())
    gs = torch.autograd.grad(inner, list(w.values()), create_graph=True)
    w = {k: v - 0.1 * g for (k, v), g in zip(w.items(), gs)}
    return F.mse_loss(functional_call(target64, w, (xq[0].double(),)), yq[0].double())


flat64 = torch.from_numpy(h_rng.normal(0.0, 0.5, size=sum(numels64))).requires_grad_()
gradchecks = {
    "gradcheck": torch.autograd.gradcheck(one_step_query, (flat64,), eps=1e-6, atol=1e-5),
    "gradgradcheck": torch.autograd.gradgradcheck(one_step_query, (flat64,), eps=1e-6,
                                                  atol=1e-5),
}
meta_grad64 = torch.autograd.grad(one_step_query(flat64), flat64)[0]
fixed_results["meta_grad64"] = meta_grad64.clone()
print("gradchecks:", gradchecks)
