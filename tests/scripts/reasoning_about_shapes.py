# ruff: noqa: A002, B007, E261, E402 (tutorial code as is)
"""pytorch/tutorials recipes_source/recipes/reasoning_about_shapes.py: output shapes from the
``meta`` device (a conv on a 2**10 x 3 x 2**16 x 2**16 input that is never allocated), and a
forward hook on every layer of a LeNet built under ``with torch.device("meta")``.

Changes: the hook's lines and the outputs are recorded as well as printed."""
import jitgrad as torch
import timeit

t = torch.rand(2, 3, 10, 10, device="meta")
conv = torch.nn.Conv2d(3, 5, 2, device="meta")
start = timeit.default_timer()
out = conv(t)
end = timeit.default_timer()

print(out)
print(f"Time taken: {end-start}")
small = (repr(out), tuple(out.shape), out.device.type)

t_large = torch.rand(2**10, 3, 2**16, 2**16, device="meta")
start = timeit.default_timer()
out = conv(t_large)
end = timeit.default_timer()

print(out)
print(f"Time taken: {end-start}")
large = (repr(out), tuple(out.shape))
large_time = end - start

import jitgrad.nn as nn
import jitgrad.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1) # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


hook_lines = []

def fw_hook(module, input, output):
    print(f"Shape of output to {module} is {output.shape}.")
    hook_lines.append(f"Shape of output to {module} is {output.shape}.")


# Any tensor created within this torch.device context manager will be
# on the meta device.
with torch.device("meta"):
    net = Net()
    inp = torch.randn((1024, 3, 32, 32))

for name, layer in net.named_modules():
    layer.register_forward_hook(fw_hook)

out = net(inp)
net_out = (repr(out), out.device.type)
