# ruff: noqa: E402, E501, UP039, N801, N802, N803, N806, N816, UP008, UP031 (notebook code as is)
"""jayroxis/PINNs, "Burgers Equation/Burgers Identification (PyTorch).ipynb": the data-driven
discovery of Burgers' equation u_t + lambda_1 u u_x - lambda_2 u_xx = 0 (Raissi et al.): the
unknown coefficients are ``torch.nn.Parameter``s registered on the network
(``register_parameter``), learned with it from samples of the solution; the residual's
derivatives through ``torch.autograd.grad(create_graph=True)``; Adam, then
``torch.optim.LBFGS(line_search_fn="strong_wolfe")`` with a closure; once on clean data, once
on data with 1% noise.

Changes from the notebook as in pinn_burgers.py: the import; ``burgers_shock.mat`` recomputed
(coarser) by the Cole-Hopf formula; smaller network, sample and iteration counts (LBFGS's
``max_iter``/``max_eval``, Adam's 10000 steps); each model's network weights set from numpy after
it is built (``numpy_init``, Xavier normal as in Raissi's code) so that torch's run starts where
jitgrad's does; ``error_lambda_1[0]`` in the
prints (numpy 2 no longer formats a shape-(1,) array with %f); the plots dropped; what the tests check recorded (marked).
"""
import jitgrad as torch
from collections import OrderedDict

import numpy as np
from scipy.interpolate import griddata

np.random.seed(1234)


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
    def __init__(self, X, u, layers, lb, ub):

        # boundary conditions
        self.lb = torch.tensor(lb).float().to(device)
        self.ub = torch.tensor(ub).float().to(device)

        # data
        self.x = torch.tensor(X[:, 0:1], requires_grad=True).float().to(device)
        self.t = torch.tensor(X[:, 1:2], requires_grad=True).float().to(device)
        self.u = torch.tensor(u).float().to(device)

        # settings
        self.lambda_1 = torch.tensor([0.0], requires_grad=True).to(device)
        self.lambda_2 = torch.tensor([-6.0], requires_grad=True).to(device)

        self.lambda_1 = torch.nn.Parameter(self.lambda_1)
        self.lambda_2 = torch.nn.Parameter(self.lambda_2)

        # deep neural networks
        self.dnn = DNN(layers).to(device)
        self.dnn.register_parameter('lambda_1', self.lambda_1)
        self.dnn.register_parameter('lambda_2', self.lambda_2)

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

        self.optimizer_Adam = torch.optim.Adam(self.dnn.parameters())
        self.iter = 0
        self.losses = []  # (recorded)

    def net_u(self, x, t):
        u = self.dnn(torch.cat([x, t], dim=1))
        return u

    def net_f(self, x, t):
        """ The pytorch autograd version of calculating residual """
        lambda_1 = self.lambda_1
        lambda_2 = torch.exp(self.lambda_2)
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

        f = u_t + lambda_1 * u * u_x - lambda_2 * u_xx
        return f

    def loss_func(self):
        u_pred = self.net_u(self.x, self.t)
        f_pred = self.net_f(self.x, self.t)
        loss = torch.mean((self.u - u_pred) ** 2) + torch.mean(f_pred ** 2)
        self.optimizer.zero_grad()
        loss.backward()

        self.iter += 1
        self.losses.append(('lbfgs', loss.item(), self.lambda_1.item(), self.lambda_2.item()))  # (recorded)
        if self.iter % 100 == 0:
            print(
                'Loss: %e, l1: %.5f, l2: %.5f' %
                (
                    loss.item(),
                    self.lambda_1.item(),
                    torch.exp(self.lambda_2.detach()).item()
                )
            )
        return loss

    def train(self, nIter):
        self.dnn.train()
        for epoch in range(nIter):
            u_pred = self.net_u(self.x, self.t)
            f_pred = self.net_f(self.x, self.t)
            loss = torch.mean((self.u - u_pred) ** 2) + torch.mean(f_pred ** 2)

            # Backward and optimize
            self.optimizer_Adam.zero_grad()
            loss.backward()
            self.optimizer_Adam.step()
            self.losses.append(('adam', loss.item(), self.lambda_1.item(), self.lambda_2.item()))  # (recorded)

            if epoch % 100 == 0:
                print(
                    'It: %d, Loss: %.3e, Lambda_1: %.3f, Lambda_2: %.6f' %
                    (
                        epoch,
                        loss.item(),
                        self.lambda_1.item(),
                        torch.exp(self.lambda_2).item()
                    )
                )

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


def numpy_init(model, seed):  # (the same initial weights on torch and jitgrad)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.dnn.named_parameters():
            if name.endswith('weight'):
                std = np.sqrt(2.0 / (p.shape[0] + p.shape[1]))
                p.copy_(torch.tensor(rng.normal(0.0, std, tuple(p.shape)), dtype=torch.float32))
            elif name.startswith('layers.'):
                p.zero_()


nu = 0.01/np.pi

N_u = 300
layers = [2, 16, 16, 16, 1]
MAX_ITER = 200
N_ADAM = 20

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

noise = 0.0

# create training set
idx = np.random.choice(X_star.shape[0], N_u, replace=False)
X_u_train = X_star[idx,:]
u_train = u_star[idx,:]

# training
model = PhysicsInformedNN(X_u_train, u_train, layers, lb, ub)
numpy_init(model, 0)
_, f_init = model.predict(X_star[::41])  # (recorded: the residual with lambda_1 = 0, e^-6)
model.train(0)

# evaluations
u_pred, f_pred = model.predict(X_star)

error_u = np.linalg.norm(u_star-u_pred,2)/np.linalg.norm(u_star,2)

U_pred = griddata(X_star, u_pred.flatten(), (X, T), method='cubic')

lambda_1_value = model.lambda_1.detach().cpu().numpy()
lambda_2_value = model.lambda_2.detach().cpu().numpy()
lambda_2_value = np.exp(lambda_2_value)

error_lambda_1 = np.abs(lambda_1_value - 1.0) * 100
error_lambda_2 = np.abs(lambda_2_value - nu) / nu * 100

print('Error u: %e' % (error_u))
print('Error l1: %.5f%%' % (error_lambda_1[0]))
print('Error l2: %.5f%%' % (error_lambda_2[0]))
clean_model = model  # (recorded)

noise = 0.01

# create training set
u_train = u_train + noise*np.std(u_train)*np.random.randn(u_train.shape[0], u_train.shape[1])

# training
model = PhysicsInformedNN(X_u_train, u_train, layers, lb, ub)
numpy_init(model, 1)
model.train(N_ADAM)

# ----------------------------------------------------------------- (recorded for the tests)
noisy_u_pred, _ = model.predict(X_star)
noisy_error_u = np.linalg.norm(u_star-noisy_u_pred,2)/np.linalg.norm(u_star,2)
fixed_results = {'clean_losses': clean_model.losses, 'noisy_losses': model.losses,
                 'f_init': f_init, 'clean_params': [n for n, _ in clean_model.dnn.named_parameters()]}
