# ruff: noqa: N812 (the usual F alias)
"""Multi-task gradient manipulation and continual learning, written for these tests the way
public PyTorch code writes them (Pytorch-PCGrad, GradNorm re-implementations, MGDA-UB's
min-norm solver, CAGrad's MTRL code, Kendall et al.'s uncertainty weighting, the EWC / SI /
A-GEM tutorials and repositories), not a copy of any:

- a shared trunk with three heads (two regressions that pull the trunk apart, one 3-way
  classification); per-task gradients with ``torch.autograd.grad(..., retain_graph=True,
  allow_unused=True)``, flattened with ``torch.cat([g.flatten() ...])`` and
  ``parameters_to_vector``; written back to ``p.grad`` by slicing and through
  ``vector_to_parameters`` onto the ``.grad`` tensors; ``optimizer.step()``;
- PCGrad: projection of conflicting gradients in a random task order drawn from a seeded
  ``torch.Generator`` with ``torch.randperm``, in place on the rows of the stacked gradients;
- MGDA: the two-task min-norm closed form with ``torch.clamp`` and Frank-Wolfe for three;
  CAGrad with its inner ``SGD`` over softmax task weights;
- GradNorm: gradient norms of the last shared layer w.r.t. learnable task weights with
  ``create_graph=True``, an L1 loss against detached targets, a second optimizer for the
  weights, renormalised under ``torch.no_grad``;
- uncertainty weighting with learnable log-variances;
- ``register_hook`` on parameters (scaling the trunk's gradients) and on a feature
  (gradient reversal); ``torch.autograd.backward`` of several losses with ``grad_tensors``;
- continual learning on two permuted tasks: a diagonal Fisher from per-sample gradients, in a
  loop and by ``torch.func.vmap(grad(...))`` over ``functional_call``; EWC's quadratic penalty
  on stored parameters; Synaptic Intelligence's path integral ``-p.grad * delta``; A-GEM's
  projection on a reference gradient from an episodic memory; forgetting of task A after
  training on task B, plain fine-tuning against each.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.func import functional_call, grad, vmap
from jitgrad.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(0)
fixed_results = {}
N_TASKS = 3


# ------------------------------------------------------------------------ multi-task model


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim=6, hidden=16, n_classes=3):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(),
                                   nn.Linear(hidden, hidden), nn.Tanh())
        self.heads = nn.ModuleList([nn.Linear(hidden, 1), nn.Linear(hidden, n_classes),
                                    nn.Linear(hidden, 1)])

    def shared_parameters(self):
        return list(self.trunk.parameters())

    def last_shared_layer(self):
        return self.trunk[2].weight

    def forward(self, x):
        z = self.trunk(x)
        return [head(z) for head in self.heads]


def make_multitask_data(n, dtype=torch.float32, noise=0.3):
    x = torch.randn(n, 6, dtype=dtype)
    s = x @ torch.linspace(-1, 1, 6, dtype=dtype)
    y0 = torch.sin(s)[:, None]
    y1 = (x[:, 0] > -0.4).long() + (x[:, 0] + x[:, 1] > 0.4).long()
    # task 2 pulls against task 0 (and is noisier: uncertainty weighting should see it)
    y2 = (-torch.sin(s) + 0.5 * torch.cos(2 * x[:, 2]) + noise * torch.randn(n, dtype=dtype))
    return x, (y0, y1, y2[:, None])


def task_losses(outputs, targets):
    return [F.mse_loss(outputs[0], targets[0]), F.cross_entropy(outputs[1], targets[1]),
            F.mse_loss(outputs[2], targets[2])]


def per_task_grads(losses, params):
    """(T, P): each task's gradient over ``params``, zeros where a task does not reach."""
    rows = []
    for loss in losses:
        grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        rows.append(torch.cat([(torch.zeros_like(p) if g is None else g).flatten()
                               for g, p in zip(grads, params)]))
    return torch.stack(rows)


def set_flat_grad(params, flat):
    offset = 0
    for p in params:
        n = p.numel()
        p.grad = flat[offset:offset + n].view_as(p).clone()
        offset += n


def pcgrad(grads, generator):
    """Pytorch-PCGrad's ``_project_conflicting``: each task's gradient loses its component
    along every other task's that it conflicts with, the others taken in a random order."""
    pc_grad = grads.clone()
    n_tasks = grads.shape[0]
    for g_i in pc_grad:  # rows are views: the projection below writes into pc_grad
        for j in torch.randperm(n_tasks, generator=generator).tolist():
            g_j = grads[j]
            g_i_g_j = torch.dot(g_i, g_j)
            if g_i_g_j < 0:
                g_i -= g_i_g_j * g_j / (g_j.norm() ** 2)
    return pc_grad


