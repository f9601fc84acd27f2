"""The benchmark harness: workload definitions, agreement check, rows, CLI. No timing asserts."""

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # plain `pytest` (unlike `python -m pytest`) leaves it out
    sys.path.insert(0, str(_ROOT))

from benchmarks import cli, compile_latency, memory, report, runner, workloads  # noqa: E402
from benchmarks.peers import (PEER_NAMES, JitgradEagerPeer, JitgradJitPeer,  # noqa: E402
                              NumpyPeer, Peer, jitgrad_jit_entry, select)

TINY = [workloads.w1_case(1000), workloads.w5_case()]
ROW_KEYS = {"workload", "config", "peer", "status", "median_s", "ratio", "reason"}


def _args(*extra):
    return cli.parse_args(["--quick", "--rounds", "2", "--no-progress", *extra])


def _run(peers, suite=TINY, *extra):
    return cli.run(_args("--only", "W1,W5", *extra), peers, suite=suite,
                   bandwidth_elements=1 << 16)


class WrongPeer(NumpyPeer):
    """NumPy's hand gradient with the first gradient off by 1%."""

    name = "wrong"

    def prepare(self, case, arrays):
        step = super().prepare(case, arrays)

        def wrong():
            value, grads = step()
            return value, [grads[0] * 1.01] + grads[1:]
        return wrong


class RaisingPeer(NumpyPeer):
    name = "raising"

    def prepare(self, case, arrays):
        raise NotImplementedError("no such op here")


class FlakyPeer(NumpyPeer):
    """Right on its first call (the agreement check), raising on every later one."""

    name = "flaky"

    def prepare(self, case, arrays):
        step = super().prepare(case, arrays)
        calls = []

        def flaky():
            calls.append(1)
            if len(calls) > 1:
                raise FloatingPointError("went wrong later")
            return step()
        return flaky


class DriftingPeer(NumpyPeer):
    """Right on its first call, then its gradients grow (state carried between calls)."""

    name = "drifting"

    def prepare(self, case, arrays):
        step = super().prepare(case, arrays)
        calls = []

        def drifting():
            calls.append(1)
            value, grads = step()
            return value, [g * len(calls) for g in grads]
        return drifting


# ----------------------------------------------------------------- workload definitions


def _tiny_cases():
    return [workloads.w1_case(7), workloads.w2_case(batch=4, sizes=(5, 4, 3, 3)),
            workloads.w3_case(3, 4), workloads.w4_case(n=3), workloads.w5_case()]


@pytest.mark.parametrize("case", _tiny_cases(), ids=lambda c: c.workload)
def test_hand_gradients_match_finite_differences(case):
    arrays = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in case.build()]
    value, grads = case.numpy_grad(*arrays)
    assert len(grads) == len(case.wrt)
    eps = 1e-6
    for g, i in zip(grads, case.wrt):
        assert g.shape == arrays[i].shape
        fd = np.zeros_like(arrays[i])
        for j in range(arrays[i].size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i].flat[j] += eps
            minus[i].flat[j] -= eps
            fd.flat[j] = (case.numpy_grad(*plus)[0] - case.numpy_grad(*minus)[0]) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", _tiny_cases(), ids=lambda c: c.workload)
def test_eager_jitgrad_agrees_with_reference(case):
    arrays = case.build()
    peer = JitgradEagerPeer()
    got = peer.to_numpy(peer.prepare(case, arrays)())
    assert runner.disagreement(case, got, workloads.reference(case, arrays)) is None


def test_suite_covers_every_workload():
    for quick in (True, False):
        suite = workloads.cases(quick)
        assert {c.workload for c in suite} == set(workloads.WORKLOADS)
        assert len({c.key for c in suite}) == len(suite)
    assert [c.config for c in workloads.cases(False, ("W1",))] == ["N=1e3", "N=1e5", "N=1e7"]
    assert workloads.w1_case(10 ** 7).roofline_bytes == 16 * 10 ** 7


