"""Neural ordinary differential equations (Chen et al. 2018) with the adjoint method, written for
these tests in the way torchdiffeq and the code built on it (its ``ode_demo`` and ``cnf``
examples) write torch code (modelled on their API usage, not a copy):

- an ``ODEFunc(nn.Module)`` with ``forward(t, y)`` and an ``nfe`` counter;
- solvers in torch: torchdiffeq's Butcher-tableau step (a ``torch.empty`` scratch of stages
  filled by an ``_UncheckedAssign`` ``autograd.Function`` writing through ``.data[index]`` and
  returning its input, ``k[..., :i + 1].matmul(beta_i * dt).view_as(f0)``), Dormand-Prince 5(4)
  with an RMS error norm, Hairer's initial step and step-size control under ``torch.no_grad``
  (``torch.where`` clamps the step to the output time), fixed-grid 3/8-rule RK4 with linear
  interpolation, tuple states flattened by ``torch.cat([s.reshape(-1) ...])``, reversed time by
  negation, ``torch.stack`` of the solution at the requested times;
- ``odeint_adjoint``: an ``autograd.Function`` taking non-tensor arguments and the parameters
  as ``*adjoint_params``, ``ctx.save_for_backward``, a backward integrating the augmented state
  backwards with ``torch.enable_grad()``, ``torch.autograd.grad(..., allow_unused=True,
  retain_graph=True)``, ``torch.as_strided(t, (), ())``, time gradients by ``.dot``;
- training on the ode_demo spiral (``RMSprop``, minibatches of trajectory windows by
  ``torch.randperm``/``torch.stack``), backprop through the solver and then the adjoint;
- a continuous normalizing flow (the ``cnf`` example's hypernetwork, FFJORD's divergence):
  ``torch.set_grad_enabled(True)``, ``z.requires_grad_(True)`` on a state view, the exact trace
  by ``autograd.grad(create_graph=True)`` per dimension or Hutchinson's with ``randn_like``;
- checks: adjoint gradients equal backprop through the solver, ``gradcheck`` of the adjoint on
  a tiny float64 ODE, Hutchinson's estimate averages to the exact trace.
"""
import collections
import math
from functools import partial

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.distributions import MultivariateNormal

torch.manual_seed(0)


# =================================================================================== solvers
def _rms_norm(tensor):
    return tensor.abs().pow(2).mean().sqrt()


def _flat_to_shape(tensor, length, shapes):
    tensor_list = []
    total = 0
    for shape in shapes:
        next_total = total + shape.numel()
        tensor_list.append(tensor[..., total:next_total].view((*length, *shape)))
        total = next_total
    return tuple(tensor_list)


class _TupleFunc(nn.Module):
    def __init__(self, base_func, shapes):
        super().__init__()
        self.base_func = base_func
        self.shapes = shapes

    def forward(self, t, y):
        f = self.base_func(t, _flat_to_shape(y, (), self.shapes))
        return torch.cat([f_.reshape(-1) for f_ in f])


class _ReverseFunc(nn.Module):
    def __init__(self, base_func, mul=1.0):
        super().__init__()
        self.base_func = base_func
        self.mul = mul

    def forward(self, t, y):
        return self.mul * self.base_func(-t, y)


class _UncheckedAssign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scratch, value, index):
        ctx.index = index
        scratch.data[index] = value  # sneak past the version checker
        return scratch

    @staticmethod
    def backward(ctx, grad_scratch):
        return grad_scratch, grad_scratch[ctx.index], None


_ButcherTableau = collections.namedtuple("_ButcherTableau", "alpha, beta, c_sol, c_error")
_f64 = partial(torch.tensor, dtype=torch.float64)
_DORMAND_PRINCE_TABLEAU = _ButcherTableau(
    alpha=_f64([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1.]),
    beta=[_f64([1 / 5]), _f64([3 / 40, 9 / 40]), _f64([44 / 45, -56 / 15, 32 / 9]),
          _f64([19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]),
          _f64([9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]),
          _f64([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])],
    c_sol=_f64([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]),
    c_error=_f64([35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
                  125 / 192 - 451 / 720, -2187 / 6784 - -12231 / 42400,
                  11 / 84 - 649 / 6300, -1. / 60.]),
)