def min_norm_2(g1, g2):
    """MGDA-UB's ``_min_norm_element_from2`` on two gradients."""
    v1v1, v1v2, v2v2 = g1 @ g1, g1 @ g2, g2 @ g2
    gamma = torch.clamp((v2v2 - v1v2) / (v1v1 + v2v2 - 2 * v1v2), 0.0, 1.0)
    return gamma, gamma * g1 + (1 - gamma) * g2


def min_norm_frank_wolfe(grads, max_iter=100, stop_crit=1e-10):
    GG = grads @ grads.T
    n = GG.shape[0]
    sol = torch.full((n,), 1.0 / n, dtype=grads.dtype)
    for _ in range(max_iter):
        t = int(torch.argmin(GG @ sol))
        v1v1 = sol @ GG @ sol
        v1v2 = sol @ GG[:, t]
        v2v2 = GG[t, t]
        gamma = torch.clamp((v2v2 - v1v2) / (v1v1 + v2v2 - 2 * v1v2), 0.0, 1.0)
        new_sol = gamma * sol
        new_sol[t] += 1 - gamma
        if (new_sol - sol).abs().sum() < stop_crit:
            break
        sol = new_sol
    return sol


def cagrad(grads, alpha=0.5, rescale=1):
    """CAGrad (MTRL's torch version): the inner problem over softmax weights by SGD."""
    GG = grads @ grads.T
    n_tasks = grads.shape[0]
    g0_norm = (GG.mean() + 1e-8).sqrt()
    w = torch.zeros(n_tasks, 1, dtype=grads.dtype, requires_grad=True)
    w_opt = torch.optim.SGD([w], lr=25, momentum=0.5)
    c = (alpha * g0_norm + 1e-8).item()
    Gg = GG.mean(1, keepdim=True)
    best_obj, w_best = float("inf"), None
    for i in range(21):
        w_opt.zero_grad()
        ww = torch.softmax(w, 0)
        obj = ww.t().mm(Gg) + c * (ww.t().mm(GG).mm(ww) + 1e-8).sqrt()
        if obj.item() < best_obj:
            best_obj = obj.item()
            w_best = w.clone()
        if i < 20:
            obj.backward()
            w_opt.step()
    ww = torch.softmax(w_best, 0).detach()
    gw_norm = (ww.t().mm(GG).mm(ww) + 1e-8).sqrt()
    lmbda = c / (gw_norm + 1e-8)
    g = ((1 / n_tasks + ww * lmbda).view(-1, 1) * grads).sum(0)
    return g / (1 + alpha ** 2) if rescale == 1 else g


# -------------------------------------------------- fixed-weight checks, float64 (recorded)

model64 = MultiTaskNet().double()
x64, y64 = make_multitask_data(48, torch.float64)
params64 = list(model64.parameters())
shared64 = model64.shared_parameters()
losses64 = task_losses(model64(x64), y64)
raw = [torch.autograd.grad(loss, params64, retain_graph=True, allow_unused=True)
       for loss in losses64]
unused_pattern = [[g is None for g in row] for row in raw]
G = per_task_grads(losses64, params64)
G_shared = per_task_grads(losses64, shared64)
fixed_results["losses"] = torch.stack(losses64).detach()
fixed_results["task_grads"] = G
n_shared = sum(p.numel() for p in shared64)
flat_agrees = torch.equal(G_shared, G[:, :n_shared])
model64.zero_grad()
losses64[0].backward(retain_graph=True)
vector_agrees = torch.equal(parameters_to_vector(p.grad for p in shared64), G_shared[0])
cosines = F.cosine_similarity(G_shared[:, None], G_shared[None], dim=-1)
fixed_results["cosines"] = cosines

# PCGrad on the shared parameters (task heads keep their own gradients)
generator = torch.Generator().manual_seed(0)
pc = pcgrad(G_shared, generator)
fixed_results["pcgrad_rows"] = pc
fixed_results["pcgrad_order"] = torch.randperm(N_TASKS, generator=torch.Generator()
                                               .manual_seed(0))
pair = pcgrad(G_shared[[0, 2]], torch.Generator().manual_seed(1))
pair_dots_before = float(G_shared[0] @ G_shared[2])
pair_dots_after = [float(pair[0] @ G_shared[2]), float(pair[1] @ G_shared[0]),
                   float(pair.sum(0) @ G_shared[0]), float(pair.sum(0) @ G_shared[2])]

