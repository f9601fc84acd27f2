"""``nn.LSTM`` in float32 on the CPU runs each layer and direction as one op (torch's oneDNN
``mkldnn_rnn_layer``, ``MkldnnRnnLayerBackward0``): the same values as the per-step ops, its
backpropagation through time checked by finite differences (float64) and against torch, its
graph as torch's, second derivatives through the per-step graph, and the per-step path kept
wherever torch's is (float64, projections, packed sequences) or something watches the ops."""

import numpy as np
import pytest

import jitgrad
from jitgrad.nn import _lstm_layer

CONFIGS = [dict(), dict(num_layers=2), dict(bidirectional=True), dict(bias=False),
           dict(batch_first=True), dict(num_layers=2, bidirectional=True, dropout=0.3)]


def _run(lib, config, state=True, unbatched=False, seed=0):
    lib.manual_seed(seed)
    lstm = lib.nn.LSTM(3, 5, **config)
    rng = np.random.default_rng(seed)
    shape = (6, 3) if unbatched else ((2, 6, 3) if config.get("batch_first") else (6, 2, 3))
    x = lib.tensor(rng.standard_normal(shape), dtype=lib.float32, requires_grad=True)
    args = ()
    if state:
        count = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
        hshape = (count, 5) if unbatched else (count, 2, 5)
        h0 = lib.tensor(rng.standard_normal(hshape), dtype=lib.float32, requires_grad=True)
        c0 = lib.tensor(rng.standard_normal(hshape), dtype=lib.float32, requires_grad=True)
        args = ((h0, c0),)
    lstm.eval()  # (no dropout between layers: the same values on both)
    out, (h, c) = lstm(x, *args)
    (out.square().sum() + (h * 2).sum() + c.sin().sum()).backward()
    grads = [x.grad] + [t.grad for t in args[0]] if args else [x.grad]
    grads += [p.grad for p in lstm.parameters()]
    return [t.detach().numpy().copy() for t in (out, h, c, *grads)], out.grad_fn


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in
                                                                    c.items()) or "plain")
def test_fused_layers_equal_the_per_step_ops(config, monkeypatch):
    fused, node = _run(jitgrad, config)
    assert type(node).__name__ in ("MkldnnRnnLayerBackward0", "CatBackward0",
                                   "TransposeBackward0")
    monkeypatch.setattr(jitgrad.nn.rnn, "takes_fused_path", lambda *a: False)
    per_step, node = _run(jitgrad, config)
    assert type(node).__name__ not in ("MkldnnRnnLayerBackward0",)
    np.testing.assert_array_equal(fused[0], per_step[0])  # (the same ops in the same order)
    for a, b in zip(fused, per_step):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("config", CONFIGS[:5], ids=str)
def test_fused_layers_match_torch(config):
    torch = pytest.importorskip("torch")
    for unbatched, state in ((False, True), (False, False), (True, True)):
        ours, node = _run(jitgrad, config, state, unbatched)
        theirs, their_node = _run(torch, config, state, unbatched)
        assert type(node).__name__ == type(their_node).__name__
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_graph_is_torchs():
    torch = pytest.importorskip("torch")

    def graph(lib):
        lib.manual_seed(0)
        out, (h, c) = lib.nn.LSTM(3, 4, num_layers=2)(lib.randn(5, 2, 3))
        kinds = lambda node: [type(n[0]).__name__ if n[0] is not None else None  # noqa: E731
                              for n in node.next_functions]
        return (type(out.grad_fn).__name__, kinds(out.grad_fn), type(h.grad_fn).__name__,
                kinds(h.grad_fn), out.grad_fn.name())

    assert graph(jitgrad) == graph(torch)


def test_backpropagation_through_time_passes_gradcheck():
    rng = np.random.default_rng(1)

    def t(*shape):
        return jitgrad.tensor(rng.standard_normal(shape), dtype=jitgrad.float64,
                              requires_grad=True)

    x, w_ih, w_hh, b_ih, b_hh, h0, c0 = t(4, 2, 3), t(8, 3), t(8, 2), t(8), t(8), t(2, 2), t(2, 2)
    for reverse in (False, True):
        def f(*args, reverse=reverse):
            out, h, c, _ = jitgrad.ops.registry.apply(_lstm_layer.LSTM_LAYER, *args,
                                                      reverse=reverse)
            return out, h, c

        assert jitgrad.autograd.gradcheck(f, (x, w_ih, w_hh, b_ih, b_hh, h0, c0))
        # (with create_graph the backward is the per-step graph: second derivatives too)
        assert jitgrad.autograd.gradgradcheck(f, (x, w_ih, w_hh, b_ih, b_hh, h0, c0))


def test_second_derivatives_match_torch():
    torch = pytest.importorskip("torch")

    def second(lib):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4)
        x = lib.tensor(np.random.default_rng(2).standard_normal((5, 2, 3)), dtype=lib.float32,
                       requires_grad=True)
        out, _ = lstm(x)
        g, = lib.autograd.grad(out.square().sum(), x, create_graph=True)
        g.sum().backward()
        return [x.grad.numpy(), lstm.weight_hh_l0.grad.numpy()]

    for a, b in zip(second(jitgrad), second(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_per_step_path_where_torch_takes_it_or_something_watches():
    x = jitgrad.randn(4, 2, 3)

    def node(lstm, inp, **kwargs):
        return type(lstm(inp, **kwargs)[0].grad_fn).__name__

    assert node(jitgrad.nn.LSTM(3, 4), x) == "MkldnnRnnLayerBackward0"
    assert node(jitgrad.nn.LSTM(3, 4).double(), x.double()) == "StackBackward0"
    assert node(jitgrad.nn.LSTM(3, 4, proj_size=2), x) == "StackBackward0"
    assert node(jitgrad.nn.GRU(3, 4), x) == "StackBackward0"
    packed = jitgrad.nn.utils.rnn.pack_padded_sequence(x, [4, 2])
    assert type(jitgrad.nn.LSTM(3, 4)(packed)[0].data.grad_fn).__name__ == "CatBackward0"
    lstm = jitgrad.nn.LSTM(3, 4)
    f = jitgrad.jit(lambda inp: lstm(inp)[0].sum())
    assert abs(f(x).item() - lstm(x)[0].sum().item()) < 1e-5
    import jitgrad.autograd.forward_ad as fwad

    with fwad.dual_level():  # (forward AD through the per-step ops: torch refuses it here)
        dual = fwad.make_dual(x, jitgrad.ones_like(x))
        tangent = fwad.unpack_dual(lstm(dual)[0]).tangent
    assert tangent is not None and tangent.shape == (4, 2, 4)


def test_saved_tensors_are_checked_and_freed():
    lstm = jitgrad.nn.LSTM(3, 4)
    out, _ = lstm(jitgrad.randn(4, 2, 3))
    loss = out.sum()
    with jitgrad.no_grad():
        lstm.weight_hh_l0.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    out, _ = lstm(jitgrad.randn(4, 2, 3))
    loss = out.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        loss.backward()
