"""User-style scripts (tests/scripts/*.py), written for these tests in the way the PyTorch
tutorials and examples write torch code, run on jitgrad.

Each script runs as ``__main__`` (``runpy``); the tests read what it computed from its globals
and assert that it trained (losses fall), that round trips are exact, and, where torch is
installed, that its deterministic parts (fixed-weight forwards, LR schedules, data-pipeline
plumbing) equal the same script's with ``import torch`` in place of ``import jitgrad``.
"""

import contextlib
import io
import os
import runpy
import subprocess
import sys
import types
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "scripts"
_CACHE: dict = {}


def _run(name: str) -> dict:
    """The script's globals after it ran on jitgrad (once per session)."""
    if name not in _CACHE:
        import jitgrad.cuda

        # (the scripts pick "cuda" when it is available: on numba's CUDA simulator, which other
        # tests of this process may have turned on, a training loop takes minutes)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), \
                mock.patch.object(jitgrad.cuda, "is_available", lambda: False):
            warnings.filterwarnings("error", message="There is a performance drop")
            _CACHE[name] = runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="__main__")
        _CACHE[name]["torch"].use_deterministic_algorithms(False)  # (a script may set it)
    return _CACHE[name]


def torch_source(src: str) -> str:
    """A script's source with ``jitgrad`` replaced by ``torch`` (the only change a user
    makes)."""
    return src.replace("import jitgrad", "import torch").replace("from jitgrad", "from torch") \
        .replace("jitgrad.", "torch.")


def _run_torch(name: str, skip: dict | None = None) -> dict:
    """The same script with ``jitgrad`` replaced by ``torch`` (the only change a user makes).

    ``skip`` maps a line of the script to the line the oracle runs instead, to leave out work
    whose results the test does not compare with torch (a long training before a fixed-weight
    check): CI time, not a change to what is compared."""
    pytest.importorskip("torch")
    key = name + ":torch" + repr(sorted((skip or {}).items()))
    if key not in _CACHE:
        path = SCRIPTS / f"{name}.py"
        src = torch_source(path.read_text())
        for line, instead in (skip or {}).items():
            assert src.count(line) == 1, line
            src = src.replace(line, instead)
        # (run in a module that is ``__main__`` meanwhile, as runpy does: pickling a class the
        # script defines, ``torch.save(model)``, looks it up there)
        main = types.ModuleType("__main__")
        main.__file__ = str(path)
        g = main.__dict__
        prior = sys.modules["__main__"]
        sys.modules["__main__"] = main
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(src, str(path), "exec"), g)  # noqa: S102
        finally:
            sys.modules["__main__"] = prior
        g["torch"].use_deterministic_algorithms(False)
        _CACHE[key] = g
    return _CACHE[key]


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=rtol, atol=atol)


def test_every_script_only_imports_jitgrad_under_the_torch_names():
    names = sorted(p.stem for p in SCRIPTS.glob("*.py"))
    assert len(names) >= 13
    for p in SCRIPTS.glob("*.py"):
        src = p.read_text()
        assert "import torch" not in src and "from torch" not in src
        assert "import jitgrad as torch" in src


def test_a_script_runs_standalone():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(SCRIPTS / "char_rnn_names.py")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "('English', 0)" in proc.stdout or "('Italian', 1)" in proc.stdout \
        or "('Japanese', 2)" in proc.stdout
    assert "nn.RNN losses" in proc.stdout


def test_learning_pytorch_with_examples():
    g = _run("poly_tensors_autograd")
    for key in ("manual_losses", "autograd_losses", "legendre_losses", "nn_losses",
                "optim_losses", "dynamic_losses"):
        losses = g[key]
        assert losses[-1] < losses[0] / 2, key
    assert g["legendre_losses"][-1] < 100  # sin(x) fit by a scaled P3 (from 460)
    assert g["P3"] == g["CubicLegendre"].apply


def test_learning_pytorch_with_examples_fixed_start_matches_torch():
    _close(_run("poly_tensors_autograd")["legendre_first"],
           _run_torch("poly_tensors_autograd")["legendre_first"])