merged = pc.mean(0)
set_flat_grad(shared64, merged)
for head, rows in zip(model64.heads, (0, 1, 2)):
    start = n_shared + sum(p.numel() for h in model64.heads[:rows] for p in h.parameters())
    set_flat_grad(list(head.parameters()), G[rows, start:])
written_back = parameters_to_vector(p.grad for p in params64)
fixed_results["pcgrad_written"] = written_back.clone()
# the same through vector_to_parameters onto the .grad tensors themselves
model64.zero_grad(set_to_none=False)
grad_tensors_before = [p.grad for p in params64]
vector_to_parameters(written_back * 2, [p.grad for p in params64])
vtp_same_objects = all(a is p.grad for a, p in zip(grad_tensors_before, params64))
vtp_written = parameters_to_vector(p.grad for p in params64)
sgd64 = torch.optim.SGD(model64.parameters(), lr=0.1)
before_step = parameters_to_vector(model64.parameters()).detach().clone()
set_flat_grad(params64, written_back)
sgd64.step()
fixed_results["pcgrad_step"] = parameters_to_vector(model64.parameters()).detach() \
    - before_step
with torch.no_grad():
    vector_to_parameters(before_step, model64.parameters())
restored = torch.equal(parameters_to_vector(model64.parameters()), before_step)

# MGDA: the two-task closed form and Frank-Wolfe over three
gamma, d2 = min_norm_2(G_shared[0], G_shared[2])
fixed_results["mgda_gamma"] = gamma
fixed_results["mgda_direction"] = d2
grid = torch.linspace(0, 1, 201, dtype=torch.float64)[:, None]
grid_norms = (grid * G_shared[0] + (1 - grid) * G_shared[2]).norm(dim=1)
mgda_is_min = bool(d2.norm() <= grid_norms.min() + 1e-12)
mgda_dots = [float(d2 @ G_shared[0]), float(d2 @ G_shared[2])]
fw = min_norm_frank_wolfe(G_shared)
fixed_results["frank_wolfe"] = fw
d3 = fw @ G_shared
fw_dots = (G_shared @ d3).tolist()

# CAGrad
fixed_results["cagrad"] = cagrad(G_shared)
cagrad_dots = (G_shared @ fixed_results["cagrad"]).tolist()

# GradNorm: one step's norms, targets and weight gradient
gn_weights = nn.Parameter(torch.ones(N_TASKS, dtype=torch.float64))
W = model64.last_shared_layer()
outs = model64(x64)
L = torch.stack(task_losses(outs, y64))
weighted = gn_weights * L
norms = torch.stack([torch.autograd.grad(weighted[i], W, retain_graph=True,
                                         create_graph=True)[0].norm() for i in range(N_TASKS)])
initial_losses = L.detach() * torch.tensor([1.2, 0.9, 1.1], dtype=torch.float64)
loss_ratio = L.detach() / initial_losses
inverse_rate = loss_ratio / loss_ratio.mean()
target = (norms.mean() * inverse_rate ** 1.5).detach()
gn_loss = F.l1_loss(norms, target, reduction="sum")
fixed_results["gradnorm"] = {"norms": norms.detach(), "target": target, "loss": gn_loss.detach(),
                             "weights_grad": torch.autograd.grad(gn_loss, gn_weights)[0]}

# uncertainty weighting: the log-variances' gradient, zero at s = log L
log_vars = nn.Parameter(torch.zeros(N_TASKS, dtype=torch.float64))


def uncertainty_loss(losses, log_vars):
    return sum(torch.exp(-log_vars[i]) * losses[i] + log_vars[i] for i in range(len(losses)))


fixed_results["uncertainty_grad"] = torch.autograd.grad(uncertainty_loss(L, log_vars),
                                                        log_vars, retain_graph=True)[0]
at_optimum = torch.log(L.detach()).requires_grad_()
uncertainty_grad_at_optimum = torch.autograd.grad(uncertainty_loss(L.detach(), at_optimum),
                                                  at_optimum)[0]

# hooks: the trunk's gradients halved by parameter hooks; a gradient-reversal feature hook
model64.zero_grad()
sum(task_losses(model64(x64), y64)).backward()
plain_grads = [p.grad.clone() for p in params64]
handles = [p.register_hook(lambda g: g * 0.5) for p in shared64]
model64.zero_grad()
sum(task_losses(model64(x64), y64)).backward()
hooked_grads = [p.grad.clone() for p in params64]
for h in handles:
    h.remove()
