"""The persistent kernel cache (``JITGRAD_CACHE_DIR``): a second process loads every kernel
instead of compiling it, concurrent writers, corrupt entries, unusable directories, and
``python -m jitgrad.cache``. Each case runs fresh Python processes on a temporary directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parent.parent

# W5 (Rosenbrock value and gradient, one compiled program) and a second function (another
# program). Prints the result, the kernels loaded from the cache and compiled, and the warnings,
# as JSON.
PROGRAM = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import jitgrad
    from jitgrad.backends import kernel_cache

    def rosen(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()

    f = jitgrad.jit(jitgrad.func.value_and_grad(rosen))
    value, grad = f(jitgrad.tensor([0.5, 1.5, -0.25], dtype=jitgrad.float64))
    jitgrad.jit(lambda t: (t * t).exp().sum())(grad)
print(json.dumps({"value": value.item(), "grad": grad.tolist(),
                  "loaded": kernel_cache.STATE.loaded, "compiled": kernel_cache.STATE.compiled,
                  "warnings": [str(w.message) for w in caught
                               if issubclass(w.category, RuntimeWarning)]}))
"""


def _env(cache: Path) -> dict:
    env = dict(os.environ)
    env["JITGRAD_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def _start(cache: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PROGRAM], env=_env(cache), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _run(cache: Path) -> dict:
    return _finish(_start(cache))


def _expected() -> tuple[float, list]:
    x = [0.5, 1.5, -0.25]
    value = sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(2))
    grad = [0.0] * 3
    for i in range(2):
        grad[i] += -400 * x[i] * (x[i + 1] - x[i] ** 2) - 2 * (1 - x[i])
        grad[i + 1] += 200 * (x[i + 1] - x[i] ** 2)
    return value, grad


def _check_result(r: dict) -> None:
    value, grad = _expected()
    assert r["value"] == pytest.approx(value, rel=1e-12)
    assert r["grad"] == pytest.approx(grad, rel=1e-12)


def _modules(cache: Path) -> list[Path]:
    return sorted((cache / "kernels").glob("k*.py"))


def test_second_process_loads_every_kernel(tmp_path):
    first = _run(tmp_path)
    _check_result(first)
    assert first["loaded"] == 0 and first["compiled"] >= 2
    assert len(_modules(tmp_path)) == first["compiled"]
    second = _run(tmp_path)
    _check_result(second)
    assert second["compiled"] == 0
    assert second["loaded"] == first["compiled"]
    assert first["warnings"] == second["warnings"] == []


def test_processes_racing_on_an_empty_directory(tmp_path):
    procs = [_start(tmp_path) for _ in range(3)]
    results = [_finish(p) for p in procs]
    for r in results:
        _check_result(r)
        assert r["warnings"] == []
    after = _run(tmp_path)
    assert after["compiled"] == 0 and after["loaded"] >= 2
    assert not list((tmp_path / "kernels").glob(".*.tmp"))  # no temporary file left behind


def test_corrupt_module_and_numba_files_are_recompiled_with_a_warning(tmp_path):
    first = _run(tmp_path)
    modules = _modules(tmp_path)
    modules[0].write_text("def kernel(:\n")  # truncated / garbage module
    second = _run(tmp_path)
    _check_result(second)
    assert second["compiled"] == 1 and second["loaded"] == first["compiled"] - 1
    assert len(second["warnings"]) == 1 and "corrupt" in second["warnings"][0]
    for index in (tmp_path / "kernels" / "__pycache__").glob("*.nbi"):
        index.write_bytes(index.read_bytes()[:20])  # truncated Numba index
    third = _run(tmp_path)
    _check_result(third)
    assert third["loaded"] == 0 and third["compiled"] == first["compiled"]
    assert len(third["warnings"]) == first["compiled"]
    assert all("could not be loaded" in w for w in third["warnings"])
    fourth = _run(tmp_path)  # the recompiled kernels were stored again
    assert fourth["compiled"] == 0 and fourth["warnings"] == []


@pytest.mark.parametrize("how", ["not a directory", "read-only"])
def test_unusable_directory_compiles_in_memory_with_one_warning(tmp_path, how):
    if how == "not a directory":
        cache = tmp_path / "file"
        cache.write_text("")
        cache = cache / "sub"  # cannot be created
    else:
        if os.geteuid() == 0:  # root writes anywhere: make the kernels directory a file
            cache = tmp_path / "ro"
            cache.mkdir()
            (cache / "kernels").write_text("")
        else:
            cache = tmp_path / "ro"
            cache.mkdir()
            cache.chmod(0o555)
    r = _run(cache)
    _check_result(r)
    assert r["loaded"] == 0 and r["compiled"] >= 2
    assert len(r["warnings"]) == 1
    assert "cannot be written" in r["warnings"][0] and "in memory" in r["warnings"][0]


def test_cache_command_info_and_clear(tmp_path):
    _run(tmp_path)
    _run(tmp_path)
    env = _env(tmp_path)
    info = subprocess.run([sys.executable, "-m", "jitgrad.cache", "info"], env=env,
                          cwd=str(ROOT), capture_output=True, text=True, check=True).stdout
    assert f"directory: {tmp_path}" in info
    n = len(_modules(tmp_path))
    assert f"entries:   {n}" in info
    assert f"hit rate:  50.0% ({n} kernels loaded, {n} compiled)" in info
    assert f"fast:      {n} of the loads" in info
    cleared = subprocess.run([sys.executable, "-m", "jitgrad.cache", "clear"], env=env,
                             cwd=str(ROOT), capture_output=True, text=True, check=True).stdout
    assert "cleared" in cleared
    assert _modules(tmp_path) == []
    assert not (tmp_path / "kernels").exists()


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    import jitgrad

    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path / "here"))
    assert jitgrad.jit.cache_dir() == tmp_path / "here"
    monkeypatch.delenv("JITGRAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name != "nt":
        assert jitgrad.jit.cache_dir() == tmp_path / "xdg" / "jitgrad"
