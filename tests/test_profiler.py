"""jitgrad.profiler and jitgrad.autograd.profiler: torch.profiler's API on jitgrad's ops.

Rows and counts of a small model's ops, record_function nesting, self <= total, the schedule's
action sequence and on_trace_ready steps (against torch's where installed), Chrome traces,
table text (against torch's table builder on the same events), memory, and that every hook
is gone once a profiler stops.
"""

from __future__ import annotations

import json
import os
import re
import warnings

import pytest

import jitgrad
from jitgrad import nn
from jitgrad.ops import registry
from jitgrad.profiler import (EventList, FunctionEvent, ProfilerAction, ProfilerActivity,
                              profile, record_function, schedule, supported_activities,
                              tensorboard_trace_handler)


def _rows(prof) -> dict:
    return {e.key: e for e in prof.key_averages()}


def _linear_relu_profile(runs: int = 3):
    jitgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    x = jitgrad.randn(3, 4)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(runs):
            model(x)
    return prof


def test_rows_and_counts_of_a_small_model():
    rows = _rows(_linear_relu_profile(3))
    assert rows["aten::addmm"].count == 3
    assert rows["aten::relu"].count == 3
    assert rows["aten::t"].count == 3
    for row in rows.values():
        assert row.cpu_time_total >= 0
        assert row.self_cpu_time_total <= row.cpu_time_total + 1e-9
        assert row.device_time_total == 0
        assert row.cpu_time == pytest.approx(row.cpu_time_total / row.count)


def test_counts_match_torch():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    x = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
            for _ in range(3):
                model(x)
    theirs = {e.key: e.count for e in tp.key_averages()}
    ours = {k: e.count for k, e in _rows(_linear_relu_profile(3)).items()}
    for name in ("aten::addmm", "aten::relu"):
        assert ours[name] == theirs[name]


def test_record_function_nests_and_self_le_total():
    a = jitgrad.randn(50, 50)
    with profile() as prof:
        with record_function("outer"):
            b = a @ a
            with record_function("inner"):
                b = b + a
                b = b * 2.0
    events = prof.events()
    outer = next(e for e in events if e.name == "outer")
    inner = next(e for e in events if e.name == "inner")
    assert inner.cpu_parent is outer
    assert inner in outer.cpu_children
    assert outer.cpu_time_total >= inner.cpu_time_total
    assert outer.is_user_annotation and inner.is_user_annotation
    mm = next(e for e in events if e.name == "aten::mm")
    assert mm.cpu_parent is outer
    assert {e.name for e in inner.cpu_children} == {"aten::add", "aten::mul"}
    for e in events:
        assert e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        assert e.self_cpu_time_total >= -1e-9
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - sum(c.cpu_time_total for c in outer.cpu_children))
    assert prof.key_averages().self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in events))


def test_record_function_as_decorator():
    @record_function("my_block")
    def block(t):
        return t.exp().sum()

    x = jitgrad.randn(8)
    with profile() as prof:
        block(x)
        block(x)
    rows = _rows(prof)
    assert rows["my_block"].count == 2
    exp = next(e for e in prof.events() if e.name == "aten::exp")
    assert exp.cpu_parent.name == "my_block"
    assert block(x).item() == pytest.approx(x.exp().sum().item())  # outside: a no-op


def test_backward_rows():
    x = jitgrad.randn(5, requires_grad=True)
    with profile() as prof:
        (x * x).sum().backward()
    names = {e.name for e in prof.events()}
    assert "autograd::engine::evaluate_function: MulBackward0" in names
    assert "autograd::engine::evaluate_function: SumBackward0" in names
    assert "torch::autograd::AccumulateGrad" in names
    outer = next(e for e in prof.events()
                 if e.name == "autograd::engine::evaluate_function: MulBackward0")
    assert [c.name for c in outer.cpu_children] == ["MulBackward0"]
    assert x.grad is not None


