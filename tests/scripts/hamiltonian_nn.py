# ruff: noqa: N802, N803, N806, N816 (physics names: H, L, M, J, dHdq)
"""Hamiltonian and Lagrangian neural networks, written for these tests the way the HNN paper's
code (Greydanus et al.) and PyTorch ports of Lagrangian neural networks (Cranmer et al.) write
torch code (not a copy of either):

- an HNN: an MLP gives a scalar H(q, p); ``torch.autograd.grad(H.sum(), x, create_graph=True)``
  and a permutation (symplectic) matrix built from ``torch.eye``/``torch.cat`` give the field
  (dH/dp, -dH/dq); trained with Adam on noisy time derivatives of a mass-spring and a
  pendulum, beside a baseline MLP that predicts the field directly;
- integration of the learned field by RK4 and by leapfrog (Stormer-Verlet), under
  ``torch.no_grad`` with ``torch.enable_grad`` for the field, and of the true field by
  explicit Euler; the energy drift along each trajectory;
- an LNN: an MLP with ``nn.Softplus`` gives L(q, qdot); the Euler-Lagrange acceleration
  qddot = (d2L/dqdot2)^-1 (dL/dq - d2L/dqdot dq qdot) through double backward (trained on two
  coupled oscillators with unequal masses), through ``torch.func.vmap`` of
  ``torch.func.hessian``/``torch.func.jacrev`` with a batched ``torch.linalg.solve`` and
  ``torch.linalg.pinv``, and through ``torch.autograd.functional.hessian``/``jacobian`` per
  state; the learned energy qdot dL/dqdot - L along an RK4 trajectory;
- ``torch.autograd.gradcheck``/``gradgradcheck`` in float64 through the double-backward field
  (in the state and, with ``torch.func.functional_call``, in the weights) and through the
  LNN's acceleration.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import jitgrad as torch
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------------------------ systems


def mass_spring_hamiltonian(x):
    q, p = x[..., 0], x[..., 1]
    return 0.5 * (q ** 2 + p ** 2)


def mass_spring_field(x):
    q, p = x[..., 0], x[..., 1]
    return torch.stack([p, -q], dim=-1)


PENDULUM_G = 3.0


def pendulum_hamiltonian(x):
    q, p = x[..., 0], x[..., 1]
    return 0.5 * p ** 2 + PENDULUM_G * (1 - torch.cos(q))


def pendulum_field(x):
    q, p = x[..., 0], x[..., 1]
    return torch.stack([p, -PENDULUM_G * torch.sin(q)], dim=-1)


MASSES = torch.tensor([1.0, 2.0])
STIFFNESS = torch.tensor([[2.0, -1.0], [-1.0, 2.0]])  # walls and the middle spring, k = 1


def oscillators_lagrangian(x):
    q, qdot = x[..., :2], x[..., 2:]
    kinetic = 0.5 * (MASSES * qdot ** 2).sum(-1)
    potential = 0.5 * torch.einsum("...i,ij,...j->...", q, STIFFNESS, q)
    return kinetic - potential


def oscillators_acceleration(x):
    return -(x[..., :2] @ STIFFNESS) / MASSES


def oscillators_energy(x):
    q, qdot = x[..., :2], x[..., 2:]
    return 0.5 * (MASSES * qdot ** 2).sum(-1) + 0.5 * ((q @ STIFFNESS) * q).sum(-1)


# ------------------------------------------------------------------------------- models


class MLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity=nn.Tanh):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_dim, hidden_dim), nonlinearity(),
            nn.Linear(hidden_dim, hidden_dim), nonlinearity(),
            nn.Linear(hidden_dim, output_dim, bias=False),
        )
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                nn.init.orthogonal_(layer.weight)

    def forward(self, x):
        return self.net(x)


def permutation_tensor(n):
    """The symplectic matrix J with J^T = -J: x' = dH/dx @ J^T gives (dH/dp, -dH/dq)."""
    M = torch.eye(n)
    return torch.cat([M[n // 2:], -M[:n // 2]])


class HNN(nn.Module):
    def __init__(self, input_dim=2, hidden_dim=64, baseline=False):
        super().__init__()
        self.baseline = baseline
        self.differentiable_model = MLP(input_dim, hidden_dim, input_dim if baseline else 1)
        self.register_buffer("M", permutation_tensor(input_dim))

    def forward(self, x):
        return self.differentiable_model(x)

    def time_derivative(self, x, create_graph=True):
        if self.baseline:
            return self.differentiable_model(x)
        with torch.enable_grad():
            if not x.requires_grad:
                x = x.detach().requires_grad_(True)
            H = self.forward(x)
            dH = torch.autograd.grad(H.sum(), x, create_graph=create_graph)[0]
        return dH @ self.M.t()


class LNN(nn.Module):
    """L(q, qdot) = |qdot|^2 / 2 + MLP(q, qdot): the kinetic prior keeps d2L/dqdot2 away from
    singular at initialisation (the MLP's last layer starts small); ``forward`` solves the
    Euler-Lagrange equations for the acceleration."""

    def __init__(self, dof=2, hidden_dim=64, last_gain=0.1):
        super().__init__()
        self.dof = dof
        self.lagrangian_net = MLP(2 * dof, hidden_dim, 1, nonlinearity=nn.Softplus)
        with torch.no_grad():
            self.lagrangian_net.net[-1].weight.mul_(last_gain)

    def lagrangian(self, x):
        qdot = x[..., self.dof:]
        return 0.5 * (qdot * qdot).sum(-1) + self.lagrangian_net(x).squeeze(-1)

    def forward(self, x):
        """The acceleration by double backward, the Hessian one row at a time."""
        n = self.dof
        with torch.enable_grad():
            if not x.requires_grad:
                x = x.detach().requires_grad_(True)
            L = self.lagrangian(x)
            dL = torch.autograd.grad(L.sum(), x, create_graph=True)[0]  # (B, 2n)
            rows = [torch.autograd.grad(dL[:, n + i].sum(), x, create_graph=True)[0]
                    for i in range(n)]
        hessian_rows = torch.stack(rows, dim=1)  # (B, n, 2n): d/dx of dL/dqdot_i
        mass = hessian_rows[:, :, n:]  # d2L / dqdot dqdot
        mixed = hessian_rows[:, :, :n]  # d2L / dqdot_i dq_j
        qdot = x[:, n:]
        rhs = dL[:, :n] - (mixed @ qdot[:, :, None]).squeeze(-1)
        return torch.linalg.solve(mass, rhs)

    def energy(self, x):
        n = self.dof
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            L = self.lagrangian(x)
            dL = torch.autograd.grad(L.sum(), x)[0]
        return (x[:, n:] * dL[:, n:]).sum(-1).detach() - L.detach()


def lnn_parts_func(model, x):
    """torch.func: the Hessian and gradient of L per state under ``vmap``, then a batched
    solve (and the pseudo-inverse Cranmer's code uses)."""
    hessians = torch.func.vmap(torch.func.hessian(model.lagrangian))(x)  # (B, 2n, 2n)
    grads = torch.func.vmap(torch.func.jacrev(model.lagrangian))(x)  # (B, 2n)
    return hessians, grads


def lnn_acceleration_func(model, x, use_pinv=False):
    n = model.dof
    hessians, grads = lnn_parts_func(model, x)
    mass, mixed = hessians[:, n:, n:], hessians[:, n:, :n]
    rhs = grads[:, :n] - torch.einsum("bij,bj->bi", mixed, x[:, n:])
    if use_pinv:
        return torch.einsum("bij,bj->bi", torch.linalg.pinv(mass), rhs)
    return torch.linalg.solve(mass, rhs)


def lnn_acceleration_functional(model, x):
    """torch.autograd.functional, one state at a time."""
    n = model.dof
    out = []
    for xi in x:
        H = torch.autograd.functional.hessian(model.lagrangian, xi)
        g = torch.autograd.functional.jacobian(model.lagrangian, xi)
        out.append(torch.linalg.solve(H[n:, n:], g[:n] - H[n:, :n] @ xi[n:]))
    return torch.stack(out)


# --------------------------------------------------------------------------- integrators


def rk4_step(f, x, dt):
    k1 = f(x)
    k2 = f(x + 0.5 * dt * k1)
    k3 = f(x + 0.5 * dt * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def leapfrog_step(f, x, dt):
    """Stormer-Verlet on a field of (q, p): half kick, drift, half kick (symplectic when H
    separates into kinetic and potential parts)."""
    q, p = x[..., :1], x[..., 1:]
    p_half = p + 0.5 * dt * f(torch.cat([q, p], -1))[..., 1:]
    q_new = q + dt * f(torch.cat([q, p_half], -1))[..., :1]
    p_new = p_half + 0.5 * dt * f(torch.cat([q_new, p_half], -1))[..., 1:]
    return torch.cat([q_new, p_new], -1)


def euler_step(f, x, dt):
    return x + dt * f(x)


def integrate(f, x0, dt, steps, step=rk4_step):
    xs = [x0]
    with torch.no_grad():
        for _ in range(steps):
            xs.append(step(f, xs[-1], dt))
    return torch.stack(xs)


def learned_field(model):
    return lambda x: model.time_derivative(x, create_graph=False).detach()


def relative_drift(energy_fn, trajectory):
    e = energy_fn(trajectory)
    return ((e - e[0]).abs().max() / e[0].abs()).item()


# ----------------------------------------------------------------------------------- data


def hnn_dataset(field_fn, n, noise_std=0.05, scale=2.0):
    x = (torch.rand(n, 2) * 2 - 1) * scale
    dxdt = field_fn(x) + noise_std * torch.randn(n, 2)
    return x, dxdt


def lnn_dataset(n, scale=1.0):
    x = torch.randn(n, 4) * scale
    return x, oscillators_acceleration(x)


# ----------------------------------------------------- fixed-weight checks (recorded)

points = torch.tensor([[0.5, -0.3], [1.0, 0.2], [-0.7, 0.9], [0.0, 1.5]])
hnn_fixed = HNN(hidden_dim=16)
with torch.no_grad():
    fixed_results["hnn_H"] = hnn_fixed(points).squeeze(-1)
fixed_results["hnn_field"] = hnn_fixed.time_derivative(points).detach()
baseline_fixed = HNN(hidden_dim=16, baseline=True)
fixed_results["baseline_field"] = baseline_fixed.time_derivative(points).detach()
fixed_results["permutation"] = permutation_tensor(4)

# the field's definition by hand: finite differences of H in float64
hnn64 = HNN(hidden_dim=16).double()
hnn64.load_state_dict(hnn_fixed.state_dict())
x64 = points.double()
eps = 1e-6
with torch.no_grad():
    dHdq = (hnn64(x64 + torch.tensor([eps, 0.0], dtype=torch.float64))
            - hnn64(x64 - torch.tensor([eps, 0.0], dtype=torch.float64))) / (2 * eps)
    dHdp = (hnn64(x64 + torch.tensor([0.0, eps], dtype=torch.float64))
            - hnn64(x64 - torch.tensor([0.0, eps], dtype=torch.float64))) / (2 * eps)
field_fd = torch.cat([dHdp, -dHdq], dim=1)
field_fd_difference = (hnn64.time_derivative(x64).detach() - field_fd).abs().max().item()

# the field is divergence-free (Liouville): the trace of its Jacobian vanishes
jac = torch.autograd.functional.jacobian(lambda v: hnn64.time_derivative(v[None])[0],
                                         x64[1])
divergence = torch.trace(jac).item()

# a loss on the field and its gradients (a third derivative of the MLP)
target = mass_spring_field(points)
fixed_loss = ((hnn_fixed.time_derivative(points) - target) ** 2).mean()
fixed_loss.backward()
fixed_results["field_loss"] = fixed_loss.item()
fixed_results["field_loss_grads"] = {n: p.grad.clone() for n, p in hnn_fixed.named_parameters()}
hnn_fixed.zero_grad()

# the fixed model's field integrated a few steps by RK4 and leapfrog
fixed_results["rk4_trajectory"] = integrate(learned_field(hnn_fixed), points[:2], 0.1, 5)
fixed_results["leapfrog_trajectory"] = integrate(learned_field(hnn_fixed), points[:2], 0.1, 5,
                                                 step=leapfrog_step)

# the LNN on fixed weights: acceleration by double backward, torch.func, functional
lnn_fixed = LNN(hidden_dim=16, last_gain=1.0)
states = torch.randn(5, 4)
with torch.no_grad():
    fixed_results["lnn_L"] = lnn_fixed.lagrangian(states)
fixed_results["lnn_acc"] = lnn_fixed(states).detach()
with torch.no_grad():
    hess_func, grad_func = lnn_parts_func(lnn_fixed, states)
    fixed_results["lnn_hessian"] = hess_func
    fixed_results["lnn_jacrev"] = grad_func
    fixed_results["lnn_acc_func"] = lnn_acceleration_func(lnn_fixed, states)
    fixed_results["lnn_acc_pinv"] = lnn_acceleration_func(lnn_fixed, states, use_pinv=True)
fixed_results["lnn_acc_functional"] = lnn_acceleration_functional(lnn_fixed, states).detach()
lnn_loss = ((lnn_fixed(states) - oscillators_acceleration(states)) ** 2).mean()
lnn_loss.backward()
fixed_results["lnn_loss"] = lnn_loss.item()
fixed_results["lnn_loss_grads"] = {n: p.grad.clone() for n, p in lnn_fixed.named_parameters()}
lnn_fixed.zero_grad()

# the true Lagrangian through the same machinery gives the true acceleration
true_hessians = torch.func.vmap(torch.func.hessian(oscillators_lagrangian))(states)
true_grads = torch.func.vmap(torch.func.jacrev(oscillators_lagrangian))(states)
true_acc = torch.linalg.solve(true_hessians[:, 2:, 2:],
                              true_grads[:, :2] - torch.einsum("bij,bj->bi",
                                                               true_hessians[:, 2:, :2],
                                                               states[:, 2:]))
true_acc_difference = (true_acc - oscillators_acceleration(states)).abs().max().item()

# ------------------------------------------------------------ gradcheck (float64)

gc_points = x64[:2].clone().requires_grad_(True)
gradcheck_results = {
    "field_in_state": torch.autograd.gradcheck(lambda v: hnn64.time_derivative(v),
                                               (gc_points,)),
    "field_gradgrad": torch.autograd.gradgradcheck(lambda v: hnn64.time_derivative(v),
                                                   (gc_points,)),
}
names = ["differentiable_model.net.2.weight", "differentiable_model.net.4.weight"]
params64 = {n: p.detach() for n, p in hnn64.named_parameters()}
buffers64 = dict(hnn64.named_buffers())


def field_of_weights(w2, w4):
    p = dict(params64, **{names[0]: w2, names[1]: w4}, **buffers64)
    x = x64[:2].clone().requires_grad_(True)
    H = torch.func.functional_call(hnn64, p, (x,))
    dH = torch.autograd.grad(H.sum(), x, create_graph=True)[0]
    return dH @ hnn64.M.t()


gradcheck_results["field_in_weights"] = torch.autograd.gradcheck(
    field_of_weights, tuple(params64[n].clone().requires_grad_(True) for n in names))
lnn64 = LNN(hidden_dim=8).double()
gc_states = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
gradcheck_results["lnn_acceleration"] = torch.autograd.gradcheck(lnn64, (gc_states,))
gradcheck_results["lnn_acceleration_func"] = torch.autograd.gradcheck(
    lambda v: lnn_acceleration_func(lnn64, v), (gc_states,))

# ------------------------------------------------------------------------------ training


def train_field_model(model, x, dxdt, steps, lr=1e-3):
    optim = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    losses = []
    for _step in range(steps):
        loss = (dxdt - model.time_derivative(x)).pow(2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    return losses


results = {}
for system, field_fn, energy_fn, x0 in (
        ("mass_spring", mass_spring_field, mass_spring_hamiltonian, [1.0, 0.0]),
        ("pendulum", pendulum_field, pendulum_hamiltonian, [1.5, 0.0])):
    torch.manual_seed(1)
    x_train, dxdt_train = hnn_dataset(field_fn, 256)
    x_test = (torch.rand(128, 2) * 2 - 1) * 1.5
    record = {}
    for kind in ("hnn", "baseline"):
        torch.manual_seed(2)
        model = HNN(hidden_dim=64, baseline=(kind == "baseline"))
        losses = train_field_model(model, x_train, dxdt_train, steps=300, lr=3e-3)
        predicted = model.time_derivative(x_test).detach()
        true = field_fn(x_test)
        field_error = ((predicted - true) ** 2).sum(-1).mean() / (true ** 2).sum(-1).mean()
        start = torch.tensor([x0])
        trajectory = integrate(learned_field(model), start, 0.1, 300)
        record[kind] = {
            "losses": losses,
            "field_error": field_error.item(),
            "energy_drift": relative_drift(energy_fn, trajectory),
            "final_state": trajectory[-1, 0],
            "model": model,
        }
        if kind == "hnn":  # the learned H is what its own RK4 trajectory conserves
            with torch.no_grad():
                learned_H = model(trajectory).squeeze(-1)
            record[kind]["learned_H_drift"] = (learned_H - learned_H[0]).abs().max().item()
            record[kind]["learned_H_range"] = (model(x_test).max() - model(x_test).min()).item()
            leapfrog = integrate(learned_field(model), start, 0.1, 300, step=leapfrog_step)
            record[kind]["leapfrog_energy_drift"] = relative_drift(energy_fn, leapfrog)
            record[kind]["leapfrog_rk4_gap"] = (leapfrog - trajectory).abs().max().item()
    # the true field: leapfrog keeps the energy, explicit Euler spirals out
    start = torch.tensor([x0])
    record["true_leapfrog_drift"] = relative_drift(
        energy_fn, integrate(field_fn, start, 0.1, 300, step=leapfrog_step))
    record["true_euler_drift"] = relative_drift(
        energy_fn, integrate(field_fn, start, 0.1, 300, step=euler_step))
    record["true_rk4_final"] = integrate(field_fn, start, 0.1, 300)[-1, 0]
    results[system] = record

# the LNN on two coupled oscillators
torch.manual_seed(3)
lnn_x, lnn_acc_target = lnn_dataset(256)
lnn_test_x, lnn_test_acc = lnn_dataset(128)
lnn = LNN(hidden_dim=64)
lnn_optim = torch.optim.Adam(lnn.parameters(), lr=3e-3)
lnn_losses = []
for _step in range(200):
    idx = torch.randperm(256)[:64]
    loss = ((lnn(lnn_x[idx]) - lnn_acc_target[idx]) ** 2).mean()
    lnn_optim.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(lnn.parameters(), 10.0)
    lnn_optim.step()
    lnn_losses.append(loss.item())
with torch.no_grad():
    lnn_test_pred = lnn(lnn_test_x).detach()
    lnn_test_pred_func = lnn_acceleration_func(lnn, lnn_test_x)
lnn_test_error = (((lnn_test_pred - lnn_test_acc) ** 2).sum(-1).mean()
                  / (lnn_test_acc ** 2).sum(-1).mean()).item()
lnn_func_gap = (lnn_test_pred_func - lnn_test_pred).abs().max().item()
lnn_start = torch.tensor([[0.5, -0.2, 0.0, 0.3]])


def lnn_state_field(x):
    return torch.cat([x[:, 2:], lnn(x).detach()], dim=-1)


lnn_trajectory = integrate(lnn_state_field, lnn_start, 0.05, 100)[:, 0]
lnn_learned_energy = lnn.energy(lnn_trajectory)
lnn_learned_energy_drift = ((lnn_learned_energy - lnn_learned_energy[0]).abs().max()
                            / lnn_learned_energy.abs().max()).item()
lnn_true_energy_drift = relative_drift(oscillators_energy, lnn_trajectory)

field_errors = {s: {k: round(r[k]["field_error"], 4) for k in ("hnn", "baseline")}
                for s, r in results.items()}
energy_drifts = {s: {k: round(r[k]["energy_drift"], 4) for k in ("hnn", "baseline")}
                 for s, r in results.items()}
print(f"field errors {field_errors}; energy drift {energy_drifts}; "
      f"lnn loss {lnn_losses[0]:.3f} -> {lnn_losses[-1]:.4f}, test {lnn_test_error:.4f}, "
      f"energy drift {lnn_learned_energy_drift:.4f}/{lnn_true_energy_drift:.4f}; "
      f"gradcheck {gradcheck_results}")