# ----------------------------------------------------------------- agreement check


def test_disagreement_reports_what_is_wrong():
    case = workloads.w1_case(1000)
    arrays = case.build()
    ref = workloads.reference(case, arrays)
    value, grads = ref
    assert runner.disagreement(case, (value, [g.astype(np.float32) for g in grads]), ref) is None
    assert "value" in runner.disagreement(case, (value * 1.001, grads), ref)
    bad = grads[1].copy()
    bad[3] += 1.0
    assert "grad[y]" in runner.disagreement(case, (value, [grads[0], bad]), ref)
    assert "shape" in runner.disagreement(case, (value, [grads[0][:-1], grads[1]]), ref)
    nan = grads[0].copy()
    nan[0] = np.nan
    assert "not finite" in runner.disagreement(case, (value, [nan, grads[1]]), ref)
    assert "gradients" in runner.disagreement(case, (value, grads[:1]), ref)


def test_wrong_raising_and_flaky_peers_are_caught_and_not_timed():
    rows = _run([NumpyPeer(), WrongPeer(), RaisingPeer(), FlakyPeer(), DriftingPeer()])
    by = {(r["workload"], r["peer"]): r for r in rows}
    for wl in ("W1", "W5"):
        assert by[(wl, "numpy")]["status"] == "ok"
        wrong = by[(wl, "wrong")]
        assert wrong["status"] == "mismatch"
        assert "grad[x]" in wrong["reason"] and "float64 reference" in wrong["reason"]
        assert wrong["median_s"] is None and wrong["ratio"] is None
        raising = by[(wl, "raising")]
        assert raising["status"] == "error" and "no such op here" in raising["reason"]
        flaky = by[(wl, "flaky")]
        assert flaky["status"] == "error" and "failed while timing" in flaky["reason"]
        assert flaky["median_s"] is None
        drifting = by[(wl, "drifting")]
        assert drifting["status"] == "mismatch" and "after 2 timed rounds" in drifting["reason"]
    text = report.format_tables(rows)
    assert "mismatch" in text and "no such op here" in text


# ----------------------------------------------------------------- rows and reports


def test_rows_structure_and_json(tmp_path):
    names = ["numpy", "jitgrad-eager", "jitgrad-jit", "jitgrad-jit-vg"]
    if "torch" in sys.modules or _has("torch"):
        names.append("torch")
    peers = select(tuple(names))
    rows = _run(peers)
    jit_ok = jitgrad_jit_entry()[1] is None
    timed = [r for r in rows if r["workload"] in ("W1", "W5")]
    assert len(timed) == len(TINY) * len(names)
    for r in rows:
        assert ROW_KEYS <= set(r)
    for r in timed:
        assert r["peer"] in names
        want = "ok" if not r["peer"].startswith("jitgrad-jit") or jit_ok else "unavailable"
        assert r["status"] == want, r
        if want == "ok":
            assert r["median_s"] > 0 and r["ratio"] >= 1.0 and r["rounds"] == 2
    for case in TINY:
        ratios = [r["ratio"] for r in timed if r["config"] == case.config and r["ratio"]]
        assert min(ratios) == 1.0
    w1 = [r for r in timed if r["workload"] == "W1" and r["status"] == "ok"]
    assert all(0 < r["roofline_fraction"] for r in w1)
    bw = [r for r in rows if r["workload"] == "bandwidth"]
    assert [r["config"].split()[0] for r in bw] == ["copy", "triad"]
    assert all(r["bandwidth_gbs"] > 0 for r in bw)
    path = tmp_path / "rows.json"
    report.write_json(rows, path)
    assert json.loads(path.read_text()) == rows
    text = report.format_tables(rows)
    assert "W5 tiny call" in text and "roofline" in text and "jitgrad-eager" in text