def _runge_kutta_step(func, y0, f0, t0, dt, t1, tableau):
    t0, dt, t1 = t0.to(y0.dtype), dt.to(y0.dtype), t1.to(y0.dtype)
    k = torch.empty(*f0.shape, len(tableau.alpha) + 1, dtype=y0.dtype, device=y0.device)
    k = _UncheckedAssign.apply(k, f0, (..., 0))
    for i, (alpha_i, beta_i) in enumerate(zip(tableau.alpha, tableau.beta)):
        ti = t1 if alpha_i == 1. else t0 + alpha_i * dt
        yi = y0 + k[..., :i + 1].matmul(beta_i * dt).view_as(f0)
        f = func(ti, yi)
        k = _UncheckedAssign.apply(k, f, (..., i + 1))
    # the last stage is the solution (first same as last), else one more combination
    if not (tableau.c_sol[-1] == 0 and (tableau.c_sol[:-1] == tableau.beta[-1]).all()):
        yi = y0 + k.matmul(dt * tableau.c_sol).view_as(f0)
    return yi, k[..., -1], k.matmul(dt * tableau.c_error)  # y1, f1 and the error estimate


def _select_initial_step(func, t0, y0, order, rtol, atol, norm, f0):
    scale = atol + torch.abs(y0) * rtol
    d0 = norm(y0 / scale).abs()
    d1 = norm(f0 / scale).abs()
    if d0 < 1e-5 or d1 < 1e-5:
        h0 = torch.tensor(1e-6, dtype=y0.dtype)
    else:
        h0 = 0.01 * d0 / d1
    h0 = h0.abs()
    y1 = y0 + h0 * f0
    f1 = func(t0 + h0, y1)
    d2 = torch.abs(norm((f1 - f0) / scale) / h0)
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = torch.max(torch.tensor(1e-6, dtype=y0.dtype), h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1. / float(order + 1))
    return torch.min(100 * h0, h1.abs()).to(t0.dtype)


def _optimal_step_size(last_step, error_ratio, safety, ifactor, dfactor, order):
    if error_ratio == 0:
        return last_step * ifactor
    if error_ratio < 1:
        dfactor = torch.ones((), dtype=last_step.dtype)
    error_ratio = error_ratio.type_as(last_step)
    exponent = torch.tensor(order, dtype=last_step.dtype).reciprocal()
    factor = torch.min(ifactor, torch.max(safety / error_ratio ** exponent, dfactor))
    return last_step * factor


class Dopri5Solver:
    order = 5

    def __init__(self, func, y0, rtol, atol, safety=0.9, ifactor=10.0, dfactor=0.2):
        self.func, self.y0 = func, y0
        self.rtol, self.atol = rtol, atol
        self.safety = torch.as_tensor(safety, dtype=y0.dtype)
        self.ifactor = torch.as_tensor(ifactor, dtype=y0.dtype)
        self.dfactor = torch.as_tensor(dfactor, dtype=y0.dtype)
        tab = _DORMAND_PRINCE_TABLEAU
        self.tableau = _ButcherTableau(alpha=tab.alpha.to(y0.dtype),
                                       beta=[b.to(y0.dtype) for b in tab.beta],
                                       c_sol=tab.c_sol.to(y0.dtype),
                                       c_error=tab.c_error.to(y0.dtype))

    def integrate(self, t):
        solution = [self.y0]
        t0, y0 = t[0], self.y0
        f0 = self.func(t0, y0)
        with torch.no_grad():
            dt = _select_initial_step(self.func, t0, y0, self.order, self.rtol, self.atol,
                                      _rms_norm, f0)
        for next_t in t[1:]:
            while t0 < next_t:
                # the last step of an interval ends exactly on the output time
                t1 = torch.where(t0 + dt < next_t, t0 + dt, next_t)
                y1, f1, y1_error = _runge_kutta_step(self.func, y0, f0, t0, t1 - t0, t1,
                                                     self.tableau)
                with torch.no_grad():
                    error_tol = self.atol + self.rtol * torch.max(y0.abs(), y1.abs())
                    error_ratio = _rms_norm(y1_error / error_tol)
                    accept_step = error_ratio <= 1
                    dt = _optimal_step_size(dt, error_ratio, self.safety, self.ifactor,
                                            self.dfactor, self.order)
                if accept_step:
                    t0, y0, f0 = t1, y1, f1
            solution.append(y0)
        return torch.stack(solution)


