"""examples/train_transformer.py: a transformer encoder trained with AdamW and a SequentialLR
schedule under jit learns to sort digits (an end-to-end check of the attention layers)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_transformer_example_learns_to_sort(capsys):
    spec = importlib.util.spec_from_file_location(
        "train_transformer", ROOT / "examples" / "train_transformer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy = module.main(steps=100)
    out = capsys.readouterr().out
    assert out.startswith("step   0  loss 2.")
    assert accuracy > 0.8  # (chance is about 0.1)
