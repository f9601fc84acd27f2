# ruff: noqa: N812 (the usual F alias)
"""Implicit neural representations with periodic activations (SIREN), written for these tests
the way the SIREN paper's released torch code (its ``explore_siren`` notebook, ``modules.py``
and ``diff_operators.py``) writes them (not a copy):

- ``SineLayer``: ``nn.Linear`` then ``torch.sin(omega_0 * x)`` with ``omega_0 = 30``, and the
  paper's initialisation under ``torch.no_grad`` with ``weight.uniform_`` (``1/in`` for the
  first layer, ``sqrt(6/in)/omega_0`` after it), ``forward_with_intermediate``; a ``Siren``
  of ``nn.Sequential`` layers with an outermost ``nn.Linear`` whose forward takes
  ``coords.clone().detach().requires_grad_(True)``;
- a coordinate grid from ``torch.linspace`` and ``torch.meshgrid(..., indexing="ij")``,
  ``torch.stack`` and ``reshape``; a synthetic 16x16 image from an analytic function, its
  gradient also through ``F.conv2d`` with Sobel kernels;
- ``gradient``, ``divergence`` and ``laplace`` by ``torch.autograd.grad(..., grad_outputs=
  torch.ones_like(y), create_graph=True)``; the Laplacian against a float64 finite difference;
- fitting the image (Adam, MSE, PSNR), Poisson reconstruction (fitting only the gradient
  field: a double backward each step), a plain ReLU MLP and a ReLU MLP on Fourier features
  (a random Gaussian ``B``, ``torch.cat([torch.sin(p), torch.cos(p)], dim=-1)``);
- the same gradients with ``torch.func.vmap(torch.func.jacrev(...))`` and the Laplacian as the
  trace of ``torch.func.hessian`` (``torch.diagonal``); ``gradcheck``/``gradgradcheck`` of
  the sine layer in float64.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ----------------------------------------------------------------------------- modules


class SineLayer(nn.Module):
    """sin(omega_0 * (W x + b)); omega_0 scales the first layer's frequencies up and keeps the
    later layers' pre-activations near unit variance under the uniform initialisation."""

    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                bound = np.sqrt(6 / self.in_features) / self.omega_0
                self.linear.weight.uniform_(-bound, bound)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))

    def forward_with_intermediate(self, input):
        intermediate = self.omega_0 * self.linear(input)
        return torch.sin(intermediate), intermediate


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features,
                 outermost_linear=False, first_omega_0=30, hidden_omega_0=30.0):
        super().__init__()
        self.net = [SineLayer(in_features, hidden_features, is_first=True,
                              omega_0=first_omega_0)]
        for _ in range(hidden_layers):
            self.net.append(SineLayer(hidden_features, hidden_features, is_first=False,
                                      omega_0=hidden_omega_0))
        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                bound = np.sqrt(6 / hidden_features) / hidden_omega_0
                final_linear.weight.uniform_(-bound, bound)
            self.net.append(final_linear)
        else:
            self.net.append(SineLayer(hidden_features, out_features, is_first=False,
                                      omega_0=hidden_omega_0))
        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)  # gradients w.r.t. the input
        output = self.net(coords)
        return output, coords

    def forward_with_activations(self, coords):
        """Every layer's output (and the sine layers' pre-activations), keyed by layer."""
        activations = {}
        x = coords.clone().detach().requires_grad_(True)
        activations["input"] = x
        for i, layer in enumerate(self.net):
            if isinstance(layer, SineLayer):
                x, intermediate = layer.forward_with_intermediate(x)
                activations[f"{type(layer).__name__}_{i}_pre"] = intermediate
            else:
                x = layer(x)
            activations[f"{type(layer).__name__}_{i}"] = x
        return activations


