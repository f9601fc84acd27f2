"""jitgrad._malloc: glibc keeps freed mid-size arrays for the next ones, unless the user chose."""

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from jitgrad import _malloc

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
needs_glibc = pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")


def _faults_of_reallocating(nbytes: int, times: int) -> float:
    import resource

    a = np.ones(nbytes // 8)  # (the first allocation may fault: it grows the heap)
    del a
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.ones(nbytes // 8)
        del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / times


@needs_glibc
def test_importing_jitgrad_tunes_glibc_so_a_freed_array_is_reused_without_page_faults():
    if any(k in os.environ for k in _malloc._USER_SETTINGS + ("JITGRAD_MALLOC_TUNING",)):
        pytest.skip("the environment sets malloc's thresholds")
    assert _malloc.tuned
    # 40 MiB is above glibc's largest dynamic mmap threshold (32 MiB): with its defaults each
    # such array is a fresh mapping, faulting on its pages again (532 faults each, measured)
    assert _faults_of_reallocating(40 << 20, 10) < 8
    assert _faults_of_reallocating(1 << 20, 20) < 8  # (19 each with the defaults)


@needs_glibc
@pytest.mark.parametrize("env", [{"JITGRAD_MALLOC_TUNING": "0"},
                                 {"MALLOC_TRIM_THRESHOLD_": "131072"},
                                 {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}])
def test_a_users_choice_is_left_alone(env):
    code = "import jitgrad, jitgrad._malloc as m\nprint(m.tuned)\n"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]