model64.zero_grad()
sum(task_losses(model64(x64), y64)).backward()
after_remove_grads = [p.grad.clone() for p in params64]

z = model64.trunk(x64)
z.register_hook(lambda g: -0.3 * g)  # gradient reversal (DANN style), scaled
model64.zero_grad()
sum(task_losses([head(z) for head in model64.heads], y64)).backward()
fixed_results["reversed_grads"] = {n: p.grad.clone() for n, p in model64.named_parameters()}

# torch.autograd.backward over several losses with grad_tensors
task_weights = [0.5, 2.0, -1.0]
model64.zero_grad()
outs = model64(x64)
torch.autograd.backward(task_losses(outs, y64),
                        grad_tensors=[torch.tensor(w, dtype=torch.float64)
                                      for w in task_weights])
backward_grads = [p.grad.clone() for p in params64]
model64.zero_grad()
sum(w * loss for w, loss in zip(task_weights, task_losses(model64(x64), y64))).backward()
weighted_grads = [p.grad.clone() for p in params64]
model64.zero_grad()
outs = model64(x64)
torch.autograd.backward(outs, [torch.ones_like(outs[0]), torch.full_like(outs[1], 0.1),
                               -outs[2].detach()])
fixed_results["backward_tensors"] = {n: p.grad.clone() for n, p in model64.named_parameters()}


# the other ways the same per-task gradients are taken: materialize_grads, one batched
# autograd.grad over the stacked losses, torch.func.jacrev over functional_call,
# backward(inputs=...) restricted to the trunk
outs = model64(x64)
L = torch.stack(task_losses(outs, y64))
materialized = torch.autograd.grad(L[0], params64, retain_graph=True, materialize_grads=True)
materialized_flat = torch.cat([g.flatten() for g in materialized])
batched = torch.autograd.grad(L, params64, grad_outputs=torch.eye(N_TASKS, dtype=torch.float64),
                             retain_graph=True, is_grads_batched=True, allow_unused=True)
batched_flat = torch.cat([g.flatten(1) for g in batched], dim=1)
named64 = {n: p.detach() for n, p in model64.named_parameters()}
jac = torch.func.jacrev(
    lambda p: torch.stack(task_losses(functional_call(model64, p, (x64,)), y64)))(named64)
jacrev_flat = torch.cat([jac[n].flatten(1) for n in named64], dim=1)
model64.zero_grad(set_to_none=True)
L.sum().backward(inputs=shared64)
inputs_only = [p.grad is not None for p in params64]
fixed_results["trunk_grads_via_inputs"] = parameters_to_vector(p.grad for p in shared64)

# Aligned-MTL: the stacked gradients' Gram matrix through eigh, conditioned to the smallest
# eigenvalue; IMTL-G's closed form through torch.linalg.inv
M = G_shared @ G_shared.T
lmbda, V = torch.linalg.eigh(M)
tol = lmbda.max() * len(M) * torch.finfo(M.dtype).eps
rank = int((lmbda > tol).sum())
order = torch.argsort(lmbda, dim=-1, descending=True)
lmbda, V = lmbda[order][:rank], V[:, order][:, :rank]
sigma = torch.diag(1 / lmbda.sqrt())
B = lmbda[-1].sqrt() * ((V @ sigma) @ V.T)
aligned = (B.sum(0) / N_TASKS) @ G_shared
fixed_results["aligned_mtl"] = aligned
units = G_shared / G_shared.norm(dim=1, keepdim=True)
D = G_shared[:1] - G_shared[1:]
U = units[:1] - units[1:]
alpha_rest = G_shared[0] @ U.T @ torch.linalg.inv(D @ U.T)
imtl_alpha = torch.cat([1 - alpha_rest.sum(0, keepdim=True), alpha_rest])
imtl = imtl_alpha @ G_shared
fixed_results["imtl_alpha"] = imtl_alpha
imtl_projections = (units @ imtl).tolist()  # equal projections on every task's unit vector

