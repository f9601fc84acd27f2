"""A profiling script (tests/scripts/profiler_recipe.py, written for these tests in the way the
"PyTorch Profiler" recipe writes torch code) runs on jitgrad: its tables print, its traces are
written, its schedule fires where torch's does, and the ops it records are the ones torch
records for the same model."""

import contextlib
import io
import json
import runpy
import warnings
from pathlib import Path

import pytest
from test_user_scripts import torch_source

SCRIPT = Path(__file__).resolve().parent / "scripts" / "profiler_recipe.py"


def _run(tmp_path, monkeypatch, lib: str = "jitgrad") -> tuple[dict, str]:
    """The script's globals and printed text, run in ``tmp_path`` (its files land there)."""
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if lib == "jitgrad":
            g = runpy.run_path(str(SCRIPT), run_name="__main__")
        else:
            src = torch_source(SCRIPT.read_text())
            g = {"__name__": "__main__", "__file__": str(SCRIPT)}
            exec(compile(src, str(SCRIPT), "exec"), g)  # noqa: S102
    return g, out.getvalue()


def test_profiler_recipe(tmp_path, monkeypatch):
    g, text = _run(tmp_path, monkeypatch)
    rows = {e.key: e for e in g["time_prof"].key_averages()}
    assert rows["model_inference"].count == 1
    assert rows["aten::convolution"].count == 2
    assert rows["aten::addmm"].count == 1
    top = next(e for e in g["time_prof"].events() if e.name == "model_inference")
    assert top.cpu_parent is None and len(top.cpu_children) > 5
    assert text.count("Self CPU time total:") == 7  # 5 tables, 2 trace_handler calls
    assert "Input Shapes" in text and "[[5, 3, 32, 32], [8, 3, 3, 3], [8]]" in text
    assert "Source Location" in text and "conv2d" in text
    conv = next(e for e in g["stack_prof"].events() if e.name == "aten::convolution")
    assert any("profiler_recipe.py" in frame for frame in conv.stack)
    memory = {e.key: e for e in g["memory_prof"].key_averages()}
    conv_out_bytes = (5 * 8 * 32 * 32 + 5 * 16 * 16 * 16) * 4
    assert memory["aten::convolution"].cpu_memory_usage == conv_out_bytes
    assert "Self CPU Mem" in text
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]
    assert names.count("aten::convolution") == 2
    assert g["ready_steps"] == [4, 8]
    for step in (4, 8):
        data = json.loads((tmp_path / f"test_trace_{step}.json").read_text())
        steps = {e["name"] for e in data["traceEvents"] if e["name"].startswith("ProfilerStep")}
        assert steps == {f"ProfilerStep#{step - 2}", f"ProfilerStep#{step - 1}"}


def test_profiler_recipe_matches_torch(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    for sub in ("j", "t"):
        (tmp_path / sub).mkdir()
    ours, _ = _run(tmp_path / "j", monkeypatch)
    theirs, _ = _run(tmp_path / "t", monkeypatch, lib="torch")
    assert ours["ready_steps"] == theirs["ready_steps"]
    counts = [{e.key: e.count for e in g["time_prof"].key_averages()} for g in (ours, theirs)]
    for name in ("model_inference", "aten::convolution", "aten::native_batch_norm",
                 "aten::relu", "aten::max_pool2d_with_indices", "aten::mean", "aten::view",
                 "aten::t", "aten::addmm"):
        assert counts[0][name] == counts[1][name], name
