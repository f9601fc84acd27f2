# ruff: noqa: B007, E111, E501, N801, N803, N806, UP004, UP008 (tutorial code as is)
"""pytorch/tutorials beginner_source/examples_tensor/two_layer_net_tensor.py and
examples_nn/{two_layer_net_nn,two_layer_net_optim,two_layer_net_module,polynomial_module}.py
(the older 'Learning PyTorch with Examples' pages that poly_tensors_autograd.py does not
cover): a two-layer ReLU net with a hand-written backward (``grad_h[h < 0] = 0``), with
nn.Sequential and a manual ``param -= lr * param.grad`` update, with optim.Adam, as a custom
Module called through ``model.forward``, with the legacy ``Variable`` wrapper and
``MSELoss(size_average=False)``; and the Polynomial3 Module of four scalar Parameters.

Changes: ``loss.data[0]`` (which torch >= 0.5 refuses on a 0-dim tensor: the error is recorded)
became ``loss.item()``; the losses are recorded, not printed every step; a fixed-weight copy
of each network runs a few steps so that torch's run of the script gives the same losses."""
import math
import warnings

import jitgrad as torch
from jitgrad.autograd import Variable

torch.manual_seed(0)
results = {}

# ------------------------------------------------------------- two_layer_net_tensor
dtype = torch.float
device = torch.device("cpu")
# dtype = torch.device("cuda:0") # Uncomment this to run on GPU

# N is batch size; D_in is input dimension;
# H is hidden dimension; D_out is output dimension.
N, D_in, H, D_out = 64, 1000, 100, 10

# Create random input and output data
x = torch.randn(N, D_in, device=device, dtype=dtype)
y = torch.randn(N, D_out, device=device, dtype=dtype)


def fixed_data():
    """Inputs and targets every run of this script (jitgrad's or torch's) computes alike."""
    i = torch.arange(N * D_in, dtype=dtype).view(N, D_in)
    j = torch.arange(N * D_out, dtype=dtype).view(N, D_out)
    return torch.sin(i * 0.37), torch.cos(j * 0.11)


def manual_net(x, y, w1, w2, steps, learning_rate=1e-6):
    losses = []
    for t in range(steps):
        # Forward pass: compute predicted y
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)

        # Compute and print loss
        loss = (y_pred - y).pow(2).sum().item()
        losses.append(loss)

        # Backprop to compute gradients of w1 and w2 with respect to loss
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h_relu = grad_y_pred.mm(w2.t())
        grad_h = grad_h_relu.clone()
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)

        # Update weights using gradient descent
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2
    return losses


# Randomly initialize weights
w1 = torch.randn(D_in, H, device=device, dtype=dtype)
w2 = torch.randn(H, D_out, device=device, dtype=dtype)
results["tensor"] = manual_net(x, y, w1, w2, 200)
fx, fy = fixed_data()
fixed = {"tensor": manual_net(fx, fy, torch.linspace(-0.1, 0.1, D_in * H).view(D_in, H).sin(),
                              torch.linspace(-1, 1, H * D_out).view(H, D_out), 20)}

# ---------------------------------------------------------------- two_layer_net_nn
def fix_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-0.05, 0.05, p.numel()).view_as(p).cos() * (-1) ** i * 0.05)
    return model


def nn_loop(model, x, y, steps):
    loss_fn = torch.nn.MSELoss(reduction='sum')
    learning_rate = 1e-4
    losses = []
    for t in range(steps):
        y_pred = model(x)
        loss = loss_fn(y_pred, y)
        if t % 100 == 99:
            print(t, loss.item())
        losses.append(loss.item())

        # Zero the gradients before running the backward pass.
        model.zero_grad()

        loss.backward()

        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    return losses


def sequential():
    return torch.nn.Sequential(
        torch.nn.Linear(D_in, H),
        torch.nn.ReLU(),
        torch.nn.Linear(H, D_out),
    )