# LibMTL-style weightings: GradDrop's sign-consistency mask (bool products and sums), GradVac
# towards a target cosine, DWA from a loss history, random loss weighting
torch.manual_seed(6)
purity = 0.5 * (1 + G_shared.sum(0) / (G_shared.abs().sum(0) + 1e-7))
U_drop = torch.rand_like(G_shared[0])
mask = purity.gt(U_drop) * G_shared.gt(0) + purity.lt(U_drop) * G_shared.lt(0)
fixed_results["graddrop"] = (G_shared * mask).sum(0)
mask_dtype = str(mask.dtype).split(".")[-1]
rho = torch.dot(G_shared[0], G_shared[2]) / (G_shared[0].norm() * G_shared[2].norm())
rho_target = 0.1
vac_w = G_shared[0].norm() * (rho_target * (1 - rho ** 2).sqrt()
                              - rho * (1 - rho_target ** 2) ** 0.5) \
    / (G_shared[2].norm() * (1 - rho_target ** 2) ** 0.5)
gradvac = G_shared[0] + G_shared[2] * vac_w
gradvac_cosine = float(F.cosine_similarity(gradvac, G_shared[2], dim=0))
loss_history = torch.tensor([[1.0, 0.8], [1.2, 1.1], [0.9, 0.5]], dtype=torch.float64)
fixed_results["dwa"] = N_TASKS * F.softmax(loss_history[:, -1] / loss_history[:, -2] / 2.0,
                                           dim=-1)
fixed_results["rlw"] = F.softmax(torch.randn(N_TASKS, dtype=torch.float64), dim=-1)

# GEM's store_grad / overwrite_grad: gradients in the columns of one (P, T) matrix
grad_dims = [p.numel() for p in shared64]
gem_grads = torch.zeros(sum(grad_dims), N_TASKS, dtype=torch.float64)
for tid, loss in enumerate(task_losses(model64(x64), y64)):
    model64.zero_grad()
    loss.backward(retain_graph=True)
    gem_grads[:, tid].fill_(0.0)
    for cnt, p in enumerate(shared64):
        beg, en = sum(grad_dims[:cnt]), sum(grad_dims[:cnt + 1])
        gem_grads[beg:en, tid].copy_(p.grad.data.view(-1))
gem_columns_agree = torch.equal(gem_grads.t(), G_shared)
newgrad = gem_grads.mean(1)
for cnt, p in enumerate(shared64):
    beg, en = sum(grad_dims[:cnt]), sum(grad_dims[:cnt + 1])
    p.grad.data.copy_(newgrad[beg:en].contiguous().view(p.grad.data.size()))
gem_overwritten = parameters_to_vector(p.grad for p in shared64)

# a true Fisher (labels drawn from the model) with grad(has_aux=True) and a chunked vmap
torch.manual_seed(5)
drawn = torch.distributions.Categorical(logits=model64(x64)[1].detach()).sample()


def loss_with_aux(params, sample, target):
    logits = functional_call(model64, params, (sample.unsqueeze(0),))[1]
    return F.cross_entropy(logits, target.unsqueeze(0)), logits.argmax(-1)


per_sample, per_sample_argmax = vmap(grad(loss_with_aux, has_aux=True), in_dims=(None, 0, 0),
                                     chunk_size=16)(named64, x64, drawn)
fixed_results["true_fisher_head"] = per_sample["heads.1.weight"].pow(2).mean(0)
fixed_results["drawn_labels"] = drawn
aux_agrees = torch.equal(per_sample_argmax.flatten(), model64(x64)[1].argmax(-1))

# post-accumulate-grad hooks record each parameter's gradient norm after accumulation
grad_norm_log = []
post_handles = [p.register_post_accumulate_grad_hook(
    lambda p: grad_norm_log.append(p.grad.norm().item())) for p in shared64]
model64.zero_grad()
sum(task_losses(model64(x64), y64)).backward()
for h in post_handles:
    h.remove()
fixed_results["post_accumulate_norms"] = sorted(grad_norm_log)

# what torch raises where per-task gradient code goes wrong
errors = {}
outs = model64(x64)
try:
    torch.autograd.grad(F.mse_loss(outs[0], y64[0]), list(model64.heads[2].parameters()))
except RuntimeError as e:
    errors["unused"] = str(e).split(".")[0]
loss0 = F.mse_loss(model64(x64)[0], y64[0])
loss0.backward()
try:
    loss0.backward()
except RuntimeError as e:
    errors["second_backward"] = str(e).split(".")[0].split(" (")[0]
try:
    torch.autograd.grad(L.detach().sum(), shared64)
except RuntimeError as e:
    errors["no_grad_fn"] = str(e)
try:
    torch.autograd.backward(list(L), grad_tensors=[torch.ones(()), torch.ones(())])
except (RuntimeError, ValueError) as e:
    errors["grad_tensors_length"] = f"{type(e).__name__}: {e}"

