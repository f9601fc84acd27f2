"""nn.utils.rnn's PackedSequence and the recurrent layers on packed batches, against torch
(values, final states and gradients) and finite differences."""

import numpy as np
import pytest

import jitgrad
from jitgrad.nn.utils import rnn as jrnn

LAYERS = [("LSTM", {}), ("GRU", {"num_layers": 2}), ("RNN", {"bidirectional": True}),
          ("LSTM", {"bidirectional": True, "num_layers": 2, "proj_size": 2})]


@pytest.mark.parametrize("mode,kw", LAYERS, ids=lambda v: str(v))
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_hx", [False, True])
def test_packed_layers_match_torch(mode, kw, batch_first, with_hx):
    torch = pytest.importorskip("torch")
    trnn = torch.nn.utils.rnn
    rng = np.random.default_rng(len(mode) + batch_first)
    T, B, F, H = 5, 4, 3, 4
    x = rng.standard_normal((B, T, F) if batch_first else (T, B, F))
    lengths = [3, 5, 1, 4]
    tm = getattr(torch.nn, mode)(F, H, batch_first=batch_first, dtype=torch.float64, **kw)
    jm = getattr(jitgrad.nn, mode)(F, H, batch_first=batch_first, dtype=jitgrad.float64, **kw)
    jm.load_state_dict({k: jitgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    tx, jx = torch.tensor(x, requires_grad=True), jitgrad.tensor(x, requires_grad=True)
    tp = trnn.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=False)
    jp = jrnn.pack_padded_sequence(jx, lengths, batch_first=batch_first, enforce_sorted=False)
    for a, b in zip(jp[1:], tp[1:]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    t_args, j_args = (), ()
    if with_hx:
        count = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
        h0 = rng.standard_normal((count, B, kw.get("proj_size") or H))
        c0 = rng.standard_normal((count, B, H))
        t_args = ((torch.tensor(h0), torch.tensor(c0)) if mode == "LSTM" else torch.tensor(h0),)
        j_args = ((jitgrad.tensor(h0), jitgrad.tensor(c0)) if mode == "LSTM" else
                  jitgrad.tensor(h0),)
    to, th = tm(tp, *t_args)
    jo, jh = jm(jp, *j_args)
    assert isinstance(jo, jrnn.PackedSequence)
    tpad, tl = trnn.pad_packed_sequence(to, batch_first=batch_first, total_length=T)
    jpad, jl = jrnn.pad_packed_sequence(jo, batch_first=batch_first, total_length=T)
    np.testing.assert_allclose(jpad.detach().numpy(), tpad.detach().numpy(), atol=1e-12)
    np.testing.assert_array_equal(jl.numpy(), tl.numpy())
    th, jh = (th if isinstance(th, tuple) else (th,)), (jh if isinstance(jh, tuple) else (jh,))
    for a, b in zip(jh, th):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    w = rng.standard_normal(tuple(tpad.shape))
    ((tpad * torch.tensor(w)).sum() + sum(h.sum() for h in th)).backward()
    ((jpad * jitgrad.tensor(w)).sum() + sum(h.sum() for h in jh)).backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    for (name, p), (_, q) in zip(tm.named_parameters(), jm.named_parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), atol=1e-12, err_msg=name)


def test_packed_gru_gradcheck():
    gru = jitgrad.nn.GRU(2, 3, bidirectional=True, dtype=jitgrad.float64)
    x = jitgrad.randn(4, 3, 2, dtype=jitgrad.float64, requires_grad=True)

    def f(x):
        packed = jrnn.pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)
        out, h = gru(packed)
        return jrnn.pad_packed_sequence(out)[0], h

    assert jitgrad.autograd.gradcheck(f, (x,))


def test_pack_sequence_round_trips_and_torchs_errors():
    seqs = [jitgrad.tensor([1, 2, 3]), jitgrad.tensor([4, 5])]
    packed = jrnn.pack_sequence(seqs)
    assert packed.data.tolist() == [1, 4, 2, 5, 3] and packed.batch_sizes.tolist() == [2, 2, 1]
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    back = jrnn.unpack_sequence(jrnn.pack_sequence(seqs[::-1], enforce_sorted=False))
    assert [s.tolist() for s in back] == [[4, 5], [1, 2, 3]]
    x = jitgrad.zeros(4, 3, 1)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        jrnn.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        jrnn.pack_padded_sequence(x, [2, 0, 1], enforce_sorted=False)
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of "
                                         "the longest sequence in input, but got "
                                         "total_length=2 and max sequence length being 4"):
        jrnn.pad_packed_sequence(jrnn.pack_padded_sequence(x, [4, 2, 1]), total_length=2)
    assert jitgrad.nn.utils.rnn.PackedSequence is jrnn.PackedSequence


@pytest.mark.parametrize("method,dtype", [("double", "float64"), ("float", "float32"),
                                          ("half", "float16"), ("long", "int64"),
                                          ("int", "int32"), ("short", "int16"),
                                          ("char", "int8"), ("byte", "uint8")])
def test_packed_sequence_casts_its_data_as_torch(method, dtype):
    packed = jitgrad.nn.utils.rnn.pack_padded_sequence(
        jitgrad.randn(2, 3, 1), [3, 1], batch_first=True, enforce_sorted=False)
    cast = getattr(packed, method)()
    assert type(cast) is type(packed) and cast.data.dtype == getattr(jitgrad, dtype)
    assert cast.batch_sizes.dtype == jitgrad.int64 and cast.sorted_indices.dtype == jitgrad.int64
    assert packed.cpu() is packed and not packed.is_pinned()
