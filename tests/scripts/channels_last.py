"""Channels-last memory format on a small image batch, written for these tests in the way the
PyTorch memory-format tutorial is commonly written (modelled on the API usage of that tutorial,
not a copy of it):

- strides of NCHW tensors under ``torch.channels_last`` / ``torch.contiguous_format``,
  via ``.to(memory_format=)``, ``.contiguous(memory_format=)``, ``torch.empty(...,
  memory_format=)`` and an NHWC buffer permuted to NCHW;
- ``is_contiguous(memory_format=)`` (also for the ambiguous C == 1 case);
- pointwise ops, ``clone`` and ``nn.Conv2d`` keeping the format, a module moved with
  ``.to(memory_format=)``, a small conv/batch-norm net trained with SGD in channels_last.
"""
import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F

torch.manual_seed(0)

CL = torch.channels_last
batch, chans, rows, cols = 10, 3, 32, 32
strides = {}

img = torch.empty(batch, chans, rows, cols)
strides["contiguous"] = img.stride()

img_cl = img.to(memory_format=CL)
strides["to_channels_last"] = img_cl.stride()
shape_kept = tuple(img_cl.shape)  # the logical NCHW order does not change
strides["back"] = img_cl.to(memory_format=torch.contiguous_format).stride()

img_cl = img.contiguous(memory_format=CL)
strides["contiguous_cl"] = img_cl.stride()
is_cl = (img_cl.is_contiguous(memory_format=CL), img_cl.is_contiguous())
print("NHWC strides:", img_cl.stride(), "flags:", is_cl)

# one channel: both layouts describe the same memory, so both report contiguous
mono = torch.empty(4, 1, 4, 4)
special = (mono.is_contiguous(memory_format=CL),
           mono.is_contiguous(memory_format=torch.contiguous_format))

strides["empty_cl"] = torch.empty(batch, chans, rows, cols, memory_format=CL).stride()

# data that arrives as NHWC (say from an image decoder) viewed as NCHW
nhwc = torch.empty(batch, rows, cols, chans)
as_nchw = nhwc.permute(0, 3, 1, 2)
strides["permuted"] = as_nchw.stride()
permuted_is_cl = as_nchw.is_contiguous(memory_format=CL)

pics = torch.randn(batch, chans, rows, cols).contiguous(memory_format=CL)
pointwise_keeps = (pics * 2 + 1).relu().is_contiguous(memory_format=CL)
clone_keeps = pics.clone().is_contiguous(memory_format=CL)
values_same = torch.equal(pics.contiguous(), pics)

# a convolution fed channels_last input answers in channels_last, with the same numbers
feat = torch.randint(1, 10, (2, 8, 4, 4), dtype=torch.float32, requires_grad=True)
conv = nn.Conv2d(8, 4, 3)
expected = conv(feat)
conv = conv.to(memory_format=CL)
answer = conv(feat.contiguous(memory_format=CL))
conv_keeps = answer.is_contiguous(memory_format=CL)
weight_cl = conv.weight.is_contiguous(memory_format=CL)
conv_same_values = torch.allclose(answer, expected, atol=1e-5)
answer.sum().backward()
input_grad_shape = tuple(feat.grad.shape)


class TinyClassifier(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.reduce = nn.Conv2d(8, 4, 3)
        self.head = nn.Linear(4 * 6 * 6, classes)

    def forward(self, images):
        h = torch.relu(self.norm(self.stem(images)))
        h = torch.max_pool2d(self.reduce(h), 1)
        return self.head(h.flatten(1))


net = TinyClassifier().to(memory_format=CL)
images = torch.randn(8, 3, 8, 8).to(memory_format=CL)
labels = torch.randint(0, 5, (8,))
net(images)
model_weights_cl = all(p.is_contiguous(memory_format=CL)
                       for p in net.parameters() if p.dim() == 4)
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
cl_losses = []
for _ in range(15):
    sgd.zero_grad()
    step_loss = F.cross_entropy(net(images), labels)
    step_loss.backward()
    sgd.step()
    cl_losses.append(step_loss.item())
grads_cl = net.stem.weight.grad.shape == net.stem.weight.shape
print(f"loss {cl_losses[0]:.3f} -> {cl_losses[-1]:.3f}")

# a fixed-weight convolution, recorded for the comparison with torch
probe = torch.sin(torch.arange(150, dtype=torch.float32)).view(2, 3, 5, 5)
kernel = nn.Conv2d(3, 2, 3)
with torch.no_grad():
    kernel.weight.copy_(torch.cos(torch.arange(54, dtype=torch.float32)).view(2, 3, 3, 3))
    kernel.bias.fill_(0.1)
kernel = kernel.to(memory_format=CL)
probe_out = kernel(probe.contiguous(memory_format=CL))
fixed_results = {"out": probe_out.tolist(), "out_stride": probe_out.stride(),
                 "weight_stride": kernel.weight.stride()}
