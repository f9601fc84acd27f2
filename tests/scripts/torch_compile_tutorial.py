# ruff: noqa: B023, B028, E402, E722, E731, UP006, UP035 (tutorial code as is)
"""pytorch/tutorials intermediate_source/torch_compile_tutorial.py (its stored version), the
parts that run on a CPU: torch.compile on a function, as a decorator and on a module; eager
against compiled inference and training of a CNN (mode="reduce-overhead", torch._dynamo.reset);
data-dependent control flow under torch.jit.trace (silently specialized) and torch.compile
(correct: jitgrad runs such a function eagerly, where torch breaks the graph), torch.jit.script
on a function taking an int, a NumPy/SciPy call inside a compiled function, and fullgraph=True
raising on the data-dependent branch.

Changes: CUDA events -> time.perf_counter; densenet121 -> a small CNN on 3 x 32 x 32 inputs,
batch 8, 3 timed iterations; the torch.fx and custom-backend sections (FX GraphModules) and
torch._dynamo.explain / export are left out (jitgrad has no TorchDynamo); the tracebacks the
tutorial prints are recorded as exception type names; results are recorded."""
import time
import warnings

import jitgrad as torch

torch.manual_seed(0)
gpu_ok = False
if torch.cuda.is_available():
    device = torch.cuda.get_device_name()
    if "V100" in device or "A100" in device:
        gpu_ok = True

if not gpu_ok:
    warnings.warn(
        "GPU is not NVIDIA V100 or A100. Speedup numbers may be lower than "
        "expected."
    )


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(x)
    return a + b
opt_foo1 = torch.compile(foo)
x0, y0 = torch.randn(10, 10), torch.randn(10, 10)
print(opt_foo1(x0, y0))
basic = [torch.allclose(opt_foo1(x0, y0), foo(x0, y0))]


@torch.compile
def opt_foo2(x, y):
    a = torch.sin(x)
    b = torch.cos(x)
    return a + b
print(opt_foo2(torch.randn(10, 10), torch.randn(10, 10)))
basic.append(torch.allclose(opt_foo2(x0, y0), foo(x0, y0)))


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))

mod = MyModule()
opt_mod = torch.compile(mod)
x100 = torch.randn(10, 100)
print(opt_mod(x100))
basic.append(torch.allclose(opt_mod(x100), mod(x100)))
opt_mod_type = type(opt_mod).__name__


def timed(fn):  # (the tutorial times with CUDA events)
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def generate_data(b):
    return (
        torch.randn(b, 3, 32, 32).to(torch.float32),
        torch.randint(10, (b,)),
    )

N_ITERS = 3


def init_model():  # (stands in for torchvision's densenet121)
    torch.manual_seed(1)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10),
    ).to(torch.float32)


def evaluate(mod, inp):
    return mod(inp)

model = init_model()

# Reset since we are using a different mode.
import jitgrad._dynamo
torch._dynamo.reset()

evaluate_opt = torch.compile(evaluate, mode="reduce-overhead")

inp = generate_data(8)[0]
print("eager:", timed(lambda: evaluate(model, inp))[1])
print("compile:", timed(lambda: evaluate_opt(model, inp))[1])
eval_same = torch.allclose(evaluate(model, inp), evaluate_opt(model, inp), atol=1e-5)

eager_times = []
compile_times = []
for i in range(N_ITERS):
    inp = generate_data(8)[0]
    _, eager_time = timed(lambda: evaluate(model, inp))
    eager_times.append(eager_time)
    print(f"eager eval time {i}: {eager_time}")

print("~" * 10)

compile_times = []
for i in range(N_ITERS):
    inp = generate_data(8)[0]
    _, compile_time = timed(lambda: evaluate_opt(model, inp))
    compile_times.append(compile_time)
    print(f"compile eval time {i}: {compile_time}")
print("~" * 10)

import numpy as np
eager_med = np.median(eager_times)
compile_med = np.median(compile_times)
speedup = eager_med / compile_med
print(f"(eval) eager median: {eager_med}, compile median: {compile_med}, speedup: {speedup}x")
print("~" * 10)

model = init_model()
opt = torch.optim.Adam(model.parameters())
losses = {"eager": [], "compiled": []}