def _has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def test_main_writes_json_and_table(tmp_path, capsys):
    path = tmp_path / "out.json"
    assert cli.main(["--quick", "--only", "W5", "--peers", "numpy,jitgrad-eager", "--rounds",
                     "1", "--no-progress", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "W5 tiny call" in out and "machine:" in out and "cores" in out
    rows = json.loads(path.read_text())
    assert {(r["workload"], r["peer"]) for r in rows} == {("W5", "numpy"),
                                                          ("W5", "jitgrad-eager")}


def test_isolate_times_each_peer_in_its_own_process_and_merges_the_rows(tmp_path, capsys,
                                                                          monkeypatch):
    children = []
    real_run = cli.subprocess.run

    def run(cmd, **kwargs):
        if cmd[1:3] == ["-m", "benchmarks"]:
            children.append(cmd)
        return real_run(cmd, **kwargs)

    monkeypatch.setattr(cli.subprocess, "run", run)
    path = tmp_path / "out.json"
    assert cli.main(["--quick", "--only", "W5", "--peers", "numpy,jitgrad-eager", "--rounds",
                     "1", "--no-progress", "--isolate", "--json", str(path)]) == 0
    assert sorted(c[c.index("--peers") + 1] for c in children) == ["jitgrad-eager", "numpy"]
    assert all(c.count("--peers") == 1 and "--isolate" not in c and str(path) not in c
               for c in children)
    out = capsys.readouterr().out
    assert "each peer in a process of its own" in out and "W5 tiny call" in out
    rows = json.loads(path.read_text())
    assert {(r["workload"], r["peer"], r["status"]) for r in rows} == {
        ("W5", "numpy", "ok"), ("W5", "jitgrad-eager", "ok")}
    assert sorted(r["ratio"] for r in rows)[0] == 1.0  # ratios across the two processes


def test_without_option_drops_an_option_and_its_value():
    argv = ["--quick", "--json", "a.json", "--peers=x", "--peers", "numpy", "--json=b"]
    assert cli._without_option(argv, "--json") == ["--quick", "--peers=x", "--peers", "numpy"]
    assert cli._without_option(argv, "--peers") == ["--quick", "--json", "a.json", "--json=b"]


def test_skipped_and_unavailable_peers_are_reported(monkeypatch):
    monkeypatch.setenv("JITGRAD_DISABLE_JIT", "1")
    jit = JitgradJitPeer()
    assert "JITGRAD_DISABLE_JIT" in jit.unavailable()
    timing = runner.Timing(rounds=1, batch_s=0.001, warmup_s=0.001, settle_s=0.001)
    rows = runner.run_case(TINY[1], [NumpyPeer(), jit], timing,
                           skip={"numpy": "left out on purpose"})
    assert [r["status"] for r in rows] == ["skipped", "unavailable"]
    text = report.format_unavailable(rows)
    assert "left out on purpose" in text and "JITGRAD_DISABLE_JIT" in text
    rows = cli.run(cli.parse_args(["--quick", "--only", "compile", "--peers", "jitgrad-jit",
                                   "--no-progress"]))
    assert [(r["config"], r["status"]) for r in rows] == [
        ("W1 N=1e5 cold", "unavailable"), ("W1 N=1e5 warm", "unavailable"),
        ("W2 MLP cold", "unavailable"), ("W2 MLP warm", "unavailable"),
        ("W6 N=1600 cold", "unavailable"), ("W6 N=1600 warm", "unavailable")]


def test_plot_without_matplotlib_says_so(tmp_path, monkeypatch):
    rows = [runner.make_row("W5", "n=2", "numpy", "ok", 1e-6)]
    runner.set_ratios(rows)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    msg = report.plot(rows, tmp_path / "chart.png")
    assert "matplotlib" in msg and "pip install" in msg
    assert not (tmp_path / "chart.png").exists()


def test_plot_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [runner.make_row("W5", "n=2", p, "ok", t) for p, t in (("numpy", 1e-6),
                                                                   ("torch", 1e-4))]
    runner.set_ratios(rows)
    assert "written" in report.plot(rows, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").stat().st_size > 0


def test_units_and_ratios():
    assert [report.fmt_time(t) for t in (1.5e-6, 2.5e-3, 3.25, None)] == [
        "1.5 us", "2.5 ms", "3.25 s", "-"]
    assert [report.fmt_bytes(b) for b in (512, 3 * 2 ** 20, None)] == ["0 KiB", "3.0 MiB", "-"]
    rows = [runner.make_row("W5", "a", "p", "ok", 2.0), runner.make_row("W5", "a", "q", "ok", 1.0),
            runner.make_row("W5", "b", "p", "ok", 4.0),
            runner.make_row("W5", "a", "r", "mismatch", reason="wrong")]
    runner.set_ratios(rows)
    assert [r["ratio"] for r in rows] == [2.0, 1.0, 1.0, None]


def test_progress_lines():
    stream = io.StringIO()
    p = runner.Progress(stream)
    p.update("W1 N=1e3: round 1/7")
    p.done()
    assert "W1 N=1e3: round 1/7" in stream.getvalue()
    quiet = io.StringIO()
    runner.Progress(quiet, enabled=False).update("x")
    assert quiet.getvalue() == ""


def test_compile_latency_cold_and_warm_in_fresh_processes():
    if jitgrad_jit_entry()[1] is not None:
        pytest.skip("jitgrad.jit is not available in this checkout")
    rows = compile_latency.measure(("W1",), ["jitgrad-jit", "jitgrad-jit-vg"], {})
    assert [(r["config"], r["peer"], r["status"]) for r in rows] == [
        ("W1 N=1e5 cold", "jitgrad-jit", "ok"), ("W1 N=1e5 warm", "jitgrad-jit", "ok"),
        ("W1 N=1e5 cold", "jitgrad-jit-vg", "ok"), ("W1 N=1e5 warm", "jitgrad-jit-vg", "ok")]
    assert all(r["median_s"] > 0 for r in rows)
    assert all(0 < r["second_call_s"] <= r["later_max_s"] for r in rows)
    table = report.format_tables(rows)
    assert "slowest of 2-10" in table


def test_peak_memory_in_a_fresh_process():
    if memory.supported() is not None:
        pytest.skip(memory.supported())
    rows = memory.measure(["numpy", "jitgrad-eager"], quick=True)
    assert [(r["workload"], r["config"], r["peer"], r["status"]) for r in rows] == [
        ("memory", "W3 x=512x256", "numpy", "ok"), ("memory", "W3 x=512x256", "jitgrad-eager",
                                                   "ok")]
    # one call allocates at least its four gradients (x alone is 512 KiB)
    assert all(r["peak_bytes"] >= 512 * 1024 for r in rows)
    assert min(r["ratio"] for r in rows) == 1.0
    assert "peak extra" in report.format_tables(rows)


# ----------------------------------------------------------------- command line


def test_parse_args():
    a = cli.parse_args(["--quick", "--only", "W1,w5", "--json", "x.json", "--plot", "p.png"])
    assert a.quick and a.only == ("W1", "W5") and a.json == "x.json" and a.plot == "p.png"
    a = cli.parse_args([])
    assert not a.quick and a.only is None and a.json is None and a.peers is None
    assert cli.parse_args(["--only", "compile,memory"]).only == ("compile", "memory")
    assert cli.parse_args(["--peers", "numpy,torch"]).peers == ("numpy", "torch")


@pytest.mark.parametrize("argv,text", [
    (["--only", "W1,W9"], "unknown workload W9"),
    (["--peers", "numpy,tensorflow"], "unknown peer tensorflow"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--fast"], "unrecognized arguments"),
])
def test_parse_args_rejects_bad_input(argv, text, capsys):
    with pytest.raises(SystemExit) as info:
        cli.parse_args(argv)
    assert info.value.code == 2
    assert text in capsys.readouterr().err


def test_peer_names_and_selection():
    assert [p.name for p in select()] == list(PEER_NAMES)
    assert [p.name for p in select(("torch", "numpy"))] == ["numpy", "torch"]
    with pytest.raises(ValueError, match="unknown peer"):
        select(("mxnet",))
    assert all(isinstance(p, Peer) for p in select())


# ----------------------------------------------------------------- README and docs examples

_PRINT = __import__("re").compile(r"^(\s*)print\((.*)\)\s+# (.+)$")


def _check_printed(expected, *values):
    got = " ".join(str(v) for v in values)
    norm = lambda s: " ".join(s.split())  # noqa: E731
    if "..." in expected:
        assert norm(got).startswith(norm(expected.split("...")[0])), (got, expected)
    else:
        assert norm(got) == norm(expected), (got, expected)


def _doc_blocks(path):
    import re

    text = path.read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("name", ["README.md", "docs/quickstart.md", "docs/jit.md",
                                  "docs/pytorch-users.md"])
def test_doc_examples_run_and_print_what_they_say(name, capsys):
    """Every ``python`` block runs (a file's blocks in order, in one namespace), and every
    ``print(...)  # expected`` line prints what its comment says. (adding-an-op.md is left out:
    its example registers a new op.)"""
    import textwrap

    import jitgrad

    jitgrad.manual_seed(0)
    blocks = _doc_blocks(_ROOT / name)
    assert blocks
    ns = {"__name__": "__doc_example__", "_check_printed": _check_printed}
    for block in blocks:
        lines = []
        for line in textwrap.dedent(block).splitlines():
            m = _PRINT.match(line)
            if m:
                indent, args, expected = m.groups()
                line = f"{indent}_check_printed({expected!r}, {args})"
            lines.append(line)
        exec(compile("\n".join(lines), f"{name}-example", "exec"), ns)
    capsys.readouterr()


def test_per_sample_grads_benchmark_checks_every_peer_and_reports_medians():
    from benchmarks import per_sample_grads

    med = per_sample_grads.run(quick=True)  # raises if a peer's gradients disagree
    assert {"jitgrad vmap", "jitgrad jit(vmap)", "jitgrad loop"} <= set(med)
    assert all(s > 0 for s in med.values())


def test_w6_reference_gradient_agrees_with_eager_and_jit():
    case = workloads.w6_case(10)
    arrays = case.build()
    ref = workloads.reference(case, arrays)
    for peer in (JitgradEagerPeer(), JitgradJitPeer()):
        got = peer.to_numpy(peer.prepare(case, arrays)())
        assert runner.disagreement(case, got, ref) is None


def test_w1_kernel_profile_checks_every_variant_and_prints_a_row_each(capsys):
    pytest.importorskip("numba")
    from benchmarks import w1_kernel

    w1_kernel.main(["--n", "3000", "--repeat", "1"])  # raises if a variant disagrees
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("W1 N=3e+03, float32; copy bandwidth")
    assert len(lines) == 9 and all(" ms " in s and "% roofline" in s for s in lines[1:])
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    want = w1_kernel._reference(x, x[::-1].copy())
    w1_kernel._check("reference", want, want)
    with pytest.raises(AssertionError, match="wrong: the gradient of y differs"):
        w1_kernel._check("wrong", (want[0], want[1], want[2] * 1.01), want)


def test_optimizer_step_benchmark_checks_every_peer_and_prints_a_row_each(capsys):
    pytest.importorskip("numba")
    from benchmarks import optim_step

    med = optim_step.main(["--params", "2", "--size", "16", "--steps", "2", "--rounds", "1",
                           "--only", "Adam,SGD"])  # raises if a peer's parameters disagree
    assert set(med) == {"Adam", "SGD"}
    peers = {"jitgrad eager", "jitgrad compiled"}
    assert all(peers <= set(m) and all(s > 0 for s in m.values()) for m in med.values())
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Adam step, 2 float32 parameters of 16x16")
    assert sum(" ms" in line for line in out) == sum(len(m) for m in med.values())