def test_what_is_torch_nn_really():
    g = _run("nn_really")
    assert g["scratch_end"] < g["scratch_start"] * 0.8
    _close(*g["scratch_vs_ce"])  # hand-written log_softmax + nll == F.cross_entropy
    assert g["module_history"][-1] < g["module_start"] * 0.8
    assert g["cnn_history"][-1] < g["cnn_start"]
    assert len(g["train_dl"]) == 4 and len(g["valid_dl"]) == 1


def test_cifar10_lenet_blitz():
    g = _run("cifar_lenet")
    assert g["epoch_losses"][-1] < g["epoch_losses"][0]
    assert g["reloaded_same"]  # state_dict through jitgrad.save/load: the same outputs
    assert 0.0 <= g["accuracy"] <= 1.0
    assert tuple(g["params"][0].size()) == (6, 3, 5, 5) and len(g["params"]) == 10


def test_cifar10_lenet_fixed_weights_match_torch():
    _close(_run("cifar_lenet")["fixed_out"], _run_torch("cifar_lenet")["fixed_out"])


def test_char_rnn_name_classifier():
    g = _run("char_rnn_names")
    assert g["manual_after"] < g["manual_before"]
    assert g["nn_rnn_losses"][-1] < g["nn_rnn_losses"][0] / 5
    assert g["nn_rnn_accuracy"] >= 0.8


def test_char_rnn_fixed_weights_match_torch():
    out, h = _run("char_rnn_names")["fixed_result"]
    t_out, t_h = _run_torch("char_rnn_names")["fixed_result"]
    _close(out, t_out)
    _close(h, t_h)


def test_seq2seq_gru_attention():
    g = _run("seq2seq_attention")
    assert g["losses"][-1] < g["losses"][0] / 4
    assert g["attention_shape"] == (1, g["MAX_LENGTH"], g["MAX_LENGTH"])
    assert g["attn"].sum(-1).allclose(g["torch"].ones(1, g["MAX_LENGTH"]))


def test_text_classification_embedding_bag():
    g = _run("text_classification_embeddingbag")
    assert g["accu_test"] >= 0.8 and g["accu_test"] > g["accuracy_before"]
    assert g["prediction"] == 1  # the sport words (coach, league, score) are label 1


def test_embedding_bag_modes_match_torch():
    ours = _run("text_classification_embeddingbag")["bag_results"]
    theirs = _run_torch("text_classification_embeddingbag")["bag_results"]
    assert ours.keys() == theirs.keys()
    for key in ours:
        _close(ours[key], theirs[key])


def test_tiny_transformer_language_model():
    g = _run("tiny_transformer")
    assert g["val_losses"][-1] < g["val_losses"][0] / 4
    assert g["reloaded_val_loss"] == pytest.approx(g["best_val_loss"], rel=1e-6)


def test_tiny_transformer_deterministic_parts_match_torch():
    g, t = _run("tiny_transformer"), _run_torch("tiny_transformer")
    assert g["mask"].tolist() == t["mask"].tolist()
    _close(g["pe_rows"], t["pe_rows"])
    _close(g["fixed_out"], t["fixed_out"], rtol=1e-4, atol=1e-5)


def test_per_sample_gradients_with_torch_func():
    g = _run("per_sample_grads_func")  # (fails on a vmap fallback warning)
    assert g["max_diff"] < 1e-4
    assert g["mean_vs_batch"] < 1e-5
    assert g["ensemble_shape"] == (10, 5, 10)
    assert tuple(g["batch_jacobian"].shape) == (4, 16, 16)


def test_torch_func_jacobians_match_torch():
    g, t = _run("per_sample_grads_func"), _run_torch("per_sample_grads_func")
    _close(g["fixed_jac"], t["fixed_jac"])
    _close(g["fixed_hess_diag"], t["fixed_hess_diag"])


def test_schedulers_clipping_and_checkpoints():
    g = _run("schedulers_clipping_checkpoint")
    for name, first in g["first_losses"].items():
        assert g["final_losses"][name] < first / 2, name
    assert g["clipped_norm"] == pytest.approx(2.0, rel=1e-5)
    assert g["same_eval_output"] and g["same_after_step"] and g["same_buffers"]
    assert g["same_via_buffer"]
    assert g["resumed_lr"] == pytest.approx(0.0125)
    assert g["eval_deterministic"] and g["train_outputs_differ"]
    assert g["epoch"] == 12


