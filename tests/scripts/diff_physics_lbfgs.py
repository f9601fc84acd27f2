"""Differentiable physics and classical optimisation, written for these tests the way
differentiable-simulation notebooks (DiffTaichi-style "shoot the ball at the target", mass-spring
system identification) and curve-fitting code write torch code (not a copy of any):

- a bouncing projectile unrolled for 50 semi-implicit Euler steps, ground contact through
  ``torch.where`` (restitution, friction), ``torch.clamp`` of the launch speed after each step
  of gradient descent on the initial velocity, gradients with ``torch.autograd.grad`` (with
  ``create_graph=True`` for a Hessian-vector product through the rollout);
- the same rollout in segments under ``torch.utils.checkpoint.checkpoint(use_reentrant=False)``
  (its gradients equal the plain rollout's), and ``torch.autograd.gradcheck`` of a segment;
- a 2-D mass-spring chain (``torch.linalg.norm`` of the spring vectors, ``clamp_min`` against
  zero length, damping) whose log spring constants are identified from an observed trajectory by
  ``optim.Adam`` through the whole 50-step rollout;
- curve fitting of a damped oscillation with ``optim.LBFGS`` (``line_search_fn="strong_wolfe"``
  and ``None``, a ``closure``, ``history_size``, ``tolerance_grad``, ``tolerance_change``,
  ``max_iter``), float64 and float32, every closure evaluation recorded, the optimizer's state
  (``n_iter``, ``func_evals``); system identification of (k, c) of a damped spring from its
  simulated trajectory with LBFGS;
- ``torch.func``: ``jacrev``/``jacfwd`` of the simulation step, ``hessian`` of the chain's
  potential energy, a Newton solve of the implicit-Euler step (``torch.linalg.solve`` with the
  ``jacfwd`` Jacobian of the residual), ``vmap`` of the rollout over initial conditions and
  ``vmap(jacrev(...))`` of the landing point.

Sections marked "(recorded)" keep what the tests compare, on fixed data, with the same script
on torch.
"""
import math

import jitgrad as torch
from jitgrad.func import hessian, jacfwd, jacrev, vmap
from jitgrad.utils.checkpoint import checkpoint

torch.manual_seed(0)
torch.set_default_dtype(torch.float32)
fixed_results = {}

DT = 0.02
N_STEPS = 50
GRAVITY = torch.tensor([0.0, -9.81])


# --------------------------------------------------------------------- bouncing projectile


def ball_step(pos, vel, restitution=0.7, friction=0.8, dt=DT):
    """One semi-implicit Euler step (velocity first) with an elastic-ish ground at y = 0."""
    vel = vel + dt * GRAVITY.to(vel.dtype)
    pos = pos + dt * vel
    y, vy, vx = pos[..., 1:], vel[..., 1:], vel[..., :1]
    below = y < 0
    # reflect the penetration, flip and damp the normal velocity, rub off some tangential speed
    y = torch.where(below, -restitution * y, y)
    vy = torch.where(below, -restitution * vy, vy)
    vx = torch.where(below, friction * vx, vx)
    return torch.cat([pos[..., :1], y], dim=-1), torch.cat([vx, vy], dim=-1)


def ball_rollout(pos0, vel0, n_steps=N_STEPS):
    pos, vel = pos0, vel0
    path = [pos]
    for _ in range(n_steps):
        pos, vel = ball_step(pos, vel)
        path.append(pos)
    return torch.stack(path), vel


def ball_segment(pos, vel, n_steps):
    for _ in range(n_steps):
        pos, vel = ball_step(pos, vel)
    return pos, vel


def ball_rollout_checkpointed(pos0, vel0, segments=5):
    pos, vel = pos0, vel0
    per = N_STEPS // segments
    for _ in range(segments):
        pos, vel = checkpoint(ball_segment, pos, vel, per, use_reentrant=False)
    return pos, vel


start = torch.tensor([0.0, 0.5])
target = torch.tensor([3.0, 0.0])
MAX_SPEED = 8.0