# ------------------------------------------------------------------------------ training


def train_multitask(method, steps=20, seed=1):
    torch.manual_seed(seed)
    model = MultiTaskNet()
    x, y = make_multitask_data(128)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    params, shared = list(model.parameters()), model.shared_parameters()
    n_shared = sum(p.numel() for p in shared)
    history = {"losses": []}
    if method == "gradnorm":
        weights = nn.Parameter(torch.ones(N_TASKS))
        w_optimizer = torch.optim.Adam([weights], lr=0.025)
        history["weights"] = []
    if method == "uncertainty":
        log_vars = nn.Parameter(torch.zeros(N_TASKS))
        optimizer.add_param_group({"params": [log_vars], "lr": 5e-2})
        history["log_vars"] = []
    generator = torch.Generator().manual_seed(seed)
    for step in range(steps):
        losses = task_losses(model(x), y)
        history["losses"].append([loss.item() for loss in losses])
        optimizer.zero_grad()
        if method == "sum":
            sum(losses).backward()
        elif method in ("pcgrad", "mgda", "cagrad"):
            grads = per_task_grads(losses, params)
            shared_grads = grads[:, :n_shared]
            if method == "pcgrad":
                combined = pcgrad(shared_grads, generator).sum(0)
            elif method == "mgda":
                combined = min_norm_frank_wolfe(shared_grads, max_iter=20) @ shared_grads * N_TASKS
            else:
                combined = cagrad(shared_grads) * N_TASKS
            set_flat_grad(params, torch.cat([combined, grads[:, n_shared:].sum(0)]))
        elif method == "gradnorm":
            L = torch.stack(losses)
            if step == 0:
                initial = L.detach()
            weighted = weights * L
            weighted.sum().backward(retain_graph=True)
            W = model.last_shared_layer()
            norms = torch.stack([torch.autograd.grad(weighted[i], W, retain_graph=True,
                                                     create_graph=True)[0].norm()
                                 for i in range(N_TASKS)])
            ratio = L.detach() / initial
            target = (norms.mean() * (ratio / ratio.mean()) ** 1.5).detach()
            w_optimizer.zero_grad()
            weights.grad = torch.autograd.grad(F.l1_loss(norms, target, reduction="sum"),
                                               weights)[0]
            w_optimizer.step()
        elif method == "uncertainty":
            uncertainty_loss(losses, log_vars).backward()
        optimizer.step()
        if method == "gradnorm":
            with torch.no_grad():
                weights.mul_(N_TASKS / weights.sum())
            history["weights"].append(weights.detach().clone())
        if method == "uncertainty":
            history["log_vars"].append(log_vars.detach().clone())
    return model, history


mt_histories = {}
for method in ("sum", "pcgrad", "mgda", "cagrad", "gradnorm", "uncertainty"):
    _, mt_histories[method] = train_multitask(method)
    first, last = mt_histories[method]["losses"][0], mt_histories[method]["losses"][-1]
    print(f"{method:12s} " + " ".join(f"{a:.3f}->{b:.3f}" for a, b in zip(first, last)))


# ----------------------------------------------------------------------- continual learning