class ReLUMLP(nn.Module):
    """The baseline: the same width and depth with ReLU and torch's default initialisation."""

    def __init__(self, in_features, hidden_features, hidden_layers, out_features):
        super().__init__()
        layers = [nn.Linear(in_features, hidden_features), nn.ReLU()]
        for _ in range(hidden_layers):
            layers += [nn.Linear(hidden_features, hidden_features), nn.ReLU()]
        layers.append(nn.Linear(hidden_features, out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)
        return self.net(coords), coords


class FourierFeatures(nn.Module):
    """gamma(v) = [sin(2 pi B v), cos(2 pi B v)] with a fixed Gaussian B (Tancik et al.)."""

    def __init__(self, in_features, mapping_size, scale):
        super().__init__()
        self.register_buffer("B", torch.randn(mapping_size, in_features) * scale)

    def forward(self, x):
        x_proj = (2 * math.pi * x) @ self.B.T
        return torch.cat([torch.sin(x_proj), torch.cos(x_proj)], dim=-1)


class FourierReLU(nn.Module):
    def __init__(self, in_features, mapping_size, scale, hidden_features, hidden_layers,
                 out_features):
        super().__init__()
        self.features = FourierFeatures(in_features, mapping_size, scale)
        self.mlp = ReLUMLP(2 * mapping_size, hidden_features, hidden_layers, out_features)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)
        return self.mlp.net(self.features(coords)), coords


# ---------------------------------------------------------------------- diff operators


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    return torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]


def divergence(y, x):
    div = 0.0
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]),
                                   create_graph=True)[0][..., i:i + 1]
    return div


def laplace(y, x):
    return divergence(gradient(y, x), x)


# -------------------------------------------------------------------------------- data


def get_mgrid(sidelen, dim=2):
    """A flattened grid of sidelen^dim coordinates in [-1, 1]^dim."""
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    return mgrid.reshape(-1, dim)


def image_fn(coords):
    """A smooth image in about [-1, 1] with a few frequencies and a bump."""
    x, y = coords[..., 0:1], coords[..., 1:2]
    waves = 0.5 * torch.sin(2.5 * math.pi * x) * torch.cos(1.5 * math.pi * y)
    bump = 0.8 * torch.exp(-((x - 0.3) ** 2 + (y + 0.2) ** 2) / 0.08)
    return waves + bump - 0.3 * torch.cos(3.0 * math.pi * (x + y))


def psnr(pred, target, data_range=2.0):
    mse = F.mse_loss(pred, target)
    return (10 * torch.log10(data_range ** 2 / mse)).item()


def sobel(img):
    """(H, W) image -> (2, H, W) central-difference gradients on a unit-spaced grid."""
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
    kernels = torch.stack([kx.T, kx])[:, None]  # d/d(row), d/d(col)
    padded = F.pad(img[None, None], (1, 1, 1, 1), mode="replicate")
    return F.conv2d(padded, kernels)[0]


sidelength = 16
coords = get_mgrid(sidelength)
grid_input = coords.clone().requires_grad_(True)
pixels = image_fn(grid_input)
gt_grad = gradient(pixels, grid_input).detach()
gt_laplace = laplace(pixels, grid_input).detach()
pixels = pixels.detach()
spacing = 2 / (sidelength - 1)
sobel_grad = sobel(pixels.view(sidelength, sidelength)) / spacing  # per unit of coordinate
fixed_results["coords"] = coords
fixed_results["pixels"] = pixels
fixed_results["gt_grad"] = gt_grad
fixed_results["gt_laplace"] = gt_laplace
fixed_results["sobel"] = sobel_grad

# ----------------------------------------------------- fixed-weight checks (recorded)

siren = Siren(2, 32, 2, 1, outermost_linear=True)
fixed_results["first_weight"] = siren.net[0].linear.weight.detach().clone()
fixed_results["hidden_weight"] = siren.net[1].linear.weight.detach().clone()
fixed_results["last_weight"] = siren.net[-1].weight.detach().clone()
initial_state = copy.deepcopy(siren.state_dict())