# (recorded) one rollout, its gradient and a Hessian-vector product through the contacts
v_init = torch.tensor([2.0, 3.0], requires_grad=True)
path, vel_end = ball_rollout(start, v_init)
bounced = bool((path[:, 1] < 0.05).any())
loss = (path[-1] - target).pow(2).sum()
(g_v,) = torch.autograd.grad(loss, v_init, create_graph=True)
(hvp,) = torch.autograd.grad(g_v @ torch.tensor([1.0, -0.5]), v_init)
fixed_results["ball_path"] = path.detach()
fixed_results["ball_end_velocity"] = vel_end.detach()
fixed_results["ball_loss"] = loss.detach()
fixed_results["ball_grad"] = g_v.detach()
fixed_results["ball_hvp"] = hvp

# the checkpointed rollout gives the same end state and the same gradient
v_ck = v_init.detach().clone().requires_grad_()
pos_ck, vel_ck = ball_rollout_checkpointed(start, v_ck)
loss_ck = (pos_ck - target).pow(2).sum()
loss_ck.backward()
checkpoint_end_difference = float((pos_ck.detach() - path[-1].detach()).abs().max())
checkpoint_grad_difference = float((v_ck.grad - g_v.detach()).abs().max())
fixed_results["ball_checkpoint_grad"] = v_ck.grad.clone()

# a parameter captured by the segment (restitution) also gets its gradient through checkpoint
rest = torch.tensor(0.7, requires_grad=True)


def bouncy_segment(pos, vel, e):
    for _ in range(10):
        pos, vel = ball_step(pos, vel, restitution=e)
    return pos, vel


pos, vel = start, torch.tensor([2.0, 3.0])
for _ in range(5):
    pos, vel = checkpoint(bouncy_segment, pos, vel, rest, use_reentrant=False)
(pos[1] + vel.square().sum()).backward()
rest_grad_checkpointed = rest.grad.clone()
rest.grad = None
pos, vel = start, torch.tensor([2.0, 3.0])
for _ in range(5):
    pos, vel = bouncy_segment(pos, vel, rest)
(pos[1] + vel.square().sum()).backward()
fixed_results["restitution_grad"] = rest.grad.clone()
restitution_grad_difference = float((rest_grad_checkpointed - rest.grad).abs())

# gradcheck of a float64 segment with no contact in it (the kinks are not differentiable)
pos64 = torch.tensor([0.0, 5.0], dtype=torch.float64, requires_grad=True)
vel64 = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
gradcheck_segment = torch.autograd.gradcheck(
    lambda p, v: ball_segment(p, v, 10), (pos64, vel64), eps=1e-6, atol=1e-8)

# (recorded) shooting: gradient descent on v0, its speed clamped to MAX_SPEED after each step


def shoot(goal, v0, lr, iters, max_speed=MAX_SPEED):
    losses = []
    for _ in range(iters):
        v0.requires_grad_(True)
        path, _ = ball_rollout(start, v0)
        loss = (path[-1] - goal).pow(2).sum()
        (g,) = torch.autograd.grad(loss, [v0])
        losses.append(loss.item())
        with torch.no_grad():
            v0 = v0 - lr * g
            speed = torch.linalg.norm(v0)
            v0 = v0 * torch.clamp(max_speed / speed, max=1.0)
    return v0.detach(), losses


v0, shoot_losses = shoot(target, torch.tensor([2.0, 3.0]), lr=0.35, iters=15)
shot_path, _ = ball_rollout(start, v0)
shot_miss = float(torch.linalg.norm(shot_path[-1] - target))
fixed_results["shoot_v0"] = v0
fixed_results["shoot_losses"] = torch.tensor(shoot_losses)
# a target out of reach: the clamp holds the launch speed at the limit
far_v0, far_losses = shoot(torch.tensor([12.0, 0.0]), torch.tensor([2.0, 3.0]), lr=0.2,
                           iters=5, max_speed=6.0)
far_speed = float(torch.linalg.norm(far_v0))
fixed_results["far_v0"] = far_v0
print(f"shooting: loss {shoot_losses[0]:.4f} -> {shoot_losses[-1]:.6f}, v0 = {v0.tolist()}")


# ----------------------------------------------------------------------- mass-spring chain

N_MASS = 3
REST = 0.5
ANCHOR = torch.tensor([0.0, 0.0], dtype=torch.float64)
MASSES = torch.tensor([1.0, 0.8, 1.2], dtype=torch.float64)
DAMPING = 0.3
MASS_COLUMN = MASSES.unsqueeze(-1)
WEIGHT = MASS_COLUMN * GRAVITY.double()


