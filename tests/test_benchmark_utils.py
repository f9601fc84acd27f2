"""``jitgrad.utils.benchmark`` against ``torch.utils.benchmark``: no wall-clock assertions;
the statements advance a fake clock passed as ``timer=``, so both Timers measure the same
numbers, and Measurements/Compare tables built from the same times print the same text."""

from __future__ import annotations

import random

import pytest

import jitgrad
from jitgrad.utils import benchmark

torch = pytest.importorskip("torch")
tbench = pytest.importorskip("torch.utils.benchmark")


class Clock:
    """A clock that only moves when the timed statement calls ``tick`` (by a repeating,
    seeded sequence of per-run costs)."""

    def __init__(self, costs: list[float]) -> None:
        self.t = 0.0
        self.costs = costs
        self.i = 0

    def __call__(self) -> float:
        return self.t

    def tick(self) -> None:
        self.t += self.costs[self.i % len(self.costs)]
        self.i += 1


def _costs(seed: int, base: float, spread: float, n: int = 37) -> list[float]:
    rng = random.Random(seed)
    return [base * (1 + spread * rng.random()) for _ in range(n)]


def _body(m) -> list[str]:
    return repr(m).splitlines()[1:]  # (the first line is the object's address)


@pytest.mark.parametrize("base,spread", [(1e-6, 0.0), (2e-6, 0.05), (3e-4, 0.6), (5e-8, 0.3)])
def test_blocked_autorange_measures_as_torch(base, spread):
    costs = _costs(1, base, spread)
    ours, theirs = Clock(costs), Clock(costs)
    m = benchmark.Timer("clock.tick()", timer=ours, globals={"clock": ours},
                        label="tick").blocked_autorange(min_run_time=0.01)
    tm = tbench.Timer("clock.tick()", timer=theirs, globals={"clock": theirs},
                      label="tick").blocked_autorange(min_run_time=0.01)
    assert m.number_per_run == tm.number_per_run
    assert m.raw_times == pytest.approx(tm.raw_times, rel=1e-12)
    assert m.median == pytest.approx(tm.median, rel=1e-9)
    assert m.mean == pytest.approx(tm.mean, rel=1e-9)
    assert m.iqr == pytest.approx(tm.iqr, rel=1e-6, abs=1e-18)
    assert m.significant_figures == tm.significant_figures
    assert m.has_warnings == tm.has_warnings
    assert _body(m) == _body(tm)


def test_adaptive_autorange_and_timeit_as_torch():
    costs = _costs(2, 1e-5, 0.3)
    ours, theirs = Clock(costs), Clock(costs)
    m = benchmark.Timer("clock.tick()", timer=ours, globals={"clock": ours}) \
        .adaptive_autorange(threshold=0.05, max_run_time=1.0)
    tm = tbench.Timer("clock.tick()", timer=theirs, globals={"clock": theirs}) \
        .adaptive_autorange(threshold=0.05, max_run_time=1.0)
    assert (m.number_per_run, len(m.times)) == (tm.number_per_run, len(tm.times))
    assert _body(m) == _body(tm)
    ours, theirs = Clock(costs), Clock(costs)
    m = benchmark.Timer("clock.tick()", setup="pass", timer=ours,
                        globals={"clock": ours}, num_threads=1).timeit(500)
    tm = tbench.Timer("clock.tick()", setup="pass", timer=theirs,
                      globals={"clock": theirs}, num_threads=1).timeit(500)
    assert m.raw_times == pytest.approx(tm.raw_times) and m.number_per_run == 500
    assert _body(m) == _body(tm)


def test_callback_sees_every_block():
    clock = Clock([1e-6])
    seen = []
    m = benchmark.Timer("clock.tick()", timer=clock, globals={"clock": clock}) \
        .blocked_autorange(callback=lambda n, t: seen.append((n, t)), min_run_time=0.001)
    assert [t for _, t in seen] == m.raw_times
    assert {n for n, _ in seen} == {m.number_per_run}


def _spec_kwargs(stmt="x + y", setup="pass", label=None, sub_label=None, description=None,
                 env=None, num_threads=1):
    return dict(stmt=stmt, setup=setup, label=label, sub_label=sub_label,
                description=description, env=env, num_threads=num_threads)


def _pair(number, times, **kw):
    ours = benchmark.Measurement(number, list(times), benchmark.TaskSpec(**kw))
    theirs = tbench.Measurement(number, list(times), tbench.TaskSpec(**kw))
    return ours, theirs


TEXT_CASES = [
    (100, [5.1e-4, 5.3e-4, 6.0e-4, 5.2e-4, 9e-4], _spec_kwargs()),
    (1, [2.5e-9], _spec_kwargs(label="Add", sub_label="float", description="n=4")),
    (10, [1.0, 1.2, 1.1], _spec_kwargs(stmt="a\nb", setup="x = 1\ny = 2", num_threads=4)),
    (1000, [3e-3 * (1 + 0.01 * i) for i in range(40)],
     _spec_kwargs(label="L", setup="import math", env="A")),
]


