"""nn.RNN / LSTM / GRU and their cells against torch (same weights: values, final states and
every gradient), gradcheck in float64, jit, and nn.utils (clipping, vectors, pad_sequence)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad
from jitgrad import nn

D = jitgrad.float64

CONFIGS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 3}),
    ("GRU", {}),
    ("GRU", {"bidirectional": True, "bias": False}),
]


def _port(src, dst):
    dst.load_state_dict({k: jitgrad.tensor(v.detach().numpy().copy())
                         for k, v in src.state_dict().items()})


def _loss(out, state):
    if isinstance(state, tuple):
        state = state[0] + state[1].sum()
    return (out ** 2).sum() + (state ** 3).sum()


@pytest.mark.parametrize("kind, kwargs", CONFIGS)
@pytest.mark.parametrize("batched", [True, False])
def test_recurrent_layers_match_torch(kind, kwargs, batched):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(5, 7, **kwargs).double()
    jm = getattr(nn, kind)(5, 7, dtype=D, **kwargs)
    assert list(tm.state_dict()) == list(jm.state_dict())
    assert [tuple(p.shape) for p in tm.parameters()] == [tuple(p.shape) for p in jm.parameters()]
    assert repr(jm) == repr(tm)
    _port(tm, jm)
    x = np.random.default_rng(1).standard_normal((4, 3, 5) if batched else (4, 5))
    xt, xj = torch.tensor(x, requires_grad=True), jitgrad.tensor(x, requires_grad=True)
    (ot, st), (oj, sj) = tm(xt), jm(xj)
    assert tuple(oj.shape) == tuple(ot.shape)
    _loss(ot, st).backward()
    _loss(oj, sj).backward()
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-10, atol=1e-12)
    states_t = st if isinstance(st, tuple) else (st,)
    states_j = sj if isinstance(sj, tuple) else (sj,)
    for a, b in zip(states_j, states_t):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-10)
    for (name, p), q in zip(jm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-10,
                                   err_msg=name)


def test_initial_states_are_used_and_checked():
    torch = pytest.importorskip("torch")
    tm = torch.nn.LSTM(3, 4, num_layers=2).double()
    jm = nn.LSTM(3, 4, num_layers=2, dtype=D)
    _port(tm, jm)
    rng = np.random.default_rng(2)
    x, h0, c0 = rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 2, 4)), \
        rng.standard_normal((2, 2, 4))
    ot, (ht, ct) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    oj, (hj, cj) = jm(jitgrad.tensor(x), (jitgrad.tensor(h0), jitgrad.tensor(c0)))
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(hj.detach().numpy(), ht.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(cj.detach().numpy(), ct.detach().numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 2, 4\), got \[1, 2, "
                                           r"4\]"):
        jm(jitgrad.tensor(x), (jitgrad.zeros(1, 2, 4, dtype=D), jitgrad.zeros(1, 2, 4, dtype=D)))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 5"):
        jm(jitgrad.zeros(5, 2, 5, dtype=D))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(kind):
    torch = pytest.importorskip("torch")
    tm = getattr(torch.nn, kind)(5, 6).double()
    jm = getattr(nn, kind)(5, 6, dtype=D)
    _port(tm, jm)
    x = np.random.default_rng(3).standard_normal((3, 5))
    xt, xj = torch.tensor(x, requires_grad=True), jitgrad.tensor(x, requires_grad=True)
    ot, oj = tm(xt), jm(xj)
    ot = ot[0] * ot[1] if isinstance(ot, tuple) else ot
    oj = oj[0] * oj[1] if isinstance(oj, tuple) else oj
    (ot ** 2).sum().backward()
    (oj ** 2).sum().backward()
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-9)
    for p, q in zip(jm.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)
    unbatched = jm(xj[0].detach())
    unbatched = unbatched[0] if isinstance(unbatched, tuple) else unbatched
    assert tuple(unbatched.shape) == (6,)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_gradcheck_through_time(kind):
    jitgrad.manual_seed(0)
    m = getattr(nn, kind)(2, 3, dtype=D)
    x = jitgrad.randn(3, 1, 2, dtype=D, requires_grad=True)
    h = jitgrad.randn(1, 1, 3, dtype=D, requires_grad=True)
    if kind == "GRU":
        assert jitgrad.autograd.gradcheck(lambda x, h: m(x, h)[0], (x, h))
    else:
        c = jitgrad.randn(1, 1, 3, dtype=D, requires_grad=True)
        assert jitgrad.autograd.gradcheck(lambda x, h, c: m(x, (h, c))[1][1], (x, h, c))
    assert jitgrad.autograd.gradcheck(lambda x: m(x)[0], (x,))
    assert jitgrad.autograd.gradgradcheck(lambda x: (m(x)[0] ** 2).sum(), (x,))


def test_lstm_under_jit_equals_eager():
    jitgrad.manual_seed(0)
    m = nn.LSTM(4, 5, num_layers=2, dtype=D)
    x = jitgrad.randn(6, 2, 4, dtype=D)

    def loss(x):
        out, (h, c) = m(x)
        return (out ** 2).mean() + c.sum()

    eager = loss(x)
    eager.backward()
    grads = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    f = jitgrad.jit(loss)
    for _ in range(2):
        m.zero_grad()
        out = f(x)
        out.backward()
    np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-12)
    for p, g in zip(m.parameters(), grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-10, atol=1e-12)


def test_dropout_between_layers_only_in_training():
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5, dtype=D)
    x = jitgrad.randn(5, 2, 3, dtype=D)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    jitgrad.manual_seed(1)
    c = m(x)[0]
    jitgrad.manual_seed(2)
    d = m(x)[0]
    assert not np.allclose(c.detach().numpy(), d.detach().numpy())


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(s) * 3 for s in [(3, 4), (4,), (2, 2)]]
    tp = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    jp = [jitgrad.zeros(*g.shape, dtype=D, requires_grad=True) for g in grads]
    for t, j, g in zip(tp, jp, grads):
        t.grad, j.grad = torch.tensor(g), jitgrad.tensor(g)
    tt = torch.nn.utils.clip_grad_norm_(tp, 1.5, norm_type)
    tj = nn.utils.clip_grad_norm_(jp, 1.5, norm_type)
    np.testing.assert_allclose(tj.item(), tt.item(), rtol=1e-12)
    for t, j in zip(tp, jp):
        np.testing.assert_allclose(j.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    big = nn.utils.clip_grad_norm_(jp, 1e9, norm_type)  # a norm under max_norm: unchanged
    np.testing.assert_allclose(big.item(), min(1.5, tt.item()), rtol=1e-5)


def test_clip_grad_norm_errors_on_a_nonfinite_norm_and_clip_value():
    p = jitgrad.zeros(3, requires_grad=True)
    p.grad = jitgrad.tensor([1.0, float("inf"), 2.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = jitgrad.zeros(4, requires_grad=True)
    q.grad = jitgrad.tensor([-3.0, -0.5, 0.5, 3.0])
    nn.utils.clip_grad_value_([q], 1.0)
    np.testing.assert_array_equal(q.grad.numpy(), [-1.0, -0.5, 0.5, 1.0])
    assert nn.utils.clip_grad_norm_([jitgrad.zeros(2, requires_grad=True)], 1.0).item() == 0.0


def test_parameters_to_vector_and_back():
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert tuple(v.shape) == (8,)
    np.testing.assert_array_equal(v[:6].detach().numpy(), m.weight.detach().numpy().reshape(-1))
    nn.utils.vector_to_parameters(jitgrad.arange(8.0), m.parameters())
    np.testing.assert_array_equal(m.bias.detach().numpy(), [6.0, 7.0])
    np.testing.assert_array_equal(m.weight.detach().numpy(), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], m.parameters())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, side):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.0,
                                        side)
    js = [jitgrad.tensor(s, requires_grad=True) for s in seqs]
    j = nn.utils.rnn.pad_sequence(js, batch_first, -1.0, side)
    np.testing.assert_array_equal(j.detach().numpy(), t.numpy())
    j.sum().backward()
    assert all(np.all(s.grad.numpy() == 1.0) for s in js)


_BAD_CALLS = {
    "lstm_h_batch": lambda nn, L: nn.LSTM(4, 5, 2)(L.zeros(3, 2, 4), (L.zeros(2, 3, 5),
                                                                       L.zeros(2, 2, 5))),
    "lstm_c_layers": lambda nn, L: nn.LSTM(4, 5, 2)(L.zeros(3, 2, 4), (L.zeros(2, 2, 5),
                                                                        L.zeros(1, 2, 5))),
    "lstm_hx_2d": lambda nn, L: nn.LSTM(4, 5)(L.zeros(3, 2, 4), (L.zeros(2, 5), L.zeros(2, 5))),
    "lstm_unbatched_hx_3d": lambda nn, L: nn.LSTM(4, 5)(L.zeros(3, 4), (L.zeros(1, 5),
                                                                        L.zeros(1, 1, 5))),
    "gru_h_batch": lambda nn, L: nn.GRU(4, 5)(L.zeros(3, 2, 4), L.zeros(1, 3, 5)),
    "rnn_h_layers": lambda nn, L: nn.RNN(4, 5, 2)(L.zeros(3, 2, 4), L.zeros(1, 2, 5)),
    "gru_float_input_double_weights": lambda nn, L: nn.GRU(4, 5).double()(L.zeros(3, 2, 4)),
    "lstm_cell_input_size": lambda nn, L: nn.LSTMCell(4, 5)(L.zeros(2, 3)),
    "rnn_cell_input_size": lambda nn, L: nn.RNNCell(4, 5)(L.zeros(2, 3)),
    "lstm_cell_c_batch": lambda nn, L: nn.LSTMCell(4, 5)(L.zeros(2, 4), (L.zeros(2, 5),
                                                                         L.zeros(3, 5))),
    "lstm_cell_h_size": lambda nn, L: nn.LSTMCell(4, 5)(L.zeros(2, 4), (L.zeros(2, 6),
                                                                        L.zeros(2, 5))),
    "lstm_cell_c_size": lambda nn, L: nn.LSTMCell(4, 5)(L.zeros(2, 4), (L.zeros(2, 5),
                                                                        L.zeros(2, 6))),
    "lstm_cell_hx_3d": lambda nn, L: nn.LSTMCell(4, 5)(L.zeros(4), (L.zeros(5),
                                                                    L.zeros(1, 1, 5))),
    "gru_cell_h_batch": lambda nn, L: nn.GRUCell(4, 5)(L.zeros(2, 4), L.zeros(3, 5)),
    "gru_cell_h_size": lambda nn, L: nn.GRUCell(4, 5)(L.zeros(2, 4), L.zeros(2, 6)),
    "bce_long_target": lambda nn, L: nn.BCELoss()(L.tensor([0.5]), L.tensor([1])),
    "bce_double_target": lambda nn, L: nn.BCELoss()(L.tensor([0.5]),
                                                    L.tensor([1.0], dtype=L.float64)),
}


@pytest.mark.parametrize("name", sorted(_BAD_CALLS))
def test_bad_recurrent_calls_raise_torch_errors(name):
    torch = pytest.importorskip("torch")

    def error(lib):
        with pytest.raises((RuntimeError, ValueError)) as info:
            _BAD_CALLS[name](lib.nn, lib)
        return info.type, str(info.value).replace("jitgrad", "torch")
    assert error(jitgrad) == error(torch)


def test_dropout_with_one_layer_warns_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (jitgrad, torch):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than "
                                             "1, but got dropout=0.5 and num_layers=1") as w:
            lib.nn.LSTM(4, 5, 1, dropout=0.5)
        if lib is jitgrad:  # (torch's points into its own rnn.py)
            assert w[0].filename == __file__


_PAD_CALLS = {  # torch's kernel: the first sequence's dtype and trailing dims, each copied in
    "int_then_float": lambda L: [L.tensor([1]), L.tensor([1.5, 2.5])],
    "broadcast_trailing": lambda L: [L.ones(2, 3), L.full((1, 1), 2.0)],
    "broadcast_1d_into_rows": lambda L: [L.ones(2, 3), L.arange(3.0)],
    "bool": lambda L: [L.tensor([True]), L.tensor([True, False])],
    "a_tensor": lambda L: L.arange(6).view(2, 3),
    "trailing_mismatch": lambda L: [L.ones(2, 3), L.ones(1, 4)],
    "more_dims_later": lambda L: [L.ones(2), L.ones(2, 3)],
    "zero_dim": lambda L: [L.tensor(1.0), L.tensor(2.0)],
    "empty": lambda L: [],
    "not_iterable": lambda L: 3,
}


@pytest.mark.parametrize("name", sorted(_PAD_CALLS))
@pytest.mark.parametrize("side", ["right", "left", "middle"])
def test_pad_sequence_edges_match_torch(name, side):
    torch = pytest.importorskip("torch")

    def outcome(lib):
        try:
            out = lib.nn.utils.rnn.pad_sequence(_PAD_CALLS[name](lib), True, 7,
                                                padding_side=side)
        except Exception as e:  # noqa: BLE001 - compared below
            return type(e).__name__, str(e).replace("jitgrad", "torch")
        return str(out.dtype).split(".")[-1], out.numpy().tolist()
    assert outcome(jitgrad) == outcome(torch)


def test_pad_sequence_gradient_reaches_each_sequence():
    a = jitgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = jitgrad.tensor([4.0], requires_grad=True)
    out = nn.utils.rnn.pad_sequence([a, b * 2], padding_side="left")
    np.testing.assert_array_equal(out.detach().numpy(), [[1.0, 0.0], [2.0, 0.0], [3.0, 8.0]])
    (out * jitgrad.arange(6.0).view(3, 2)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [10.0])