def spring_forces(x, k):
    """Forces on the N_MASS masses of a chain hung from ANCHOR; x: (..., N_MASS, 2)."""
    left = torch.cat([ANCHOR.expand(x.shape[:-2] + (1, 2)), x[..., :-1, :]], dim=-2)
    d = x - left
    length = torch.linalg.norm(d, dim=-1, keepdim=True).clamp_min(1e-9)
    tension = k.unsqueeze(-1) * (length - REST) * d / length  # pull of spring i on mass i
    # each spring pulls its lower mass up and its upper mass down (none below the last mass)
    below = torch.cat([tension[..., 1:, :], torch.zeros_like(tension[..., :1, :])], dim=-2)
    return below - tension + WEIGHT


def chain_step(x, v, k, dt=DT):
    a = spring_forces(x, k) / MASS_COLUMN - DAMPING * v
    v = v + dt * a
    return x + dt * v, v


def chain_rollout(x0, v0, k, n_steps=N_STEPS):
    xs = []
    x, v = x0, v0
    for _ in range(n_steps):
        x, v = chain_step(x, v, k)
        xs.append(x)
    return torch.stack(xs)


def potential_energy(x, k):
    left = torch.cat([ANCHOR.expand(1, 2), x[:-1]], dim=0)
    length = torch.linalg.norm(x - left, dim=-1)
    return 0.5 * (k * (length - REST) ** 2).sum() - (MASSES * GRAVITY[1].double() * x[:, 1]).sum()


x0_chain = torch.tensor([[0.6, 0.0], [1.2, 0.1], [1.7, -0.2]], dtype=torch.float64)
v0_chain = torch.zeros(N_MASS, 2, dtype=torch.float64)
k_true = torch.tensor([40.0, 25.0, 15.0], dtype=torch.float64)
observed = chain_rollout(x0_chain, v0_chain, k_true)

# (recorded) identify log k with Adam through the 50-step rollout
log_k = torch.full((N_MASS,), math.log(20.0), dtype=torch.float64, requires_grad=True)
adam = torch.optim.Adam([log_k], lr=0.1, betas=(0.5, 0.999))
chain_losses = []
for _ in range(12):
    adam.zero_grad()
    k = log_k.exp().clamp(1.0, 200.0)
    loss = (chain_rollout(x0_chain, v0_chain, k) - observed).pow(2).mean()
    loss.backward()
    adam.step()
    chain_losses.append(loss.item())
fixed_results["chain_observed"] = observed
fixed_results["chain_losses"] = torch.tensor(chain_losses, dtype=torch.float64)
fixed_results["chain_log_k"] = log_k.detach().clone()
print(f"chain: loss {chain_losses[0]:.3e} -> {chain_losses[-1]:.3e}, k = {log_k.exp().tolist()}")

# a checkpointed chain rollout (segments of 10 steps) gives the same gradient wrt log k
def chain_segment(x, v, k):
    for _ in range(10):
        x, v = chain_step(x, v, k)
    return x, v


lk = log_k.detach().clone().requires_grad_()
x, v = x0_chain, v0_chain
for _ in range(5):
    x, v = checkpoint(chain_segment, x, v, lk.exp(), use_reentrant=False)
(g_ck,) = torch.autograd.grad(x.square().sum() + v.square().sum(), lk)
lk2 = log_k.detach().clone().requires_grad_()
x, v = x0_chain, v0_chain
for _ in range(5):
    x, v = chain_segment(x, v, lk2.exp())
(g_plain,) = torch.autograd.grad(x.square().sum() + v.square().sum(), lk2)
chain_checkpoint_grad_difference = float((g_ck - g_plain).abs().max())
fixed_results["chain_final_state_grad"] = g_plain


# ------------------------------------------------------------------- LBFGS curve fitting

gen = torch.Generator().manual_seed(1234)
t_data = torch.linspace(0.0, 4.0, 80, dtype=torch.float64)
TRUE = {"amp": 1.5, "decay": 0.4, "omega": 3.0, "phase": 0.3}
y_data = TRUE["amp"] * torch.exp(-TRUE["decay"] * t_data) * torch.cos(
    TRUE["omega"] * t_data + TRUE["phase"])
y_data = y_data + 0.02 * torch.randn(80, generator=gen, dtype=torch.float64)


def oscillation(theta, t):
    amp, decay, omega, phase = theta.unbind()
    return amp * torch.exp(-decay * t) * torch.cos(omega * t + phase)