def rk4_alt_step_func(func, t0, dt, t1, y0, f0=None):
    """Kutta's 3/8 rule, torchdiffeq's 'rk4'."""
    k1 = f0 if f0 is not None else func(t0, y0)
    k2 = func(t0 + dt / 3, y0 + dt * k1 / 3)
    k3 = func(t0 + dt * 2 / 3, y0 + dt * (k2 - k1 / 3))
    k4 = func(t1, y0 + dt * (k1 - k2 + k3))
    return (k1 + 3 * (k2 + k3) + k4) * dt * 0.125


class RK4Solver:
    def __init__(self, func, y0, rtol=None, atol=None, step_size=None):
        self.func, self.y0, self.step_size = func, y0, step_size

    def _grid_constructor(self, t):
        start_time, end_time = t[0], t[-1]
        niters = torch.ceil((end_time - start_time) / self.step_size + 1).item()
        t_infer = torch.arange(0, niters, dtype=t.dtype) * self.step_size + start_time
        t_infer[-1] = t[-1]
        return t_infer

    @staticmethod
    def _linear_interp(t0, t1, y0, y1, t):
        if t == t0:
            return y0
        if t == t1:
            return y1
        slope = (t - t0) / (t1 - t0)
        return y0 + slope * (y1 - y0)

    def integrate(self, t):
        time_grid = self._grid_constructor(t)
        solution = [self.y0]
        j = 1
        y0 = self.y0
        for t0, t1 in zip(time_grid[:-1], time_grid[1:]):
            dt = t1 - t0
            y1 = y0 + rk4_alt_step_func(self.func, t0, dt, t1, y0)
            while j < len(t) and t1 >= t[j]:
                solution.append(self._linear_interp(t0, t1, y0, y1, t[j]))
                j += 1
            y0 = y1
        return torch.stack(solution)


SOLVERS = {"dopri5": Dopri5Solver, "rk4": RK4Solver}


def _flatten_tuple(func, y0):
    if not isinstance(y0, tuple):
        return None, func, y0
    shapes = [y0_.shape for y0_ in y0]
    return shapes, _TupleFunc(func, shapes), torch.cat([y0_.reshape(-1) for y0_ in y0])


def _check_inputs(func, y0, t):
    shapes, func, y0 = _flatten_tuple(func, y0)
    if len(t) > 1 and t[0] > t[1]:
        t = -t
        func = _ReverseFunc(func, mul=-1.0)
    return shapes, func, y0, t


def odeint(func, y0, t, *, rtol=1e-7, atol=1e-9, method="dopri5", options=None):
    shapes, func, y0, t = _check_inputs(func, y0, t)
    solver = SOLVERS[method](func=func, y0=y0, rtol=rtol, atol=atol, **(options or {}))
    solution = solver.integrate(t)
    if shapes is not None:
        solution = _flat_to_shape(solution, (len(t),), shapes)
    return solution