def train(mod, data):
    opt.zero_grad(True)
    pred = mod(data[0])
    loss = torch.nn.CrossEntropyLoss()(pred, data[1])
    loss.backward()
    opt.step()
    return loss


torch.manual_seed(2)
eager_times = []
for i in range(N_ITERS):
    inp = generate_data(8)
    loss, eager_time = timed(lambda: train(model, inp))
    losses["eager"].append(loss.item())
    eager_times.append(eager_time)
    print(f"eager train time {i}: {eager_time}")
print("~" * 10)

model = init_model()
opt = torch.optim.Adam(model.parameters())
train_opt = torch.compile(train, mode="reduce-overhead")

torch.manual_seed(2)
compile_times = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for i in range(N_ITERS):
        inp = generate_data(8)
        loss, compile_time = timed(lambda: train_opt(model, inp))
        losses["compiled"].append(loss.item())
        compile_times.append(compile_time)
        print(f"compile train time {i}: {compile_time}")
train_warnings = [str(w.message) for w in caught]
print("~" * 10)

eager_med = np.median(eager_times)
compile_med = np.median(compile_times)
speedup = eager_med / compile_med
print(f"(train) eager median: {eager_med}, compile median: {compile_med}, speedup: {speedup}x")
print("~" * 10)


def f1(x, y):
    if x.sum() < 0:
        return -y
    return y


def test_fns(fn1, fn2, args):
    out1 = fn1(*args)
    out2 = fn2(*args)
    return torch.allclose(out1, out2)

inp1 = torch.randn(5, 5)
inp2 = torch.randn(5, 5)
if inp1.sum() < 0:  # (so that the traced branch is the one for positive sums)
    inp1 = -inp1

traced_f1 = torch.jit.trace(f1, (inp1, inp2))
print("traced 1, 1:", test_fns(f1, traced_f1, (inp1, inp2)))
print("traced 1, 2:", test_fns(f1, traced_f1, (-inp1, inp2)))
traced = (test_fns(f1, traced_f1, (inp1, inp2)), test_fns(f1, traced_f1, (-inp1, inp2)))

import traceback as tb

# Reset since we are using a different mode.
torch._dynamo.reset()

compile_f1 = torch.compile(f1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    print("compile 1, 1:", test_fns(f1, compile_f1, (inp1, inp2)))
    print("compile 1, 2:", test_fns(f1, compile_f1, (-inp1, inp2)))
    compiled = (test_fns(f1, compile_f1, (inp1, inp2)), test_fns(f1, compile_f1, (-inp1, inp2)))
print("~" * 10)


def f2(x, y):
    return x + y

inp1 = torch.randn(5, 5)
inp2 = 3

script_f2 = torch.jit.script(f2)
try:
    script_f2(inp1, inp2)
    script_error = None
except Exception as e:
    tb.print_exc()
    script_error = type(e).__name__

compile_f2 = torch.compile(f2)
print("compile 2:", test_fns(f2, compile_f2, (inp1, inp2)))
compiled_f2 = test_fns(f2, compile_f2, (inp1, inp2))
print("~" * 10)

import scipy
def f3(x):
    x = x * 2
    x = scipy.fft.dct(x.numpy())
    x = torch.from_numpy(x)
    x = x * 2
    return x

inp1 = torch.randn(5, 5)
inp2 = torch.randn(5, 5)
traced_f3 = torch.jit.trace(f3, (inp1,))
print("traced 3:", test_fns(f3, traced_f3, (inp2,)))
traced_f3_ok = test_fns(f3, traced_f3, (inp2,))

try:
    torch.jit.script(f3)
    script_f3_error = None
except Exception as e:
    tb.print_exc()
    script_f3_error = type(e).__name__

compile_f3 = torch.compile(f3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    print("compile 3:", test_fns(f3, compile_f3, (inp2,)))
    compiled_f3 = test_fns(f3, compile_f3, (inp2,))


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b

opt_bar = torch.compile(bar, fullgraph=True)
try:
    opt_bar(torch.randn(10), torch.randn(10))
    fullgraph_error = None
except:
    tb.print_exc()
    fullgraph_error = "raised"

opt_model = torch.compile(init_model(), fullgraph=True)
print(opt_model(generate_data(16)[0]))
fullgraph_model_shape = tuple(opt_model(generate_data(16)[0]).shape)