def test_jit_call_is_one_row():
    @jitgrad.jit
    def f(a, b):
        return (a * b + a).sum()

    a, b = jitgrad.randn(10), jitgrad.randn(10)
    expected = f(a, b).item()
    with profile() as prof:
        r1 = f(a, b)
        r2 = f(a, b)
    assert r1.item() == pytest.approx(expected) and r2.item() == pytest.approx(expected)
    assert _rows(prof)["jit::test_jit_call_is_one_row.<locals>.f"].count == 2


def test_hooks_removed_after_exit_even_on_error():
    impls = {name: op.impl for name, op in registry.OPS.items()}
    with pytest.raises(ValueError, match="boom"):
        with profile():
            jitgrad.ones(3) + 1
            raise ValueError("boom")
    assert registry.profiler is None
    assert all(registry.OPS[name].impl is impl for name, impl in impls.items())
    with profile() as prof:
        pass
    assert registry.profiler is None
    assert len(prof.events()) == 0


def test_nothing_recorded_outside_and_nesting_refused():
    x = jitgrad.ones(4)
    with profile() as prof:
        x + x
    x * x  # after the window
    assert "aten::mul" not in _rows(prof)
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profile():
                pass


SETTINGS = [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=3),
            dict(wait=2, warmup=1, active=3, repeat=2, skip_first=3),
            dict(wait=5, warmup=1, active=3, repeat=1, skip_first=10),
            dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1)]


@pytest.mark.parametrize("kw", SETTINGS)
def test_schedule_sequence_matches_torch(kw):
    torch_profiler = pytest.importorskip("torch.profiler")
    ours = schedule(**kw)
    theirs = torch_profiler.schedule(**kw)
    assert [ours(i).name for i in range(40)] == [theirs(i).name for i in range(40)]


def test_schedule_checks_and_warns():
    fn = schedule(wait=1, warmup=1, active=2)
    assert [fn(i) for i in range(5)] == [ProfilerAction.NONE, ProfilerAction.WARMUP,
                                         ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                         ProfilerAction.NONE]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)


