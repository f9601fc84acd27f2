"""The examples run as scripts and print what torch prints."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_seed_mm_backward_prints_what_torch_prints():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "seed_mm_backward.py")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "None\ntensor([[1., 3.]])\ntensor([[2., 0.],\n        [1., 0.]])\n"
    assert "Warning" not in proc.stderr


def test_per_sample_grads_example_matches_the_loop():
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "per_sample_grads.py")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "embed.weight: per-sample gradients of shape (48, 24, 12)" in proc.stdout
    assert proc.stdout.endswith("matches the loop over the examples (eager and jit)\n")
    assert "performance drop" not in proc.stderr  # every op of the MLP has a batching rule