# =================================================================================== adjoint
class OdeintAdjointMethod(torch.autograd.Function):
    @staticmethod
    def forward(ctx, func, y0, t, rtol, atol, method, options, t_requires_grad,
                *adjoint_params):
        ctx.func, ctx.method, ctx.options = func, method, options
        ctx.rtol, ctx.atol, ctx.t_requires_grad = rtol, atol, t_requires_grad
        with torch.no_grad():
            y = odeint(func, y0, t, rtol=rtol, atol=atol, method=method, options=options)
        ctx.save_for_backward(t, y, *adjoint_params)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        with torch.no_grad():
            func, t_requires_grad = ctx.func, ctx.t_requires_grad
            t, y, *adjoint_params = ctx.saved_tensors
            adjoint_params = tuple(adjoint_params)

            # [-1] because y and grad_y are both of shape (len(t), *y0.shape)
            aug_state = [torch.zeros((), dtype=y.dtype), y[-1], grad_y[-1]]
            aug_state.extend([torch.zeros_like(param) for param in adjoint_params])

            def augmented_dynamics(t, y_aug):
                # (the state is passed through so that the solver's step-size control sees it)
                y, adj_y = y_aug[1], y_aug[2]
                with torch.enable_grad():
                    t_ = t.detach().requires_grad_(True)
                    y = y.detach().requires_grad_(True)
                    func_eval = func(t_ if t_requires_grad else t_.detach(), y)
                    # (torchdiffeq's workaround for PyTorch bug #39784)
                    _t = torch.as_strided(t_, (), ())  # noqa: F841
                    _y = torch.as_strided(y, (), ())  # noqa: F841
                    vjp_t, vjp_y, *vjp_params = torch.autograd.grad(
                        func_eval, (t_, y) + adjoint_params, -adj_y,
                        allow_unused=True, retain_graph=True)
                vjp_t = torch.zeros_like(t_) if vjp_t is None else vjp_t
                vjp_y = torch.zeros_like(y) if vjp_y is None else vjp_y
                vjp_params = [torch.zeros_like(param) if vjp_param is None else vjp_param
                              for param, vjp_param in zip(adjoint_params, vjp_params)]
                return (vjp_t, func_eval, vjp_y, *vjp_params)

            time_vjps = torch.empty(len(t), dtype=t.dtype) if t_requires_grad else None
            for i in range(len(t) - 1, 0, -1):
                if t_requires_grad:
                    # the gradient with respect to the time t[i]
                    func_eval = func(t[i], y[i])
                    dLd_cur_t = func_eval.reshape(-1).dot(grad_y[i].reshape(-1))
                    aug_state[0] -= dLd_cur_t
                    time_vjps[i] = dLd_cur_t
                aug_state = odeint(augmented_dynamics, tuple(aug_state), t[i - 1:i + 1].flip(0),
                                   rtol=ctx.rtol, atol=ctx.atol, method=ctx.method,
                                   options=ctx.options)
                aug_state = [a[1] for a in aug_state]  # the state at t[i - 1]
                aug_state[1] = y[i - 1]  # (the exact value, not the backwards solution)
                aug_state[2] += grad_y[i - 1]
            if t_requires_grad:
                time_vjps[0] = aug_state[0]
        # (adj_y, the time gradients and the parameters' adjoints, None for the rest)
        return (None, aug_state[2], time_vjps, None, None, None, None, None, *aug_state[3:])


def odeint_adjoint(func, y0, t, *, rtol=1e-7, atol=1e-9, method="dopri5", options=None,
                   adjoint_params=None):
    if adjoint_params is None:
        adjoint_params = tuple(func.parameters())
    adjoint_params = tuple(p for p in adjoint_params if p.requires_grad)
    shapes, func, y0 = _flatten_tuple(func, y0)
    solution = OdeintAdjointMethod.apply(func, y0, t, rtol, atol, method, options,
                                         t.requires_grad, *adjoint_params)
    if shapes is not None:
        solution = _flat_to_shape(solution, (len(t),), shapes)
    return solution


# ====================================================================== ode_demo: the spiral
data_size, batch_time, batch_size = 200, 10, 16
true_y0 = torch.tensor([[2., 0.]])
t = torch.linspace(0., 25., data_size)
TRUE_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])


class Lambda(nn.Module):
    def forward(self, t, y):
        return torch.mm(y ** 3, TRUE_A.to(y.dtype))


# the data: the true spiral solved to near machine precision in float64
with torch.no_grad():
    true_y = odeint(Lambda(), true_y0.double(), t.double(), method="dopri5", rtol=1e-10,
                    atol=1e-12).float()


