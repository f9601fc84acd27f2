# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP010, UP031, UP032
# (tutorial code as is)
"""pytorch/examples regression: fit a degree-4 polynomial with one nn.Linear on polynomial
features and smooth_l1_loss, updating ``param.data`` by hand; poly_desc formats tensors."""
from __future__ import print_function

from itertools import count

import jitgrad as torch
import jitgrad.nn.functional as F

torch.manual_seed(0)

POLY_DEGREE = 4
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE+1)], 1)


def f(x):
    """Approximated function."""
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    """Creates a string description of a polynomial."""
    result = 'y = '
    for i, w in enumerate(W):
        result += '{:+.2f} x^{} '.format(w, i + 1)
    result += '{:+.2f}'.format(b[0])
    return result


def get_batch(batch_size=32):
    """Builds a batch i.e. (x, f(x)) pair."""
    random = torch.randn(batch_size)
    x = make_features(random)
    y = f(x)
    return x, y


# Define model
fc = torch.nn.Linear(W_target.size(0), 1)
losses = []

for batch_idx in count(1):
    # Get data
    batch_x, batch_y = get_batch()

    # Reset gradients
    fc.zero_grad()

    # Forward pass
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    losses.append(loss)

    # Backward pass
    output.backward()

    # Apply gradients
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)

    # Stop criterion
    if loss < 1e-3:
        break

print('Loss: {:.6f} after {} batches'.format(loss, batch_idx))
print('==> Learned function:\t' + poly_desc(fc.weight.view(-1), fc.bias))
print('==> Actual function:\t' + poly_desc(W_target.view(-1), b_target))

learned = poly_desc(fc.weight.view(-1), fc.bias)
actual = poly_desc(W_target.view(-1), b_target)

# deterministic parts to compare with torch: the features, the description, one update
fixed_features = make_features(torch.tensor([-1.5, 0.5, 2.0])).tolist()
fixed_desc = poly_desc(torch.tensor([1.234, -0.005, 10.0, -3.456]), torch.tensor([0.0]))
fixed_formats = ['{:.3f}|{:>8.2e}|{}|{:5}|{!r:.6}'.format(torch.tensor(2.5), torch.tensor(-1234.5),
                                                          torch.tensor(7), torch.tensor(3),
                                                          torch.tensor(1.5))]
fixed_fc = torch.nn.Linear(4, 1)
with torch.no_grad():
    fixed_fc.weight.copy_(torch.tensor([[0.5, -0.25, 0.125, 0.0]]))
    fixed_fc.bias.fill_(1.0)
x = make_features(torch.linspace(-2, 2, 8))
y = x.mm(torch.tensor([[1.0], [2.0], [-1.0], [0.5]])) + 3.0
out = F.smooth_l1_loss(fixed_fc(x), y)
out.backward()
for param in fixed_fc.parameters():
    param.data.add_(-0.1 * param.grad)
fixed_step = (out.item(), fixed_fc.weight.tolist(), fixed_fc.bias.tolist())