def _ready_steps(lib, kw: dict, steps: int) -> list:
    seen = []
    x = lib.ones(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(schedule=lib.profiler.schedule(**kw),
                                  on_trace_ready=lambda p: seen.append(p.step_num)) as p:
            for _ in range(steps):
                x + x
                p.step()
    return seen


@pytest.mark.parametrize("kw", SETTINGS[:3])
def test_on_trace_ready_steps_match_torch(kw):
    torch = pytest.importorskip("torch")
    for steps in (7, 12):
        assert _ready_steps(jitgrad, kw, steps) == _ready_steps(torch, kw, steps)


def test_on_trace_ready_sees_only_its_cycle():
    seen = []
    x = jitgrad.ones(4)

    def ready(p):
        seen.append((p.step_num, _rows(p)["aten::add"].count, _rows(p)["ProfilerStep*"].count))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(schedule=schedule(wait=1, warmup=1, active=2),
                     on_trace_ready=ready) as p:
            for _ in range(8):
                x + x
                p.step()
    assert seen == [(4, 2, 2), (8, 2, 2)]


def test_chrome_trace_is_valid(tmp_path):
    x = jitgrad.randn(20, 20)
    with profile(record_shapes=True) as prof:
        with record_function("block"):
            (x @ x).relu()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    ranges = [e for e in data["traceEvents"] if e["ph"] == "X"]
    by_name = {e["name"]: e for e in ranges}
    assert {"block", "aten::mm", "aten::relu"} <= set(by_name)
    for e in ranges:
        assert isinstance(e["ts"], float) and e["dur"] >= 0
    block, mm = by_name["block"], by_name["aten::mm"]
    assert block["cat"] == "user_annotation" and mm["cat"] == "cpu_op"
    assert block["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= block["ts"] + block["dur"]
    assert mm["args"]["Input Dims"] == [[20, 20], [20, 20]]
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    import gzip

    assert json.loads(gzip.open(gz, "rt").read())["traceEvents"]


def test_tensorboard_trace_handler(tmp_path):
    x = jitgrad.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(schedule=schedule(wait=0, warmup=1, active=1),
                     on_trace_ready=tensorboard_trace_handler(str(tmp_path / "log"),
                                                              worker_name="w0")) as p:
            for _ in range(4):
                x * 2
                p.step()
    files = sorted(os.listdir(tmp_path / "log"))
    assert len(files) == 2
    assert all(re.fullmatch(r"w0\.\d+\.pt\.trace\.json", f) for f in files)
    data = json.loads((tmp_path / "log" / files[0]).read_text())
    assert any(e.get("name") == "aten::mul" for e in data["traceEvents"])


def test_table_text():
    prof = _linear_relu_profile(2)
    text = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    for head in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                 "# of Calls"):
        assert head in text
    assert "CPU Mem" not in text and "Input Shapes" not in text
    assert re.search(r"\nSelf CPU time total: [0-9.]+(us|ms|s)\n$", text)
    assert "aten::addmm" in text
    shaped = prof.key_averages(group_by_input_shape=True).table(sort_by="count")
    assert "Input Shapes" in shaped and "[[8], [3, 4], [4, 8]]" in shaped
    assert prof.key_averages().table(row_limit=1).count("aten::") <= 1


def test_table_sorting_and_units():
    prof = _linear_relu_profile(3)
    avgs = prof.key_averages()
    text = avgs.table(sort_by="count", time_unit="us")
    names = [line.split()[0] for line in text.splitlines()[3:-2]]
    counts = {e.key: e.count for e in avgs}
    assert [counts[n] for n in names] == sorted(counts.values(), reverse=True)
    assert "ms" not in text.replace("Self CPU time total", "")
    for key in ("self_cuda_time_total", "cuda_time_total", "cpu_memory_usage",
                "self_cpu_memory_usage", "self_cpu_time_total", "cpu_time"):
        assert "Self CPU time total" in avgs.table(sort_by=key)  # torch's sort keys
    with pytest.raises(AttributeError):
        avgs.table(sort_by="no_such_key")


def test_table_equals_torchs_on_the_same_events():
    pytest.importorskip("torch")
    from torch.autograd import profiler_util as tu

    spec = [(1, "outer", 0.0, 900.0, None, [[3, 4]], 4000), (2, "aten::mm", 10.0, 400.0, 1,
            [[3, 4], [4, 5]], 3000), (3, "aten::add", 450.0, 1450.5, 1, [[3, 5], []], 60),
            (4, "aten::mm", 2000.0, 2012.25, None, [[3, 4], [4, 5]], -80)]

    def build(cls, lst_cls, with_memory):
        made = {}
        for i, name, s, e, parent, shapes, mem in spec:
            evt = cls(i, name, 1, s, e, input_shapes=shapes, stack=[],
                      cpu_memory_usage=mem if with_memory else 0)
            if parent:
                made[parent].append_cpu_child(evt)
                evt.set_cpu_parent(made[parent])
            made[i] = evt
        out = lst_cls(made.values(), profile_memory=with_memory)
        out._tree_built = True
        return out

    for memory in (False, True):
        ours = build(FunctionEvent, EventList, memory)
        theirs = build(tu.FunctionEvent, tu.EventList, memory)
        for kwargs in (dict(), dict(sort_by="cpu_time_total"),
                       dict(sort_by="self_cpu_time_total", row_limit=2),
                       dict(sort_by="count", top_level_events_only=True, header="H")):
            assert ours.table(**kwargs) == theirs.table(**kwargs)
        for group in (False, True):
            assert ours.key_averages(group).table(sort_by="cpu_time_total") \
                == theirs.key_averages(group).table(sort_by="cpu_time_total")


def test_profile_memory():
    with profile(profile_memory=True, record_shapes=True) as prof:
        a = jitgrad.ones(1000)
        b = a * 3.0
        c = b.view(10, 100)
        with record_function("scratch"):
            tmp = jitgrad.ones(500) * 2.0
            del tmp
    rows = _rows(prof)
    assert rows["aten::mul"].cpu_memory_usage >= 4000 + 2000
    assert rows["aten::mul"].self_cpu_memory_usage == rows["aten::mul"].cpu_memory_usage
    assert rows["aten::view"].cpu_memory_usage == 0
    scratch = rows["scratch"]
    assert scratch.self_cpu_memory_usage < 0  # the temporary freed inside the range
    text = prof.key_averages().table(sort_by="self_cpu_memory_usage")
    assert "CPU Mem" in text and "Self CPU Mem" in text
    assert c.shape == (10, 100)


def test_legacy_autograd_profiler():
    x = jitgrad.randn(4, 4, requires_grad=True)
    prof = jitgrad.autograd.profiler.profile()
    assert repr(prof) == "<unfinished torch.autograd.profile>"
    with prof:
        with jitgrad.autograd.profiler.record_function("label-z"):
            y = (x ** 2).sum()
        y.backward()
    rows = _rows(prof)
    assert rows["label-z"].count == 1 and rows["aten::pow"].count >= 1
    label = next(e for e in prof.function_events if e.name == "label-z")
    assert [c.name for c in label.cpu_children] == ["aten::pow", "aten::sum"]
    assert prof.self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in prof.function_events))
    assert prof.self_cpu_time_total > 0
    assert "Self CPU time total" in prof.table()
    assert prof.total_average().key == "Total"
    assert prof.total_average().count == len(prof.function_events)
    with jitgrad.autograd.profiler.profile(enabled=False) as off:
        x + x
    assert off is None


