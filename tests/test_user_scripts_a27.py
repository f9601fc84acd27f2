"""More real PyTorch scripts (pytorch/examples, pytorch.org tutorials), only the import changed.

The scripts live in tests/scripts/ next to those of tests/test_user_scripts.py and run the same
way: as ``__main__`` on jitgrad, and, where torch is installed, once more with ``import torch``
in place of ``import jitgrad`` so that their deterministic parts (fixed-weight forwards, state
dict round trips, schedules) can be compared.
"""

import contextlib
import io
import math
import runpy
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_user_scripts import SCRIPTS, _close, _run

_TORCH_CACHE: dict = {}


def _run_torch(name: str) -> dict:
    """The same script with ``jitgrad`` replaced by ``torch``, run as ``__main__`` from a file.

    (Unlike ``test_user_scripts._run_torch`` this runs through ``runpy``, so a script that
    pickles its own classes with ``torch.save(model, f)`` finds them in ``__main__``.)
    """
    pytest.importorskip("torch")
    if name not in _TORCH_CACHE:
        src = (SCRIPTS / f"{name}.py").read_text().replace("import jitgrad", "import torch") \
            .replace("from jitgrad", "from torch").replace("jitgrad.", "torch.")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.py"
            path.write_text(src)
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                g = runpy.run_path(str(path), run_name="__main__")
        g["torch"].use_deterministic_algorithms(False)
        _TORCH_CACHE[name] = g
    return _TORCH_CACHE[name]


# ---- word_language_model (pytorch/examples) ----

def test_word_language_model_trains_lstm_gru_and_transformer():
    g = _run("word_language_model")
    for name in ("LSTM", "GRU", "Transformer"):
        r = g["results"][name]
        assert r["val_losses"][-1] < r["first_val"] * (0.95 if name == "LSTM" else 0.8), name
        assert r["train_losses"][-1] < r["train_losses"][0], name
        assert r["best_val_loss"] == min(r["val_losses"]), name
        assert math.isfinite(r["test_ppl"]) and r["test_ppl"] < g["ntokens"], name
    assert g["tied_same_object"] and g["tied_param_count"] == 10  # the decoder shares the weight
    assert g["tie_error"] == "When using the tied flag, nhid must be equal to emsize"
    assert len(g["words"]) == 10 and all(w in g["corpus"].dictionary.word2idx
                                         for w in g["words"])
    assert tuple(g["input"].shape) == (11, 1)


def test_word_language_model_deterministic_parts_match_torch():
    g, t = _run("word_language_model"), _run_torch("word_language_model")
    assert g["batchified"] == t["batchified"]
    assert g["fixed_mask"] == t["fixed_mask"]
    assert g["corpus"].train.tolist() == t["corpus"].train.tolist()
    for kind in ("LSTM", "GRU"):
        (out, hidden), (t_out, t_hidden) = g["fixed_results"][kind], t["fixed_results"][kind]
        _close(out, t_out, rtol=1e-4, atol=1e-5)
        _close(hidden, t_hidden, rtol=1e-4, atol=1e-5)
    _close(g["fixed_results"]["Transformer"], t["fixed_results"]["Transformer"],
           rtol=1e-4, atol=1e-5)
