"""Timing a broadcast multiply, written for these tests in the way the PyTorch Timer quick
start is commonly written (modelled on the API usage of that recipe, not a copy of it):

- ``torch.utils.benchmark.Timer`` with a statement and a multi-line setup string,
  ``blocked_autorange(min_run_time=...)`` and the printed Measurement;
- ``Language.CPP`` statements, which jitgrad's Timer refuses (``NotImplementedError``).
"""
import jitgrad as torch
from jitgrad.utils.benchmark import Language, Timer

torch.manual_seed(0)


def time_product(other_len):
    setup = (
        "x = torch.ones((128,))\n"
        f"y = torch.ones(({other_len},))\n"
    )
    timer = Timer("x * y", setup)
    return timer.blocked_autorange(min_run_time=0.05)


case_a = time_product(128)  # same length: elementwise
case_b = time_product(1)  # length one: broadcast
for measurement in (case_a, case_b):
    print(measurement, end="\n\n")

cpp_error = None
try:  # (jitgrad refuses already when the Timer is built)
    cpp_timer = Timer(
        "x * y;",
        "auto x = torch::ones({128});\nauto y = torch::ones({128});",
        language=Language.CPP,
    )
    print(cpp_timer.blocked_autorange(min_run_time=0.05))
except NotImplementedError as err:
    cpp_error = str(err)
print("C++ timing:", cpp_error)
