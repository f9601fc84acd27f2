"""Scaled dot-product attention: backends, a causal self-attention block, compile, profiling and
causal bias objects, written for these tests in the way the PyTorch intermediate tutorials
commonly write torch code (modelled on the API usage of the tutorial "(Beta) Implementing
High-Performance Transformers with Scaled Dot Product Attention", not a copy of it):

- F.scaled_dot_product_attention against softmax(q k^T / sqrt(d)) v;
- a torch.utils.benchmark.Timer helper (blocked_autorange), float16 inputs made with device= and
  dtype=, nn.attention.sdpa_kernel with the MATH / FLASH_ATTENTION / EFFICIENT_ATTENTION backends
  (a RuntimeError where one is unavailable);
- a multi-head causal self-attention nn.Module (one fused Linear, chunk, view/transpose, dropout_p
  and is_causal only in training), .to(device).to(dtype).eval(), torch.compile of it;
- torch.profiler.profile / record_function, key_averages().table(sort_by=..., row_limit=...);
- nn.attention.bias.causal_upper_left / causal_lower_right as attention masks, also through
  torch.compile(F.scaled_dot_product_attention, fullgraph=True);
- the block's output and input gradient and both biases from fixed values, for the torch
  comparison.
"""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.utils.benchmark as benchmark
from jitgrad.nn.attention import SDPBackend, sdpa_kernel
from jitgrad.nn.attention.bias import causal_lower_right, causal_upper_left
from jitgrad.profiler import ProfilerActivity, profile, record_function

torch.manual_seed(9)
device = "cuda" if torch.cuda.is_available() else "cpu"

q, k, v = (torch.randn(3, 5, 6, device=device) for _ in range(3))
example = F.scaled_dot_product_attention(q, k, v)
example_by_hand = torch.softmax(q @ k.transpose(-2, -1) / 6 ** 0.5, dim=-1) @ v


def time_us(fn, *args, **kwargs):
    timer = benchmark.Timer(stmt="fn(*args, **kwargs)",
                            globals={"fn": fn, "args": args, "kwargs": kwargs})
    return timer.blocked_autorange(min_run_time=0.05).mean * 1e6


half = torch.float16
shape = (2, 4, 48, 16)  # batch, heads, sequence, head size
hq, hk, hv = (torch.rand(*shape, device=device, dtype=half) for _ in range(3))
print(f"default backend: {time_us(F.scaled_dot_product_attention, hq, hk, hv):.1f} us")

supported = {}
for label, backend in (("math", SDPBackend.MATH), ("flash", SDPBackend.FLASH_ATTENTION),
                       ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
    with sdpa_kernel(backend):
        try:
            us = time_us(F.scaled_dot_product_attention, hq, hk, hv)
        except RuntimeError:
            supported[label] = False
            print(f"{label}: not available here")
        else:
            supported[label] = True
            print(f"{label}: {us:.1f} us")


class CausalAttention(nn.Module):
    def __init__(self, width, heads, bias=False, causal=False, p_drop=0.0):
        super().__init__()
        assert width % heads == 0
        self.heads = heads
        self.causal = causal
        self.p_drop = p_drop
        self.qkv = nn.Linear(width, 3 * width, bias=bias)
        self.proj = nn.Linear(width, width, bias=bias)
        self.drop = nn.Dropout(p_drop)

    def split_heads(self, t):
        b, n, w = t.size(0), t.size(1), t.size(2)
        return t.view(b, n, self.heads, w // self.heads).transpose(1, 2)

    def forward(self, x):
        b = x.size(0)
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, -1))
        p, causal = (self.p_drop, self.causal) if self.training else (0.0, False)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
                                             is_causal=causal)
        return self.drop(self.proj(att.transpose(1, 2).view(b, -1, self.heads * q.size(-1))))


block = CausalAttention(64, 4, bias=False, causal=True, p_drop=0.1).to(device).to(half).eval()
model_repr = repr(block)
print(block)
tokens = torch.rand(2, 24, 64, device=device, dtype=half)
print(f"eager block: {time_us(block, tokens):.1f} us")
fast_block = torch.compile(block)
fast_block(tokens)  # compile once before timing
print(f"compiled block: {time_us(fast_block, tokens):.1f} us")
compiled_same = torch.allclose(fast_block(tokens).float(), block(tokens).float(), atol=1e-2)

kinds = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])


def profiled(fn, label):
    with profile(activities=kinds, record_shapes=False) as prof, record_function(label):
        for _ in range(20):
            fn(tokens)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
    return [row.key for row in prof.key_averages()]


profiled_names = profiled(block, "eager attention block")
compiled_profiled_names = profiled(fast_block, "compiled attention block")

# causal masks when the query is shorter than the keys
n_q, n_kv = 3, 7
bq = torch.rand(2, 2, n_q, 16, device=device, dtype=half)
bk = torch.rand(2, 2, n_kv, 16, device=device, dtype=half)
bv = torch.rand(2, 2, n_kv, 16, device=device, dtype=half)
top_left = causal_upper_left(n_q, n_kv)
bottom_right = causal_lower_right(n_q, n_kv)
assert type(top_left) is type(bottom_right) and issubclass(type(top_left), torch.Tensor)
print(type(top_left), top_left, bottom_right)
bias_reprs = (repr(top_left), repr(bottom_right))
with_top_left = F.scaled_dot_product_attention(bq, bk, bv, top_left)
with_bottom_right = F.scaled_dot_product_attention(bq, bk, bv, bottom_right)
plain_causal = F.scaled_dot_product_attention(bq, bk, bv, is_causal=True)
assert torch.allclose(with_top_left, plain_causal)  # is_causal means the upper-left form
assert not torch.allclose(with_top_left, with_bottom_right)
sdpa_graph = torch.compile(F.scaled_dot_product_attention, fullgraph=True)
compiled_bias_same = torch.allclose(sdpa_graph(bq, bk, bv, top_left), plain_causal, atol=1e-3)

# fixed weights and inputs in float32 (train mode, no dropout) for the torch comparison
ref = CausalAttention(8, 2, bias=True, causal=True)
with torch.no_grad():
    for i, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * i).view_as(p) / 2)
ref_x = torch.cos(torch.arange(2 * 5 * 8, dtype=torch.float32)).view(2, 5, 8).requires_grad_()
ref_y = ref(ref_x)
ref_y.pow(2).sum().backward()
fq, fk, fv = (torch.sin(torch.arange(2 * 3 * n * 4, dtype=torch.float32) * s).view(2, 3, n, 4)
              for n, s in ((3, 0.6), (6, 1.1), (6, 0.4)))
fixed_result = {
    "y": ref_y.tolist(), "x_grad": ref_x.grad.tolist(),
    "upper": F.scaled_dot_product_attention(fq, fk, fv, causal_upper_left(3, 6)).tolist(),
    "lower": F.scaled_dot_product_attention(fq, fk, fv, causal_lower_right(3, 6)).tolist(),
}
