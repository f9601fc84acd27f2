"""Switching torch.compile's stance, written for these tests in the way the PyTorch
set_stance recipe is commonly written (modelled on the API usage of that recipe, not a copy
of it):

- ``torch.compiler.is_compiling`` telling compiled from eager runs;
- ``torch.compiler.set_stance(EAGER)`` as a decorator, a context manager and a plain
  call, then ``"default"``; the error of changing the stance inside a compiled function (and
  of calling a function decorated with it);
- ``"fail_on_recompile"`` and ``"eager_on_recompile"`` on a new input shape;
- an eager check run of a compiled function before the compiled runs, and an eager run that
  reveals a bad call (``torch.sin(x, x)``) without waiting for a compile.
"""
import time

import jitgrad as torch

torch.manual_seed(0)
EAGER, DEFAULT = "force_eager", "default"
out = {}
zeros3 = torch.zeros(3)


def mode_sign(x):
    # +1 under the compiler, -1 when run eagerly
    return x + 1 if torch.compiler.is_compiling() else x - 1


sign = torch.compile(mode_sign)
out["compiled"] = sign(zeros3).tolist()


@torch.compiler.set_stance(EAGER)
def sign_eagerly(x):
    return sign(x)


out["decorator"] = sign_eagerly(zeros3).tolist()
with torch.compiler.set_stance(EAGER):
    out["context"] = sign(zeros3).tolist()
torch.compiler.set_stance(EAGER)
out["raw"] = sign(zeros3).tolist()
torch.compiler.set_stance(DEFAULT)
out["default_again"] = sign(zeros3).tolist()
print(out)


def first_words(err, cut):
    return type(err).__name__, str(err).split(cut)[0]


@torch.compile
def switches_inside(x):
    with torch.compiler.set_stance(EAGER):  # not allowed while compiling
        return x * 2


try:
    switches_inside(zeros3)
except Exception as err:
    out["baz"] = first_words(err, " at 0x")


@torch.compiler.set_stance(EAGER)
def helper(x):
    return x * 2


@torch.compile
def calls_helper(x):
    return helper(x)


try:
    calls_helper(zeros3)
except Exception as err:
    out["outer"] = first_words(err, " at 0x")


@torch.compile
def activation(x):
    return torch.relu(x)


activation(torch.randn(3))  # compiles for length 3
strict = torch.compiler.set_stance("fail_on_recompile")
with strict:
    activation(torch.randn(3))  # cached: fine
    try:
        activation(torch.randn(4))  # a new shape would recompile
    except Exception as err:
        out["fail_on_recompile"] = first_words(err, " filename")

sign2 = torch.compile(mode_sign)
out["huge"] = [sign2(torch.zeros(3)).tolist()]
lenient = torch.compiler.set_stance("eager_on_recompile")
with lenient:
    out["huge"] += [sign2(torch.zeros(n)).tolist() for n in (3, 4, 3)]


@torch.compile
def cubed(a, b):
    return a @ b @ b @ b


pair = (torch.randn(5, 5), torch.randn(5, 5))
with torch.compiler.set_stance(EAGER):
    t0 = time.perf_counter()
    eager_result = cubed(*pair)
    print(f"eager run {time.perf_counter() - t0:.4f} s")
for _ in range(3):  # warm up the compiled version
    cubed(*pair)
out["gigantic_same"] = torch.allclose(eager_result, cubed(*pair), rtol=1e-4)


@torch.compile
def broken(x):
    return torch.sin(x, x)  # wrong call: sin takes one tensor


try:
    with torch.compiler.set_stance(EAGER):
        broken(torch.randn(3))  # fails fast, eagerly
    broken(torch.randn(3))  # never reached
except Exception as err:
    out["humongous"] = type(err).__name__
out["stance_after"] = torch.compiler.is_compiling()  # outside any compiled code
print(out)
