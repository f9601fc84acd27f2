# ruff: noqa: B007, B011, E402, F811, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""torch.func tutorials "Model ensembling" and "Neural Tangent Kernels" (tiny sizes).

jitgrad has no 'meta' device: the ensembling tutorial's ``base_model = base_model.to('meta')``
is the one line left out (marked below); ``functional_call`` replaces every parameter and
buffer anyway, so the base model's own values are never read.
"""
import copy

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)


# Here's a simple MLP
class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


device = 'cuda' if torch.cuda.is_available() else 'cpu'
num_models = 10

data = torch.randn(100, 16, 1, 8, 8, device=device)
targets = torch.randint(10, (1600,), device=device)

models = [SimpleMLP().to(device) for _ in range(num_models)]

minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models,
                                                                                  minibatches)]

minibatch = data[0]
predictions2 = [model(minibatch) for model in models]

from jitgrad.func import stack_module_state

params, buffers = stack_module_state(models)

from jitgrad.func import functional_call

# Construct a "stateless" version of one of the models. It is "stateless" in
# the sense that the parameters are meta Tensors and do not have storage.
base_model = copy.deepcopy(models[0])
# base_model = base_model.to('meta')  # LEFT OUT: jitgrad has no 'meta' device


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension

assert minibatches.shape == (num_models, 16, 1, 8, 8)  # verify minibatch has leading dim

from jitgrad import vmap

predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)

# verify the ``vmap`` predictions match the
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3,
                      rtol=1e-5)

predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)

assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)

from jitgrad.utils.benchmark import Timer

without_vmap = Timer(
    stmt="[model(minibatch) for model, minibatch in zip(models, minibatches)]",
    globals=globals())
with_vmap = Timer(
    stmt="vmap(fmodel)(params, buffers, minibatches)",
    globals=globals())
print(f'Predictions without vmap {without_vmap.timeit(10)}')
print(f'Predictions with vmap {with_vmap.timeit(10)}')
ensemble_max_diff = (predictions1_vmap - torch.stack(predictions_diff_minibatch_loop)).abs().max()
ensemble_shapes = (tuple(predictions1_vmap.shape), tuple(predictions2_vmap.shape))

# ---------------------------------------------------------------- Neural Tangent Kernels
from jitgrad.func import functional_call, jacrev, jvp, vjp, vmap

device = 'cuda' if torch.cuda.device_count() > 0 else 'cpu'


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, (3, 3))
        self.conv2 = nn.Conv2d(4, 4, (3, 3))
        self.conv3 = nn.Conv2d(4, 4, (3, 3))
        self.fc = nn.Linear(64, 3)

    def forward(self, x):
        x = self.conv1(x)
        x = x.relu()
        x = self.conv2(x)
        x = x.relu()
        x = self.conv3(x)
        x = x.flatten(1)
        x = self.fc(x)
        return x


x_train = torch.randn(6, 3, 10, 10, device=device)
x_test = torch.randn(4, 3, 10, 10, device=device)

net = CNN().to(device)

# Detaching the parameters because we won't be calling Tensor.backward().
params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute='full'):
    # Compute J(x1)
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]

    # Compute J(x2)
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]

    # Compute J(x1) @ J(x2).T
    einsum_expr = None
    if compute == 'full':
        einsum_expr = 'Naf,Mbf->NMab'
    elif compute == 'trace':
        einsum_expr = 'Naf,Maf->NM'
    elif compute == 'diagonal':
        einsum_expr = 'Naf,Maf->NMa'
    else:
        assert False

    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    result = result.sum(0)
    return result


result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
print(result.shape)
ntk_full_shape = tuple(result.shape)

result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, 'trace')
print(result.shape)
ntk_trace = result


def empirical_ntk_ntk_vps(func, params, x1, x2, compute='full'):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            # This computes ``vec @ J(x2).T``
            # `vec` is some unit vector (a single slice of the Identity matrix)
            vjps = vjp_fn(vec)
            # This computes ``J(X1) @ vjps``
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        # Here's our identity matrix
        basis = torch.eye(output.numel(), dtype=output.dtype,
                          device=output.device).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    # ``get_ntk(x1, x2)`` computes the NTK for a single data point x1, x2
    # Since the x1, x2 inputs to ``empirical_ntk_ntk_vps`` are batched,
    # we actually wish to compute the NTK between every pair of data points
    # between {x1} and {x2}. That's what the ``vmaps`` here do.
    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)

    if compute == 'full':
        return result
    if compute == 'trace':
        return torch.einsum('NMKK->NM', result)
    if compute == 'diagonal':
        return torch.einsum('NMKK->NMK', result)


# (the tutorial runs these two under ``with torch.backends.cudnn.flags(allow_tf32=False):``,
# LEFT OUT: jitgrad.backends.cudnn has no ``flags``; on the CPU it changes nothing)
result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params,
                                                                      x_test, x_train)
result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train)

assert torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps, atol=1e-5)

result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params,
                                                                      x_test, x_train, 'diagonal')
result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train, 'diagonal')

assert torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps, atol=1e-5)
ntk_vps_trace = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train, 'trace')
ntk_max_diff = (result_from_jacobian_contraction - result_from_ntk_vps).abs().max().item()

# deterministic parts to compare with torch: a fixed-weight net's NTK
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) + i).view(p.shape) * 0.2)
fixed_params = {k: v.detach() for k, v in net.named_parameters()}
fixed_x1 = torch.cos(torch.arange(2 * 3 * 10 * 10, dtype=torch.float32)).view(2, 3, 10, 10)
fixed_x2 = torch.sin(torch.arange(3 * 3 * 10 * 10, dtype=torch.float32)).view(3, 3, 10, 10)
fixed_ntk = empirical_ntk_jacobian_contraction(fnet_single, fixed_params, fixed_x1, fixed_x2)
fixed_ntk_vps = empirical_ntk_ntk_vps(fnet_single, fixed_params, fixed_x1, fixed_x2, 'diagonal')
fixed_ensemble_params = {k: torch.stack([torch.cos(torch.arange(v[0].numel(),
                                                                dtype=torch.float32) * (j + 1))
                                         .view(v[0].shape) * 0.1 for j in range(3)])
                         for k, v in stack_module_state(models[:3])[0].items()}
fixed_ensemble_out = vmap(fmodel, in_dims=(0, None, None))(
    fixed_ensemble_params, {}, fixed_x1[:, 0, :8, :8].reshape(2, 1, 8, 8))
