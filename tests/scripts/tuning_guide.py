"""Performance-tuning habits applied to a small CNN, written for these tests in the way the
PyTorch recipes commonly write torch code (modelled on the API usage of the "Performance Tuning
Guide" recipe, not a copy of it):

- a DataLoader with workers (and pin_memory only with CUDA) over a TensorDataset;
- bias-free nn.Conv2d before nn.BatchNorm2d, a block recomputed with
  torch.utils.checkpoint.checkpoint(use_reentrant=False) in training;
- debugging APIs off (set_detect_anomaly(False), profiler.profile(enabled=False)), gradients
  reset with ``p.grad = None``, model.zero_grad(), optimizer.zero_grad(set_to_none=True);
- evaluation under torch.no_grad(); an erf GELU under @torch.compile against F.gelu;
- channels_last models and inputs; torch.jit.enable_onednn_fusion / trace / freeze, also under
  torch.cpu.amp.autocast(dtype=torch.bfloat16); float32 matmul precision; torch.compile's modes
  (and its keyword-only error); cudnn.benchmark; torch.rand(..., device=...);
- loss and gradients from sin-valued weights, for the torch comparison.
"""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.checkpoint import checkpoint
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        # no conv bias: the batch norm right after has its own shift
        self.stem = nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(6)
        self.mid = nn.Conv2d(6, 12, 3, padding=1, bias=False)
        self.mid_bn = nn.BatchNorm2d(12)
        self.classify = nn.Linear(12, classes)

    def stem_block(self, x):
        return F.relu(self.stem_bn(self.stem(x)))

    def forward(self, x):
        # training trades compute for memory: the stem's activations are recomputed in backward
        h = checkpoint(self.stem_block, x, use_reentrant=False) if self.training \
            else self.stem_block(x)
        h = F.relu(self.mid_bn(self.mid(F.max_pool2d(h, 2))))
        return self.classify(h.mean((2, 3)))


images = torch.randn(48, 3, 12, 12)
labels = torch.randint(0, 10, (48,))
dataset = TensorDataset(images, labels)
pinned = torch.cuda.is_available()  # page-locked batches only help copies to a GPU
loader = DataLoader(dataset, batch_size=12, shuffle=True, num_workers=2, pin_memory=pinned)

# no anomaly detection, no profiler in a normal run
debug_tools = (torch.autograd.set_detect_anomaly(False),
               torch.autograd.profiler.profile(enabled=False))

cnn = SmallCNN()
sgd = torch.optim.SGD(cnn.parameters(), lr=0.1, momentum=0.9)
cnn.zero_grad()
sgd.zero_grad()

losses = []
for _ in range(3):
    for xb, yb in loader:
        for p in cnn.parameters():
            p.grad = None  # cheaper than filling zeros
        loss = F.cross_entropy(cnn(xb), yb)
        loss.backward()
        sgd.step()
        losses += [loss.item()]
    sgd.zero_grad(set_to_none=True)
grads_are_none = all(p.grad is None for p in cnn.parameters())

cnn.eval()
with torch.no_grad():
    scores = cnn(images)
val_requires_grad = scores.requires_grad


@torch.compile
def erf_gelu(t):
    return 0.5 * t * (1.0 + torch.erf(t * 0.70710678))


grid = torch.linspace(-4, 4, 17)
gelu_close = torch.allclose(erf_gelu(grid), F.gelu(grid), atol=1e-4)

nhwc = cnn.to(memory_format=torch.channels_last)
with torch.no_grad():
    nhwc_scores = nhwc(images[:6].to(memory_format=torch.channels_last))
channels_last_same = torch.allclose(nhwc_scores, scores[:6], atol=1e-5)
channels_last_weight = nhwc.mid.weight.is_contiguous(memory_format=torch.channels_last)

fusion_states = []
for on in (True, False):  # off again: torch 2.13's oneDNN Graph fuser fails on this model
    torch.jit.enable_onednn_fusion(on)
    fusion_states.append(torch.jit.onednn_fusion_enabled())
onednn_flag = fusion_states[0]

batch = [images[:24]]
frozen_src = SmallCNN().eval()
with torch.no_grad():
    expected = frozen_src(*batch)
frozen = torch.jit.freeze(torch.jit.trace(frozen_src, batch))
with torch.no_grad():
    for _ in range(2):  # warm-up
        frozen(*batch)
    traced_same = torch.allclose(frozen(*batch), expected, atol=1e-5)

small = images[:6]
with torch.no_grad(), torch.cpu.amp.autocast(cache_enabled=False, dtype=torch.bfloat16):
    half = torch.jit.freeze(torch.jit.trace(SmallCNN().eval(), (small)))
    half(small)
    bf16_dtype = half(small).dtype

precisions = []
for level in ("high", "highest"):  # try the faster one, then restore the default
    torch.set_float32_matmul_precision(level)
    precisions.append(torch.get_float32_matmul_precision())
matmul_precision = precisions[0]

plain = SmallCNN().eval()
try:
    torch.compile(plain, "max-autotune")  # the mode must be passed by keyword
except TypeError as err:
    compile_positional_error = str(err)
fast = torch.compile(plain, mode="reduce-overhead")
tuned = torch.compile(plain, mode="max-autotune")
with torch.no_grad():
    compiled_same = torch.allclose(fast(small), plain(small), atol=1e-5)

benchmark_flags = []
for flag in (True, False):
    torch.backends.cudnn.benchmark = flag
    benchmark_flags.append(torch.backends.cudnn.benchmark)
cudnn_benchmark = benchmark_flags[0]

where = "cuda" if torch.cuda.is_available() else "cpu"
noise = torch.rand(5, device=where)  # made on the device, not copied there

# deterministic weights and input (train mode: batch statistics, checkpointed stem)
ref = SmallCNN()
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 3)
ref_x = torch.cos(torch.arange(4 * 3 * 12 * 12, dtype=torch.float32)).view(4, 3, 12, 12)
ref_loss = F.cross_entropy(ref(ref_x), torch.tensor([3, 1, 4, 1]))
ref_loss.backward()
fixed_result = {"loss": ref_loss.item(), "gelu": erf_gelu(grid).tolist(),
                **{n: p.grad.tolist() for n, p in ref.named_parameters()}}
