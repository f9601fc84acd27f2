"""Jacobians, Hessians and Hessian-vector products of a one-layer sigmoid network, written for
these tests in the way the torch.func "Jacobians, Hessians, hvp, vhp" tutorial is commonly
written (modelled on the API usage of that tutorial, not a copy of it):

- a row-by-row Jacobian with ``autograd.grad`` against ``vmap(vjp_fn)`` of the unit vectors
  and ``func.jacrev(argnums=2)`` (also with ``chunk_size``), timed with
  ``utils.benchmark.Timer``;
- ``jacrev(argnums=(0, 1))`` against ``autograd.functional.jacobian``, and ``jacfwd`` vs
  ``jacrev`` on a tall map;
- ``func.hessian`` against jacfwd/jacrev compositions, batched Jacobians/Hessians with
  ``vmap(in_dims=(None, None, 0))`` and the sum-over-batch trick with ``movedim``;
- hvp as ``jvp`` of ``grad`` and as ``vjp`` of ``grad``, and ``autograd.functional.hvp/vhp``.
"""
from functools import partial

import jitgrad as torch
from jitgrad.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap
from jitgrad.nn import functional as F
from jitgrad.utils.benchmark import Timer

torch.manual_seed(0)


def layer(w, b, inp):
    return torch.sigmoid(F.linear(inp, w, b))


def params(n_out, n_in):
    return torch.randn(n_out, n_in), torch.randn(n_out)


width = 16
W, b = params(width, width)
feat = torch.randn(width)
basis = torch.eye(width)
xq = feat.clone().requires_grad_()


def jac_by_rows(v):
    # one reverse pass per output: row i is grad of output i
    return torch.stack([torch.autograd.grad(layer(W, b, v), v, e)[0] for e in basis])


jacobian = jac_by_rows(xq)
print("jacobian", tuple(jacobian.shape), "first row", jacobian[0])

_, pull = vjp(partial(layer, W, b), feat)
(ft_jacobian,) = vmap(pull)(basis)
assert torch.allclose(ft_jacobian, jacobian)
ft_jacobian = jacrev(layer, argnums=2)(W, b, feat)
assert torch.allclose(ft_jacobian, jacobian)
ft_jacobian_chunked = jacrev(layer, argnums=2, chunk_size=5)(W, b, feat)


def report(label_a, timing_a, label_b, timing_b):
    """Print how much faster the faster of two benchmark measurements was."""
    ta, tb = timing_a.times[0], timing_b.times[0]
    faster, slower = (label_a, label_b) if ta < tb else (label_b, label_a)
    print(f"{faster} beats {slower} by {abs(ta - tb) / max(ta, tb) * 100:.1f} %")


no_vmap_timer = Timer(stmt="jac_by_rows(xq)", globals=globals()).timeit(5)
vmap_timer = Timer(stmt="jacrev(layer, argnums=2)(W, b, feat)", globals=globals()).timeit(5)
print(no_vmap_timer, vmap_timer, sep="\n")
report("rows", no_vmap_timer, "jacrev", vmap_timer)

ft_jac_weight, ft_jac_bias = jacrev(layer, argnums=(0, 1))(W, b, feat)
by_autograd = torch.autograd.functional.jacobian(lambda w: layer(w, b, feat), W)
assert torch.allclose(ft_jac_weight, by_autograd, atol=1e-6)

# a tall Jacobian (many outputs, few inputs): forward mode needs few passes
W, b = params(2048, 32)
feat = torch.randn(32)
fwd_t = Timer(stmt="jacfwd(layer, argnums=2)(W, b, feat)", globals=globals()).timeit(3)
rev_t = Timer(stmt="jacrev(layer, argnums=2)(W, b, feat)", globals=globals()).timeit(3)
report("jacfwd", fwd_t, "jacrev", rev_t)
tall = jacfwd(layer, argnums=2)(W, b, feat)
assert torch.allclose(tall, jacrev(layer, argnums=2)(W, b, feat), atol=1e-6)
tall_shape = tuple(tall.shape)

W, b = params(32, 64)
feat = torch.randn(64)
hess = hessian(layer, argnums=2)(W, b, feat)
for combo in (jacfwd(jacfwd(layer, argnums=2), argnums=2),
              jacrev(jacrev(layer, argnums=2), argnums=2),
              jacfwd(jacrev(layer, argnums=2), argnums=2)):
    assert torch.allclose(hess, combo(W, b, feat), atol=1e-6)
hess_shape = tuple(hess.shape)

# per-example Jacobians and Hessians of a batch
W, b = params(33, 31)
rows = torch.randn(64, 31)
per_example = vmap(jacrev(layer, argnums=2), in_dims=(None, None, 0))(W, b, rows)
# examples do not interact, so the Jacobian of the batch sum holds them all
summed = jacrev(lambda w, c, r: layer(w, c, r).sum(0), argnums=2)(W, b, rows).movedim(1, 0)
assert torch.allclose(per_example, summed)
batch_jacobian_shape = tuple(per_example.shape)
batch_hess_shape = tuple(vmap(hessian(layer, argnums=2), in_dims=(None, None, 0))(
    W, b, rows).shape)


def hvp_fwd_rev(fn, primals, tangents):
    return jvp(grad(fn), primals, tangents)[1]


def hvp_rev_rev(fn, primals, tangents):
    return vjp(grad(fn), *primals)[1](*tangents)


def wave(v):
    return v.cos().sum()


pos, push = torch.randn(2048), torch.randn(2048)
result = hvp_fwd_rev(wave, (pos,), (push,))
assert torch.allclose(result, -pos.cos() * push, atol=1e-6)
result_hvp_revrev = hvp_rev_rev(wave, (pos,), (push,))
assert torch.allclose(torch.autograd.functional.hvp(wave, pos, push)[1], result, atol=1e-6)
assert torch.allclose(torch.autograd.functional.vhp(wave, pos, push)[1], result, atol=1e-6)

# float64 inputs, recorded for the comparison with torch
fw = torch.cos(torch.arange(20, dtype=torch.float64) * 0.9).view(4, 5)
fb = torch.sin(torch.arange(4, dtype=torch.float64) + 2)
fx = torch.linspace(-0.8, 1.2, 5, dtype=torch.float64)
jw, jb, jx = jacfwd(layer, argnums=(0, 1, 2))(fw, fb, fx)
fixed_results = {
    "jac_w": jw.tolist(), "jac_b": jb.tolist(), "jac_x": jx.tolist(),
    "hess": hessian(layer, argnums=2)(fw, fb, fx).tolist(),
    "hvp": hvp_fwd_rev(lambda v: layer(fw, fb, v).pow(3).sum(), (fx,),
                       (torch.full((5,), 0.5, dtype=torch.float64),)).tolist(),
    "vmap_hess": vmap(hessian(layer, argnums=2), in_dims=(None, None, 0))(
        fw, fb, torch.stack([fx, -fx, fx * 2])).tolist(),
}
