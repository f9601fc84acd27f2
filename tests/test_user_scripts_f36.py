"""A script written for these tests in the way public PyTorch code writes multi-task gradient
manipulation (PCGrad, MGDA's min-norm solver, CAGrad, GradNorm, Kendall et al.'s uncertainty
weighting, Aligned-MTL, IMTL-G) and continual learning (EWC with loop and vmap Fishers,
Synaptic Intelligence, A-GEM), run on jitgrad (set F36).

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the per-task gradients agree however they are taken (a loop of
``autograd.grad``, ``is_grads_batched``, ``torch.func.jacrev``, ``backward(inputs=...)``),
that PCGrad removes the conflict, that the min-norm and CAGrad directions improve every task,
that hooks scale what they should, that every method's losses fall, that EWC, SI and A-GEM
forget task A less than plain fine-tuning; and, where torch is installed, that the
fixed-weight parts, the errors raised and the first training losses equal the same script's
with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

NAME = "multitask_continual"


def _np(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t, dtype=np.float64)


def test_per_task_gradients_agree_every_way():
    g = _run(NAME)
    # task i reaches the trunk (params 0-3) and its own head only
    heads = {0: (4, 5), 1: (6, 7), 2: (8, 9)}
    for task, row in enumerate(g["unused_pattern"]):
        assert row[:4] == [False] * 4
        assert [i for i in range(4, 10) if not row[i]] == list(heads[task])
    assert g["flat_agrees"] and g["vector_agrees"]
    G = _np(g["G"])
    _close(g["materialized_flat"], G[0], rtol=1e-12, atol=1e-14)
    _close(g["batched_flat"], G, rtol=1e-12, atol=1e-14)
    _close(g["jacrev_flat"], G, rtol=1e-12, atol=1e-14)
    n_shared = g["n_shared"]
    assert g["inputs_only"] == [True] * 4 + [False] * 6
    _close(g["fixed_results"]["trunk_grads_via_inputs"], G[:, :n_shared].sum(0),
           rtol=1e-12, atol=1e-14)


def test_hooks_backward_and_vector_round_trips():
    g = _run(NAME)
    plain, hooked, removed = g["plain_grads"], g["hooked_grads"], g["after_remove_grads"]
    for i, (a, b, c) in enumerate(zip(plain, hooked, removed)):
        _close(b, (0.5 if i < 4 else 1.0) * _np(a), rtol=1e-12, atol=1e-15)
        _close(c, a, rtol=1e-12, atol=1e-15)
    for a, b in zip(g["backward_grads"], g["weighted_grads"]):
        _close(a, b, rtol=1e-12, atol=1e-15)
    # gradient reversal scaled the trunk's gradient by -0.3; the heads' are untouched
    for i, (a, b) in enumerate(zip(g["fixed_results"]["reversed_grads"].values(), plain)):
        _close(a, (-0.3 if i < 4 else 1.0) * _np(b), rtol=1e-12, atol=1e-15)
    # vector_to_parameters wrote into the very .grad tensors
    assert g["vtp_same_objects"]
    _close(g["vtp_written"], 2 * _np(g["written_back"]), rtol=0, atol=0)
    _close(g["fixed_results"]["pcgrad_step"], -0.1 * _np(g["written_back"]), rtol=1e-12,
           atol=1e-16)
    assert g["restored"] and g["snapshot_restored"]
    # post-accumulate-grad hooks saw each trunk parameter's accumulated gradient once
    norms = g["fixed_results"]["post_accumulate_norms"]
    _close(norms, sorted(float(np.linalg.norm(_np(p))) for p in plain[:4]), rtol=1e-12)


def test_pcgrad_removes_the_conflict():
    g = _run(NAME)
    cos = _np(g["fixed_results"]["cosines"])
    _close(np.diag(cos), np.ones(3), rtol=1e-12)
    assert cos[0, 2] < 0  # tasks 0 and 2 pull the trunk apart
    assert g["pair_dots_before"] < 0
    a, b, sum0, sum2 = g["pair_dots_after"]
    # each projected gradient is orthogonal to the one it conflicted with; their sum agrees
    # with both tasks
    assert abs(a) < 1e-14 and abs(b) < 1e-14
    assert sum0 > 0 and sum2 > 0
    G, pc = _np(g["G_shared"]), _np(g["fixed_results"]["pcgrad_rows"])
    for i in range(3):
        if all(G[i] @ G[j] >= 0 for j in range(3)):
            _close(pc[i], G[i], rtol=0, atol=0)  # nothing to project
    assert not np.allclose(pc[0], G[0])


def test_min_norm_cagrad_and_closed_forms():
    g = _run(NAME)
    assert g["mgda_is_min"]
    d0, d2 = g["mgda_dots"]
    gamma = float(g["fixed_results"]["mgda_gamma"])
    assert 0 < gamma < 1 and d0 > 0 and d0 == pytest.approx(d2, rel=1e-10)
    # Frank-Wolfe: weights on the simplex; the min-norm point has equal inner products
    fw = _np(g["fixed_results"]["frank_wolfe"])
    assert fw.min() >= 0 and fw.sum() == pytest.approx(1.0, abs=1e-12)
    dots = g["fw_dots"]
    assert min(dots) > 0 and max(dots) - min(dots) < 1e-8 * max(dots)
    assert min(g["cagrad_dots"]) > 0
    _close(g["imtl_projections"], [g["imtl_projections"][0]] * 3, rtol=1e-10)
    _close(_np(g["fixed_results"]["imtl_alpha"]).sum(), 1.0, rtol=1e-12)
    assert g["rank"] == 3


def test_libmtl_weightings_and_gem_columns():
    g = _run(NAME)
    r = g["fixed_results"]
    G = _np(g["G_shared"])
    assert g["mask_dtype"] == "bool"
    drop = _np(r["graddrop"])
    # GradDrop keeps, per coordinate, only one sign's gradients
    assert ((drop == 0) | (np.abs(drop) <= np.abs(G).sum(0) + 1e-15)).all()
    assert g["gradvac_cosine"] == pytest.approx(0.1, abs=1e-12)
    _close(_np(r["dwa"]).sum(), 3.0, rtol=1e-12)
    _close(_np(r["rlw"]).sum(), 1.0, rtol=1e-12)
    assert g["gem_columns_agree"]
    _close(g["gem_overwritten"], G.mean(0), rtol=1e-12, atol=1e-16)


def test_gradnorm_and_uncertainty_weighting():
    g = _run(NAME)
    r = g["fixed_results"]
    losses = _np(r["losses"])
    # d/ds (exp(-s) L + s) = 1 - L at s = 0, and zero at s = log L
    _close(r["uncertainty_grad"], 1 - losses, rtol=1e-12)
    _close(g["uncertainty_grad_at_optimum"], np.zeros(3), rtol=0, atol=1e-15)
    gn = r["gradnorm"]
    norms = _np(gn["norms"])
    assert norms.min() > 0
    ratio = losses / _np(g["initial_losses"])
    _close(gn["target"], norms.mean() * (ratio / ratio.mean()) ** 1.5, rtol=1e-12)
    _close(gn["loss"], np.abs(norms - _np(gn["target"])).sum(), rtol=1e-12)
    weights = g["mt_histories"]["gradnorm"]["weights"]
    for w in weights:
        assert float(w.sum()) == pytest.approx(3.0, rel=1e-6) and float(w.min()) > 0
    assert not np.allclose(_np(weights[-1]), np.ones(3), atol=0.05)


def test_multitask_training_losses_fall():
    g = _run(NAME)
    histories = g["mt_histories"]
    assert set(histories) == {"sum", "pcgrad", "mgda", "cagrad", "gradnorm", "uncertainty"}
    for method, history in histories.items():
        losses = np.asarray(history["losses"])
        assert losses.shape == (20, 3)
        assert (losses[-1] < 0.7 * losses[0]).all(), method
    # the log-variances head towards log L: all below zero, the classification's the largest
    log_vars = _np(histories["uncertainty"]["log_vars"][-1])
    assert (log_vars < 0).all() and log_vars.argmax() == 1


def test_fisher_loop_equals_vmap():
    g = _run(NAME)
    loop, vm, hooks = g["fisher64_loop"], g["fisher64_vmap"], g["fisher64_hooks"]
    assert loop.keys() == vm.keys() == hooks.keys()
    for n in loop:
        _close(vm[n], loop[n], rtol=1e-10, atol=1e-18)
        _close(hooks[n], loop[n], rtol=1e-10, atol=1e-18)
    for n in g["fisher_check"]:
        scale = float(np.abs(_np(g["fisher_check"][n])).max())
        _close(g["fisher_check_vmap"][n], g["fisher_check"][n], rtol=1e-4, atol=1e-5 * scale)
    assert g["aux_agrees"]
    # online EWC kept buffers, and its loss is (gamma F_1 + F_2) (p - p*)^2 at p = 1.1 p*
    assert len(g["buffer_names"]) == 12 and len(g["ewc_state_keys"]) == 12
    expected = sum(float(((0.9 * _np(loop[n]) + _np(vm[n])) * (0.1 * _np(p)) ** 2).sum())
                   for n, p in g["cl64"].named_parameters())
    assert float(g["fixed_results"]["online_ewc_loss"]) == pytest.approx(expected, rel=1e-10)
    assert g["agem_unchanged"] and abs(g["agem_dot_after"]) < 1e-15


def test_ewc_si_agem_forget_less_than_finetuning():
    g = _run(NAME)
    losses_a = g["losses_a"]
    assert losses_a[-1] < 0.3 * losses_a[0]
    loss_a, acc_a = g["after_a"]
    assert acc_a > 0.85
    cl = g["continual"]
    for method, record in cl.items():
        assert record["losses_b"][-1] < 0.4 * record["losses_b"][0], method
        assert record["b"][1] > 0.75, method
    forgot = cl["finetune"]["a_after_b"][0]
    assert forgot > 3 * loss_a  # plain fine-tuning on B forgets A
    assert cl["ewc"]["a_after_b"][0] < 0.5 * forgot
    assert cl["ewc"]["a_after_b"][1] > cl["finetune"]["a_after_b"][1] + 0.05
    assert cl["si"]["a_after_b"][0] < 0.8 * forgot
    assert cl["agem"]["a_after_b"][0] < 0.8 * forgot
    # A-GEM's projected step never conflicts with the memory's gradient
    dots = cl["agem"]["dots"]
    assert len(dots) == 50 and min(dots) > -1e-6
    assert cl["finetune"]["dots"] == []


def test_fixed_results_and_errors_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-10, atol=1e-13)
    assert g["errors"] == t["errors"]
    assert len(g["errors"]) == 4


def test_first_losses_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    for method in g["mt_histories"]:
        _close(g["mt_histories"][method]["losses"][:10], t["mt_histories"][method]["losses"][:10],
               rtol=1e-5, atol=0)
    _close(g["losses_a"][:10], t["losses_a"][:10], rtol=1e-5, atol=0)
    for method in g["continual"]:
        _close(g["continual"][method]["losses_b"][:10], t["continual"][method]["losses_b"][:10],
               rtol=1e-5, atol=0)
