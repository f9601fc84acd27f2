# ruff: noqa: B007, E402, F811, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Tutorial "Parametrizations": Symmetric, Skew, CayleyMap, MatrixExponential, right_inverse,
parametrize.cached(), remove_parametrizations, and a multi-tensor right_inverse (original0/1)."""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.utils.parametrize as parametrize

torch.manual_seed(0)


def symmetric(X):
    return X.triu() + X.triu(1).transpose(-1, -2)


X = torch.rand(3, 3)
A = symmetric(X)
assert torch.allclose(A, A.T)  # A is symmetric
print(A)                       # Quick visual check


class LinearSymmetric(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n_features, n_features))

    def forward(self, x):
        A = symmetric(self.weight)
        return x @ A


layer = LinearSymmetric(3)
out = layer(torch.rand(8, 3))


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Symmetric())

A = layer.weight
assert torch.allclose(A, A.T)  # A is symmetric
print(A)                       # Quick visual check


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)


cnn = nn.Conv2d(in_channels=5, out_channels=8, kernel_size=3)
parametrize.register_parametrization(cnn, "weight", Skew())
# Print a few kernels
print(cnn.weight[0, 1])
print(cnn.weight[2, 2])
cnn_skew = torch.allclose(cnn.weight, -cnn.weight.transpose(-1, -2))

layer = nn.Linear(3, 3)
print(f"Unparametrized:\n{layer}")
parametrize.register_parametrization(layer, "weight", Symmetric())
print(f"\nParametrized:\n{layer}")
parametrized_repr = repr(layer)

print(layer.parametrizations)
print(layer.parametrizations.weight)
print(layer.parametrizations.weight[0])
print(dict(layer.named_parameters()))
param_names = list(dict(layer.named_parameters()).keys())
print(layer.parametrizations.weight.original)

symmetric = Symmetric()
weight_orig = layer.parametrizations.weight.original
print(torch.dist(layer.weight, symmetric(weight_orig)))
dist_to_original = torch.dist(layer.weight, symmetric(weight_orig)).item()


class NoisyParametrization(nn.Module):
    def forward(self, X):
        print("Computing the Parametrization")
        global n_computations
        n_computations += 1
        return X


n_computations = 0
layer = nn.Linear(4, 4)
parametrize.register_parametrization(layer, "weight", NoisyParametrization())
print("Here, layer.weight is recomputed every time we call it")
foo = layer.weight + layer.weight.T
bar = layer.weight.sum()
uncached_computations = n_computations
with parametrize.cached():
    print("Here, it is computed just the first time layer.weight is called")
    foo = layer.weight + layer.weight.T
    bar = layer.weight.sum()
cached_computations = n_computations - uncached_computations


class CayleyMap(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("Id", torch.eye(n))

    def forward(self, X):
        # (I + X)(I - X)^{-1}
        return torch.linalg.solve(self.Id - X, self.Id + X)


layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Skew())
parametrize.register_parametrization(layer, "weight", CayleyMap(3))
X = layer.weight
print(torch.dist(X.T @ X, torch.eye(3)))  # X is orthogonal
cayley_orthogonality = torch.dist(X.T @ X, torch.eye(3)).item()


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)


layer_orthogonal = nn.Linear(3, 3)
parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
parametrize.register_parametrization(layer_orthogonal, "weight", MatrixExponential())
X = layer_orthogonal.weight
print(torch.dist(X.T @ X, torch.eye(3)))         # X is orthogonal
exp_orthogonality = torch.dist(X.T @ X, torch.eye(3)).item()

layer_spd = nn.Linear(3, 3)
parametrize.register_parametrization(layer_spd, "weight", Symmetric())
parametrize.register_parametrization(layer_spd, "weight", MatrixExponential())
X = layer_spd.weight
print(torch.dist(X, X.T))                        # X is symmetric
print((torch.linalg.eigvalsh(X) > 0.).all())  # X is positive definite
spd_ok = bool((torch.linalg.eigvalsh(X) > 0.).all()) and torch.dist(X, X.T).item() < 1e-5


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)

    def right_inverse(self, A):
        # We assume that A is skew-symmetric
        # We take the upper-triangular elements, as these are those used in the forward
        return A.triu(1)


layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Skew())
X = torch.rand(3, 3)
X = X - X.T                             # X is now skew-symmetric
layer.weight = X                        # Initialize layer.weight to be X
print(torch.dist(layer.weight, X))      # layer.weight == X
skew_assign_dist = torch.dist(layer.weight, X).item()


class CayleyMap(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("Id", torch.eye(n))

    def forward(self, X):
        # Assume X skew-symmetric
        # (I + X)(I - X)^{-1}
        return torch.linalg.solve(self.Id - X, self.Id + X)

    def right_inverse(self, A):
        # Assume A orthogonal
        # See https://en.wikipedia.org/wiki/Cayley_transform#Matrix_map
        # (A - I)(A + I)^{-1}
        return torch.linalg.solve(A + self.Id, self.Id - A)


layer_orthogonal = nn.Linear(3, 3)
parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
parametrize.register_parametrization(layer_orthogonal, "weight", CayleyMap(3))
# Sample an orthogonal matrix with positive determinant
X = torch.empty(3, 3)
nn.init.orthogonal_(X)
if X.det() < 0.:
    X[0].neg_()
layer_orthogonal.weight = X
print(torch.dist(layer_orthogonal.weight, X))  # layer_orthogonal.weight == X
cayley_assign_dist = torch.dist(layer_orthogonal.weight, X).item()

layer = nn.Linear(4, 4)
print(layer.weight)
parametrize.register_parametrization(layer, "weight", Skew())
print(layer.weight)


class PruningParametrization(nn.Module):
    def __init__(self, X, p_drop=0.2):
        super().__init__()
        # sample zeros with probability p_drop
        mask = torch.full_like(X, 1.0 - p_drop)
        self.mask = torch.bernoulli(mask)

    def forward(self, X):
        return X * self.mask

    def right_inverse(self, A):
        return A


layer = nn.Linear(3, 4)
X = torch.rand_like(layer.weight)
print(f"Initialization matrix:\n{X}")
parametrize.register_parametrization(layer, "weight", PruningParametrization(layer.weight))
layer.weight = X
print(f"\nInitialized weight:\n{layer.weight}")
pruning_param_ok = torch.equal(layer.weight, X * layer.parametrizations.weight[0].mask)

layer = nn.Linear(3, 3)
print("Before:")
print(layer)
print(layer.weight)
parametrize.register_parametrization(layer, "weight", Skew())
print("\nParametrized:")
print(layer)
print(layer.weight)
skew_weight = layer.weight.detach().clone()
parametrize.remove_parametrizations(layer, "weight")
print("\nAfter. Weight has skew-symmetric values but it is unconstrained:")
print(layer)
print(layer.weight)
removed_kept_values = torch.equal(layer.weight, skew_weight)
removed_is_parameter = isinstance(layer.weight, nn.Parameter)
removed_repr = repr(layer)

layer = nn.Linear(3, 3)
print("Before:")
print(layer)
print(layer.weight)
parametrize.register_parametrization(layer, "weight", Skew())
print("\nParametrized:")
print(layer)
print(layer.weight)
original = layer.parametrizations.weight.original.detach().clone()
parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
print("\nWhen leave_parametrized=False, the layer.weight is unparametrized:")
print(layer)
print(layer.weight)
unparametrized_is_original = torch.equal(layer.weight, original)


# a right_inverse returning several tensors: original0, original1 (torch's RankOne example)
class RankOne(nn.Module):
    def forward(self, x, y):
        # Form a rank 1 matrix multiplying two vectors
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        # Project Z onto the rank 1 matrices
        U, S, Vh = torch.linalg.svd(Z, full_matrices=False)
        s0_sqrt = S[0].sqrt().unsqueeze(-1)
        return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt


linear_rank_one = nn.Linear(4, 4)
parametrize.register_parametrization(linear_rank_one, "weight", RankOne())
print(torch.linalg.matrix_rank(linear_rank_one.weight).item())
rank_one = torch.linalg.matrix_rank(linear_rank_one.weight).item()
rank_one_names = sorted(n for n, _ in linear_rank_one.named_parameters())
is_parametrized = (parametrize.is_parametrized(linear_rank_one),
                   parametrize.is_parametrized(linear_rank_one, "bias"))

# training through a parametrization: an orthogonal layer fits a rotation
torch.manual_seed(0)
target = torch.linalg.qr(torch.randn(3, 3))[0]
if target.det() < 0:
    target[0].neg_()
layer = nn.Linear(3, 3, bias=False)
parametrize.register_parametrization(layer, "weight", Skew())
parametrize.register_parametrization(layer, "weight", MatrixExponential())
opt = torch.optim.Adam(layer.parameters(), lr=0.05)
xs = torch.randn(64, 3)
fit_losses = []
for step in range(150):
    loss = ((layer(xs) - xs @ target.T) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    fit_losses.append(loss.item())
W = layer.weight.detach()
fit_orthogonality = torch.dist(W.T @ W, torch.eye(3)).item()

# deterministic parts to compare with torch
fixed = nn.Linear(3, 3).double()
with torch.no_grad():
    fixed.weight.copy_(torch.sin(torch.arange(9, dtype=torch.double)).view(3, 3) * 0.5)
    fixed.bias.zero_()
parametrize.register_parametrization(fixed, "weight", Skew())
parametrize.register_parametrization(fixed, "weight", CayleyMap(3).double())
fixed_x = torch.linspace(-1, 1, 6, dtype=torch.double).view(2, 3)
fixed_out = fixed(fixed_x)
fixed_out.pow(2).sum().backward()
fixed_results = {"weight": fixed.weight.tolist(), "out": fixed_out.tolist(),
                 "grad": fixed.parametrizations.weight.original.grad.tolist(),
                 "state_keys": sorted(fixed.state_dict().keys())}
fixed_results_keys = fixed_results.pop("state_keys")
