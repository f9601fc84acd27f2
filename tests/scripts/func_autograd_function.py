"""Custom ``autograd.Function``s that compose with ``torch.func`` transforms, written for these
tests in the way the PyTorch "extending torch.func with autograd.Function" tutorial is commonly
written (modelled on the API usage of that tutorial, not a copy of it):

- the ``forward`` without ctx plus ``setup_context`` style: ``save_for_backward``,
  ``mark_non_differentiable``, non-tensor state on ctx, intermediates returned as outputs;
- a NumPy-backed sort whose backward is another NumPy-backed Function (so it can be
  differentiated twice), checked with ``gradcheck``/``gradgradcheck`` and ``func.grad``;
- hand-written ``vmap`` staticmethods (``info.batch_size``, ``in_dims``, ``movedim``,
  ``expand``), ``generate_vmap_rule = True``, and the error for a Function with neither;
- a ``jvp`` staticmethod with ``save_for_forward`` under ``func.jvp`` and ``func.jacfwd``;
- ``vmap`` of ``grad``, ``grad`` of ``grad`` and ``jacrev`` of ``jacrev`` through all of them.
"""
import numpy as np

import jitgrad as torch
from jitgrad.func import grad, jacfwd, jacrev, jvp, vmap

torch.manual_seed(0)


def host(t):
    return t.cpu().numpy()


def batch_first(t, bdim, size):
    """Bring a vmapped dim to the front, or broadcast an unbatched tensor to the batch."""
    return t.expand(size, *t.shape) if bdim is None else t.movedim(bdim, 0)


class GatherAlong(torch.autograd.Function):
    """out = take_along_axis(src, order, dim); its gradient gathers back with ``undo``."""

    @staticmethod
    def forward(src, order, undo, dim):
        picked = np.take_along_axis(host(src), host(order), dim)
        return torch.tensor(picked, device=src.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, order, undo, dim = inputs
        ctx.save_for_backward(order, undo)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, g):
        order, undo = ctx.saved_tensors
        return GatherAlong.apply(g, undo, order, ctx.dim), None, None, None

    @staticmethod
    def vmap(info, in_dims, src, order, undo, dim):
        src_bdim, order_bdim, undo_bdim, _ = in_dims
        ndim = src.dim() if src_bdim is None else src.dim() - 1
        if dim < 0:
            dim += ndim
        src = batch_first(src, src_bdim, info.batch_size)
        order = batch_first(order, order_bdim, info.batch_size)
        undo = batch_first(undo, undo_bdim, info.batch_size)
        return GatherAlong.apply(src, order, undo, dim + 1), 0


class HostSort(torch.autograd.Function):
    """Sorts on the host with NumPy; returns the permutation and its inverse as well."""

    @staticmethod
    def forward(values, dim):
        arr = host(values)
        order = np.argsort(arr, axis=dim)
        undo = np.argsort(order, axis=dim)
        dev = values.device
        return (torch.tensor(np.take_along_axis(arr, order, axis=dim), device=dev),
                torch.tensor(order, device=dev), torch.tensor(undo, device=dev))

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, dim = inputs
        _, order, undo = output
        ctx.mark_non_differentiable(order, undo)
        ctx.save_for_backward(order, undo)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, g_sorted, _g_order, _g_undo):
        order, undo = ctx.saved_tensors
        # scatter the incoming gradient back to where each value came from
        return GatherAlong.apply(g_sorted, undo, order, ctx.dim), None

    @staticmethod
    def vmap(info, in_dims, values, dim):
        bdim, _ = in_dims
        values = values.movedim(bdim, 0)
        if dim < 0:
            dim += values.dim() - 1
        return HostSort.apply(values, dim + 1), (0, 0, 0)


def host_sort(values, dim=-1):
    return HostSort.apply(values, dim)[0]


row = torch.randn(2, 3)
assert torch.allclose(grad(lambda v: host_sort(v).sum())(row), torch.ones_like(row))
ramp = torch.arange(3.0)
weighted = grad(lambda v: (host_sort(v) * ramp).sum())(row)
rank = torch.argsort(torch.argsort(row, dim=-1), dim=-1)
sort_grad_ok = torch.equal(weighted, ramp[rank])
probe = torch.randn(4, dtype=torch.double, requires_grad=True)
sort_gradcheck = torch.autograd.gradcheck(host_sort, (probe,))
sort_gradgradcheck = torch.autograd.gradgradcheck(host_sort, (probe,))

sorted_rows = torch.vmap(host_sort)(row)  # (also exported at the top level)
assert torch.allclose(sorted_rows, host_sort(sorted_rows, 1))
vmap_sorted = torch.equal(sorted_rows, torch.sort(row, dim=1).values)
scales = torch.randn(2, 3)
per_row = vmap(grad(lambda v, s: (host_sort(v) * s).sum()))(row, scales)
wanted = torch.stack([scales[i][torch.argsort(torch.argsort(row[i]))] for i in range(2)])
per_row_grad_ok = torch.allclose(per_row, wanted)


class Cubed(torch.autograd.Function):
    """x^3, handing back its slope 3x^2 as a second output for the backward to use."""

    @staticmethod
    def forward(t):
        return t**3, 3 * t**2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, g_value, g_slope):
        t, slope = ctx.saved_tensors
        # the slope is an output too: its own gradient (d slope / dt = 6t) must flow back
        return g_value * slope + g_slope * 6 * t


class CubedVmappable(Cubed):
    generate_vmap_rule = True


def cube(t):
    return Cubed.apply(t)[0]


def cube_v(t):
    return CubedVmappable.apply(t)[0]


scalar = torch.randn([])
ggx = grad(grad(cube))(scalar)
assert torch.allclose(ggx, 6 * scalar)
cube_ggx = (ggx.item(), scalar.item())

try:
    vmap(cube)(torch.randn(3))
    no_rule_error = None
except RuntimeError as err:
    no_rule_error = str(err)

vmap_ggx_x = torch.randn(3)
assert torch.allclose(vmap(cube_v)(vmap_ggx_x), vmap_ggx_x**3)
vmap_ggx = vmap(grad(grad(cube_v)))(vmap_ggx_x)
assert torch.allclose(vmap_ggx, 6 * vmap_ggx_x)


class Sine(torch.autograd.Function):
    generate_vmap_rule = True  # jacfwd runs jvp under vmap

    @staticmethod
    def forward(t):
        return t.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        return g * ctx.saved_tensors[0].cos()

    @staticmethod
    def jvp(ctx, t_dot):
        return t_dot * ctx.saved_tensors[0].cos()


angles = torch.randn(4, dtype=torch.double)
_, slope = jvp(Sine.apply, (angles,), (torch.ones_like(angles),))
sin_jvp_ok = torch.allclose(slope, angles.cos())
sin_jacfwd_ok = torch.allclose(jacfwd(Sine.apply)(angles), torch.diag(angles.cos()))

# fixed inputs, recorded for the comparison with torch
grid = torch.cos(torch.arange(12, dtype=torch.double) * 2.3).view(3, 4)
mix = torch.sin(torch.arange(12, dtype=torch.double) + 0.5).view(3, 4)
fixed_results = {
    "vmap_sort": vmap(host_sort)(grid).tolist(),
    "vmap_grad": vmap(grad(lambda v, s: (host_sort(v) ** 2 * s).sum()))(grid, mix).tolist(),
    "jacrev": jacrev(lambda v: host_sort(v, 0) * mix)(grid).tolist(),
    "cube_hess": jacrev(jacrev(lambda v: cube(v).sum()))(grid[1]).tolist(),
}