def fit_lbfgs(dtype, line_search_fn, lr=1.0, steps=3, **kw):
    theta = torch.tensor([1.0, 0.2, 2.8, 0.0], dtype=dtype, requires_grad=True)
    t, y = t_data.to(dtype), y_data.to(dtype)
    opt = torch.optim.LBFGS([theta], lr=lr, line_search_fn=line_search_fn, **kw)
    evals, iterates = [], []

    def closure():
        opt.zero_grad()
        loss = (oscillation(theta, t) - y).pow(2).mean()
        loss.backward()
        evals.append(loss.item())
        return loss

    returned = []
    for _ in range(steps):
        returned.append(opt.step(closure).item())
        iterates.append(theta.detach().clone())
    state = opt.state[theta]
    return {"theta": theta.detach().clone(), "evals": evals, "iterates": torch.stack(iterates),
            "returned": returned, "n_iter": state["n_iter"], "func_evals": state["func_evals"]}


# (recorded)
lbfgs_runs = {
    "wolfe64": fit_lbfgs(torch.float64, "strong_wolfe", max_iter=20, history_size=10,
                         tolerance_grad=1e-10, tolerance_change=1e-14),
    "plain64": fit_lbfgs(torch.float64, None, lr=0.3, max_iter=15, history_size=5,
                         tolerance_grad=1e-10, tolerance_change=1e-14),
    "wolfe32": fit_lbfgs(torch.float32, "strong_wolfe", max_iter=20, history_size=4),
    # a loose tolerance_change stops early; a tiny max_iter leaves one iteration per step
    "loose64": fit_lbfgs(torch.float64, "strong_wolfe", max_iter=50, tolerance_change=1e-4),
    "one_iter64": fit_lbfgs(torch.float64, "strong_wolfe", steps=4, max_iter=1),
}
for name, run in lbfgs_runs.items():
    print(f"lbfgs {name}: {len(run['evals'])} evals, loss {run['evals'][0]:.4f} -> "
          f"{run['evals'][-1]:.3e}, n_iter {run['n_iter']}")
    fixed_results[f"lbfgs_{name}"] = {
        "theta": run["theta"], "evals": torch.tensor(run["evals"], dtype=torch.float64),
        "iterates": run["iterates"]}
lbfgs_counts = {name: (len(run["evals"]), run["n_iter"], run["func_evals"])
                for name, run in lbfgs_runs.items()}

# (recorded) system identification of a damped spring x'' = -k x - c x' from its trajectory
def spring_rollout(params, x0=1.0, v0=0.0, n_steps=N_STEPS, dt=0.05):
    k, c = params.unbind()
    x = torch.tensor(x0, dtype=params.dtype)
    v = torch.tensor(v0, dtype=params.dtype)
    xs = []
    for _ in range(n_steps):
        v = v + dt * (-k * x - c * v)
        x = x + dt * v
        xs.append(x)
    return torch.stack(xs)


spring_true = torch.tensor([6.0, 0.5], dtype=torch.float64)
spring_obs = spring_rollout(spring_true) + 0.005 * torch.randn(
    N_STEPS, generator=gen, dtype=torch.float64)
spring_params = torch.tensor([3.0, 1.0], dtype=torch.float64, requires_grad=True)
sysid = torch.optim.LBFGS([spring_params], lr=1, max_iter=25, history_size=8,
                          line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                          tolerance_change=1e-15)
sysid_losses = []


def sysid_closure():
    sysid.zero_grad()
    loss = (spring_rollout(spring_params) - spring_obs).pow(2).sum()
    loss.backward()
    sysid_losses.append(loss.item())
    return loss


sysid.step(sysid_closure)
sysid.step(sysid_closure)
fixed_results["sysid_params"] = spring_params.detach().clone()
fixed_results["sysid_losses"] = torch.tensor(sysid_losses, dtype=torch.float64)
print(f"sysid: k, c = {spring_params.tolist()} in {len(sysid_losses)} evaluations")


# ----------------------------------------------------------------------------- torch.func

K_FIXED = torch.tensor([30.0, 20.0, 10.0], dtype=torch.float64)


def flat_step(state):
    x, v = state[:6].reshape(N_MASS, 2), state[6:].reshape(N_MASS, 2)
    x, v = chain_step(x, v, K_FIXED)
    return torch.cat([x.reshape(-1), v.reshape(-1)])


