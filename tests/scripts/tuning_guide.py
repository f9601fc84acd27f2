# ruff: noqa: B007, E402, E501, E731, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (recipe code as is)
"""pytorch/tutorials recipes_source/recipes/tuning_guide.py: its code snippets, run on a small
CNN where the guide assumes ``model``/``optimizer``: DataLoader workers and pin_memory,
no_grad for validation, Conv2d(bias=False) before BatchNorm2d, ``param.grad = None`` against
``zero_grad()``, a ``torch.compile``d gelu, channels_last, checkpointing, turning the debugging
APIs off, ``torch.jit.enable_onednn_fusion`` / ``trace`` / ``freeze`` for inference, bfloat16
autocast on the CPU, float32 matmul precision, ``torch.compile`` modes, and
``cudnn.benchmark``.

torchvision's resnet50 is replaced by the small CNN; ``torch.fx.experimental.optimization.fuse``
(Conv-BatchNorm folding) and ``torch._C._jit_set_autocast_mode`` are left out (no fx, no
``_C`` in jitgrad); the DDP sections need several processes and are prose in the guide."""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.checkpoint import checkpoint
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        # "Disable bias for convolutions directly followed by a batch norm"
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def block1(self, x):
        return F.relu(self.bn1(self.conv1(x)))

    def forward(self, x):
        # "Checkpoint intermediate buffers": recompute block1 in the backward
        x = checkpoint(self.block1, x, use_reentrant=False) if self.training else self.block1(x)
        x = F.max_pool2d(x, 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


data = TensorDataset(torch.randn(64, 3, 16, 16), torch.randint(0, 10, (64,)))
# "Enable asynchronous data loading": num_workers > 0 (pin_memory=True needs a GPU)
loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2,
                    pin_memory=torch.cuda.is_available())
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

# "Disable debugging APIs" for regular training runs
torch.autograd.set_detect_anomaly(False)
torch.autograd.profiler.profile(enabled=False)

# Instead of calling:
model.zero_grad()
# or
optimizer.zero_grad()

# to zero out gradients, use the following method instead:

for param in model.parameters():
    param.grad = None

losses = []
for epoch in range(3):
    for x, y in loader:
        for param in model.parameters():
            param.grad = None
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    optimizer.zero_grad(set_to_none=True)  # "Alternatively ... zero_grad(set_to_none=True)"
grads_are_none = all(p.grad is None for p in model.parameters())

# "Disable gradient calculation for validation or inference"
model.eval()
with torch.no_grad():
    val_out = model(data.tensors[0])
val_requires_grad = val_out.requires_grad


@torch.compile
def gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


gelu_x = torch.linspace(-3, 3, 13)
gelu_close = torch.allclose(gelu(gelu_x), F.gelu(gelu_x), atol=1e-4)

# "Enable channels_last memory format for computer vision models"
model_cl = model.to(memory_format=torch.channels_last)
input_cl = data.tensors[0][:8].to(memory_format=torch.channels_last)
with torch.no_grad():
    channels_last_same = torch.allclose(model_cl(input_cl), val_out[:8], atol=1e-5)
channels_last_weight = model_cl.conv1.weight.is_contiguous(memory_format=torch.channels_last)

# Only this extra line of code is required to use oneDNN Graph
torch.jit.enable_onednn_fusion(True)
onednn_flag = torch.jit.onednn_fusion_enabled()
# (torch 2.13's oneDNN Graph fuser fails on this model, "RuntimeError: could not set attribute
# to the op", at the second warm-up run: traced without it)
torch.jit.enable_onednn_fusion(False)

# sample input should be of the same shape as expected inputs
sample_input = [data.tensors[0][:32]]
model = Net().eval()
with torch.no_grad():
    eager_out = model(*sample_input)
# Tracing the model with example input
traced_model = torch.jit.trace(model, sample_input)
# Invoking torch.jit.freeze
traced_model = torch.jit.freeze(traced_model)

with torch.no_grad():
    # a couple of warm-up runs
    traced_model(*sample_input)
    traced_model(*sample_input)
    # speedup would be observed after warm-up runs
    traced_out = traced_model(*sample_input)
traced_same = torch.allclose(traced_out, eager_out, atol=1e-5)

# bfloat16 inference on the CPU (the guide's oneDNN Graph BFloat16 snippet, without fx's fuse)
example_input = data.tensors[0][:8]
bf16_model = Net().eval()
with torch.no_grad(), torch.cpu.amp.autocast(cache_enabled=False, dtype=torch.bfloat16):
    bf16_model = torch.jit.trace(bf16_model, (example_input))
    bf16_model = torch.jit.freeze(bf16_model)
    # a couple of warm-up runs
    bf16_model(example_input)
    bf16_model(example_input)
    # speedup would be observed in subsequent runs.
    bf16_out = bf16_model(example_input)
bf16_dtype = bf16_out.dtype

# Carefully consider the tradeoff between speed and precision at the moment of evaluating your models!
torch.set_float32_matmul_precision("high")
matmul_precision = torch.get_float32_matmul_precision()
torch.set_float32_matmul_precision("highest")

# It can be enabled using
m = Net().eval()
try:  # (as written in the guide: torch.compile's arguments after the model are keyword-only)
    torch.compile(m, "reduce-overhead")
except TypeError as e:
    compile_positional_error = str(e)
compiled_a = torch.compile(m, mode="reduce-overhead")
# or
compiled_b = torch.compile(m, mode="max-autotune")
with torch.no_grad():
    compiled_same = torch.allclose(compiled_a(example_input), m(example_input), atol=1e-5)

torch.backends.cudnn.benchmark = True
cudnn_benchmark = torch.backends.cudnn.benchmark
torch.backends.cudnn.benchmark = False

# "Create tensors directly on the target device"
device = "cuda" if torch.cuda.is_available() else "cpu"
direct = torch.rand(4, device=device)

# a deterministic part to compare with torch: the CNN (train mode, so BatchNorm uses batch
# statistics and block1 is checkpointed) with fixed weights, its loss and gradients
fixed = Net()
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
fixed_x = torch.cos(torch.arange(4 * 3 * 16 * 16, dtype=torch.float32)).view(4, 3, 16, 16)
fixed_loss = F.cross_entropy(fixed(fixed_x), torch.tensor([1, 2, 3, 4]))
fixed_loss.backward()
fixed_result = {"loss": fixed_loss.item(), "gelu": gelu(gelu_x).tolist(),
                **{n: p.grad.tolist() for n, p in fixed.named_parameters()}}
