"""torch.compile on a CPU, written for these tests in the way the PyTorch torch.compile
tutorial is commonly written (modelled on the API usage of that tutorial, not a copy of it):

- the GPU-model check (``torch.cuda.get_device_name``) and a ``warnings.warn`` without one;
- ``torch.compile(fn)``, ``@torch.compile`` and ``torch.compile(module)`` (an
  ``OptimizedModule``), compared with eager results;
- a small BatchNorm CNN timed eager against ``torch.compile(..., mode="reduce-overhead")``
  for inference and for an Adam training step (``zero_grad(True)``), after
  ``torch._dynamo.reset()``; medians with NumPy;
- data-dependent control flow under ``torch.jit.trace`` and ``torch.compile``,
  ``torch.jit.script`` on a function given an int, a SciPy ``dct`` on ``.numpy()`` inside a
  compiled function, and ``fullgraph=True`` on a branch (raises) and on the CNN (fine).
"""
import time
import traceback
import warnings

import numpy as np
import scipy

import jitgrad as torch
import jitgrad._dynamo  # noqa: F401 (torch._dynamo.reset below)

torch.manual_seed(0)
fast_gpu = torch.cuda.is_available() and any(
    name in torch.cuda.get_device_name() for name in ("V100", "A100"))
if not fast_gpu:
    warnings.warn("no V100/A100 GPU: expect smaller speedups", stacklevel=1)


def wave(x, y):
    return torch.sin(x) + torch.cos(x)


@torch.compile
def wave_compiled(x, y):
    return torch.sin(x) + torch.cos(x)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.proj(x))


a, b = torch.randn(10, 10), torch.randn(10, 10)
head = Head()
head_compiled = torch.compile(head)
feats = torch.randn(10, 100)
basic = [torch.allclose(torch.compile(wave)(a, b), wave(a, b)),
         torch.allclose(wave_compiled(a, b), wave(a, b)),
         torch.allclose(head_compiled(feats), head(feats))]
opt_mod_type = type(head_compiled).__name__
print(basic, opt_mod_type)


def stopwatch(fn, *args):
    t0 = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - t0


def batch(n):
    return torch.randn(n, 3, 32, 32).to(torch.float32), torch.randint(10, (n,))


def small_cnn():
    torch.manual_seed(1)  # the same weights each time
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)).to(torch.float32)


def report(tag, eager_t, compiled_t):
    e, c = np.median(eager_t), np.median(compiled_t)
    print(f"{tag}: eager {e:.5f} s, compiled {c:.5f} s, x{e / c:.2f}")


ROUNDS = 3
cnn = small_cnn()


def infer(model, images):
    return model(images)


torch._dynamo.reset()
infer_fast = torch.compile(infer, mode="reduce-overhead")
images = batch(8)[0]
eval_same = torch.allclose(infer(cnn, images), infer_fast(cnn, images), atol=1e-5)
eager_t, compiled_t = [], []
for _ in range(ROUNDS):
    images = batch(8)[0]
    eager_t.append(stopwatch(infer, cnn, images)[1])
    compiled_t.append(stopwatch(infer_fast, cnn, images)[1])
report("inference", eager_t, compiled_t)


def make_step(model):
    adam = torch.optim.Adam(model.parameters())
    xent = torch.nn.CrossEntropyLoss()

    def step(data):
        adam.zero_grad(True)
        loss = xent(model(data[0]), data[1])
        loss.backward()
        adam.step()
        return loss

    return step


losses = {"eager": [], "compiled": []}
times = {"eager": [], "compiled": []}
train_warnings = []
for kind in ("eager", "compiled"):
    step = make_step(small_cnn())
    if kind == "compiled":
        step = torch.compile(step, mode="reduce-overhead")
    torch.manual_seed(2)  # the same batches for both runs
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(ROUNDS):
            data = batch(8)
            loss, secs = stopwatch(step, data)
            losses[kind].append(loss.item())
            times[kind].append(secs)
    if kind == "compiled":
        train_warnings = [str(w.message) for w in seen]
report("training", times["eager"], times["compiled"])


def same(fn, other, args):
    return torch.allclose(fn(*args), other(*args))


def flip_if_negative(x, y):
    return -y if x.sum() < 0 else y


pos, y_in = torch.randn(5, 5), torch.randn(5, 5)
pos = -pos if pos.sum() < 0 else pos  # trace on the positive branch
traced_flip = torch.jit.trace(flip_if_negative, (pos, y_in))
traced = (same(flip_if_negative, traced_flip, (pos, y_in)),
          same(flip_if_negative, traced_flip, (-pos, y_in)))
torch._dynamo.reset()
compiled_flip = torch.compile(flip_if_negative)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    compiled = (same(flip_if_negative, compiled_flip, (pos, y_in)),
                same(flip_if_negative, compiled_flip, (-pos, y_in)))
print("trace:", traced, "compile:", compiled)


def add_scalar(x, k):
    return x + k


mat, three = torch.randn(5, 5), 3
script_error = None
try:
    torch.jit.script(add_scalar)(mat, three)
except Exception as err:
    traceback.print_exc()
    script_error = type(err).__name__
compiled_f2 = same(add_scalar, torch.compile(add_scalar), (mat, three))


def cosine_transform(x):
    spectrum = scipy.fft.dct((x * 2).numpy())
    return torch.from_numpy(spectrum) * 2


first, second = torch.randn(5, 5), torch.randn(5, 5)
traced_dct = torch.jit.trace(cosine_transform, (first,))
traced_f3_ok = same(cosine_transform, traced_dct, (second,))
script_f3_error = None
try:
    torch.jit.script(cosine_transform)
except Exception as err:
    traceback.print_exc()
    script_f3_error = type(err).__name__
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    compiled_f3 = same(cosine_transform, torch.compile(cosine_transform), (second,))


def squash_and_flip(u, v):
    squashed = u / (torch.abs(u) + 1)
    if v.sum() < 0:  # a data-dependent branch: no single graph
        v = -v
    return squashed * v


fullgraph_error = None
try:
    torch.compile(squash_and_flip, fullgraph=True)(torch.randn(10), torch.randn(10))
except Exception:
    traceback.print_exc()
    fullgraph_error = "raised"
whole_cnn = torch.compile(small_cnn(), fullgraph=True)
fullgraph_model_shape = tuple(whole_cnn(batch(16)[0]).shape)
print(fullgraph_error, fullgraph_model_shape)
