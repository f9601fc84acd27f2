"""More public PyTorch training code (set E: Karpathy's makemore, nanoGPT and the "Let's build
GPT" lecture, d2l.ai chapters, pytorch/tutorials), only the import changed, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss (or reached an accuracy), and, where
torch is installed, that the deterministic parts (fixed-weight forwards and gradients) equal
the same script's with ``import torch``.
"""

import math

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _close_nested(ours, theirs, **tol) -> None:
    """Two results of the same structure (dicts of lists/numbers) are close, key by key."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested(ours[key], theirs[key], **tol)
    else:
        _close(ours, theirs, **tol)


# ------------------------------------------------------------------ karpathy/makemore


def test_makemore_models_learn_names():
    g = _run("makemore")
    vocab = g["train_dataset"].get_vocab_size()
    for kind, record in g["results"].items():
        losses = record["losses"]
        assert losses[0] > 0.9 * math.log(vocab), kind  # starts near uniform
        assert losses[-1] < 0.85 * losses[0], kind
        assert record["best_loss"] < 0.9 * math.log(vocab), kind
    assert g["sample_only"] == {"samples_only": True}
    sampled = g["sampled"]
    assert tuple(sampled.shape) == (4, g["train_dataset"].get_output_length())
    assert sampled[:, 0].tolist() == [0] * 4 and 0 <= int(sampled.min()) < vocab > sampled.max()


def test_makemore_fixed_weights_match_torch():
    g, t = _run("makemore"), _run_torch("makemore")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-4, atol=1e-5)
