"""A Kolmogorov-Arnold network fitting f(x, y) = exp(sin(pi x) + y^2), written for these tests in
the way efficient-kan (Blealtan/efficient-kan) commonly writes torch code (modelled on the API
usage of efficient-kan, of pykan's training loop and PDE example, of ChebyKAN and of FastKAN,
not a copy of any):

- a ``KANLinear`` layer: a knot grid buffer from ``torch.arange(-k, G + k + 1) * h + lo``
  ``.expand(in_features, -1).contiguous()`` (``register_buffer``), ``nn.Parameter(torch.Tensor
  (...))`` weights, ``nn.init.kaiming_uniform_(a=math.sqrt(5) * scale)``, the spline weights
  initialised under ``torch.no_grad()`` from noise (``torch.rand(...) - 1 / 2``) fitted by
  least squares, ``.data.copy_``;
- B-spline bases by the Cox-de Boor recursion on broadcast comparisons
  (``(x >= grid[:, :-1]) & (x < grid[:, 1:])``, ``.to(x.dtype)``, slices such as
  ``grid[:, : -(k + 1)]`` and ``grid[:, 1:(-k)]``); ``curve2coeff`` through
  ``torch.linalg.lstsq(A, B).solution`` (an under- and an over-determined batch) and
  ``permute``;
- the forward pass: ``nn.SiLU`` base branch through ``F.linear``, the spline branch as
  ``F.linear`` of the flattened bases (``view(x.size(0), -1)``) and the scaled spline weights
  (a property multiplying by ``spline_scaler.unsqueeze(-1)``), ``reshape(*shape[:-1], out)``;
- the adaptive grid update under ``@torch.no_grad()``: ``torch.bmm`` of permuted bases and
  coefficients, ``torch.sort(x, dim=0)[0]``, ``torch.linspace(..., dtype=torch.int64)``
  indexing, ``torch.concatenate`` of extended knots, ``self.grid.copy_(grid.T)``;
- the regularization loss: L1 of ``spline_weight.abs().mean(-1)`` and the entropy
  ``-torch.sum(p * p.log())``;
- training as pykan does it: ``torch.optim.LBFGS(history_size=10,
  line_search_fn="strong_wolfe")`` with a closure, grid updates every few steps
  (``model(x, update_grid=True)``), RMSE on a test set; and as efficient-kan's example does it:
  ``DataLoader(TensorDataset)`` minibatches, ``AdamW(weight_decay=1e-4)``,
  ``ExponentialLR(gamma=0.8)``, ``nn.MSELoss``;
- pykan's double precision (``torch.set_default_dtype(torch.float64)`` around building and
  fitting), the hard-coded ``dtype=torch.float32`` grid mixed into float64 knots;
- the learned edge activations on a ``torch.linspace`` grid (``torch.einsum``), their L1
  norms as edge importances;
- a ChebyKAN layer (``torch.tanh``, ``view(...).expand``, ``acos``, in-place ``*=`` by an
  integer ``arange`` buffer, ``cos``, ``einsum("bid,iod->bo")``) and a FastKAN layer (Gaussian
  radial bases on a frozen ``nn.Parameter(requires_grad=False)`` grid after ``nn.LayerNorm``,
  an ``nn.Linear`` subclass overriding ``reset_parameters`` with ``nn.init.trunc_normal_``);
- a physics-informed KAN as pykan's PDE example writes it: the Laplacian from a batch
  Jacobian of a batch Jacobian (``torch.autograd.functional.jacobian(create_graph=True)``,
  ``permute``, ``torch.diagonal(dim1=1, dim2=2)``) and its parameter gradients;
- fixed results for the torch comparison: bases, least-squares coefficients, outputs, losses,
  gradients, updated grids, LBFGS (in double precision) and AdamW steps.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset


class KANLinear(nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1,
                 scale_base=1.0, scale_spline=1.0, enable_standalone_scale_spline=True,
                 base_activation=nn.SiLU, grid_eps=0.02, grid_range=(-1, 1)):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.grid_size = grid_size
        self.spline_order = spline_order

        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = (
            (torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
            .expand(in_features, -1)
            .contiguous()
        )
        self.register_buffer("grid", grid)

        self.base_weight = nn.Parameter(torch.Tensor(out_features, in_features))
        self.spline_weight = nn.Parameter(
            torch.Tensor(out_features, in_features, grid_size + spline_order))
        if enable_standalone_scale_spline:
            self.spline_scaler = nn.Parameter(torch.Tensor(out_features, in_features))

        self.scale_noise = scale_noise
        self.scale_base = scale_base
        self.scale_spline = scale_spline
        self.enable_standalone_scale_spline = enable_standalone_scale_spline
        self.base_activation = base_activation()
        self.grid_eps = grid_eps
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
        with torch.no_grad():
            noise = (
                (torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                * self.scale_noise / self.grid_size
            )
            self.spline_weight.data.copy_(
                (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                * self.curve2coeff(self.grid.T[self.spline_order: -self.spline_order], noise)
            )
            if self.enable_standalone_scale_spline:
                nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

    def b_splines(self, x):
        """The B-spline bases at x: (batch, in_features) -> (batch, in, grid_size + order)."""
        assert x.dim() == 2 and x.size(1) == self.in_features
        grid = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = (
                (x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)])
                * bases[:, :, :-1]
            ) + (
                (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)])
                * bases[:, :, 1:]
            )
        assert bases.size() == (x.size(0), self.in_features, self.grid_size + self.spline_order)
        return bases.contiguous()

    def curve2coeff(self, x, y):
        """The spline coefficients through the points: x (batch, in), y (batch, in, out)."""
        assert x.dim() == 2 and x.size(1) == self.in_features
        assert y.size() == (x.size(0), self.in_features, self.out_features)
        A = self.b_splines(x).transpose(0, 1)  # (in, batch, coeff)
        B = y.transpose(0, 1)  # (in, batch, out)
        solution = torch.linalg.lstsq(A, B).solution  # (in, coeff, out)
        result = solution.permute(2, 0, 1)  # (out, in, coeff)
        assert result.size() == (self.out_features, self.in_features,
                                 self.grid_size + self.spline_order)
        return result.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * (
            self.spline_scaler.unsqueeze(-1) if self.enable_standalone_scale_spline else 1.0)

    def forward(self, x):
        assert x.size(-1) == self.in_features
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(
            self.b_splines(x).view(x.size(0), -1),
            self.scaled_spline_weight.view(self.out_features, -1),
        )
        output = base_output + spline_output
        return output.reshape(*original_shape[:-1], self.out_features)

    def edge_activations(self, x):
        """phi_{o,i}(x_i) for each edge: (batch, out, in); summed over in, the output."""
        base = self.base_activation(x).unsqueeze(1) * self.base_weight
        spline = torch.einsum("bik,oik->boi", self.b_splines(x), self.scaled_spline_weight)
        return base + spline

    @torch.no_grad()
    def update_grid(self, x, margin=0.01):
        assert x.dim() == 2 and x.size(1) == self.in_features
        batch = x.size(0)

        splines = self.b_splines(x).permute(1, 0, 2)  # (in, batch, coeff)
        orig_coeff = self.scaled_spline_weight.permute(1, 2, 0)  # (in, coeff, out)
        unreduced_spline_output = torch.bmm(splines, orig_coeff).permute(1, 0, 2)

        # the knots at quantiles of the data, mixed with a uniform grid over its range
        x_sorted = torch.sort(x, dim=0)[0]
        grid_adaptive = x_sorted[
            torch.linspace(0, batch - 1, self.grid_size + 1, dtype=torch.int64, device=x.device)
        ]
        uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
        grid_uniform = (
            torch.arange(self.grid_size + 1, dtype=torch.float32, device=x.device).unsqueeze(1)
            * uniform_step + x_sorted[0] - margin
        )
        grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
        grid = torch.concatenate(
            [
                grid[:1] - uniform_step
                * torch.arange(self.spline_order, 0, -1, device=x.device).unsqueeze(1),
                grid,
                grid[-1:] + uniform_step
                * torch.arange(1, self.spline_order + 1, device=x.device).unsqueeze(1),
            ],
            dim=0,
        )
        self.grid.copy_(grid.T)
        self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        regularization_loss_activation = l1_fake.sum()
        p = l1_fake / regularization_loss_activation
        regularization_loss_entropy = -torch.sum(p * p.log())
        return (regularize_activation * regularization_loss_activation
                + regularize_entropy * regularization_loss_entropy)


class KAN(nn.Module):
    def __init__(self, layers_hidden, grid_size=5, spline_order=3, **kwargs):
        super().__init__()
        self.grid_size = grid_size
        self.spline_order = spline_order
        self.layers = nn.ModuleList()
        for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
            self.layers.append(KANLinear(in_features, out_features, grid_size=grid_size,
                                         spline_order=spline_order, **kwargs))

    def forward(self, x, update_grid=False):
        for layer in self.layers:
            if update_grid:
                layer.update_grid(x)
            x = layer(x)
        return x

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        return sum(layer.regularization_loss(regularize_activation, regularize_entropy)
                   for layer in self.layers)


class ChebyKANLayer(nn.Module):
    """Chebyshev polynomials instead of B-splines (as ChebyKAN writes it)."""

    def __init__(self, input_dim, output_dim, degree):
        super().__init__()
        self.inputdim, self.outdim, self.degree = input_dim, output_dim, degree
        self.cheby_coeffs = nn.Parameter(torch.empty(input_dim, output_dim, degree + 1))
        nn.init.normal_(self.cheby_coeffs, mean=0.0, std=1 / (input_dim * (degree + 1)))
        self.register_buffer("arange", torch.arange(0, degree + 1, 1))

    def forward(self, x):
        x = torch.tanh(x)  # into [-1, 1], the polynomials' domain
        x = x.view((-1, self.inputdim, 1)).expand(-1, -1, self.degree + 1)
        x = x.acos()
        x *= self.arange  # T_n(cos t) = cos(n t)
        x = x.cos()
        y = torch.einsum("bid,iod->bo", x, self.cheby_coeffs)
        return y.view(-1, self.outdim)


class RadialBasisFunction(nn.Module):
    def __init__(self, grid_min=-2.0, grid_max=2.0, num_grids=8, denominator=None):
        super().__init__()
        grid = torch.linspace(grid_min, grid_max, num_grids)
        self.grid = nn.Parameter(grid, requires_grad=False)
        self.denominator = denominator or (grid_max - grid_min) / (num_grids - 1)

    def forward(self, x):
        return torch.exp(-((x[..., None] - self.grid) / self.denominator) ** 2)


class SplineLinear(nn.Linear):
    def __init__(self, in_features, out_features, init_scale=0.1, **kw):
        self.init_scale = init_scale
        super().__init__(in_features, out_features, bias=False, **kw)

    def reset_parameters(self):
        nn.init.trunc_normal_(self.weight, mean=0, std=self.init_scale)


class FastKANLayer(nn.Module):
    """Gaussian radial bases after a LayerNorm (as FastKAN writes it)."""

    def __init__(self, input_dim, output_dim, grid_min=-2.0, grid_max=2.0, num_grids=8,
                 use_base_update=True, base_activation=F.silu, spline_weight_init_scale=0.1):
        super().__init__()
        self.layernorm = nn.LayerNorm(input_dim)
        self.rbf = RadialBasisFunction(grid_min, grid_max, num_grids)
        self.spline_linear = SplineLinear(input_dim * num_grids, output_dim,
                                          spline_weight_init_scale)
        self.use_base_update = use_base_update
        if use_base_update:
            self.base_activation = base_activation
            self.base_linear = nn.Linear(input_dim, output_dim)

    def forward(self, x):
        spline_basis = self.rbf(self.layernorm(x))
        ret = self.spline_linear(spline_basis.view(*spline_basis.shape[:-2], -1))
        if self.use_base_update:
            ret = ret + self.base_linear(self.base_activation(x))
        return ret


def batch_jacobian(func, x, create_graph=False):
    """d func(x)_b / d x_b for each sample b (pykan's PDE example does it this way)."""
    def _func_sum(x):
        return func(x).sum(dim=0)
    return torch.autograd.functional.jacobian(_func_sum, x, create_graph=create_graph
                                              ).permute(1, 0, 2)


def target_fn(x):
    return torch.exp(torch.sin(math.pi * x[:, [0]]) + x[:, [1]] ** 2)


def create_dataset(f, n_var=2, ranges=(-1, 1), train_num=512, test_num=256, seed=0):
    torch.manual_seed(seed)
    train_input = torch.rand(train_num, n_var) * (ranges[1] - ranges[0]) + ranges[0]
    test_input = torch.rand(test_num, n_var) * (ranges[1] - ranges[0]) + ranges[0]
    return {"train_input": train_input, "train_label": f(train_input),
            "test_input": test_input, "test_label": f(test_input)}


def rmse(pred, label):
    return torch.sqrt(torch.mean((pred - label) ** 2))


# ------------------------------- pykan-style: LBFGS and grid updates, in double precision
torch.set_default_dtype(torch.float64)
data64 = create_dataset(target_fn)
torch.manual_seed(1)
model = KAN([2, 5, 1], grid_size=5, spline_order=3)
optimizer = torch.optim.LBFGS(model.parameters(), lr=1, history_size=10,
                              line_search_fn="strong_wolfe", tolerance_grad=1e-32,
                              tolerance_change=1e-32)
steps, grid_update_num, stop_grid_update_step, lamb = 20, 4, 12, 1e-4
grid_update_freq = int(stop_grid_update_step / grid_update_num)
train_rmse, test_rmse, reg_values, closure_calls = [], [], [], [0]

for step in range(steps):
    if step % grid_update_freq == 0 and step < stop_grid_update_step:
        model(data64["train_input"], update_grid=True)

    def closure():
        closure_calls[0] += 1
        optimizer.zero_grad()
        pred = model(data64["train_input"])
        train_loss = F.mse_loss(pred, data64["train_label"])
        reg = model.regularization_loss(1.0, 1.0)
        objective = train_loss + lamb * reg
        objective.backward()
        return objective

    optimizer.step(closure)
    with torch.no_grad():
        train_rmse.append(rmse(model(data64["train_input"]), data64["train_label"]).item())
        test_rmse.append(rmse(model(data64["test_input"]), data64["test_label"]).item())
        reg_values.append(model.regularization_loss().item())
    print(f"step {step}: train rmse {train_rmse[-1]:.3e} test rmse {test_rmse[-1]:.3e}")

# the learned activations of the first layer on a grid of inputs; their L1 norms rank edges
with torch.no_grad():
    xs = torch.linspace(-1, 1, 101, dtype=torch.float64)[:, None].expand(-1, 2).contiguous()
    first = model.layers[0]
    acts = first.edge_activations(xs)
    acts_sum_matches = torch.allclose(acts.sum(-1), first(xs), atol=1e-5)
    edge_importance = acts.abs().mean(0)  # (out, in)

# ----------------------------------------------- efficient-kan's example: AdamW + minibatches
torch.set_default_dtype(torch.float32)
dataset = create_dataset(target_fn)
torch.manual_seed(2)
adam_model = KAN([2, 4, 1], grid_size=8, spline_order=3)
loader = DataLoader(TensorDataset(dataset["train_input"], dataset["train_label"]),
                    batch_size=64, shuffle=True)
adam_optimizer = torch.optim.AdamW(adam_model.parameters(), lr=3e-2, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.ExponentialLR(adam_optimizer, gamma=0.85)
criterion = nn.MSELoss()
adam_losses, adam_test_rmse, adam_lrs = [], [], []
for epoch in range(8):
    adam_model.train()
    for inputs, labels in loader:
        adam_optimizer.zero_grad()
        output = adam_model(inputs)
        loss = criterion(output, labels) + 1e-5 * adam_model.regularization_loss()
        loss.backward()
        adam_optimizer.step()
        adam_losses.append(loss.item())
    adam_model.eval()
    with torch.no_grad():
        adam_test_rmse.append(
            rmse(adam_model(dataset["test_input"]), dataset["test_label"]).item())
    scheduler.step()
    print(f"epoch {epoch}: test rmse {adam_test_rmse[-1]:.4f}, lr {scheduler.get_last_lr()[0]:.5f}")
    adam_lrs.append(adam_optimizer.param_groups[0]["lr"])

# ----------------------------------------------------------- fixed weights, fixed inputs
torch.manual_seed(3)
fixed = KAN([2, 3, 1], grid_size=5, spline_order=3)
fx = dataset["train_input"][:64]
fy = dataset["train_label"][:64]
layer = fixed.layers[0]
fixed_results = {
    "init_spline_weight": layer.spline_weight.detach().clone(),
    "init_base_weight": layer.base_weight.detach().clone(),
    "init_spline_scaler": layer.spline_scaler.detach().clone(),
    "grid": layer.grid.clone(),
    "bases": layer.b_splines(fx),
}
# inside the grid's range the bases sum to one (a partition of unity)
fixed_results["bases_sum"] = fixed_results["bases"].sum(-1)
# an over-determined fit: the coefficients of known curves recovered from 64 points
with torch.no_grad():
    curves = torch.stack([torch.sin(math.pi * fx), fx ** 2, torch.tanh(2 * fx)], dim=-1)
    fixed_results["lstsq_coeff"] = layer.curve2coeff(fx, curves)
    fixed_results["lstsq_refit"] = torch.einsum("bik,oik->bio", layer.b_splines(fx),
                                                fixed_results["lstsq_coeff"])
    fixed_results["lstsq_target"] = curves
out = fixed(fx)
mse = F.mse_loss(out, fy)
reg = fixed.regularization_loss()
(mse + 1e-3 * reg).backward()
fixed_results.update({
    "out": out.detach().clone(),
    "mse": mse.item(),
    "reg": reg.item(),
    "reg_parts": [fixed.layers[0].regularization_loss(1.0, 0.0).item(),
                  fixed.layers[0].regularization_loss(0.0, 1.0).item()],
    "grads": {n: p.grad.clone() for n, p in fixed.named_parameters()},
})
fixed_adamw = torch.optim.AdamW(fixed.parameters(), lr=1e-2, weight_decay=1e-4)
fixed_adamw.step()
fixed_results["after_adamw"] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
# the grid update keeps the spline's function (nearly: the grid changes) on the data
with torch.no_grad():
    before = fixed(fx)
    fixed(fx, update_grid=True)
    after = fixed(fx)
fixed_results["updated_grids"] = [lay.grid.clone() for lay in fixed.layers]
fixed_results["updated_spline_weight"] = [lay.spline_weight.detach().clone()
                                          for lay in fixed.layers]
fixed_results["out_before_update"] = before
fixed_results["out_after_update"] = after


# a grid update and two LBFGS steps with the strong Wolfe line search at fixed weights, in
# double precision (in single precision the line search's cubic extrapolation, a nearly
# linear objective, amplifies rounding a thousandfold)
torch.set_default_dtype(torch.float64)
torch.manual_seed(4)
fixed64 = KAN([2, 3, 1], grid_size=5, spline_order=3)
fx64, fy64 = data64["train_input"][:64], data64["train_label"][:64]
fixed64(fx64, update_grid=True)


def fixed_closure():
    fixed_lbfgs.zero_grad()
    loss = F.mse_loss(fixed64(fx64), fy64)
    loss.backward()
    return loss


fixed_lbfgs = torch.optim.LBFGS(fixed64.parameters(), lr=1, history_size=10,
                                line_search_fn="strong_wolfe", max_iter=5)
fixed_results["lbfgs_losses"] = [fixed_lbfgs.step(fixed_closure).item() for _ in range(2)]
fixed_results["after_lbfgs"] = {n: p.detach().clone() for n, p in fixed64.named_parameters()}
lbfgs_state = fixed_lbfgs.state_dict()["state"][0]
fixed_results["lbfgs_counts"] = [lbfgs_state["func_evals"], lbfgs_state["n_iter"]]
with torch.no_grad():
    fixed_results["final_mse"] = F.mse_loss(fixed64(fx64), fy64).item()
    fixed_results["grid_is_double"] = fixed64.layers[0].grid.dtype == torch.float64
torch.set_default_dtype(torch.float32)

# ChebyKAN and FastKAN layers at fixed weights: outputs and gradients
torch.manual_seed(5)
cheby = nn.Sequential(ChebyKANLayer(2, 4, degree=4), nn.LayerNorm(4), ChebyKANLayer(4, 1, 4))
fast = nn.Sequential(FastKANLayer(2, 4), FastKANLayer(4, 1))
cheby_out, fast_out = cheby(fx), fast(fx)
(F.mse_loss(cheby_out, fy) + F.mse_loss(fast_out, fy)).backward()
fixed_results["cheby_out"] = cheby_out.detach()
fixed_results["fast_out"] = fast_out.detach()
fixed_results["cheby_grads"] = {n: p.grad.clone() for n, p in cheby.named_parameters()}
fixed_results["fast_grads"] = {n: p.grad.clone() for n, p in fast.named_parameters()
                               if p.grad is not None}
fixed_results["fast_init"] = fast[0].spline_linear.weight.detach().clone()

# a physics-informed KAN as pykan's PDE example writes it: the Laplacian by a batch Jacobian of
# a batch Jacobian (create_graph=True), the residual of -lap(u) = f and its parameter gradients
torch.manual_seed(6)
pde_model = KAN([2, 3, 1], grid_size=5, spline_order=3)
x_i = torch.rand(32, 2) * 2 - 1


def sol_d1_fun(x):
    return batch_jacobian(pde_model, x, create_graph=True)[:, 0, :]


sol_d1 = sol_d1_fun(x_i)
sol_d2 = batch_jacobian(sol_d1_fun, x_i, create_graph=True)
lap = torch.sum(torch.diagonal(sol_d2, dim1=1, dim2=2), dim=1, keepdim=True)
source = -2 * math.pi ** 2 * torch.sin(math.pi * x_i[:, [0]]) * torch.sin(math.pi * x_i[:, [1]])
pde_loss = torch.mean((lap - source) ** 2)
pde_loss.backward()
fixed_results["pde_D1"] = sol_d1.detach()
fixed_results["pde_lap"] = lap.detach()
fixed_results["pde_loss"] = pde_loss.item()
fixed_results["pde_grads"] = {n: p.grad.clone() for n, p in pde_model.named_parameters()}
# the same first derivatives through torch.autograd.grad
x_req = x_i.clone().requires_grad_(True)
fixed_results["pde_D1_grad"] = torch.autograd.grad(pde_model(x_req).sum(), x_req)[0]