results["nn"] = nn_loop(sequential(), x, y, 200)
fixed["nn"] = nn_loop(fix_weights(sequential()), fx, fy, 20)

# ------------------------------------------------------------- two_layer_net_optim
x = Variable(torch.randn(N, D_in))
y = Variable(torch.randn(N, D_out), requires_grad=False)
variable_flags = (type(x).__name__, x.requires_grad, y.requires_grad)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    loss_fn = torch.nn.MSELoss(size_average=False)
size_average_warnings = [str(w.message) for w in caught]
size_average_reduction = loss_fn.reduction


def optim_loop(model, x, y, steps):
    learning_rate = 1e-4
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    losses = []
    for t in range(steps):
      # Forward pass: compute predicted y by passing x to the model.
      y_pred = model(x)

      # Compute and print loss.
      loss = loss_fn(y_pred, y)
      losses.append(loss.item())

      optimizer.zero_grad()

      loss.backward()

      optimizer.step()
    return losses


model = sequential()
results["optim"] = optim_loop(model, x, y, 200)
fixed["optim"] = optim_loop(fix_weights(sequential()), fx, fy, 20)

try:
    print(0, loss_fn(model(x), y).data[0])
except IndexError as e:
    data_index_error = str(e)

# ------------------------------------------------------------ two_layer_net_module
class TwoLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        """
        In the constructor we instantiate two nn.Linear modules and assign them as
        member variables.
        """
        super(TwoLayerNet, self).__init__()
        self.linear1 = torch.nn.Linear(D_in, H)
        self.linear2 = torch.nn.Linear(H, D_out)

    def forward(self, x):
        """
        In the forward function we accept a Variable of input data and we must return
        a Variable of output data. We can use Modules defined in the constructor as
        well as arbitrary operators on Variables.
        """
        h_relu = self.linear1(x).clamp(min=0)
        y_pred = self.linear2(h_relu)
        return y_pred


def module_loop(model, x, y, steps):
    criterion = torch.nn.MSELoss(size_average=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    losses = []
    for t in range(steps):
        # Forward pass: Compute predicted y by passing x to the model
        y_pred = model.forward(x)

        # Compute and print loss
        loss = criterion(y_pred, y)
        losses.append(loss.item())

        # Zero gradients, perform a backward pass, and update the weights.
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    results["module"] = module_loop(TwoLayerNet(D_in, H, D_out), x, y, 200)
    fixed["module"] = module_loop(fix_weights(TwoLayerNet(D_in, H, D_out)), fx, fy, 20)

# --------------------------------------------------------------- polynomial_module
class Polynomial3(torch.nn.Module):
    def __init__(self):
        """
        In the constructor we instantiate four parameters and assign them as
        member parameters.
        """
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        """
        In the forward function we accept a Tensor of input data and we must return
        a Tensor of output data. We can use Modules defined in the constructor as
        well as arbitrary operators on Tensors.
        """
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        """
        Just like any class in Python, you can also define custom method on PyTorch modules
        """
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3'


def polynomial_loop(model, steps):
    # Create Tensors to hold input and outputs.
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    criterion = torch.nn.MSELoss(reduction='sum')
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    losses = []
    for t in range(steps):
        # Forward pass: Compute predicted y by passing x to the model
        y_pred = model(x)

        # Compute and print loss
        loss = criterion(y_pred, y)
        if t % 100 == 99:
            print(t, loss.item())
        losses.append(loss.item())

        # Zero gradients, perform a backward pass, and update the weights.
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


model = Polynomial3()
results["polynomial"] = polynomial_loop(model, 2000)
print(f'Result: {model.string()}')
polynomial_named = [n for n, _ in model.named_parameters()]
fixed_poly = Polynomial3()
with torch.no_grad():
    for p, v in zip(fixed_poly.parameters(), (0.1, -0.2, 0.3, -0.4)):
        p.fill_(v)
fixed["polynomial"] = polynomial_loop(fixed_poly, 100)
fixed_poly_string = fixed_poly.string()