def test_with_stack_and_flops(tmp_path):
    a, b = jitgrad.randn(10, 20), jitgrad.randn(20, 30)
    with profile(with_stack=True, with_flops=True) as prof:
        jitgrad.mm(a, b)
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    assert mm.flops == 2 * 10 * 20 * 30
    assert any("test_profiler.py" in frame for frame in mm.stack)
    assert "Total KFLOPs" in prof.key_averages().table()
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    assert "test_with_stack_and_flops" in path.read_text()


def test_activities_and_actions():
    assert supported_activities() == {ProfilerActivity.CPU}
    assert ProfilerActivity.CPU.value == 0 and ProfilerActivity.CUDA.value == 2
    assert [a.name for a in ProfilerAction] == ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE",
                                                "DEVICE_STOPPED"]
    assert jitgrad.profiler.profile is profile
    with pytest.raises(ValueError, match="more than once"):
        profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CPU])
    with pytest.warns(FutureWarning, match="use_cuda"):
        profile(use_cuda=False)


def test_on_trace_ready_without_schedule_runs_once_at_exit():
    seen = []
    x = jitgrad.ones(2)
    with profile(on_trace_ready=lambda p: seen.append(len(p.events()))) as p:
        for _ in range(3):
            x + x
            p.step()
        assert seen == []
    assert seen == [3]
    assert "ProfilerStep*" not in _rows(p)


def test_profiler_util_module():
    from jitgrad.autograd import profiler_util

    assert profiler_util.EventList is EventList
    assert profiler_util._format_time(1500.0) == "1.500ms"
    assert profiler_util._format_memory(-2048) == "-2.00 KB"
    assert jitgrad.autograd.profiler.record_function is record_function


def test_ranges_of_other_threads_have_their_own_parents():
    import threading

    x = jitgrad.ones(8)

    def work():
        with record_function("worker"):
            x.exp()

    with profile() as prof:
        with record_function("main"):
            t = threading.Thread(target=work)
            t.start()
            t.join()
            x.sin()
    events = prof.events()
    main = next(e for e in events if e.name == "main")
    worker = next(e for e in events if e.name == "worker")
    assert worker.thread != main.thread and worker.cpu_parent is None
    assert next(e for e in events if e.name == "aten::exp").cpu_parent is worker
    assert next(e for e in events if e.name == "aten::sin").cpu_parent is main


def test_acc_events_keeps_every_cycle():
    x = jitgrad.ones(2)
    seen: dict = {False: [], True: []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for acc in (False, True):
            with profile(schedule=schedule(wait=0, warmup=1, active=1), acc_events=acc,
                         on_trace_ready=lambda p, acc=acc: seen[acc].append(
                             _rows(p)["aten::add"].count)) as p:
                for _ in range(6):
                    x + x
                    p.step()
    assert seen == {False: [1, 1, 1], True: [1, 2, 3]}
