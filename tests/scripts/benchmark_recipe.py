"""Benchmarking two ways of a batched dot product, written for these tests in the way the
PyTorch benchmark recipe is commonly written (modelled on the API usage of that recipe, not a
copy of it):

- ``mul``/``sum`` against ``torch.bmm`` on reshaped inputs, checked with ``allclose``;
- ``timeit.Timer`` and ``torch.utils.benchmark.Timer`` (``stmt``, ``setup`` importing from
  ``__main__``, ``globals``, ``num_threads`` from ``torch.get_num_threads``, ``label``,
  ``sub_label``, ``description``, ``env``), ``.timeit(n)`` and ``blocked_autorange``, the
  Measurement's ``mean`` / ``median`` / ``times`` / ``number_per_run``;
- ``benchmark.Compare`` (``print``, ``trim_significant_figures``, ``colorize(rowwise=)``) over
  a size x threads grid and over pickled Measurements of an A/B test;
- ``Fuzzer`` with ``FuzzedParameter(distribution='loguniform')`` / ``FuzzedTensor`` and the
  built-in ``op_fuzzers.binary.BinaryOpFuzzer`` (which torch 2.13 cannot build).

Sizes are kept small (a [1, 64, 1024] grid, threads 1 and 2, short run times).
"""
import pickle
import timeit
from itertools import product

import jitgrad as torch
import jitgrad.utils.benchmark as benchmark
from jitgrad.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer
from jitgrad.utils.benchmark.op_fuzzers import binary


def batched_dot_mul_sum(a, b):
    """Row-wise dot product: multiply, then sum the last dimension."""
    return a.mul(b).sum(-1)


def batched_dot_bmm(a, b):
    """Row-wise dot product as a batch of (1 x n) @ (n x 1) matrix products."""
    rows, cols = a.reshape(-1, 1, a.shape[-1]), b.reshape(-1, b.shape[-1], 1)
    return torch.bmm(rows, cols).flatten(-3)


def bench(fn_name, data, quick=None, **options):
    """A benchmark.Timer of ``fn_name(x, x)``; with ``quick``, already blocked_autorange'd."""
    timer = benchmark.Timer(stmt=f"{fn_name}(x, x)", setup=f"from __main__ import {fn_name}",
                            globals=data if isinstance(data, dict) else {"x": data}, **options)
    return timer.blocked_autorange(min_run_time=quick) if quick else timer


x = torch.randn(10000, 64)
assert batched_dot_mul_sum(x, x).allclose(batched_dot_bmm(x, x))

for name in ("batched_dot_mul_sum", "batched_dot_bmm"):
    plain = timeit.Timer(stmt=f"{name}(x, x)", setup=f"from __main__ import {name}",
                         globals={"x": x})
    print(f"timeit {name}: {plain.timeit(100) / 100 * 1e6:.1f} us per call")

mul_sum_timer, bmm_timer = bench("batched_dot_mul_sum", x), bench("batched_dot_bmm", x)
print(mul_sum_timer.timeit(100), bmm_timer.timeit(100), sep="\n")
single_thread_repr = repr(mul_sum_timer.timeit(100))

threads = torch.get_num_threads()
labelled = {desc: bench(fn, x, num_threads=threads, label="Multithreaded batch dot",
                        sub_label=f"Implemented using {desc}")
            for fn, desc in (("batched_dot_mul_sum", "mul and sum"), ("batched_dot_bmm", "bmm"))}
labelled_repr = repr(labelled["bmm"].timeit(100))
print(labelled_repr)
mul_sum_timer, bmm_timer = labelled["mul and sum"], labelled["bmm"]

if torch.cuda.is_available():
    x_gpu = torch.randn(10000, 1024, device="cuda")
    mul_sum_timer, bmm_timer = bench("batched_dot_mul_sum", x_gpu), bench("batched_dot_bmm",
                                                                           x_gpu)
    print(mul_sum_timer.timeit(100), bmm_timer.timeit(100), sep="\n")

