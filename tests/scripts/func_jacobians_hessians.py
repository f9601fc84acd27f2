# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""torch.func tutorial "Jacobians, Hessians, hvp, vhp, and more: composing function transforms"."""
from functools import partial

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad.utils.benchmark import Timer

_ = torch.manual_seed(0)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


D = 16
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)  # feature vector


def compute_jac(xp):
    jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0]
                     for vec in unit_vectors]
    return torch.stack(jacobian_rows)


xp = x.clone().requires_grad_()
unit_vectors = torch.eye(D)

jacobian = compute_jac(xp)

print(jacobian.shape)
print(jacobian[0])  # show first row

from jitgrad.func import vjp, vmap

_, vjp_fn = vjp(partial(predict, weight, bias), x)

ft_jacobian, = vmap(vjp_fn)(unit_vectors)

# let's confirm both methods compute the same result
assert torch.allclose(ft_jacobian, jacobian)

from jitgrad.func import jacrev

ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)

# Confirm by running the following:
assert torch.allclose(ft_jacobian, jacobian)

# chunk_size: the same Jacobian computed a few rows at a time
ft_jacobian_chunked = jacrev(predict, argnums=2, chunk_size=5)(weight, bias, x)
assert torch.allclose(ft_jacobian_chunked, jacobian)

without_vmap = Timer(stmt="compute_jac(xp)", globals=globals())
with_vmap = Timer(stmt="jacrev(predict, argnums=2)(weight, bias, x)", globals=globals())

no_vmap_timer = without_vmap.timeit(5)
with_vmap_timer = with_vmap.timeit(5)

print(no_vmap_timer)
print(with_vmap_timer)


def get_perf(first, first_descriptor, second, second_descriptor):
    """takes torch.benchmark objects and compares delta of second vs first."""
    second_res = second.times[0]
    first_res = first.times[0]

    gain = (first_res - second_res) / first_res
    if gain < 0:
        gain *= -1
    final_gain = gain * 100

    print(f"Performance delta: {final_gain:.4f} percent improvement with {first_descriptor} ")


get_perf(with_vmap_timer, "vmap", no_vmap_timer, "no vmap")

ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)

# note the change in input via ``argnums`` parameters of 0,1 to map to weight and bias
expected_jac_weight = torch.autograd.functional.jacobian(
    lambda w: predict(w, bias, x), weight)
assert torch.allclose(ft_jac_weight, expected_jac_weight, atol=1e-6)
print(ft_jac_weight.shape, ft_jac_bias.shape)

# reverse-mode Jacobian (jacrev) vs forward-mode Jacobian (jacfwd)
from jitgrad.func import jacfwd, jacrev

Din = 32
Dout = 2048
weight = torch.randn(Dout, Din)

bias = torch.randn(Dout)
x = torch.randn(Din)

# remember the general rule about taller vs wider... here we have a taller matrix:
print(weight.shape)

using_fwd = Timer(stmt="jacfwd(predict, argnums=2)(weight, bias, x)", globals=globals())
using_bwd = Timer(stmt="jacrev(predict, argnums=2)(weight, bias, x)", globals=globals())

jacfwd_timing = using_fwd.timeit(3)
jacrev_timing = using_bwd.timeit(3)

print(f'jacfwd time: {jacfwd_timing}')
print(f'jacrev time: {jacrev_timing}')
get_perf(jacfwd_timing, "jacfwd", jacrev_timing, "jacrev", )
tall_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
tall_rev = jacrev(predict, argnums=2)(weight, bias, x)
assert torch.allclose(tall_fwd, tall_rev, atol=1e-6)
tall_shape = tuple(tall_fwd.shape)

# Hessian computation with functorch.hessian
from jitgrad.func import hessian

Din = 64
Dout = 32
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(Din)

hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
hess_fwdrev = jacfwd(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)

print(torch.allclose(hess_api, hess_fwdfwd))
assert torch.allclose(hess_api, hess_fwdfwd, atol=1e-6)
assert torch.allclose(hess_api, hess_revrev, atol=1e-6)
assert torch.allclose(hess_api, hess_fwdrev, atol=1e-6)
hess_shape = tuple(hess_api.shape)

# Batch Jacobian and Batch Hessian
batch_size = 64
Din = 31
Dout = 33

weight = torch.randn(Dout, Din)
print(f"weight shape = {weight.shape}")

bias = torch.randn(Dout)

x = torch.randn(batch_size, Din)

compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian0 = compute_batch_jacobian(weight, bias, x)


def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)


batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
assert torch.allclose(batch_jacobian0, batch_jacobian1)
batch_jacobian_shape = tuple(batch_jacobian0.shape)

compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))

batch_hess = compute_batch_hessian(weight, bias, x)
print(batch_hess.shape)
batch_hess_shape = tuple(batch_hess.shape)

# Computing Hessian-vector products
from jitgrad.func import grad, jvp, vjp


def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def f(x):
    return x.sin().sum()


x = torch.randn(2048)
tangent = torch.randn(2048)

result = hvp(f, (x,), (tangent,))
assert torch.allclose(result, -x.sin() * tangent, atol=1e-6)


def hvp_revrev(f, primals, tangents):
    _, vjp_fn = vjp(grad(f), *primals)
    return vjp_fn(*tangents)


result_hvp_revrev = hvp_revrev(f, (x,), (tangent,))
assert torch.allclose(result, result_hvp_revrev[0])

# the torch.autograd.functional spellings of the same products
af_hvp = torch.autograd.functional.hvp(f, x, tangent)[1]
af_vhp = torch.autograd.functional.vhp(f, x, tangent)[1]
assert torch.allclose(result, af_hvp, atol=1e-6) and torch.allclose(result, af_vhp, atol=1e-6)

# deterministic parts to compare with torch
fixed_w = torch.sin(torch.arange(6 * 5, dtype=torch.float64)).view(6, 5)
fixed_b = torch.cos(torch.arange(6, dtype=torch.float64))
fixed_x = torch.linspace(-1, 1, 5, dtype=torch.float64)
fixed_jac_w, fixed_jac_b, fixed_jac_x = jacfwd(predict, argnums=(0, 1, 2))(fixed_w, fixed_b,
                                                                             fixed_x)
fixed_hess = hessian(predict, argnums=2)(fixed_w, fixed_b, fixed_x)
fixed_hvp = hvp(lambda x: predict(fixed_w, fixed_b, x).pow(2).sum(), (fixed_x,),
                (torch.ones(5, dtype=torch.float64),))
fixed_results = {
    "jac_w": fixed_jac_w.tolist(), "jac_b": fixed_jac_b.tolist(), "jac_x": fixed_jac_x.tolist(),
    "hess": fixed_hess.tolist(), "hvp": fixed_hvp.tolist(),
    "vmap_hess": vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))(
        fixed_w, fixed_b, torch.stack([fixed_x, fixed_x * 0.5])).tolist(),
}
