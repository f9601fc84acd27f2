# ruff: noqa: B007, E402, E501, E721, E731, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""pytorch/tutorials intermediate_source/scaled_dot_product_attention_tutorial.py:
F.scaled_dot_product_attention, sdpa_kernel backend choice timed with torch.utils.benchmark, a
causal self-attention module (nanoGPT's), torch.compile of it, the profiler's table, and the
nn.attention.bias causal biases (also under compile).

Sizes are smaller (a CPU runs this), the model stays on the CPU where the tutorial moves it to
"cuda", and the NestedTensor section is left out: jitgrad has no torch.nested."""
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

# Example Usage:
query, key, value = torch.randn(2, 3, 8, device=device), torch.randn(2, 3, 8, device=device), torch.randn(2, 3, 8, device=device)
example = F.scaled_dot_product_attention(query, key, value)
example_by_hand = torch.softmax(query @ key.transpose(-2, -1) / 8 ** 0.5, dim=-1) @ value

# Lets define a helpful benchmarking function:
import jitgrad.utils.benchmark as benchmark


def benchmark_torch_function_in_microseconds(f, *args, **kwargs):
    t0 = benchmark.Timer(
        stmt="f(*args, **kwargs)", globals={"args": args, "kwargs": kwargs, "f": f}
    )
    return t0.blocked_autorange(min_run_time=0.05).mean * 1e6


# Lets define the hyper-parameters of our input
batch_size = 4
max_sequence_len = 64
num_heads = 4
embed_dimension = 16

dtype = torch.float16

query = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, device=device, dtype=dtype)
key = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, device=device, dtype=dtype)
value = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, device=device, dtype=dtype)

print(f"The default implementation runs in {benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value):.3f} microseconds")

# Lets explore the speed of each of the 3 implementations
from jitgrad.nn.attention import SDPBackend, sdpa_kernel

supported = {}
with sdpa_kernel(SDPBackend.MATH):
    math_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
    print(f"The math implementation runs in {math_time:.3f} microseconds")
    supported["math"] = True

with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    try:
        flash_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
        print(f"The flash attention implementation runs in {flash_time:.3f} microseconds")
        supported["flash"] = True
    except RuntimeError:
        print("FlashAttention is not supported. See warnings for reasons.")
        supported["flash"] = False

with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    try:
        efficient_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
        print(f"The memory efficient implementation runs in {efficient_time:.3f} microseconds")
        supported["efficient"] = True
    except RuntimeError:
        print("EfficientAttention is not supported. See warnings for reasons.")
        supported["efficient"] = False


class CausalSelfAttention(nn.Module):

    def __init__(self, num_heads: int, embed_dimension: int, bias: bool = False, is_causal: bool = False, dropout: float = 0.0):
        super().__init__()
        assert embed_dimension % num_heads == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension, bias=bias)
        # output projection
        self.c_proj = nn.Linear(embed_dimension, embed_dimension, bias=bias)
        # regularization
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)
        self.num_heads = num_heads
        self.embed_dimension = embed_dimension
        # Perform causal masking
        self.is_causal = is_causal

    def forward(self, x):
        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        query_projected = self.c_attn(x)

        batch_size = query_projected.size(0)
        embed_dim = query_projected.size(2)
        head_dim = embed_dim // (self.num_heads * 3)

        query, key, value = query_projected.chunk(3, -1)
        query = query.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)

        if self.training:
            dropout = self.dropout
            is_causal = self.is_causal
        else:
            dropout = 0.0
            is_causal = False

        y = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout, is_causal=is_causal)
        y = y.transpose(1, 2).view(batch_size, -1, self.num_heads * head_dim)

        y = self.resid_dropout(self.c_proj(y))
        return y


num_heads = 4
heads_per_dim = 16
embed_dimension = num_heads * heads_per_dim
dtype = torch.float16
model = CausalSelfAttention(num_heads=num_heads, embed_dimension=embed_dimension, bias=False, is_causal=True, dropout=0.1).to(device).to(dtype).eval()
print(model)
model_repr = repr(model)

batch_size = 4
max_sequence_len = 32
x = torch.rand(batch_size, max_sequence_len,
               embed_dimension, device=device, dtype=dtype)
print(
    f"The non compiled module runs in  {benchmark_torch_function_in_microseconds(model, x):.3f} microseconds")


compiled_model = torch.compile(model)
# Let's compile it
compiled_model(x)
print(
    f"The compiled module runs in  {benchmark_torch_function_in_microseconds(compiled_model, x):.3f} microseconds")
compiled_same = torch.allclose(compiled_model(x).float(), model(x).float(), atol=1e-2)

from jitgrad.profiler import ProfilerActivity, profile, record_function
activities = [ProfilerActivity.CPU]
if device == 'cuda':
    activities.append(ProfilerActivity.CUDA)

with profile(activities=activities, record_shapes=False) as prof:
    with record_function(" Non-Compilied Causal Attention"):
        for _ in range(25):
            model(x)
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
profiled_names = [e.key for e in prof.key_averages()]


with profile(activities=activities, record_shapes=False) as prof:
    with record_function("Compiled Causal Attention"):
        for _ in range(25):
            compiled_model(x)
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
compiled_profiled_names = [e.key for e in prof.key_averages()]

from jitgrad.nn.attention.bias import causal_lower_right, causal_upper_left

batch_size = 4
sequence_length_q = 2
sequence_length_kv = 10
num_heads = 4
embed_dimension = 32

dtype = torch.float16

query = torch.rand(batch_size, num_heads, sequence_length_q, embed_dimension, device=device, dtype=dtype)
key = torch.rand(batch_size, num_heads, sequence_length_kv, embed_dimension, device=device, dtype=dtype)
value = torch.rand(batch_size, num_heads, sequence_length_kv, embed_dimension, device=device, dtype=dtype)

upper_left_bias = causal_upper_left(sequence_length_q, sequence_length_kv)
lower_right_bias = causal_lower_right(sequence_length_q, sequence_length_kv)

print(type(upper_left_bias))
print(type(lower_right_bias))

assert type(upper_left_bias) == type(lower_right_bias)
assert issubclass(type(upper_left_bias), torch.Tensor)

# Lets see what these tensors look like
print(upper_left_bias)
print(lower_right_bias)
bias_reprs = (repr(upper_left_bias), repr(lower_right_bias))

# These objects are intended to be used with sdpa
out_upper_left = F.scaled_dot_product_attention(query, key, value, upper_left_bias)
out_lower_right = F.scaled_dot_product_attention(query, key, value, lower_right_bias)
out_is_causal = F.scaled_dot_product_attention(query, key, value, is_causal=True)

assert torch.allclose(out_upper_left, out_is_causal)
assert not torch.allclose(out_upper_left, out_lower_right)

# These attention biases should also be compatible with torch.compile
compiled_sdpa = torch.compile(F.scaled_dot_product_attention, fullgraph=True)
out_upper_left = compiled_sdpa(query, key, value, upper_left_bias)
compiled_bias_same = torch.allclose(out_upper_left, out_is_causal, atol=1e-3)

# a deterministic part to compare with torch: the module (train mode, no dropout) with fixed
# weights, its input gradient, and both biases in float32
fixed = CausalSelfAttention(num_heads=2, embed_dimension=8, bias=True, is_causal=True)
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 2)
fixed_x = torch.cos(torch.arange(2 * 5 * 8, dtype=torch.float32)).view(2, 5, 8).requires_grad_()
fixed_y = fixed(fixed_x)
fixed_y.pow(2).sum().backward()
fq, fk, fv = (torch.sin(torch.arange(2 * 3 * n * 4, dtype=torch.float32) * s).view(2, 3, n, 4)
              for n, s in ((3, 0.7), (6, 1.3), (6, 0.3)))
fixed_result = {"y": fixed_y.tolist(), "x_grad": fixed_x.grad.tolist(),
                "upper": F.scaled_dot_product_attention(fq, fk, fv, causal_upper_left(3, 6)).tolist(),
                "lower": F.scaled_dot_product_attention(fq, fk, fv, causal_lower_right(3, 6)).tolist()}
