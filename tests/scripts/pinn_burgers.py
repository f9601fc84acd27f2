# ruff: noqa: E402, E501, UP039, N801, N802, N803, N806, N816, UP008, UP031 (notebook code as is)
"""jayroxis/PINNs, "Burgers Equation/Burgers Inference (PyTorch).ipynb": a PyTorch port of
Raissi, Perdikaris & Karniadakis' physics-informed network for Burgers' equation
u_t + u u_x - (0.01 / pi) u_xx = 0, its residual's u_t, u_x and u_xx through
``torch.autograd.grad(create_graph=True)``, trained full-batch by ``torch.optim.LBFGS`` with a
closure and ``line_search_fn="strong_wolfe"``.

Changes from the notebook: the import; ``data/burgers_shock.mat`` (Raissi's reference solution)
is recomputed here, on a coarser grid, by the same Cole-Hopf formula with Gauss-Hermite
quadrature (it matches the .mat to 4e-11); pyDOE's ``lhs`` is a few lines of numpy (the same
Latin hypercube design); the network, the point counts and LBFGS's ``max_iter``/``max_eval`` are
shrunk; after the model is built its weights are set from numpy (Xavier normal, as Raissi's
TensorFlow code initializes), so that torch's run, whose generator gives other numbers for one
seed, starts where jitgrad's does; the plots are dropped; what the tests check is recorded
(marked).
"""
import jitgrad as torch
from collections import OrderedDict

import numpy as np
from scipy.interpolate import griddata
import time

np.random.seed(1234)
torch.manual_seed(1234)


def lhs(n, samples):
    """pyDOE's ``lhs(n, samples)`` (no criterion): one random point in each of ``samples``
    equal strata per dimension, the strata shuffled independently per dimension."""
    cut = np.linspace(0, 1, samples + 1)
    u = np.random.rand(samples, n)
    a, b = cut[:samples], cut[1:samples + 1]
    rdpoints = u * (b - a)[:, None] + a[:, None]
    H = np.zeros_like(rdpoints)
    for j in range(n):
        H[:, j] = rdpoints[np.random.permutation(samples), j]
    return H


def burgers_shock(nu, x, t, n_quad=200):
    """Burgers' solution for u(x, 0) = -sin(pi x), u(+-1, t) = 0 by the Cole-Hopf transform,
    u = -int sin(pi (x - eta)) f(x - eta) exp(-eta^2 / 4 nu t) / int f(x - eta) exp(...),
    f(y) = exp(-cos(pi y) / (2 pi nu)), eta = sqrt(4 nu t) z by Gauss-Hermite in z (as
    Raissi's burgers_shock.mat was computed)."""
    z, w = np.polynomial.hermite.hermgauss(n_quad)
    usol = np.zeros((len(x), len(t)))
    usol[:, 0] = -np.sin(np.pi * x)
    for j, tj in enumerate(t[1:], 1):
        y = x[:, None] - np.sqrt(4 * nu * tj) * z[None, :]
        logf = -np.cos(np.pi * y) / (2 * np.pi * nu)
        f = np.exp(logf - logf.max(axis=1, keepdims=True))
        usol[:, j] = -(w * np.sin(np.pi * y) * f).sum(1) / (w * f).sum(1)
    return usol


# CUDA support
if torch.cuda.is_available():
    device = torch.device('cuda')
else:
    device = torch.device('cpu')


# the deep neural network
class DNN(torch.nn.Module):
    def __init__(self, layers):
        super(DNN, self).__init__()

        # parameters
        self.depth = len(layers) - 1

        # set up layer order dict
        self.activation = torch.nn.Tanh

        layer_list = list()
        for i in range(self.depth - 1):
            layer_list.append(
                ('layer_%d' % i, torch.nn.Linear(layers[i], layers[i+1]))
            )
            layer_list.append(('activation_%d' % i, self.activation()))

        layer_list.append(
            ('layer_%d' % (self.depth - 1), torch.nn.Linear(layers[-2], layers[-1]))
        )
        layerDict = OrderedDict(layer_list)

        # deploy layers
        self.layers = torch.nn.Sequential(layerDict)

    def forward(self, x):
        out = self.layers(x)
        return out


