"""Meta-learning written as PyTorch users write it (set M): MAML on sine regression, its inner
loop through ``autograd.grad(create_graph=True)`` and through torch.func's ``grad`` under
``vmap``, only the import changed, run on jitgrad.

As in the other sets, the script runs as ``__main__``; the tests read its globals: meta-training
lowered the loss and adaptation helps on new tasks, and, where torch is installed, the
fixed-weight meta-losses, first- and second-order meta-gradients, a Hessian-vector product, an
Adam meta-step and the vmapped torch.func meta-gradient equal the same script's on torch.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def test_maml_meta_trains_and_adapts():
    g = _run("maml_sine")
    losses = g["meta_losses"]
    assert len(losses) == 600 and np.isfinite(losses).all()
    assert np.mean(losses[-50:]) < np.mean(losses[:50]) / 3, (losses[:5], losses[-5:])
    assert np.mean(g["after"]) < np.mean(g["before"])
    r = g["fixed_results"]
    # second order differs from first order: the adaptation's Hessian term is there
    assert r["first_order_loss"] == r["second_order_loss"]
    diffs = [(a - b).abs().max().item() for a, b in
             zip(r["first_order_grads"], r["second_order_grads"])]
    assert max(diffs) > 1e-4
    # vmap over the tasks of the functional inner loop equals the Python loop over them
    for a, b in zip(r["func_grads"], r["looped_grads"]):
        _close(a, b, rtol=1e-5, atol=1e-6)


def test_maml_fixed_weights_match_torch():
    g, t = _run("maml_sine"), _run_torch("maml_sine")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("second_order_loss", "first_order_loss"):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5)
    assert ours.keys() == theirs.keys()
    for key, tensors in theirs.items():  # (lists of the weights' tensors, each its own shape)
        tensors = [tensors] if hasattr(tensors, "shape") else tensors
        mine = [ours[key]] if hasattr(ours[key], "shape") else ours[key]
        assert len(mine) == len(tensors)
        for a, b in zip(mine, tensors):
            _close(a, b, rtol=1e-4, atol=1e-5)
