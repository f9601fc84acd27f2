"""A custom-operator script (tests/scripts/custom_ops_tutorial.py, written for these tests in
the way the "Python Custom Operators" tutorial writes torch code) runs on jitgrad: custom ops
eagerly, under ``compile(fullgraph=True)``, with gradients, ``opcheck`` and a mutating op; where
torch is installed, its numbers equal the same script's with ``import torch``."""

from __future__ import annotations

import contextlib
import io
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parent / "scripts" / "custom_ops_tutorial.py"
_CACHE: dict = {}


def _run() -> dict:
    if "jitgrad" not in _CACHE:
        with contextlib.redirect_stdout(io.StringIO()):
            _CACHE["jitgrad"] = runpy.run_path(str(SCRIPT), run_name="__main__")
    return _CACHE["jitgrad"]


def _run_torch() -> dict:
    torch = pytest.importorskip("torch")
    if "torch" not in _CACHE:
        src = SCRIPT.read_text().replace("import jitgrad as torch", "import torch")
        g = {"__name__": "__main__", "__file__": str(SCRIPT)}
        import torch._inductor.config as inductor_config

        # (torch.compile's first use turns torch.distributions' argument validation off for
        # the whole process: restored after, for the tests that compare with it)
        validate = torch.distributions.Distribution._validate_args

        # (an inductor cache of an earlier fake kernel would assert the old strides)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), \
                inductor_config.patch(force_disable_caches=True):
            warnings.simplefilter("ignore")
            exec(compile(src, str(SCRIPT), "exec"), g)  # noqa: S102
        _CACHE["torch"] = g
        torch._dynamo.reset()
        torch.distributions.Distribution.set_default_validate_args(validate)
    return _CACHE["torch"]


def test_the_script_imports_jitgrad_under_the_torch_name():
    src = SCRIPT.read_text()
    assert "import jitgrad as torch" in src
    assert "import torch" not in src.replace("import jitgrad as torch", "")


def test_custom_ops_work_eagerly_compiled_and_under_autograd():
    g = _run()
    torch = g["torch"]
    photo = g["photo"].detach()
    assert g["eager_cut"].shape == (3, 40, 40)
    assert torch.equal(g["eager_cut"], photo[:, 10:50, 10:50])
    assert torch.equal(g["compiled_cut"], g["eager_cut"])
    expected = torch.zeros(3, 64, 64)
    expected[:, 10:50, 10:50] = g["mask_weights"]
    assert torch.equal(g["weighted_grad"], expected)  # (the backward's place custom op)
    assert g["cut_gradcheck"] is True
    assert torch.allclose(g["sin_result"], g["angles"].sin())
    assert g["mutated_version_bumped"]
    assert torch.allclose(g["target_buf"], g["angles"].sin())
    assert torch.allclose(g["grad_leaf"], torch.full((3,), 2.5))
    assert torch.ops.imgdemo.cut.default is g["cut"]._opoverload


def test_opcheck_passes_on_every_example():
    g = _run()
    every = {"test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_dynamic"}
    for result in g["opcheck_results"] + [g["sin_into_opcheck"]]:
        assert set(result) == every and set(result.values()) == {"SUCCESS"}


def test_numbers_equal_torch_running_the_same_script():
    ours, theirs = _run(), _run_torch()
    for name in ["eager_cut", "compiled_cut", "weighted_grad", "sin_result", "target_buf",
                 "grad_leaf"]:
        np.testing.assert_allclose(ours[name].detach().numpy(), theirs[name].detach().numpy(),
                                   rtol=1e-6, atol=1e-7, err_msg=name)
    assert ours["cut_gradcheck"] == theirs["cut_gradcheck"]
    assert ours["opcheck_results"] == theirs["opcheck_results"]
    assert ours["sin_into_opcheck"] == theirs["sin_into_opcheck"]
    assert ours["mutated_version_bumped"] == theirs["mutated_version_bumped"]