# the physics-guided neural network
class PhysicsInformedNN():
    def __init__(self, X_u, u, X_f, layers, lb, ub, nu):

        # boundary conditions
        self.lb = torch.tensor(lb).float().to(device)
        self.ub = torch.tensor(ub).float().to(device)

        # data
        self.x_u = torch.tensor(X_u[:, 0:1], requires_grad=True).float().to(device)
        self.t_u = torch.tensor(X_u[:, 1:2], requires_grad=True).float().to(device)
        self.x_f = torch.tensor(X_f[:, 0:1], requires_grad=True).float().to(device)
        self.t_f = torch.tensor(X_f[:, 1:2], requires_grad=True).float().to(device)
        self.u = torch.tensor(u).float().to(device)

        self.layers = layers
        self.nu = nu

        # deep neural networks
        self.dnn = DNN(layers).to(device)

        # optimizers: using the same settings
        self.optimizer = torch.optim.LBFGS(
            self.dnn.parameters(),
            lr=1.0,
            max_iter=MAX_ITER,
            max_eval=MAX_ITER,
            history_size=50,
            tolerance_grad=1e-5,
            tolerance_change=1.0 * np.finfo(float).eps,
            line_search_fn="strong_wolfe"       # can be "strong_wolfe"
        )

        self.iter = 0

    def net_u(self, x, t):
        u = self.dnn(torch.cat([x, t], dim=1))
        return u

    def net_f(self, x, t):
        """ The pytorch autograd version of calculating residual """
        u = self.net_u(x, t)

        u_t = torch.autograd.grad(
            u, t,
            grad_outputs=torch.ones_like(u),
            retain_graph=True,
            create_graph=True
        )[0]
        u_x = torch.autograd.grad(
            u, x,
            grad_outputs=torch.ones_like(u),
            retain_graph=True,
            create_graph=True
        )[0]
        u_xx = torch.autograd.grad(
            u_x, x,
            grad_outputs=torch.ones_like(u_x),
            retain_graph=True,
            create_graph=True
        )[0]

        f = u_t + u * u_x - self.nu * u_xx
        return f

    def loss_func(self):
        self.optimizer.zero_grad()

        u_pred = self.net_u(self.x_u, self.t_u)
        f_pred = self.net_f(self.x_f, self.t_f)
        loss_u = torch.mean((self.u - u_pred) ** 2)
        loss_f = torch.mean(f_pred ** 2)

        loss = loss_u + loss_f

        loss.backward()
        self.iter += 1
        closure_losses.append((loss.item(), loss_u.item(), loss_f.item()))  # (recorded)
        if self.iter % 100 == 0:
            print(
                'Iter %d, Loss: %.5e, Loss_u: %.5e, Loss_f: %.5e' % (self.iter, loss.item(), loss_u.item(), loss_f.item())
            )
        return loss

    def train(self):
        self.dnn.train()

        # Backward and optimize
        self.optimizer.step(self.loss_func)


    def predict(self, X):
        x = torch.tensor(X[:, 0:1], requires_grad=True).float().to(device)
        t = torch.tensor(X[:, 1:2], requires_grad=True).float().to(device)

        self.dnn.eval()
        u = self.net_u(x, t)
        f = self.net_f(x, t)
        u = u.detach().cpu().numpy()
        f = f.detach().cpu().numpy()
        return u, f


nu = 0.01/np.pi
noise = 0.0

N_u = 60
N_f = 400
layers = [2, 16, 16, 16, 1]
MAX_ITER = 150
closure_losses = []

# (burgers_shock.mat: t 100 steps in [0, 0.99], x 256 points in [-1, 1]; coarser here)
data = {'t': np.linspace(0, 0.99, 34)[:, None], 'x': np.linspace(-1, 1, 65)[:, None]}
data['usol'] = burgers_shock(nu, data['x'].flatten(), data['t'].flatten())

t = data['t'].flatten()[:,None]
x = data['x'].flatten()[:,None]
Exact = np.real(data['usol']).T

X, T = np.meshgrid(x,t)

X_star = np.hstack((X.flatten()[:,None], T.flatten()[:,None]))
u_star = Exact.flatten()[:,None]

# Doman bounds
lb = X_star.min(0)
ub = X_star.max(0)

xx1 = np.hstack((X[0:1,:].T, T[0:1,:].T))
uu1 = Exact[0:1,:].T
xx2 = np.hstack((X[:,0:1], T[:,0:1]))
uu2 = Exact[:,0:1]
xx3 = np.hstack((X[:,-1:], T[:,-1:]))
uu3 = Exact[:,-1:]

X_u_train = np.vstack([xx1, xx2, xx3])
X_f_train = lb + (ub-lb)*lhs(2, N_f)
X_f_train = np.vstack((X_f_train, X_u_train))
u_train = np.vstack([uu1, uu2, uu3])

idx = np.random.choice(X_u_train.shape[0], N_u, replace=False)
X_u_train = X_u_train[idx, :]
u_train = u_train[idx,:]

model = PhysicsInformedNN(X_u_train, u_train, X_f_train, layers, lb, ub, nu)

# ----------------------------------------------------------------- (recorded for the test)
# the same initial weights on torch and jitgrad (their generators differ for one seed): Xavier
# normal as Raissi's TensorFlow code initializes, biases zero, from numpy
_rng = np.random.default_rng(0)
with torch.no_grad():
    for name, p in model.dnn.named_parameters():
        if name.endswith('weight'):
            std = np.sqrt(2.0 / (p.shape[0] + p.shape[1]))
            p.copy_(torch.tensor(_rng.normal(0.0, std, tuple(p.shape)), dtype=torch.float32))
        else:
            p.zero_()
# before training: the residual f = u_t + u u_x - nu u_xx at a few points, and the gradient of
# the loss (second derivatives of the network, differentiated once more) for every parameter
fixed_results = {}
_, fixed_results['f_init'] = model.predict(X_star[::37])
model.loss_func()
fixed_results['loss_init'] = closure_losses.pop()
fixed_results['grads_init'] = {k: p.grad.clone() for k, p in model.dnn.named_parameters()}
model.iter = 0
# ------------------------------------------------------------------------------------------

start_time = time.time()
model.train()
elapsed = time.time() - start_time

u_pred, f_pred = model.predict(X_star)

error_u = np.linalg.norm(u_star-u_pred,2)/np.linalg.norm(u_star,2)
print('Error u: %e' % (error_u))

U_pred = griddata(X_star, u_pred.flatten(), (X, T), method='cubic')
Error = np.abs(Exact - U_pred)

# (recorded for the test)
optimizer_state = model.optimizer.state[model.optimizer._params[0]]
fixed_results['closure_losses'] = closure_losses
fixed_results['lbfgs_counts'] = (optimizer_state['func_evals'], optimizer_state['n_iter'])