def get_batch():
    s = torch.randperm(data_size - batch_time)[:batch_size]
    batch_y0 = true_y[s]  # (M, D)
    batch_t = t[:batch_time]  # (T)
    batch_y = torch.stack([true_y[s + i] for i in range(batch_time)], dim=0)  # (T, M, D)
    return batch_y0, batch_t, batch_y


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.net(y ** 3)


def flat_grads(params):
    return torch.cat([p.grad.reshape(-1) for p in params])


# ----- fixed weights: the solvers, backprop through them, the adjoint
func = ODEFunc()
params = list(func.parameters())
fixed_results = {"true_y": true_y[::20, 0].clone()}
batch_t = t[:6]
batch_y = torch.stack([true_y[i:i + 6] for i in range(0, data_size - 6, 25)], dim=1)
batch_y0 = batch_y[0]  # (windows of the spiral, as get_batch makes them, but fixed)
for method, kwargs in (("rk4", dict(options=dict(step_size=t[1].item() / 2))),
                       ("dopri5", dict(rtol=1e-6, atol=1e-7))):
    for solver, key in ((odeint, method), (odeint_adjoint, f"{method}_adjoint")):
        # (the initial state and the times require gradients too)
        y0 = batch_y0.clone().requires_grad_(True)
        tt = batch_t.clone().requires_grad_(True)
        func.zero_grad()
        func.nfe = 0
        pred_y = solver(func, y0, tt, method=method, **kwargs)
        fixed_results[f"{key}_nfe_forward"] = func.nfe
        loss = torch.mean(torch.abs(pred_y - batch_y))
        func.nfe = 0
        loss.backward()
        fixed_results[f"{key}_nfe_backward"] = func.nfe  # (the adjoint's backward solve)
        fixed_results[f"{key}_pred"] = pred_y.detach()
        fixed_results[f"{key}_loss"] = loss.item()
        fixed_results[f"{key}_grads"] = flat_grads(params)
        fixed_results[f"{key}_y0_grad"], fixed_results[f"{key}_t_grad"] = y0.grad, tt.grad

# how far the adjoint's gradients are from backprop's, relative to their size
adjoint_rel_errors = {}
for method in ("rk4", "dopri5"):
    for name in ("grads", "y0_grad", "t_grad"):
        a = fixed_results[f"{method}_adjoint_{name}"]
        b = fixed_results[f"{method}_{name}"]
        adjoint_rel_errors[f"{method}_{name}"] = ((a - b).norm() / b.norm()).item()

# a backwards solve returns to the start
with torch.no_grad():
    forward_end = odeint(func, batch_y0, batch_t, rtol=1e-8, atol=1e-9)[-1]
    back_to_start = odeint(func, forward_end, batch_t.flip(0), rtol=1e-8, atol=1e-9)[-1]
round_trip_error = (back_to_start - batch_y0).abs().max().item()


# ----- gradcheck of the adjoint on a tiny float64 ODE (its parameters are the inputs)
gen = torch.Generator().manual_seed(1)
gc_y0 = torch.randn(2, 2, dtype=torch.float64, generator=gen, requires_grad=True)
gc_a = (0.5 * torch.randn(2, 2, dtype=torch.float64, generator=gen)).requires_grad_()
gc_b = torch.randn(2, dtype=torch.float64, generator=gen, requires_grad=True)
gc_t = torch.tensor([0., 0.25, 0.5], dtype=torch.float64)


def adjoint_solution(y0, A, b):
    return odeint_adjoint(lambda t, y: torch.tanh(y @ A + b) - 0.1 * y * t, y0, gc_t,
                          method="rk4", options=dict(step_size=0.025), adjoint_params=(A, b))


gradcheck_ok = torch.autograd.gradcheck(adjoint_solution, (gc_y0, gc_a, gc_b), eps=1e-6,
                                        atol=1e-6, rtol=1e-4)
fixed_results["gradcheck_jacobian_row"] = torch.cat([g.reshape(-1) for g in torch.autograd.grad(
    adjoint_solution(gc_y0, gc_a, gc_b)[-1, 0, 0], (gc_y0, gc_a, gc_b))])

