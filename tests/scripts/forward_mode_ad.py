"""Forward-mode AD (Jacobian-vector products without a backward pass), written for these tests
in the way the PyTorch forward-mode AD tutorial is commonly written (modelled on the API usage
of that tutorial, not a copy of it):

- ``autograd.forward_ad``: ``dual_level``, ``make_dual`` (tangent kept as is, or copied when
  its layout differs), ``unpack_dual`` and its ``primal``/``tangent`` fields, plain tensors as
  zero-tangent inputs, tangents dropped when the level exits;
- dual parameters swapped into an ``nn.Linear`` with delattr/setattr, and passed through
  ``func.functional_call``;
- a custom ``autograd.Function`` with a ``jvp`` staticmethod, checked by ``gradcheck(...,
  check_forward_ad=True, check_backward_ad=False, ...)``;
- ``func.jvp`` over several primals, a ``functools.partial``, and a dict of module params;
- forward-over-reverse (a Hessian-vector product of dual tensors through ``autograd.grad``).
"""
import functools

import jitgrad as torch
import jitgrad.autograd.forward_ad as fwAD
import jitgrad.func as ft
from jitgrad import nn
from jitgrad.func import functional_call

torch.manual_seed(0)


def energy(a, b):
    return a**2 + b**2


point, direction = torch.randn(10, 10), torch.randn(10, 10)
with fwAD.dual_level():
    dual_point = fwAD.make_dual(point, direction)
    # same layout: the dual's tangent is the very tensor passed in
    assert fwAD.unpack_dual(dual_point).tangent is direction
    # a transposed tangent has other strides, so make_dual copies it
    assert fwAD.unpack_dual(fwAD.make_dual(point, direction.T)).tangent is not direction
    other = torch.randn(10, 10)  # no tangent: treated as a zero one
    result = energy(dual_point, other)
    directional = fwAD.unpack_dual(result).tangent
# outside the level the result is an ordinary tensor again
assert fwAD.unpack_dual(result).tangent is None
basic_jvp_ok = torch.allclose(directional, 2 * point * direction)
unpacked_fields = fwAD.unpack_dual(result)._fields

# ---- a module's forward derivative with respect to its parameters
layer = nn.Linear(5, 5)
feats = torch.randn(16, 5)
weights = dict(layer.named_parameters())
pushes = {k: torch.rand_like(v) for k, v in weights.items()}
with fwAD.dual_level():
    for k, v in weights.items():
        delattr(layer, k)
        setattr(layer, k, fwAD.make_dual(v, pushes[k]))
    module_jvp = fwAD.unpack_dual(layer(feats)).tangent
module_jvp_expected = feats @ pushes["weight"].T + pushes["bias"]

# the same thing without mutating a module: functional_call on a fresh Linear
fresh = nn.Linear(5, 5)
with fwAD.dual_level():
    duals = {k: fwAD.make_dual(v, pushes[k]) for k, v in weights.items()}
    jvp2 = fwAD.unpack_dual(functional_call(fresh, duals, feats)).tangent
assert torch.allclose(module_jvp, jvp2)


class ExpFwd(torch.autograd.Function):
    """exp with only a forward-mode rule."""

    @staticmethod
    def forward(ctx, z):
        ctx.value = z.exp()
        return ctx.value

    @staticmethod
    def jvp(ctx, dz):
        out = ctx.value * dz
        del ctx.value  # not needed by a backward, so let it go
        return out


z0 = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
dz = torch.randn(10, 10)
with fwAD.dual_level():
    pushed = fwAD.unpack_dual(ExpFwd.apply(fwAD.make_dual(z0, dz))).tangent
custom_jvp_ok = torch.allclose(pushed, dz * z0.exp())
custom_gradcheck = torch.autograd.gradcheck(ExpFwd.apply, (z0,), check_forward_ad=True,
                                            check_backward_ad=False,
                                            check_undefined_grad=False,
                                            check_batched_grad=False)

# ---- the functional API
a, da, b, db = (torch.randn(10, 10) for _ in range(4))
_, tan = ft.jvp(energy, (a, b), (da, db))
functional_jvp_ok = torch.allclose(tan, 2 * a * da + 2 * b * db)

# only the first input gets a tangent: bind the second with partial
anchor = torch.randn(10, 10)
_, tan = ft.jvp(functools.partial(energy, b=anchor), (a,), (da,))
partial_jvp_ok = torch.allclose(tan, 2 * a * da)

head = nn.Linear(5, 5)
batch = torch.randn(16, 5)
detached = {k: v.detach() for k, v in head.named_parameters()}
nudges = {k: torch.rand_like(v) for k, v in detached.items()}
_, tan = ft.jvp(lambda p: functional_call(head, p, batch), (detached,), (nudges,))
module_functional_ok = torch.allclose(tan, batch @ nudges["weight"].T + nudges["bias"],
                                      atol=1e-6)

# ---- forward-over-reverse: H v of sum(cos) is -cos(x) * v
xs = torch.randn(6, dtype=torch.double, requires_grad=True)
vs = torch.randn(6, dtype=torch.double)
with fwAD.dual_level():
    xd = fwAD.make_dual(xs, vs)
    (gr,) = torch.autograd.grad(xd.cos().sum(), xd, create_graph=True)
    hv = fwAD.unpack_dual(gr).tangent
fwd_over_rev_ok = torch.allclose(hv, -xs.detach().cos() * vs)

# fixed inputs, recorded for the comparison with torch
mat = torch.cos(torch.arange(18, dtype=torch.float64)).view(3, 6) / 2
vec = torch.sin(torch.arange(6, dtype=torch.float64) + 1)
dvec = torch.linspace(1, -0.5, 6, dtype=torch.float64)
with fwAD.dual_level():
    dv = fwAD.make_dual(vec, dvec)
    res = torch.sigmoid(mat @ dv).log_softmax(0) * (dv**2).sum()
    fp, ftan = fwAD.unpack_dual(res)
fixed_results = {"primal": fp.tolist(), "tangent": ftan.tolist(),
                 "func_jvp": ft.jvp(lambda v: torch.tanh(mat @ v).softmax(0), (vec,),
                                    (dvec,))[1].tolist()}
print(fixed_results["func_jvp"])
