"""Scripts written for these tests in the way common PyTorch code of three kinds is written
(set L31: skip-gram word2vec on sparse embeddings, exact Gaussian-process regression and a 1-D
Fourier neural operator), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss, that words of one topic end up close
and the GP fits its data, and, where torch is installed, that the deterministic parts (sparse
embedding gradients, SparseAdam under CosineAnnealingLR, the log marginal likelihood, its
gradients, the predictions, SGD and LBFGS steps, the FNO's FFTs, complex-weight gradients and
Adam steps) equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------- skip-gram word2vec, sparse

_SCHEDULER_WARNING = "Detected call of `lr_scheduler.step()` before `optimizer.step()`"


def test_word2vec_sparse_learns_the_topics():
    g = _run("word2vec_sparse")
    torch = g["torch"]
    vocab, trainer = g["trainer"].vocab, g["trainer"]
    # the vocabulary: "quasar" (6 times) is under min_count, "the" is the most frequent word
    assert "quasar" not in vocab.ids and len(vocab.ids) == len(vocab.words) == 19
    assert vocab.n_lines == 360 and vocab.n_tokens == 360 * 8 + 6
    assert vocab.words[int(vocab.counts.argmax())] == "the"
    # the noise table: about 1e4 ids drawn by frequency ** 0.75; subsampling keeps "the" least
    counts = np.bincount(vocab.noise, minlength=19)
    freq = vocab.counts.astype(np.float64)
    _close(counts / counts.sum(), freq**0.75 / (freq**0.75).sum(), rtol=0, atol=1e-4)
    assert vocab.keep.argmin() == vocab.ids["the"] and vocab.keep.max() > 0.6
    assert len(trainer.loader) == math.ceil(360 / 32)
    # the loss: from log(2) * 6 (the context table starts at zero) down by half
    losses = g["losses"]
    assert len(losses) == 10 * len(trainer.loader) and all(math.isfinite(v) for v in losses)
    assert losses[0] == pytest.approx(6 * math.log(2), rel=1e-5)
    assert np.mean(losses[-12:]) < 0.55 * losses[0], (losses[:3], losses[-3:])
    # the schedule, restarted each epoch, one scheduler.step() before each optimizer.step()
    lrs = np.array(g["lrs"]).reshape(10, -1)
    steps = np.arange(1, lrs.shape[1] + 1)
    expected = 0.05 * (1 + np.cos(np.pi * steps / lrs.shape[1])) / 2
    _close(lrs, np.tile(expected, (10, 1)), rtol=1e-9, atol=1e-12)
    # once per epoch, the scheduler's warning about the order
    messages = [str(w.message) for w in g["train_warnings"]]
    assert sum(m.startswith(_SCHEDULER_WARNING) for m in messages) == 10
    # the embeddings: sparse gradients left on both tables, the trained centre vectors saved
    model = trainer.model
    assert model.centre.weight.grad.is_sparse and model.context.weight.grad.is_sparse
    with open(trainer.out_path) as f:
        lines = f.read().splitlines()
    assert lines[0] == "19 16"
    assert [line.split()[0] for line in lines[1:]] == vocab.words
    for i, line in enumerate(lines[1:]):
        saved = np.array(line.split()[1:], dtype=np.float32)
        assert np.array_equal(saved, model.centre.weight[i].detach().numpy())
    # similar words end up close: every topic word's nearest word shares its topic, and the
    # mean cosine within a topic is far above the mean across topics
    topic_of = {w: k for k, words in g["topics"].items() for w in words}
    assert all(topic_of[w] == topic_of[n] for w, n in g["nearest"].items()), g["nearest"]
    ids = {k: [vocab.ids[w] for w in words] for k, words in g["topics"].items()}
    cosine = g["cosine"]
    within = np.mean([cosine[i, j] for v in ids.values() for i in v for j in v if i != j])
    across = np.mean([cosine[i, j] for a in ids for b in ids if a != b
                      for i in ids[a] for j in ids[b]])
    assert within > across + 0.4, (within, across)
    assert isinstance(model.centre.weight, torch.nn.Parameter)


def test_word2vec_sparse_gradients_and_sparse_adam():
    g = _run("word2vec_sparse")
    torch = g["torch"]
    r = g["fixed_results"]
    u, v = r["centre.weight"], r["context.weight"]
    # Embedding(sparse=True)'s gradient: uncoalesced COO, one row per looked-up index; the
    # context table is looked up twice (contexts, then noise), its two gradients merged as
    # torch's CPU kernel adds two COO tensors (one pass over both entry lists: the contexts'
    # 2 meets the noise's leading 2, and the two sum into one entry), so 5 + 25 - 1 rows
    for grad, n in ((u, 5), (v, 5 + 25 - 1)):
        assert grad["is_sparse"] and grad["sparse_coo"] and not grad["is_coalesced"]
        assert grad["nnz"] == n and grad["shape"] == (7, 4) and grad["coalesced_is_coalesced"]
    assert u["indices"].tolist() == [[0, 3, 3, 6, 1]]
    assert v["indices"][0, :9].tolist() == [1, 2, 4, 0, 1, 5, 5, 0, 4]
    # coalescing sums the rows of one index, sorted; to_dense equals the coalesced scatter
    for grad in (u, v):
        idx = grad["indices"][0].numpy()
        assert grad["coalesced_indices"][0].tolist() == sorted(set(idx.tolist()))
        dense = np.zeros((7, 4), dtype=np.float32)
        np.add.at(dense, idx, grad["values"].numpy())
        _close(grad["dense"], dense, rtol=1e-6, atol=1e-7)
        _close(grad["coalesced_values"], dense[grad["coalesced_indices"][0].numpy()],
               rtol=1e-6, atol=1e-7)
    # the clamp: centre word 6 against negative 5 scores -25, cut to -10, so that pair sends
    # no gradient; word 6's row gets only its positive pair's
    assert (u["dense"][5] == 0).all() and (u["dense"][2] == 0).all()
    # SparseAdam: only the rows a gradient touched move, and its state is dense
    w0, w1 = r["weights_0"], r["weights_1"]
    untouched_u = [i for i in range(7) if i not in (0, 1, 3, 6)]
    assert untouched_u == [2, 4, 5]
    moved = (w0["centre.weight"] != w1["centre.weight"]).any(dim=1)
    assert not moved[untouched_u].any() and moved[[0, 1, 3, 6]].all()
    assert r["state"][0]["step"] == 2 and tuple(r["state"][0]["exp_avg"].shape) == (7, 4)
    assert r["lrs"] == pytest.approx([0.05 * 0.75, 0.05 * 0.25])
    assert r["losses"][1] < r["losses"][0]
    assert torch.is_tensor(r["scores"]) and tuple(r["scores"].shape) == (5,)


def test_word2vec_sparse_fixed_weights_match_torch():
    g, t = _run("word2vec_sparse"), _run_torch("word2vec_sparse")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("lrs") == theirs.pop("lrs")
    _close(ours.pop("losses"), theirs.pop("losses"), rtol=1e-5)
    for name in ("centre.weight", "context.weight"):
        a, b = dict(ours.pop(name)), dict(theirs.pop(name))
        for key in ("is_sparse", "sparse_coo", "is_coalesced", "nnz", "shape",
                    "coalesced_is_coalesced"):
            assert a.pop(key) == b.pop(key), key
        for key in ("indices", "coalesced_indices"):
            assert a.pop(key).tolist() == b.pop(key).tolist(), key
        _close_nested(a, b, rtol=1e-5, atol=1e-6)
    state_ours, state_theirs = ours.pop("state"), theirs.pop("state")
    assert state_ours.keys() == state_theirs.keys()
    for k in state_theirs:
        assert state_ours[k]["step"] == state_theirs[k]["step"]
        _close(state_ours[k]["exp_avg"], state_theirs[k]["exp_avg"], rtol=1e-5, atol=1e-7)
        _close(state_ours[k]["exp_avg_sq"], state_theirs[k]["exp_avg_sq"], rtol=1e-5,
               atol=1e-9)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    # the schedule and the warnings of the training loop
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    ours_w = [(w.category, str(w.message)) for w in g["train_warnings"]
              if str(w.message).startswith(_SCHEDULER_WARNING)]
    theirs_w = [(w.category, str(w.message)) for w in t["train_warnings"]
                if str(w.message).startswith(_SCHEDULER_WARNING)]
    assert ours_w == theirs_w
    # the data pipeline is NumPy's: the same noise table and batches
    assert np.array_equal(g["trainer"].vocab.noise, t["trainer"].vocab.noise)


# ------------------------------------------------------- exact Gaussian-process regression


def _exact_nll_grads(r: dict, dtype) -> np.ndarray:
    """Rasmussen & Williams (5.9) for the script's kernel (exp(-0.5 d^2 / l), its length scale
    not squared): d(-log p)/d theta = -0.5 tr((alpha alpha^T - K^-1) dK/d theta)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 1)).astype(dtype)
    y = (np.sin(x * 2 * np.pi / 4).ravel() + (rng.normal(size=40) * 0.1).astype(dtype))[:, None]
    length, noise, amp = 2.0, 0.05, 0.5
    d2 = (x - x.T).astype(np.float64) ** 2
    smooth = amp * np.exp(-0.5 * d2 / length)
    k = smooth + noise * np.eye(40)
    inv = np.linalg.inv(k)
    alpha = inv @ y.astype(np.float64)
    inner = alpha @ alpha.T - inv
    dk = {"log_length": smooth * 0.5 * d2 / length, "log_noise": noise * np.eye(40),
          "log_amplitude": smooth}
    return {n: -0.5 * np.sum(inner * m) for n, m in dk.items()}