def test_lr_schedules_match_torch():
    g, t = _run("schedulers_clipping_checkpoint"), _run_torch("schedulers_clipping_checkpoint")
    for name in g["sched_only"]:
        _close(g["sched_only"][name], t["sched_only"][name], rtol=1e-12, atol=1e-15)
    for name in ("step", "cosine", "onecycle", "exponential", "lambda"):
        _close(g["schedule_lrs"][name], t["schedule_lrs"][name], rtol=1e-12, atol=1e-15)


def test_custom_data_pipeline():
    g = _run("custom_data_pipeline")
    assert g["val_losses"][-1] < g["val_losses"][0] * 0.7
    assert max(g["bucket_spreads"]) <= 2  # the bucketing sampler's batches
    assert sum(1 for _ in g["train_loader"]) == len(g["train_loader"]) == 12
    assert g["shuffled_a"] == g["shuffled_b"]  # the same generator seed, the same order
    assert sorted(sum(g["shuffled_a"], [])) == list(range(8))


def test_custom_data_pipeline_plumbing_matches_torch():
    g, t = _run("custom_data_pipeline"), _run_torch("custom_data_pipeline")
    for key in ("collated", "iterable_batches", "iterable_drop_last", "weighted",
                "subset_random", "batch_sampler"):
        assert g[key] == t[key], key
    assert (len(g["train_set"]), len(g["val_set"])) == (len(t["train_set"]), len(t["val_set"]))
    assert g["np_batch"].tolist() == t["np_batch"].tolist()


def test_dcgan_and_vae():
    g = _run("dcgan_vae")
    assert g["fake_shape"] == (16, 1, 16, 16)
    assert -1.0 <= g["fake_range"][0] <= g["fake_range"][1] <= 1.0  # the generator's tanh
    assert sum(g["D_losses"][-2:]) < sum(g["D_losses"][:2])  # the discriminator learns
    assert g["vae_losses"][-1] < g["vae_losses"][0] * 0.7
    assert g["sample_view"] == (8, 1, 16, 16)
    assert g["deterministic"]


def test_dcgan_fixed_generator_matches_torch():
    _close(_run("dcgan_vae")["fixed_fake"], _run_torch("dcgan_vae")["fixed_fake"])


def test_quickstart():
    g = _run("quickstart")
    assert g["first_batch_shapes"] == ((64, 1, 28, 28), (64,), "jitgrad.int64")
    (loss0, acc0), (loss1, acc1) = g["history"][0], g["history"][-1]
    assert loss1 < loss0 / 2 and acc1 > acc0 and acc1 >= 0.9
    assert g["reloaded"] == g["history"][-1]  # the saved and reloaded model tests the same
    assert g["param_summary"][0] == ("layers.0.weight", (64, 784))
    assert g["hook_grad_consistent"]


def test_quickstart_shapes_and_hooks_match_torch():
    g, t = _run("quickstart"), _run_torch("quickstart")
    assert g["hook_shapes"] == t["hook_shapes"] == ((64, 64), (64, 64), (64, 64))
    assert g["param_summary"] == t["param_summary"]
    assert t["hook_grad_consistent"]


def test_spatial_transformer_network():
    g = _run("spatial_transformer")
    assert g["identity_error"] < 1e-5  # identity theta: affine_grid + grid_sample give x back
    assert g["theta_grad_flows"]  # the localization net trains through grid_sample
    assert all(np.isfinite(g["test_losses"])) and g["test_losses"][-1] < g["test_losses"][0]


def test_amp_recipe_on_the_cpu():
    g = _run("amp_recipe")
    assert np.mean(g["losses"][-6:]) < np.mean(g["losses"][:6])
    assert g["fixed_dtype"] is g["torch"].float16
    assert g["restored_scale"] == g["scaler"].get_scale()


def test_amp_recipe_fixed_weights_match_torch():
    ours, theirs = _run("amp_recipe"), _run_torch("amp_recipe")
    _close(ours["fixed_out"], theirs["fixed_out"], rtol=1e-2, atol=1e-3)


@pytest.mark.skipif(sys.platform == "win32", reason="the Hogwild example forks its workers")
def test_hogwild_workers_share_the_model():
    g = _run("hogwild")
    assert g["exit_codes"] == [0, 0]
    assert g["loss_after"] < g["loss_before"]
