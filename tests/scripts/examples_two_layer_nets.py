"""A two-layer ReLU regression net five ways, written for these tests in the way PyTorch's
"Learning PyTorch with Examples" pages are commonly written (modelled on the API usage of
those pages, not a copy of them):

- plain tensors with a hand-derived backward (``mm``, ``clamp(min=0)``, ``t()``,
  ``grad_h[h < 0] = 0``, in-place ``-=``);
- ``nn.Sequential`` with ``nn.MSELoss(reduction='sum')``, ``zero_grad`` and a manual
  ``param -= lr * param.grad`` under ``no_grad``;
- the legacy ``torch.autograd.Variable`` wrapper, ``MSELoss(size_average=False)`` (its
  deprecation warning) and ``optim.Adam``; ``loss.data[0]`` on a 0-dim loss (an IndexError);
- a custom ``nn.Module`` called through ``model.forward`` with ``optim.SGD``;
- a cubic of four scalar ``nn.Parameter`` fitted to ``sin`` on ``linspace(-pi, pi)``, with a
  custom ``string()`` method and ``named_parameters``.

Each network also runs a few steps from fixed weights on fixed data (``fixed``), so that
torch's run of the script gives the same losses.
"""
import math
import warnings

import jitgrad as torch
from jitgrad.autograd import Variable

torch.manual_seed(0)
BATCH, N_IN, HIDDEN, N_OUT = 64, 1000, 100, 10
cpu = torch.device("cpu")
results, fixed = {}, {}

inputs = torch.randn(BATCH, N_IN, device=cpu, dtype=torch.float)
targets = torch.randn(BATCH, N_OUT, device=cpu, dtype=torch.float)
# deterministic data that both libraries compute alike
grid_in = torch.sin(0.37 * torch.arange(BATCH * N_IN, dtype=torch.float).view(BATCH, N_IN))
grid_out = torch.cos(0.11 * torch.arange(BATCH * N_OUT, dtype=torch.float).view(BATCH, N_OUT))


def by_hand(xs, ys, w_in, w_out, steps, lr=1e-6):
    """Gradient descent with the gradients of the squared error written out."""
    history = []
    for _ in range(steps):
        pre = xs.mm(w_in)
        act = pre.clamp(min=0)
        err = act.mm(w_out) - ys
        history.append(err.pow(2).sum().item())
        d_out = 2.0 * err
        d_act = d_out.mm(w_out.t())
        d_pre = d_act.clone()
        d_pre[pre < 0] = 0  # ReLU passes no gradient where it was off
        w_out -= lr * act.t().mm(d_out)
        w_in -= lr * xs.t().mm(d_pre)
    return history


results["tensor"] = by_hand(inputs, targets, torch.randn(N_IN, HIDDEN, device=cpu),
                            torch.randn(HIDDEN, N_OUT, device=cpu), 200)
fixed["tensor"] = by_hand(grid_in, grid_out,
                          torch.linspace(-0.1, 0.1, N_IN * HIDDEN).view(N_IN, HIDDEN).sin(),
                          torch.linspace(-1, 1, HIDDEN * N_OUT).view(HIDDEN, N_OUT), 20)


def pinned(model):
    """Overwrite every parameter with a fixed pattern (alternating sign)."""
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            pattern = torch.linspace(-0.05, 0.05, p.numel()).view_as(p).cos()
            p.copy_(pattern * (0.05 if k % 2 == 0 else -0.05))
    return model


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(N_IN, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, N_OUT))


def fit(model, xs, ys, steps, criterion, optimizer=None, lr=1e-4, call=None):
    """Train for ``steps``; without an optimizer, update the parameters by hand."""
    call = call or model
    history = []
    for step in range(steps):
        loss = criterion(call(xs), ys)
        history.append(loss.item())
        if optimizer is None:
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for param in model.parameters():
                    param -= lr * param.grad
        else:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if step % 100 == 99:
            print(step, history[-1])
    return history


sum_mse = torch.nn.MSELoss(reduction="sum")
results["nn"] = fit(mlp(), inputs, targets, 200, sum_mse)
fixed["nn"] = fit(pinned(mlp()), grid_in, grid_out, 20, sum_mse)

# ---- old-style: Variables and size_average
var_x = Variable(torch.randn(BATCH, N_IN))
var_y = Variable(torch.randn(BATCH, N_OUT), requires_grad=False)
variable_flags = (type(var_x).__name__, var_x.requires_grad, var_y.requires_grad)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    legacy_mse = torch.nn.MSELoss(size_average=False)
size_average_warnings = [str(w.message) for w in seen]
size_average_reduction = legacy_mse.reduction


def with_adam(model, xs, ys, steps):
    return fit(model, xs, ys, steps, legacy_mse, torch.optim.Adam(model.parameters(), lr=1e-4))


adam_net = mlp()
results["optim"] = with_adam(adam_net, var_x, var_y, 200)
fixed["optim"] = with_adam(pinned(mlp()), grid_in, grid_out, 20)
data_index_error = None
try:
    legacy_mse(adam_net(var_x), var_y).data[0]  # old code indexed the loss
except IndexError as err:
    data_index_error = str(err)


class TwoLayer(torch.nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.inp = torch.nn.Linear(n_in, n_hidden)
        self.out = torch.nn.Linear(n_hidden, n_out)

    def forward(self, x):
        return self.out(self.inp(x).clamp(min=0))


def with_module(model, xs, ys, steps):
    with warnings.catch_warnings():  # size_average again
        warnings.simplefilter("ignore")
        criterion = torch.nn.MSELoss(size_average=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    return fit(model, xs, ys, steps, criterion, opt, call=model.forward)


results["module"] = with_module(TwoLayer(N_IN, HIDDEN, N_OUT), var_x, var_y, 200)
fixed["module"] = with_module(pinned(TwoLayer(N_IN, HIDDEN, N_OUT)), grid_in, grid_out, 20)


class Cubic(torch.nn.Module):
    """a + b x + c x^2 + d x^3 with four scalar parameters."""

    def __init__(self):
        super().__init__()
        for name in "abcd":
            setattr(self, name, torch.nn.Parameter(torch.randn(())))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        a, b, c, d = (p.item() for p in (self.a, self.b, self.c, self.d))
        return f"y = {a} + {b} x + {c} x^2 + {d} x^3"


def fit_sine(model, steps):
    xs = torch.linspace(-math.pi, math.pi, 2000)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    return fit(model, xs, torch.sin(xs), steps, sum_mse, opt)


cubic = Cubic()
results["polynomial"] = fit_sine(cubic, 2000)
print("fitted:", cubic.string())
polynomial_named = [name for name, _ in cubic.named_parameters()]
fixed_cubic = Cubic()
with torch.no_grad():
    for p, value in zip(fixed_cubic.parameters(), (0.1, -0.2, 0.3, -0.4)):
        p.fill_(value)
fixed["polynomial"] = fit_sine(fixed_cubic, 100)
fixed_poly_string = fixed_cubic.string()