out, inp = siren(coords)
grad = gradient(out, inp)
lap = laplace(out, inp)
fixed_results["siren_out"] = out.detach()
fixed_results["siren_grad"] = grad.detach()
fixed_results["siren_laplace"] = lap.detach()
# parameter gradients of a loss on the gradient field: a second-order backward
grad_loss = ((grad - gt_grad) ** 2).mean()
# (the output bias does not reach the gradient field: allow_unused gives None for it)
param_grads = torch.autograd.grad(grad_loss, list(siren.parameters()), allow_unused=True)
unused_params = [name for (name, _), g in zip(siren.named_parameters(), param_grads) if g is None]
fixed_results["grad_loss"] = grad_loss.item()
fixed_results["grad_loss_param_grads"] = {
    name: g for (name, _), g in zip(siren.named_parameters(), param_grads) if g is not None}

activations = siren.forward_with_activations(coords[:5])
fixed_results["activations"] = {k: v.detach() for k, v in activations.items()}
# sin(omega_0 x) after the first layer spans about omega_0 / in_features periods
pre0 = activations["SineLayer_0_pre"].detach()
fixed_results["first_pre_range"] = (pre0.min().item(), pre0.max().item())

# the same gradients three ways: autograd.grad, vmap(jacrev), vmap(hessian) for the Laplacian


def siren_point(c):
    return siren.net(c).squeeze(-1)


jac = torch.func.vmap(torch.func.jacrev(siren_point))(coords)  # (N, 2)
hess = torch.func.vmap(torch.func.hessian(siren_point))(coords)  # (N, 2, 2)
hess_laplace = torch.diagonal(hess, dim1=-2, dim2=-1).sum(-1, keepdim=True)
fixed_results["jacrev"] = jac.detach()  # (it depends on the parameters: it requires grad)
fixed_results["hessian_laplace"] = hess_laplace.detach()
jacrev_difference = (jac - grad.detach()).abs().max().item()
hessian_difference = (hess_laplace - lap.detach()).abs().max().item()
hessian_symmetry = (hess - hess.transpose(-1, -2)).abs().max().item()

# float64: the Laplacian against a five-point finite difference
siren64 = copy.deepcopy(siren).double()
probe = torch.tensor([[0.1, -0.2], [0.45, 0.3], [-0.7, 0.05], [0.0, 0.9]], dtype=torch.float64)
out64, inp64 = siren64(probe)
lap64 = laplace(out64, inp64).detach()
grad64 = gradient(out64, inp64).detach()
h = 1e-4
with torch.no_grad():
    f0 = siren64.net(probe)
    fd_laplace = -4 * f0
    fd_grad = []
    for d in range(2):
        step = torch.zeros(2, dtype=torch.float64)
        step[d] = h
        fp, fm = siren64.net(probe + step), siren64.net(probe - step)
        fd_laplace = fd_laplace + fp + fm
        fd_grad.append((fp - fm) / (2 * h))
    fd_laplace = fd_laplace / h ** 2
    fd_grad = torch.cat(fd_grad, dim=-1)
fixed_results["laplace64"] = lap64

# gradcheck / gradgradcheck of a sine layer in float64, as a module and with its weights
layer64 = SineLayer(3, 4, omega_0=30).double()
x64 = (0.1 * torch.randn(5, 3, dtype=torch.float64)).requires_grad_()
w64 = layer64.linear.weight.detach().clone().requires_grad_()
b64 = layer64.linear.bias.detach().clone().requires_grad_()


def sine_functional(x, w, b):
    return torch.sin(30 * F.linear(x, w, b))


gradcheck_results = {
    "layer": torch.autograd.gradcheck(layer64, (x64,)),
    "layer_gradgrad": torch.autograd.gradgradcheck(layer64, (x64,)),
    "functional": torch.autograd.gradcheck(sine_functional, (x64, w64, b64)),
    "functional_gradgrad": torch.autograd.gradgradcheck(sine_functional, (x64, w64, b64)),
    "laplace": torch.autograd.gradcheck(
        lambda c: laplace(siren64.net(c), c), (probe[:2].clone().requires_grad_(),)),
}