def test_gp_regression_fits_and_predicts():
    g = _run("gp_regression")
    history = g["history"]
    losses = history["loss"]
    assert len(losses) == 100 and all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0] - 100, (losses[0], losses[-1])
    assert all(b <= a + 1e-3 for a, b in zip(losses[20:], losses[21:]))
    # the noise scale falls towards the data's 0.1 ** 2, the amplitude rises from 0.1
    assert float(history["noise"][-1]) < 0.05 and float(history["amplitude"][-1]) > 0.1
    assert history["length"][0].dtype == g["torch"].float64
    # the predictions: the mean follows sin(x * pi / 2) where the data are, the band narrows
    grid = np.linspace(-5, 5, 200)
    inside = np.abs(grid) < 1.5
    assert np.abs(g["mu"][inside] - np.sin(grid[inside] * np.pi / 2)).max() < 0.15
    assert g["std"][inside].mean() < g["std_before"][inside].mean()
    assert g["mu"].shape == (200,) and np.isfinite(g["std"]).all()
    # the recorded figures: the two posterior plots' titles and the four training panels
    drawn = g["Figure"].calls
    assert [d[1] for d in drawn if d[0] == "title"] == [
        "GP posterior, initial hyperparameters", "GP posterior, fitted hyperparameters"]
    assert [d[1] for d in drawn if d[0].endswith(".title")] == [
        "negative log marginal likelihood", "length scale", "noise variance", "signal variance"]
    panel = [d[1] for d in drawn if d[0] == "panel0.curve"][0]
    _close(panel, losses, rtol=0, atol=0)
    # float64 parameters with float32 data compute in float32; float64 data in float64. The
    # gradients equal R&W's closed form (its own inverse and the script's expanded squared
    # distances differ in the last digits: cond(K) is 400)
    for dt, tol in (("float32", 1e-3), ("float64", 1e-7)):
        r = g["fixed_results"][dt]
        assert r["params_float64"] == [True] * 3 and r["ml_dtype"] and r["K_dtype"]
        assert r["ml_shape"] == (1, 1)
        exact = _exact_nll_grads(r, np.float32 if dt == "float32" else np.float64)
        _close_nested(r["grads"], exact, rtol=tol, atol=tol)
        # the Cholesky factor is lower triangular with a positive diagonal
        L = r["L"].numpy()
        assert np.allclose(np.triu(L, 1), 0) and (np.diag(L) > 0).all()
        assert (r["var"].numpy() > 0).all()
        assert r["steps"][1]["loss"] < r["steps"][0]["loss"]
    r = g["fixed_results"]["float64"]
    assert r["lbfgs_nll"] < r["steps"][1]["loss"] - 10


