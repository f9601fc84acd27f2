"""Working out output shapes on the meta device, written for these tests in the way the
PyTorch "reasoning about shapes" recipe is commonly written (modelled on the API usage of
that recipe, not a copy of it):

- ``torch.rand(..., device="meta")`` and an ``nn.Conv2d(..., device="meta")``, timed with
  ``timeit.default_timer`` (a huge input costs nothing: no storage);
- a small conv net built under ``with torch.device("meta")`` with ``torch.randn`` input,
  ``named_modules`` and ``register_forward_hook`` printing each output shape.
"""
import timeit

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F


def timed(module, tensor):
    t0 = timeit.default_timer()
    result = module(tensor)
    return result, timeit.default_timer() - t0


probe = nn.Conv2d(3, 5, 2, device="meta")
res, secs = timed(probe, torch.rand(2, 3, 10, 10, device="meta"))
print(res, f"({secs:.6f} s)")
small = (repr(res), tuple(res.shape), res.device.type)

# 1024 images of 65536 x 65536 pixels: would be terabytes if it were real
res, large_time = timed(probe, torch.rand(2**10, 3, 2**16, 2**16, device="meta"))
print(res, f"({large_time:.6f} s)")
large = (repr(res), tuple(res.shape))


class TinyConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, kernel_size=5)
        self.halve = nn.MaxPool2d(2, 2)
        self.c2 = nn.Conv2d(6, 16, kernel_size=5)
        self.l1 = nn.Linear(16 * 5 * 5, 120)
        self.l2 = nn.Linear(120, 84)
        self.head = nn.Linear(84, classes)

    def forward(self, images):
        h = self.halve(F.relu(self.c1(images)))
        h = self.halve(F.relu(self.c2(h)))
        h = torch.flatten(h, 1)  # keep the batch dimension
        return self.head(F.relu(self.l2(F.relu(self.l1(h)))))


hook_lines = []


def report_shape(module, args, output):
    text = f"Shape of output to {module} is {output.shape}."
    hook_lines.append(text)
    print(text)


with torch.device("meta"):  # parameters and the batch below land on meta
    net = TinyConvNet()
    batch = torch.randn((1024, 3, 32, 32))

for _, sub in net.named_modules():
    sub.register_forward_hook(report_shape)

logits = net(batch)
net_out = (repr(logits), logits.device.type)
