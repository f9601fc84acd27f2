# ruff: noqa: B023 (tutorial code as is)
"""pytorch/tutorials recipes_source/torch_compiler_set_stance_tutorial.py:
``torch.compiler.set_stance`` as a decorator, a context manager and a raw function
(``force_eager``, ``default``), the error for changing the stance inside a compiled region,
``fail_on_recompile`` and ``eager_on_recompile``, comparing eager and compiled runs of one
model, and an eager run that crashes before a long compile would.

Changes: CUDA events -> time.perf_counter; the printed values are recorded too."""
import time

import jitgrad as torch

torch.manual_seed(0)
out = {}


@torch.compile
def foo(x):
    if torch.compiler.is_compiling():
        # torch.compile is active
        return x + 1
    else:
        # torch.compile is not active
        return x - 1


inp = torch.zeros(3)

print(foo(inp))  # compiled, prints 1
out["compiled"] = foo(inp).tolist()


@torch.compiler.set_stance("force_eager")
def bar(x):
    # force disable the compiler
    return foo(x)


print(bar(inp))  # not compiled, prints -1
out["decorator"] = bar(inp).tolist()

with torch.compiler.set_stance("force_eager"):
    print(foo(inp))  # not compiled, prints -1
    out["context"] = foo(inp).tolist()

torch.compiler.set_stance("force_eager")
print(foo(inp))  # not compiled, prints -1
out["raw"] = foo(inp).tolist()
torch.compiler.set_stance("default")

print(foo(inp))  # compiled, prints 1
out["default_again"] = foo(inp).tolist()


@torch.compile
def baz(x):
    # error!
    with torch.compiler.set_stance("force_eager"):
        return x + 1


try:
    baz(inp)
except Exception as e:
    print(e)
    out["baz"] = (type(e).__name__, str(e).split(" at 0x")[0])


@torch.compiler.set_stance("force_eager")
def inner(x):
    return x + 1


@torch.compile
def outer(x):
    # error!
    return inner(x)


try:
    outer(inp)
except Exception as e:
    print(e)
    out["outer"] = (type(e).__name__, str(e).split(" at 0x")[0])


@torch.compile
def my_big_model(x):
    return torch.relu(x)


# first compilation
my_big_model(torch.randn(3))

with torch.compiler.set_stance("fail_on_recompile"):
    my_big_model(torch.randn(3))  # no recompilation - OK
    try:
        my_big_model(torch.randn(4))  # recompilation - error
    except Exception as e:
        print(e)
        out["fail_on_recompile"] = (type(e).__name__, str(e).split(" filename")[0])


@torch.compile
def my_huge_model(x):
    if torch.compiler.is_compiling():
        return x + 1
    else:
        return x - 1


# first compilation
print(my_huge_model(torch.zeros(3)))  # 1
out["huge"] = [my_huge_model(torch.zeros(3)).tolist()]

with torch.compiler.set_stance("eager_on_recompile"):
    print(my_huge_model(torch.zeros(3)))  # 1
    print(my_huge_model(torch.zeros(4)))  # -1
    print(my_huge_model(torch.zeros(3)))  # 1
    out["huge"] += [my_huge_model(torch.zeros(3)).tolist(), my_huge_model(torch.zeros(4)).tolist(),
                    my_huge_model(torch.zeros(3)).tolist()]


def timed(fn):  # (the recipe times with CUDA events)
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


@torch.compile
def my_gigantic_model(x, y):
    x = x @ y
    x = x @ y
    x = x @ y
    return x


inps = torch.randn(5, 5), torch.randn(5, 5)

with torch.compiler.set_stance("force_eager"):
    print("eager:", timed(lambda: my_gigantic_model(*inps))[1])
    eager_result = my_gigantic_model(*inps)

# warmups
for _ in range(3):
    my_gigantic_model(*inps)

print("compiled:", timed(lambda: my_gigantic_model(*inps))[1])
out["gigantic_same"] = torch.allclose(eager_result, my_gigantic_model(*inps), rtol=1e-4)


@torch.compile
def my_humongous_model(x):
    return torch.sin(x, x)


try:
    with torch.compiler.set_stance("force_eager"):
        print(my_humongous_model(torch.randn(3)))
    # this call to the compiled model won't run
    print(my_humongous_model(torch.randn(3)))
except Exception as e:
    print(e)
    out["humongous"] = type(e).__name__
out["stance_after"] = torch.compiler.is_compiling()