def test_gp_regression_fixed_parts_match_torch():
    g, t = _run("gp_regression"), _run_torch("gp_regression")
    for dt, rtol, atol in (("float32", 1e-5, 1e-6), ("float64", 1e-12, 1e-13)):
        ours, theirs = dict(g["fixed_results"][dt]), dict(t["fixed_results"][dt])
        for key in ("params_float64", "ml_dtype", "K_dtype", "ml_shape"):
            assert ours.pop(key) == theirs.pop(key), key
        assert ours.pop("ml") == pytest.approx(theirs.pop("ml"), rel=rtol)
        _close_nested(ours.pop("grads"), theirs.pop("grads"), rtol=rtol * 10, atol=atol)
        for a, b in zip(ours.pop("steps"), theirs.pop("steps")):
            _close_nested(a, b, rtol=rtol * 10, atol=atol)
        if dt == "float64":
            assert ours.pop("lbfgs_first") == pytest.approx(theirs.pop("lbfgs_first"), rel=1e-12)
            assert ours.pop("lbfgs_state") == theirs.pop("lbfgs_state")
            # LBFGS's third evaluation sits where torch's own noise gradient is 2e-7 off
            # R&W's closed form (jitgrad's 1e-9): the iterates agree to what that allows
            lbfgs = {k: ours.pop(k) for k in ("lbfgs_params", "lbfgs_d", "lbfgs_mu", "lbfgs_var")}
            _close_nested(lbfgs, {k: theirs.pop(k) for k in lbfgs}, rtol=5e-6, atol=1e-8)
            assert ours.pop("lbfgs_nll") == pytest.approx(theirs.pop("lbfgs_nll"), rel=1e-10)
        _close_nested(ours, theirs, rtol=rtol * 10, atol=atol)