class MLP(nn.Module):
    def __init__(self, in_dim=8, hidden=32, n_classes=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.net(x)


torch.manual_seed(2)
teacher = MLP(hidden=16)
for p in teacher.parameters():
    p.requires_grad_(False)
permutation = torch.randperm(8)


def make_task(n, permuted):
    """Task A: the teacher's labels; task B: the same labels on permuted features."""
    x = torch.randn(n, 8)
    y = teacher(x).argmax(-1)
    return (x[:, permutation] if permuted else x), y


task_a, task_b = make_task(256, False), make_task(256, True)
test_a, test_b = make_task(256, False), make_task(256, True)


def evaluate(model, data):
    with torch.no_grad():
        logits = model(data[0])
        return F.cross_entropy(logits, data[1]).item(), \
            (logits.argmax(-1) == data[1]).float().mean().item()


def fisher_loop(model, x, y):
    fisher = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    for i in range(x.shape[0]):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for n, p in model.named_parameters():
            fisher[n] += p.grad.detach() ** 2 / x.shape[0]
    return fisher


def fisher_vmap(model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(predictions, target.unsqueeze(0))

    per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)
    return {n: g.pow(2).mean(0) for n, g in per_sample.items()}


def ewc_penalty(model, fisher, old_params):
    return sum((fisher[n] * (p - old_params[n]) ** 2).sum()
               for n, p in model.named_parameters())


class SynapticIntelligence:
    """Zenke et al.: importance from the path integral of -grad * delta, per parameter."""

    def __init__(self, model, epsilon=1e-3):
        self.model, self.epsilon = model, epsilon
        self.start = {n: p.detach().clone() for n, p in model.named_parameters()}
        self.W = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
        self.omega = {n: torch.zeros_like(p) for n, p in model.named_parameters()}

    def before_step(self):
        self.previous = {n: p.detach().clone() for n, p in self.model.named_parameters()}

    def after_step(self):
        for n, p in self.model.named_parameters():
            if p.grad is not None:
                self.W[n].add_(-p.grad * (p.detach() - self.previous[n]))

    def consolidate(self):
        for n, p in self.model.named_parameters():
            delta = p.detach() - self.start[n]
            self.omega[n] += self.W[n] / (delta ** 2 + self.epsilon)
            self.start[n] = p.detach().clone()
            self.W[n].zero_()

    def penalty(self):
        return sum((self.omega[n] * (p - self.start[n]) ** 2).sum()
                   for n, p in self.model.named_parameters())


def agem_project(grad, ref):
    dot = torch.dot(grad, ref)
    if dot < 0:
        return grad - dot / torch.dot(ref, ref) * ref
    return grad


# fixed weights, float64: Fisher both ways, the EWC penalty and its gradient, A-GEM
# (recorded)
torch.manual_seed(3)
cl64 = MLP().double()
xa64, ya64 = task_a[0][:24].double(), task_a[1][:24]
fisher64_loop = fisher_loop(cl64, xa64, ya64)
fisher64_vmap = fisher_vmap(cl64, xa64, ya64)


def fisher_hooks(model, x, y):
    """The third way (Opacus / BackPACK style): the Linear layers' inputs from forward hooks,
    their output gradients from full backward hooks, per-sample gradients as outer products
    of one backward of the summed loss."""
    inputs, grad_outputs = {}, {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            handles.append(module.register_forward_hook(
                lambda m, inp, out, name=name: inputs.__setitem__(name, inp[0].detach())))
            handles.append(module.register_full_backward_hook(
                lambda m, grad_in, grad_out, name=name:
                grad_outputs.__setitem__(name, grad_out[0].detach())))
    model.zero_grad()
    F.cross_entropy(model(x), y, reduction="sum").backward()
    for h in handles:
        h.remove()
    fisher = {}
    for name in inputs:
        per_sample_w = torch.einsum("bo,bi->boi", grad_outputs[name], inputs[name])
        fisher[f"{name}.weight"] = per_sample_w.pow(2).mean(0)
        fisher[f"{name}.bias"] = grad_outputs[name].pow(2).mean(0)
    return fisher


fisher64_hooks = fisher_hooks(cl64, xa64, ya64)
fixed_results["fisher"] = fisher64_loop
old64 = {n: p.detach().clone() for n, p in cl64.named_parameters()}
with torch.no_grad():
    for p in cl64.parameters():
        p.add_(0.05 * torch.randn_like(p))
cl64.zero_grad()
penalty64 = ewc_penalty(cl64, fisher64_loop, old64)
penalty64.backward()
fixed_results["ewc_penalty"] = penalty64.detach()
fixed_results["ewc_penalty_grads"] = {n: p.grad.clone() for n, p in cl64.named_parameters()}
cl64.zero_grad()
F.cross_entropy(cl64(xa64), ya64).backward()
ref64 = parameters_to_vector(p.grad for p in cl64.parameters()).clone()
cl64.zero_grad()
F.cross_entropy(cl64(task_b[0][:24].double()), task_b[1][:24]).backward()
g64 = parameters_to_vector(p.grad for p in cl64.parameters())
fixed_results["agem_projected"] = agem_project(-ref64 + 0.1 * g64, ref64)
agem_dot_after = float(fixed_results["agem_projected"] @ ref64)
agem_unchanged = torch.equal(agem_project(ref64 + g64, ref64), ref64 + g64)



class EWCClassifier(MLP):
    """The continual-learning repositories' way: the previous task's means and Fisher kept as
    buffers (dots in the names replaced), an online Fisher with decay ``gamma``."""

    def __init__(self, gamma=0.9, **kwargs):
        super().__init__(**kwargs)
        self.gamma, self.ewc_task_count = gamma, 0

    def register_ewc_params(self, fisher):
        for n, p in self.named_parameters():
            n = n.replace(".", "__")
            if self.ewc_task_count > 0:
                fisher_n = self.gamma * getattr(self, f"{n}_EWC_estimated_fisher")
                fisher_n = fisher_n + fisher[n.replace("__", ".")]
            else:
                fisher_n = fisher[n.replace("__", ".")]
            self.register_buffer(f"{n}_EWC_prev_task", p.detach().clone())
            self.register_buffer(f"{n}_EWC_estimated_fisher", fisher_n)
        self.ewc_task_count += 1

    def ewc_loss(self):
        losses = []
        for n, p in self.named_parameters():
            n = n.replace(".", "__")
            mean = getattr(self, f"{n}_EWC_prev_task")
            fisher = getattr(self, f"{n}_EWC_estimated_fisher")
            losses.append((fisher * (p - mean) ** 2).sum())
        return sum(losses)


ewc_module = EWCClassifier().double()
ewc_module.load_state_dict(copy.deepcopy(cl64.state_dict()), strict=False)
ewc_module.register_ewc_params(fisher64_loop)
buffer_names = sorted(n for n, _ in ewc_module.named_buffers())
ewc_module.register_ewc_params(fisher64_vmap)  # a second task: gamma * F_old + F_new
with torch.no_grad():
    for p in ewc_module.parameters():
        p.mul_(1.1)
fixed_results["online_ewc_loss"] = ewc_module.ewc_loss().detach()
ewc_state_keys = [k for k in ewc_module.state_dict() if "EWC" in k]

def train_task(model, data, steps, lr=0.05, penalty=None, si=None, memory=None):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    params = list(model.parameters())
    losses, dots = [], []
    for _ in range(steps):
        if memory is not None:  # A-GEM: the reference gradient on the episodic memory
            optimizer.zero_grad()
            F.cross_entropy(model(memory[0]), memory[1]).backward()
            ref = parameters_to_vector(p.grad for p in params).clone()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data[0]), data[1])
        total = loss if penalty is None else loss + penalty(model)
        total.backward()
        if memory is not None:
            g = agem_project(parameters_to_vector(p.grad for p in params), ref)
            dots.append(float(g @ ref))
            set_flat_grad(params, g)
        if si is not None:
            si.before_step()
        optimizer.step()
        if si is not None:
            si.after_step()
        losses.append(loss.item())
    return losses, dots


