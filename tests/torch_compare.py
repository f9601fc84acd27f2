"""Helpers for tests that run the same code under torch and under jitgrad."""

import re

import numpy as np

import jitgrad


def arr(t):
    """A tensor of either library as a NumPy array (None stays None)."""
    return None if t is None else np.asarray(t.detach().numpy())


def both(fn):
    """Runs ``fn(lib)`` for torch, then jitgrad, and returns both results."""
    import torch

    return fn(torch), fn(jitgrad)


def same_error(fn):
    """Asserts ``fn(lib)`` raises the same error type and text under both libraries (with
    torch's self-references, like ``torch.Size``, read as ``jitgrad``)."""
    import torch

    errs = []
    for lib in (torch, jitgrad):
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001 - compared below
            errs.append((type(e).__name__, str(e)))
        else:
            errs.append(None)
    assert errs[0] is not None, "torch did not raise"
    assert errs[1] == (errs[0][0], re.sub(r"\btorch\b", "jitgrad", errs[0][1]))
