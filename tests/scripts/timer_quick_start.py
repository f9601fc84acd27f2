# ruff: noqa: F401 (tutorial code as is)
"""pytorch/tutorials recipes_source/recipes/timer_quick_start.py (its stored version): the
Python half, ``x * y`` with a broadcast operand timed by Timer.blocked_autorange and printed.

Changes: ``min_run_time=0.05`` instead of 1. The rest of the recipe times C++ statements
(``Language.CPP``) and counts instructions with Callgrind (valgrind): jitgrad has no C++
frontend, and its Timer says so (``NotImplementedError``, recorded here); those parts are left
out."""
import jitgrad as torch
from jitgrad.utils.benchmark import Language, Timer


def measure(b_size):
    return Timer(
        "x * y",
        f"""
        x = torch.ones((128,))
        y = torch.ones(({b_size},))
        """,
    ).blocked_autorange(min_run_time=0.05)

case_a = measure(b_size=128)
case_b = measure(b_size=1)
print(case_a, "\n")
print(case_b, "\n")


def measure_cpp(b_size):
    return Timer(
        "x * y;",
        f"""
        auto x = torch::ones({{128}});
        auto y = torch::ones({{{b_size}}});
        """,
        language=Language.CPP,
    ).blocked_autorange(min_run_time=0.05)

try:
    print(measure_cpp(b_size=128), "\n")
except NotImplementedError as e:
    cpp_error = str(e)
print(cpp_error)