torch.manual_seed(4)
cl_model = MLP()
si = SynapticIntelligence(cl_model)
losses_a, _ = train_task(cl_model, task_a, 80, si=si)
si.consolidate()
after_a = evaluate(cl_model, test_a)
old_params = {n: p.detach().clone() for n, p in cl_model.named_parameters()}
snapshot = copy.deepcopy(cl_model)
fisher = fisher_vmap(cl_model, *task_a)
fisher_check = fisher_loop(cl_model, task_a[0][:16], task_a[1][:16])
fisher_check_vmap = fisher_vmap(cl_model, task_a[0][:16], task_a[1][:16])
memory = (task_a[0][:128], task_a[1][:128])  # an episodic memory of half of task A

continual = {}
for method in ("finetune", "ewc", "si", "agem"):
    model = copy.deepcopy(snapshot)
    kwargs = {}
    if method == "ewc":
        kwargs["penalty"] = lambda m: 200.0 * ewc_penalty(m, fisher, old_params)
    elif method == "si":
        si_b = SynapticIntelligence(model)
        si_b.omega = {n: o.clone() for n, o in si.omega.items()}
        kwargs["penalty"] = lambda m, s=si_b: 1.0 * s.penalty()
    elif method == "agem":
        kwargs["memory"] = memory
    losses_b, dots = train_task(model, task_b, 50, **kwargs)
    continual[method] = {"losses_b": losses_b, "dots": dots,
                         "a_after_b": evaluate(model, test_a), "b": evaluate(model, test_b)}
    print(f"{method:9s} task B {losses_b[0]:.3f}->{losses_b[-1]:.3f}, test A loss/acc "
          f"{continual[method]['a_after_b'][0]:.3f}/{continual[method]['a_after_b'][1]:.3f},"
          f" B acc {continual[method]['b'][1]:.3f}")

# the snapshot restored through vector_to_parameters equals the deepcopy
restored_model = MLP()
with torch.no_grad():
    vector_to_parameters(parameters_to_vector(snapshot.parameters()),
                         restored_model.parameters())
snapshot_restored = evaluate(restored_model, test_a) == after_a
print(f"task A after A: loss {after_a[0]:.3f}, accuracy {after_a[1]:.3f}")