# ----- training on minibatches of trajectory windows (backprop through rk4)
optimizer = optim.RMSprop(func.parameters(), lr=5e-3)
losses, eval_losses = [], []
niters, test_freq = 120, 40
rk4_options = dict(step_size=t[1].item())
all_y0 = true_y[:data_size - batch_time, 0]
all_y = torch.stack([true_y[i:i + data_size - batch_time, 0] for i in range(batch_time)])
for itr in range(1, niters + 11):
    optimizer.zero_grad()
    batch_y0, batch_t, batch_y = get_batch()
    solver = odeint if itr <= niters else odeint_adjoint  # (ode_demo's --adjoint)
    pred_y = solver(func, batch_y0, batch_t, method="rk4", options=rk4_options)
    loss = torch.mean(torch.abs(pred_y - batch_y))
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if itr == 1 or itr % test_freq == 0:
        with torch.no_grad():  # every window of the trajectory
            pred_y = odeint(func, all_y0, batch_t, method="rk4", options=rk4_options)
            eval_losses.append(torch.mean(torch.abs(pred_y - all_y)).item())

adjoint_losses = losses[niters:]


# ====================================================== continuous normalizing flow (FFJORD)
class HyperNetwork(nn.Module):
    """The ODE's weights as functions of time (torchdiffeq's cnf example)."""

    def __init__(self, in_out_dim, hidden_dim, width):
        super().__init__()
        blocksize = width * in_out_dim
        self.fc1 = nn.Linear(1, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim)
        self.fc3 = nn.Linear(hidden_dim, 3 * blocksize + width)
        self.in_out_dim, self.hidden_dim = in_out_dim, hidden_dim
        self.width, self.blocksize = width, blocksize

    def forward(self, t):
        params = torch.tanh(self.fc1(t.reshape(1, 1)))
        params = torch.tanh(self.fc2(params))
        params = self.fc3(params).reshape(-1)
        W = params[:self.blocksize].reshape(self.width, self.in_out_dim, 1)
        U = params[self.blocksize:2 * self.blocksize].reshape(self.width, 1, self.in_out_dim)
        G = params[2 * self.blocksize:3 * self.blocksize].reshape(self.width, 1,
                                                                   self.in_out_dim)
        U = U * torch.sigmoid(G)
        B = params[3 * self.blocksize:].reshape(self.width, 1, 1)
        return [W, B, U]


def trace_df_dz(f, z):
    """The exact divergence: one backward pass per dimension."""
    sum_diag = 0.
    for i in range(z.shape[1]):
        sum_diag += torch.autograd.grad(f[:, i].sum(), z, create_graph=True)[0] \
            .contiguous()[:, i].contiguous()
    return sum_diag.contiguous()


def hutchinson_trace(f, z, e):
    """Hutchinson's estimator: E[e^T (df/dz) e] with e ~ N(0, I)."""
    e_dzdx = torch.autograd.grad(f, z, e, create_graph=True)[0]
    return (e_dzdx * e).sum(1)


class CNF(nn.Module):
    def __init__(self, in_out_dim, hidden_dim, width):
        super().__init__()
        self.in_out_dim, self.hidden_dim, self.width = in_out_dim, hidden_dim, width
        self.hyper_net = HyperNetwork(in_out_dim, hidden_dim, width)
        self.estimator = "exact"
        self.noise = None  # the fixed Hutchinson noise of one solve (FFJORD)

    def forward(self, t, states):
        z = states[0]  # (and logp_z, states[1], which the dynamics do not read)
        batchsize = z.shape[0]
        with torch.set_grad_enabled(True):
            z.requires_grad_(True)
            W, B, U = self.hyper_net(t)
            Z = torch.unsqueeze(z, 0).repeat(self.width, 1, 1)
            h = torch.tanh(torch.matmul(Z, W) + B)
            dz_dt = torch.matmul(h, U).mean(0)
            if self.estimator == "exact":
                divergence = trace_df_dz(dz_dt, z)
            else:
                divergence = hutchinson_trace(dz_dt, z, self.noise)
            dlogp_z_dt = -divergence.view(batchsize, 1)
        return (dz_dt, dlogp_z_dt)