state0 = torch.cat([x0_chain.reshape(-1), torch.tensor([0.1, 0.0, -0.2, 0.3, 0.0, 0.1],
                                                       dtype=torch.float64)])
# (recorded) the step's Jacobian, both ways
jac_rev = jacrev(flat_step)(state0)
jac_fwd = jacfwd(flat_step)(state0)
fixed_results["step_jacobian"] = jac_rev
jacobian_difference = float((jac_rev - jac_fwd).abs().max())
# the Jacobian wrt the spring constants, argnums=1
jac_k = jacrev(lambda s, k: chain_step(s[:6].reshape(3, 2), s[6:].reshape(3, 2), k)[0],
               argnums=1)(state0, K_FIXED)
fixed_results["step_jacobian_k"] = jac_k

# (recorded) the Hessian of the potential energy (the stiffness matrix) is symmetric
hess = hessian(lambda flat: potential_energy(flat.reshape(N_MASS, 2), K_FIXED))(
    x0_chain.reshape(-1))
fixed_results["stiffness"] = hess
hessian_asymmetry = float((hess - hess.T).abs().max())


# (recorded) implicit Euler by Newton: v1 = v0 + dt * a(x0 + dt * v1, v1)
def accel(x, v):
    return spring_forces(x, K_FIXED) / MASS_COLUMN - DAMPING * v


def implicit_residual(v1_flat, x0, v0, dt):
    v1 = v1_flat.reshape(N_MASS, 2)
    return (v1 - v0 - dt * accel(x0 + dt * v1, v1)).reshape(-1)


def implicit_step(x0, v0, dt=0.05, iters=8):
    v1 = v0.reshape(-1).clone()
    norms = []
    for _ in range(iters):
        r = implicit_residual(v1, x0, v0, dt)
        norms.append(float(torch.linalg.norm(r)))
        J = jacfwd(implicit_residual)(v1, x0, v0, dt)
        v1 = v1 - torch.linalg.solve(J, r)
    v1 = v1.reshape(N_MASS, 2)
    return x0 + dt * v1, v1, norms


x_imp, v_imp = x0_chain, v0_chain
newton_norms = []
for _ in range(3):
    x_prev, v_prev = x_imp, v_imp
    x_imp, v_imp, norms = implicit_step(x_imp, v_imp)
    newton_norms.append(norms)
fixed_results["implicit_x"] = x_imp
fixed_results["implicit_v"] = v_imp
# the last step solves its equation: v1 = v0 + dt * a(x0 + dt * v1, v1)
final_residual = float(torch.linalg.norm(implicit_residual(v_imp.reshape(-1), x_prev, v_prev,
                                                           0.05)))


# (recorded) vmap over initial conditions: the batched rollout equals a loop of rollouts
def landing_point(v0):
    pos, _ = ball_segment(start.to(v0.dtype), v0, N_STEPS)
    return pos


launches = torch.stack([torch.tensor([1.0 + 0.5 * i, 2.0 + 0.4 * i]) for i in range(6)])
batched_landing = vmap(landing_point)(launches)
looped_landing = torch.stack([landing_point(v) for v in launches])
vmap_difference = float((batched_landing - looped_landing).abs().max())
fixed_results["vmap_landing"] = batched_landing
batched_jac = vmap(jacrev(landing_point))(launches)
looped_jac = torch.stack([jacrev(landing_point)(v) for v in launches[:3]])
vmap_jacobian_difference = float((batched_jac[:3] - looped_jac).abs().max())
fixed_results["vmap_landing_jacobian"] = batched_jac

# vmap of the chain rollout over a batch of spring constants
k_batch = torch.tensor([[40.0, 25.0, 15.0], [20.0, 20.0, 20.0], [60.0, 10.0, 30.0]],
                       dtype=torch.float64)
chain_batched = vmap(lambda k: chain_rollout(x0_chain, v0_chain, k, n_steps=20))(k_batch)
chain_looped = torch.stack([chain_rollout(x0_chain, v0_chain, k, n_steps=20) for k in k_batch])
chain_vmap_difference = float((chain_batched - chain_looped).abs().max())
fixed_results["chain_vmap_end"] = chain_batched[:, -1]

print(f"jacobian rev/fwd {jacobian_difference:.1e}, hessian asym {hessian_asymmetry:.1e}, "
      f"newton {newton_norms[0]}, vmap {vmap_difference:.1e}/{vmap_jacobian_difference:.1e}")
