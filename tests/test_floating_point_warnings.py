"""Eager ops give inf and nan without NumPy's floating-point warnings, as torch's ops do, even
under ``python -W error``; NumPy called from the user's own code still warns."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import numpy as np
import jitgrad
x = jitgrad.tensor([0.0, -1.0, 1000.0], requires_grad=True)
y = jitgrad.log(x) + x / 0 + jitgrad.exp(x) + x.sqrt() + x.reciprocal()
y.sum().backward()
assert jitgrad.logsumexp(jitgrad.full((2, 3), float("-inf")), 1).isinf().all()
assert np.isnan(y.detach().numpy()).any() and np.isinf(x.grad.numpy()).any()
try:
    np.log(np.zeros(1))
except RuntimeWarning as w:
    print("user numpy warns:", w)
"""


def test_no_numpy_warnings_from_jitgrad_ops_but_the_users_numpy_still_warns():
    out = subprocess.run([sys.executable, "-W", "error", "-c", SCRIPT], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "user numpy warns: divide by zero encountered in log" in out.stdout