def get_circles(num_samples):
    """Two noisy concentric circles (sklearn's make_circles(noise=0.06, factor=0.5))."""
    angles = torch.rand(num_samples) * 2 * math.pi
    radius = torch.where(torch.rand(num_samples) < 0.5, 1.0, 0.5)
    x = torch.stack([radius * torch.cos(angles), radius * torch.sin(angles)], dim=1)
    x = x + 0.06 * torch.randn_like(x)
    return x, torch.zeros(num_samples, 1)  # (and logp_diff_t1)


cnf = CNF(in_out_dim=2, hidden_dim=16, width=32)
p_z0 = MultivariateNormal(loc=torch.tensor([0.0, 0.0]),
                          covariance_matrix=torch.tensor([[0.1, 0.0], [0.0, 0.1]]))
cnf_t = torch.tensor([1., 0.])  # from the data at t1 = 1 to the base density at t0 = 0


def cnf_log_prob(x, logp_diff_t1, solver=odeint, **kwargs):
    z_t, logp_diff_t = solver(cnf, (x, logp_diff_t1), cnf_t, method="rk4",
                              options=dict(step_size=0.25), **kwargs)
    z_t0, logp_diff_t0 = z_t[-1], logp_diff_t[-1]
    return p_z0.log_prob(z_t0) - logp_diff_t0.view(-1)


# ----- fixed weights: exact and Hutchinson divergences, adjoint against backprop
x, logp_diff_t1 = get_circles(32)
for solver, key in ((odeint, "cnf"), (odeint_adjoint, "cnf_adjoint")):
    cnf.zero_grad()
    logp_x = cnf_log_prob(x, logp_diff_t1, solver=solver)
    (-logp_x.mean()).backward()
    fixed_results[f"{key}_logp"] = logp_x.detach()
    fixed_results[f"{key}_grads"] = flat_grads(cnf.parameters())

# the divergence at one time: exact, and Hutchinson's estimate over many probes
W, B, U = cnf.hyper_net(torch.tensor(0.5))


def dynamics(z):
    return torch.matmul(torch.tanh(torch.matmul(z.unsqueeze(0).repeat(32, 1, 1), W) + B),
                        U).mean(0)


zx = x.clone().requires_grad_(True)
dz = dynamics(zx)
exact_div = trace_df_dz(dz, zx)
probes = [hutchinson_trace(dz, zx, torch.randn_like(zx)) for _ in range(400)]
hutchinson_div = torch.stack(probes).mean(0)
fixed_results["exact_divergence"] = exact_div.detach()
jacobian = torch.autograd.functional.jacobian(dynamics, x)
jacobian_trace = torch.einsum("bibi->b", jacobian)

# ----- fitting the two circles: the exact trace, then Hutchinson's estimator
cnf_optimizer = optim.Adam(cnf.parameters(), lr=1e-2)
cnf_losses, hutchinson_losses = [], []
for estimator, n_steps, record in (("exact", 25, cnf_losses),
                                   ("hutchinson", 10, hutchinson_losses)):
    cnf.estimator = estimator
    for _ in range(n_steps):
        cnf_optimizer.zero_grad()
        x, logp_diff_t1 = get_circles(64)
        cnf.noise = torch.randn_like(x) if estimator == "hutchinson" else None
        loss = -cnf_log_prob(x, logp_diff_t1).mean(0)
        loss.backward()
        cnf_optimizer.step()
        record.append(loss.item())
cnf.estimator = "exact"

# the fitted density on held-out samples and far away
with torch.no_grad():
    x_test, logp_test = get_circles(128)
logp_data = cnf_log_prob(x_test, logp_test).mean().item()
logp_far = cnf_log_prob(torch.full((16, 2), 3.0), torch.zeros(16, 1)).mean().item()

print(f"adjoint vs backprop: {adjoint_rel_errors}, gradcheck {gradcheck_ok}")
print(f"spiral {losses[0]:.4f} -> {losses[-1]:.4f}, CNF {cnf_losses[0]:.3f} -> "
      f"{cnf_losses[-1]:.3f}, logp {logp_data:.3f} far {logp_far:.3f}")