auto_a = mul_sum_timer.blocked_autorange(min_run_time=0.05)
auto_b = bmm_timer.blocked_autorange(min_run_time=0.05)
print(auto_a, auto_b, sep="\n")
stats = (auto_a.mean, auto_a.median, len(auto_a.times), auto_a.number_per_run)
print(f"mean {stats[0] * 1e6:.2f} us, median {stats[1] * 1e6:.2f} us")

# ---- a table over sizes and thread counts
grid = []
for (rows, cols), n_threads in product(product([1, 64, 1024], repeat=2), [1, 2]):
    ones = torch.ones((rows, cols))
    for fn, desc in (("batched_dot_mul_sum", "mul/sum"), ("batched_dot_bmm", "bmm")):
        grid.append(bench(fn, ones, quick=0.01, num_threads=n_threads, label="Batched dot",
                          sub_label=f"[{rows}, {cols}]", description=desc))
table = benchmark.Compare(grid)
table.print()
compare_table = str(table)
table.trim_significant_figures()
table.colorize()
table.print()

# ---- A/B: measurements pickled in one "environment", compared in another
pickled = []
for env, dot in (("environment A: mul/sum", batched_dot_mul_sum),
                 ("environment B: bmm", batched_dot_bmm)):
    for shape in ((1, 1), (1024, 1000), (1000, 1)):
        timer = benchmark.Timer(stmt="batched_dot(x, x)",
                                globals={"x": torch.ones(shape), "batched_dot": dot},
                                num_threads=1, label="Batched dot",
                                description=f"[{shape[0]}, {shape[1]}]", env=env)
        pickled.append(pickle.dumps(timer.blocked_autorange(min_run_time=0.01)))
ab = benchmark.Compare([pickle.loads(blob) for blob in pickled])
ab.trim_significant_figures()
ab.colorize()
ab.print()
ab_table = str(ab)
assert str(benchmark.Compare(pickle.loads(pickle.dumps(grid)))) == str(benchmark.Compare(grid))


def case_label(params, tensor_params):
    layout = "" if tensor_params["x"]["is_contiguous"] else "(discontiguous)"
    return f"{params['k0']:<6} x {params['k1']:<4} {layout}"


# ---- fuzzed inputs: k0, k1 log-uniform in [1, 10000], 128..100000 elements, 60% contiguous
fuzzer = Fuzzer(
    parameters=[FuzzedParameter(k, minval=1, maxval=10000, distribution="loguniform")
                for k in ("k0", "k1")],
    tensors=[FuzzedTensor("x", size=("k0", "k1"), min_elements=128, max_elements=100000,
                          probability_contiguous=0.6)],
    seed=0,
)
fuzzed_runs, fuzzed_cases = [], []
for tensors, tensor_params, params in fuzzer.take(4):
    label = case_label(params, tensor_params)
    t = tensors["x"]
    fuzzed_cases.append((label, tuple(t.shape), t.is_contiguous(), t.sum().item()))
    for fn, desc in (("batched_dot_mul_sum", "mul/sum"), ("batched_dot_bmm", "bmm")):
        fuzzed_runs.append(bench(fn, tensors, quick=0.01, label="Batched dot", sub_label=label,
                                 description=desc))
fuzz_table = benchmark.Compare(fuzzed_runs)
fuzz_table.trim_significant_figures()
fuzz_table.print()

try:
    op_fuzzer = binary.BinaryOpFuzzer(seed=0)
except AssertionError as err:  # torch 2.13's own distribution check rejects it
    binary_fuzzer_error = str(err)
    op_fuzzer = None
binary_runs, binary_cases = [], []
for tensors, tensor_params, params in (op_fuzzer.take(3) if op_fuzzer else []):
    label = case_label(params, tensor_params)
    binary_cases.append((label, tuple(tensors["x"].shape), tuple(tensors["y"].shape)))
    binary_runs.append(bench("batched_dot_mul_sum", tensors, quick=0.01, label="Batched dot",
                             sub_label=label, description="mul/sum"))
binary_table = benchmark.Compare(binary_runs)
binary_table.trim_significant_figures()
binary_table.colorize(rowwise=True)
binary_table.print()