# ------------------------------------------------------- a 1-d Fourier neural operator


def _close_complex(ours, theirs, rtol, atol):
    """Complex (or real) results close in their real and imaginary parts."""
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=atol)


def test_fno_1d_learns_the_operator():
    g = _run("fno_1d")
    torch = g["torch"]
    losses, tests = g["losses"], g["test_l2s"]
    assert len(losses) == 12 * 5 and all(math.isfinite(v) for v in losses)
    # the relative L2 error: from about 1 (outputs near zero) to a few percent
    assert np.mean(losses[:3]) > 0.9 and np.mean(losses[-5:]) < 0.1, (losses[:3], losses[-5:])
    assert tests[-1] < 0.1 and len(g["sample_l2s"]) == 20
    assert np.mean(g["sample_l2s"]) == pytest.approx(tests[-1], rel=1e-5)
    assert g["pred"].shape == (20, 64) and torch.isfinite(g["pred"]).all()
    # StepLR halved the rate every 4 epochs; the spectral weights are complex parameters
    assert g["scheduler"].get_last_lr() == [0.003 * 0.5 ** 3]
    model = g["model"]
    complex_params = [n for n, p in model.named_parameters() if p.is_complex()]
    assert complex_params == [f"spectral.{k}.weight" for k in range(4)]
    weights = model.spectral[0].weight
    assert weights.dtype == torch.complex64 and tuple(weights.shape) == (16, 16, 8)
    assert g["n_real_params"](model) == sum(
        p.numel() * (2 if p.is_complex() else 1) for p in model.parameters())
    # the script's Adam keeps complex moments: exp_avg_sq = E[g conj(g)] is real-valued
    # (up to the rounding of (value * g) * conj(g))
    state = g["optimizer"].state[weights]
    sq = state["exp_avg_sq"]
    assert sq.dtype == torch.complex64 and state["step"] == 60
    assert sq.imag.abs().max() < 1e-6 * sq.real.abs().max() and (sq.real >= 0).all()
    # the Fourier layer: rfft's half spectrum, the modes past 8 zeroed before irfft
    r = g["fixed_results"]
    x_ft = r["x_ft"]
    assert x_ft.dtype == torch.complex64 and tuple(x_ft.shape) == (2, 4, 9)


def test_fno_1d_fixed_weights_match_torch():
    g, t = _run("fno_1d"), _run_torch("fno_1d")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("complex") == theirs.pop("complex")
    assert ours.pop("lrs") == theirs.pop("lrs")
    _close(ours.pop("losses"), theirs.pop("losses"), rtol=1e-5)
    _close(ours.pop("out"), theirs.pop("out"), rtol=1e-5, atol=1e-6)
    _close_complex(ours.pop("x_ft"), theirs.pop("x_ft"), rtol=1e-5, atol=1e-5)
    for key in ("grads", "weights", "exp_avg_sq"):
        a, b = ours.pop(key), theirs.pop(key)
        assert a.keys() == b.keys()
        for name in b:
            tol = {"grads": (1e-4, 1e-6), "weights": (1e-5, 1e-6), "exp_avg_sq": (1e-4, 1e-10)}
            _close_complex(a[name], b[name], *tol[key])
    assert ours == theirs == {}
