# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""torch.func tutorial: per-sample gradients with functional_call + vmap + grad; jacrev, hessian."""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.func import functional_call, grad, hessian, jacrev, vmap

torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 5 * 5, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


device = 'cpu'
num_models = 10
batch_size = 8
data = torch.randn(batch_size, 1, 14, 14, device=device)
targets = torch.randint(10, (batch_size,), device=device)
model = SimpleCNN().to(device=device)
predictions = model(data)  # move the entire mini-batch through the model
loss = loss_fn(predictions, targets)
loss.backward()  # back propagate the 'average' gradient of this mini-batch


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    """ manually process each sample with per sample gradient """
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads


per_sample_grads = compute_sample_grads(data, targets)
print(per_sample_grads[0].shape)

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
max_diff = 0.0
for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    max_diff = max(max_diff, (per_sample_grad - ft_per_sample_grad).abs().max().item())
# the mean of the per-sample gradients is the mini-batch gradient
mean_vs_batch = max((g.mean(0) - p.grad).abs().max().item()
                    for g, p in zip(per_sample_grads, model.parameters()))
print('max difference', max_diff, 'mean vs batch', mean_vs_batch)

# jacobians and hessians (the torch.func "jacobians, hessians, hvp" tutorial)
D = 16
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


jacobian = jacrev(predict, argnums=2)(weight, bias, x)
unit_vectors = torch.eye(D)


def vjp_row(v):
    (vjp_fn_out,) = torch.autograd.grad(predict(weight, bias, x_req), x_req, v,
                                        retain_graph=True)
    return vjp_fn_out


x_req = x.clone().requires_grad_()
jacobian_rows = [vjp_row(v) for v in unit_vectors]
jacobian_loop = torch.stack(jacobian_rows)
assert torch.allclose(jacobian, jacobian_loop, atol=1e-6)
ft_jacobian, ft_jacobian_b = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print(ft_jacobian.shape, ft_jacobian_b.shape)
hess = hessian(predict, argnums=2)(weight, bias, x)
print(hess.shape)
batch_x = torch.randn(4, D)
batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, batch_x)
print(batch_jacobian.shape)

# model ensembling with stack_module_state
from jitgrad.func import stack_module_state  # noqa: E402
import copy  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return x


models = [MLP().to(device) for _ in range(num_models)]
minibatches = torch.randn(num_models, 5, 16)
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models,
                                                                                  minibatches)]
params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])
# base_model = base_model.to('meta')  # jitgrad has no 'meta' device (see the report)


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


predictions2_vmap = vmap(fmodel)(params, buffers, minibatches)
assert torch.allclose(predictions2_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3,
                      rtol=1e-5)
ensemble_shape = tuple(predictions2_vmap.shape)

# deterministic parts to compare with torch
fixed_w = torch.sin(torch.arange(D * D, dtype=torch.float32)).view(D, D) * 0.3
fixed_b = torch.cos(torch.arange(D, dtype=torch.float32))
fixed_x = torch.linspace(-1, 1, D)
fixed_jac = jacrev(predict, argnums=2)(fixed_w, fixed_b, fixed_x).tolist()
fixed_hess_diag = torch.diagonal(hessian(predict, argnums=2)(fixed_w, fixed_b, fixed_x)[0]).tolist()
