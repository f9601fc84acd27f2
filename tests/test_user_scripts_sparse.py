"""A graph network script (tests/scripts/gcn_sparse.py, written for these tests in the way
GCN code for torch's sparse tensors is written) runs on jitgrad: it trains (the loss falls),
classifies the held-out nodes, and its sparse products equal the dense ones (and torch's, where
torch is installed)."""

import contextlib
import io
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_user_scripts import torch_source

SCRIPT = Path(__file__).resolve().parent / "scripts" / "gcn_sparse.py"


@pytest.fixture(scope="module")
def gcn() -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        return runpy.run_path(str(SCRIPT), run_name="__main__")


def test_gcn_trains(gcn):
    losses = gcn["losses"]
    assert losses[-1] < 0.5 * losses[0]
    assert gcn["test_acc"] >= 0.8


def test_gcn_adjacency_is_sparse(gcn):
    adj = gcn["adj"]
    assert adj.is_sparse and adj.is_coalesced()
    assert adj._nnz() == gcn["rows"].shape[0]  # (no duplicate edges: one entry per edge)
    assert adj._values().shape == (adj._nnz(),)
    np.testing.assert_allclose(gcn["sparse_layer"].numpy(), gcn["dense_layer"].numpy(),
                               rtol=1e-5, atol=1e-6)


def test_gcn_matches_torch(gcn):
    torch = pytest.importorskip("torch")
    src = torch_source(SCRIPT.read_text())
    g = {"__name__": "__main__", "__file__": str(SCRIPT)}
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(src, str(SCRIPT), "exec"), g)  # noqa: S102
    assert isinstance(g["adj"], torch.Tensor)
    np.testing.assert_array_equal(g["adj"].indices().numpy(), gcn["adj"].indices().numpy())
    np.testing.assert_allclose(g["adj"].values().numpy(), gcn["adj"].values().numpy(),
                               rtol=1e-6)
    # the same adjacency times the same features
    feats = gcn["features"].numpy()
    np.testing.assert_allclose(torch.sparse.mm(g["adj"], torch.tensor(feats)).numpy(),
                               gcn["sparse_layer"].numpy(), rtol=1e-5, atol=1e-5)