# Fourier features (recorded): the embedding on the grid
torch.manual_seed(1)
ff_model = FourierReLU(2, 16, 2.0, 32, 2, 1)
fixed_results["fourier_features"] = ff_model.features(coords[:6])
relu_model = ReLUMLP(2, 32, 2, 1)
relu_out, relu_in = relu_model(coords)
fixed_results["relu_out"] = relu_out[:6].detach()
fixed_results["relu_grad"] = gradient(relu_out, relu_in)[:6].detach()
# a ReLU network is piecewise linear: its Laplacian is zero wherever it is defined, which is
# why the paper's Poisson and wave experiments need a smooth activation
relu_laplace = laplace(relu_out, relu_in).detach()

# ----------------------------------------------------------------------------- training


def fit(model, steps, lr, target_fn, log_every=0, inputs=None):
    """Adam on a per-pixel loss; the loss function sees the output and the input coords."""
    optim = torch.optim.Adam(lr=lr, params=model.parameters())
    inputs = coords if inputs is None else inputs
    losses = []
    for step in range(steps):
        model_output, model_input = model(inputs)
        loss = target_fn(model_output, model_input)
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
        if log_every and step % log_every == 0:
            print(f"step {step}: loss {loss.item():.6f}")
    return losses


def image_loss(model_output, model_input):
    return ((model_output - pixels) ** 2).mean()


total_steps, lr = 200, 1e-3
siren_losses = fit(siren, total_steps, lr, image_loss, log_every=50)
relu_losses = fit(relu_model, total_steps, lr, image_loss)
ff_losses = fit(ff_model, total_steps, lr, image_loss)

with torch.no_grad():
    siren_pred = siren.net(coords)
    relu_pred = relu_model.net(coords)
    ff_pred = ff_model(coords)[0]
psnrs = {"siren": psnr(siren_pred, pixels), "relu": psnr(relu_pred, pixels),
         "fourier_relu": psnr(ff_pred, pixels)}

# Poisson: fit only the gradient field, on a finer 32x32 grid (matching gradients at 16x16
# points leaves a SIREN free to oscillate between them); the image comes back up to a constant
fine_coords = get_mgrid(2 * sidelength)
fine_input = fine_coords.clone().requires_grad_(True)
fine_pixels = image_fn(fine_input)
fine_grad = gradient(fine_pixels, fine_input).detach()
fine_pixels = fine_pixels.detach()


def fine_gradient_loss(model_output, model_input):
    return ((gradient(model_output, model_input) - fine_grad) ** 2).mean()


torch.manual_seed(2)
poisson = Siren(2, 32, 2, 1, outermost_linear=True)
poisson_losses = fit(poisson, 150, lr, fine_gradient_loss, inputs=fine_coords)
with torch.no_grad():
    recon = poisson.net(fine_coords)
    recon = recon - recon.mean() + fine_pixels.mean()
poisson_psnr = psnr(recon, fine_pixels)
poisson_out, poisson_in = poisson(fine_coords)
poisson_grad_error = ((gradient(poisson_out, poisson_in).detach() - fine_grad).norm()
                      / fine_grad.norm()).item()
relu_poisson = ReLUMLP(2, 32, 2, 1)
relu_poisson_losses = fit(relu_poisson, 30, lr, fine_gradient_loss, inputs=fine_coords)

# a fresh copy of the initial SIREN reproduces the first loss (state_dict round trip)
reloaded = Siren(2, 32, 2, 1, outermost_linear=True)
reloaded.load_state_dict(initial_state)
with torch.no_grad():
    reloaded_loss = image_loss(reloaded.net(coords), None).item()

print(f"PSNR siren {psnrs['siren']:.1f} dB, relu {psnrs['relu']:.1f} dB, fourier "
      f"{psnrs['fourier_relu']:.1f} dB; poisson {poisson_psnr:.1f} dB; jacrev "
      f"{jacrev_difference:.1e}, hessian {hessian_difference:.1e}")