@pytest.mark.parametrize("case", TEXT_CASES, ids=range(len(TEXT_CASES)))
def test_measurement_text_and_statistics_match_torch(case):
    number, times, kw = case
    m, tm = _pair(number, times, **kw)
    assert _body(m) == _body(tm)
    assert repr(m).splitlines()[0].startswith(
        "<jitgrad.utils.benchmark.utils.common.Measurement object at 0x")
    assert (m.median, m.mean, m.iqr) == pytest.approx((tm.median, tm.mean, tm.iqr))
    assert m.times == pytest.approx(tm.times)
    assert m.significant_figures == tm.significant_figures
    assert m.meets_confidence(0.2) == tm.meets_confidence(0.2)
    assert m.title == tm.title and m.as_row_name == tm.as_row_name
    assert m.label == kw["label"]  # (TaskSpec fields read through)


def test_median_and_iqr_from_known_times():
    m = benchmark.Measurement(2, [2.0, 4.0, 6.0, 8.0, 10.0], benchmark.TaskSpec("s", "pass"))
    assert m.times == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert m.median == 3.0 and m.mean == 3.0
    assert m.iqr == pytest.approx(2.0)  # (4 - 2: linear-interpolation quartiles)
    assert m.has_warnings  # (IQR is 67% of the median)
    assert "WARNING: Interquartile range is 66.7% of the median measurement." in repr(m)
    merged = benchmark.Measurement.merge([m, benchmark.Measurement(
        1, [7.0], benchmark.TaskSpec("s", "pass"))])
    assert len(merged) == 1 and merged[0].times == [1.0, 2.0, 3.0, 4.0, 5.0, 7.0]


def _table_measurements(mod, seed):
    rng = random.Random(seed)
    out = []
    for label in ["Batched dot", "Matmul"]:
        for threads in [1, 4]:
            for sub in ["float", "int64"]:
                for n in [1, 64, 1024]:
                    base = 1e-6 * n * (2 if sub == "int64" else 1) / threads
                    times = [base * (1 + 0.3 * rng.random()) for _ in range(9)]
                    out.append(mod.Measurement(
                        100, [t * 100 for t in times],
                        mod.TaskSpec(stmt="f(x)", setup="pass", label=label, sub_label=sub,
                                     description=f"[{n}]", num_threads=threads)))
    return out


@pytest.mark.parametrize("options", [(), ("trim",), ("trim", "color"), ("rowcolor", "warn"),
                                     ("trim", "color", "warn")])
def test_compare_table_matches_torch(options):
    ours = benchmark.Compare(_table_measurements(benchmark, 3))
    theirs = tbench.Compare(_table_measurements(tbench, 3))
    for c in (ours, theirs):
        if "trim" in options:
            c.trim_significant_figures()
        if "color" in options:
            c.colorize()
        if "rowcolor" in options:
            c.colorize(rowwise=True)
        if "warn" in options:
            c.highlight_warnings()
    assert str(ours) == str(theirs)
    assert "1 threads: " in str(ours) and "Times are in" in str(ours)


def test_compare_with_envs_and_missing_cells_matches_torch():
    def build(mod):
        ms = []
        for env, sub, desc, t in [("A", "x", "d1", 1e-3), ("B", "x", "d1", 2e-3),
                                  ("A", "y", "d2", 5e-3)]:
            ms.append(mod.Measurement(1, [t, t * 1.01, t * 0.99, t * 1.02], mod.TaskSpec(
                stmt="s", setup="pass", label="T", sub_label=sub, description=desc,
                env=env)))
        return ms
    assert str(benchmark.Compare(build(benchmark))) == str(tbench.Compare(build(tbench)))
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        benchmark.Compare([1])


def test_num_threads_is_set_during_the_measurement_and_restored():
    before = jitgrad.get_num_threads()
    seen = []
    m = benchmark.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen},
                        num_threads=1).timeit(3)
    assert set(seen) == {1} and m.num_threads == 1
    assert jitgrad.get_num_threads() == before


def test_timer_arguments_as_torch():
    assert benchmark.Timer("torch.ones(2)")._globals["torch"] is jitgrad
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        benchmark.Timer(lambda: 1)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        benchmark.Timer("pass", global_setup="#include <x>")
    with pytest.raises(ValueError, match="Invalid language `rust`."):
        benchmark.Timer("pass", language="rust")
    with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
        benchmark.Timer("pass").repeat()
    # (the statement and setup are dedented and stripped, as torch's)
    t = benchmark.Timer("\n    y = x * 2\n    ", setup="\n    x = 3\n")
    assert t._task_spec.stmt == "y = x * 2" and t._task_spec.setup == "x = 3"


def test_unit_helpers_match_torch():
    from torch.utils.benchmark.utils import common as tc
    for t in [1e-9, 3e-9, 1e-6, 9.99e-7, 4.2e-5, 1e-3, 0.5, 12.0]:
        assert benchmark.select_unit(t) == tc.select_unit(t)
    for x, n in [(3.14159, 2), (123456.0, 3), (0.000123456, 1), (9.999, 2)]:
        assert benchmark.trim_sigfig(x, n) == pytest.approx(tc.trim_sigfig(x, n))
