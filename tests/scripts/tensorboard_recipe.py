"""Logging a training loss for TensorBoard, written for these tests in the way the "How to use
TensorBoard with PyTorch" recipe is commonly written (modelled on the API usage of that recipe,
not a copy of it):

- ``SummaryWriter()`` with its default ``runs/<date>_<host>`` directory
- ``add_scalar("Loss/train", <0-d tensor>, step)`` once per step of a 1-d linear fit
  (``torch.arange(..., 0.1).view(-1, 1)``, ``nn.Linear``, ``MSELoss``, SGD)
- ``flush()`` and ``close()``
"""
import jitgrad as torch
from jitgrad.utils.tensorboard import SummaryWriter

inputs = torch.arange(-5, 5, 0.1).view(-1, 1)
targets = 2.0 - 5 * inputs + 0.1 * torch.randn(inputs.size())  # a noisy line to recover

line = torch.nn.Linear(1, 1)
mse = torch.nn.MSELoss()
sgd = torch.optim.SGD(line.parameters(), lr=0.1)
log = SummaryWriter()

for step in range(10):
    loss = mse(line(inputs), targets)
    log.add_scalar("Loss/train", loss, step)  # a tensor is fine: the writer takes its value
    sgd.zero_grad()
    loss.backward()
    sgd.step()

log.flush()
log.close()
print("weight", line.weight.item(), "bias", line.bias.item())
