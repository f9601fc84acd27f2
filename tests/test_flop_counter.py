"""``jitgrad.utils.flop_counter`` and ``module_tracker`` against torch's: the same counts per
module and op, forward and backward, and the same table."""

import logging

import pytest

import jitgrad
from jitgrad.utils.flop_counter import (FlopCounterMode, aten, conv_flop_count, mm_flop,
                                        register_flop_formula)
from jitgrad.utils.module_tracker import ModuleTracker

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode  # noqa: E402

logging.getLogger("jitgrad.utils.module_tracker").setLevel(logging.WARNING)


def _counts(counter):
    return {mod: {str(k): v for k, v in ops.items()}
            for mod, ops in counter.get_flop_counts().items()}


def _both(build, make_input, depth=2):
    """The flop counts (and tables) of forward+backward of the same model in both libraries."""
    out = []
    for lib in (jitgrad, torch):
        lib.manual_seed(0)
        model = build(lib.nn)
        x = make_input(lib)
        counter_cls = FlopCounterMode if lib is jitgrad else TorchFlopCounterMode
        with counter_cls(display=False, depth=depth) as counter:
            model(x).sum().backward()
        out.append((_counts(counter), counter.get_total_flops(),
                    counter.get_table() if lib is jitgrad else None))
    return out


def test_mlp_counts_match_torch():
    (a, ta, table), (b, tb, _) = _both(
        lambda nn: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)),
        lambda lib: lib.randn(5, 8))
    assert a == b and ta == tb == 4480
    assert table.splitlines() == [
        "Module          FLOP    % Total",
        "------------  ------  ---------",
        "Sequential      4480    100.00%",
        "- aten.addmm    1920     42.86%",
        "- aten.mm       2560     57.14%",
        "Sequential.0    2560     57.14%",
        "- aten.addmm    1280     28.57%",
        "- aten.mm       1280     28.57%",
        "Sequential.2    1920     42.86%",
        "- aten.addmm     640     14.29%",
        "- aten.mm       1280     28.57%"]


def test_conv_net_counts_match_torch():
    def build(nn):
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(4, 2, 3, stride=2, groups=2),
                             nn.ConvTranspose2d(2, 3, 3, stride=2))

    (a, ta, table), (b, tb, _) = _both(build, lambda lib: lib.randn(2, 3, 9, 9,
                                                                   requires_grad=True))
    assert a == b and ta == tb
    assert set(a["Global"]) == {"aten.convolution", "aten.convolution_backward"}
    assert "- aten.convolution_backward   83.808K     67.28%" in table


def test_conv1d_and_transposed_counts_match_torch():
    def build(nn):
        return nn.Sequential(nn.Conv1d(3, 4, 3, padding=1),
                             nn.ConvTranspose1d(4, 2, 2, stride=2, groups=2))

    (a, ta, _), (b, tb, _) = _both(build, lambda lib: lib.randn(2, 3, 9))
    assert a == b and ta == tb > 0


def test_transformer_layer_counts_match_torch_math_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def build(nn):
        return nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)

    with sdpa_kernel(SDPBackend.MATH):  # (torch's fused CPU kernel counts nothing)
        (a, ta, _), (b, tb, _) = _both(build, lambda lib: lib.randn(2, 5, 16), depth=3)
    assert a == b and ta == tb
    assert a["TransformerEncoderLayer.self_attn"]["aten.bmm"] == 9600


def test_counts_repeat_after_warm_up_and_display(capsys):
    model = jitgrad.nn.Linear(4, 3)
    x = jitgrad.randn(2, 4, requires_grad=True)
    for _ in range(2):  # (a warm backward runs traced programs: the counter must see its ops)
        model(x).sum().backward()
    with FlopCounterMode() as counter:
        model(x).sum().backward()
    assert counter.get_total_flops() == 3 * 2 * 2 * 4 * 3
    assert "Linear" in capsys.readouterr().out
    with FlopCounterMode(display=False) as counter:  # nothing counted outside the context
        pass
    model(x).sum().backward()
    assert counter.get_total_flops() == 0
    assert counter.get_table().splitlines()[2].split() == ["Global", "0", "0%"]


def test_custom_mapping_and_registry():
    calls = []

    def fake_mm(a_shape, b_shape, *args, out_shape=None, **kwargs):
        calls.append((tuple(a_shape), tuple(b_shape), tuple(out_shape)))
        return 1

    with FlopCounterMode(display=False, custom_mapping={aten.mm: fake_mm}) as counter:
        jitgrad.randn(2, 3).mm(jitgrad.randn(3, 4))
    assert counter.get_total_flops() == 1 and calls == [((2, 3), (3, 4), (2, 4))]
    assert mm_flop((2, 3), (3, 4)) == 48
    assert conv_flop_count([1, 2, 5, 5], [4, 2, 3, 3], [1, 4, 3, 3]) == 9 * 9 * 4 * 2 * 2
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.mm"):
        register_flop_formula(aten.mm)(fake_mm)
    with pytest.raises(ValueError, match="expected each target to be"):
        register_flop_formula("mm")(fake_mm)
    with pytest.warns(UserWarning, match="mods argument is not needed anymore"):
        FlopCounterMode(jitgrad.nn.Linear(2, 2), display=False)


def test_module_tracker_matches_torch():
    def trace(lib, tracker_cls):
        seen = []
        lib.manual_seed(0)

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Linear(3, 3)
                self.b = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.ReLU())

            def forward(self, x):
                seen.append(("fw", sorted(tracker.parents), tracker.is_bw))
                return self.b(self.a(x))

        m = M()
        x = lib.randn(2, 3, requires_grad=True)
        with tracker_cls() as tracker:
            y = m(x)
            seen.append(("after", sorted(tracker.parents), tracker.is_bw))
            y.register_hook(lambda g: seen.append(("hook", sorted(tracker.parents),
                                                   tracker.is_bw)))
            y.sum().backward()
            seen.append(("end", sorted(tracker.parents), tracker.is_bw))
        return seen

    from torch.utils.module_tracker import ModuleTracker as TorchModuleTracker

    assert trace(jitgrad, ModuleTracker) == trace(torch, TorchModuleTracker)


def test_queue_callback_and_multi_grad_hook():
    from jitgrad.autograd.graph import register_multi_grad_hook

    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        jitgrad.autograd.Variable._execution_engine.queue_callback(lambda: None)
    a = jitgrad.randn(3, requires_grad=True)
    b = jitgrad.randn(3, requires_grad=True)
    ya, yb = a * 2, b * 3
    got, order = [], []
    register_multi_grad_hook((ya, yb), lambda grads: got.append([g.tolist() for g in grads]))

    def cb():
        order.append("callback")

    ya.register_hook(lambda g: jitgrad.autograd.Variable._execution_engine.queue_callback(cb))
    (ya.sum() + (yb * 2).sum()).backward()
    order.append("returned")
    assert got == [[[1.0] * 3, [2.0] * 3]] and order == ["callback", "returned"]
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        register_multi_grad_hook((ya,), print, mode="some")


def test_flops_outside_modules_show_under_global():
    out, tables = [], []
    for lib, counter_cls in ((jitgrad, FlopCounterMode), (torch, TorchFlopCounterMode)):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(300, 400),
                              lib.nn.Sequential(lib.nn.Linear(400, 500)))
        x = lib.randn(64, 300, requires_grad=True)
        with counter_cls(display=False, depth=1) as counter:
            m(x).mm(lib.randn(500, 700)).sum().backward()
        out.append(_counts(counter))
        if lib is jitgrad:
            tables = [counter.get_table(), counter.get_table(5)]
    assert out[0] == out[1]
    # torch's tables (printed with tabulate 0.10) for the same counts
    assert tables[0].splitlines() == [
        "Module            FLOP    % Total",
        "------------  --------  ---------",
        "Global        212.480M    100.00%",
        "- aten.addmm   40.960M     19.28%",
        "- aten.mm     171.520M     80.72%",
        "Sequential    122.880M     57.83%",
        "- aten.addmm   40.960M     19.28%",
        "- aten.mm      81.920M     38.55%"]
    assert tables[1].splitlines()[-4:] == [
        "- aten.mm        51.200M     24.10%",
        "Sequential.1.0   76.800M     36.14%",
        "- aten.addmm     25.600M     12.05%",
        "- aten.mm        51.200M     24.10%"]


# (both libraries warn once per process about backward(create_graph=True)'s reference cycle)
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_double_backward_counts_match_torch_in_total():
    out = []
    for lib, counter_cls in ((jitgrad, FlopCounterMode), (torch, TorchFlopCounterMode)):
        lib.manual_seed(0)
        mlp = lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.Tanh(), lib.nn.Linear(5, 1))
        conv = lib.nn.Conv2d(2, 3, 3)
        x = lib.randn(4, 6, requires_grad=True)
        z = lib.randn(1, 2, 6, 6, requires_grad=True)
        with counter_cls(display=False) as c1:
            mlp(x).sum().backward(create_graph=True)
            x.grad.pow(2).sum().backward()
        with counter_cls(display=False) as c2:
            conv(z).pow(2).sum().backward(create_graph=True)
            z.grad.sum().backward()
        out.append((_counts(c1), c2.get_total_flops()))
    # (the conv's double backward: torch counts its convolutions as aten.convolution, jitgrad
    # as aten.convolution_backward, since they run in a backward pass)
    assert out[0] == out[1]


def test_op_observers_nest_and_come_off():
    from jitgrad.ops import registry
    from jitgrad.ops.op_observers import ACTIVE, observe_ops
    from jitgrad.profiler import profile

    mm = registry.OPS["mm"]
    plain = mm.impl
    seen = []

    def watch(tag):
        def wrap(op, impl):
            if op is not mm:
                return impl

            def watched(*args, **params):
                seen.append(tag)
                return impl(*args, **params)

            return watched
        return wrap

    remove_a = observe_ops(watch("a"))
    remove_b = observe_ops(watch("b"))
    a, b = jitgrad.randn(2, 3), jitgrad.randn(3, 2)
    a.mm(b)
    assert seen == ["b", "a"]  # (the first installed innermost)
    remove_a()
    seen.clear()
    a.mm(b)
    assert seen == ["b"]
    remove_b()
    remove_b()  # (a second removal does nothing)
    assert mm.impl is plain and not ACTIVE
    # the profiler and a flop counter together; both off afterwards
    lin = jitgrad.nn.Linear(3, 2)
    x = jitgrad.randn(4, 3, requires_grad=True)
    for _ in range(2):  # (warm: the engine has traced programs for these nodes)
        lin(x).sum().backward()
    with profile() as prof, FlopCounterMode(display=False) as counter:
        lin(x).sum().backward()
    assert counter.get_total_flops() == 3 * 2 * 4 * 3 * 2
    names = {e.key: e.count for e in prof.key_averages()}
    assert names["aten::addmm"] == 1 and names["aten::mm"] == 2  # (the backward's ops too)
    assert mm.impl is plain and not ACTIVE


def test_multi_grad_hook_any_mode_matches_torch():
    def run(lib):
        from importlib import import_module

        reg = import_module(lib.__name__ + ".autograd.graph").register_multi_grad_hook
        a = lib.randn(3, 4, requires_grad=True)
        b = lib.randn(4, 5, requires_grad=True)
        ya, yb = a * 2, b * 3
        got = []
        handle = reg((ya, yb), lambda g: got.append(tuple(g.shape)), mode="any")
        ya.mm(yb).sum().backward(retain_graph=True)
        ya.mm(yb).sum().backward(retain_graph=True)
        handle.remove()
        (ya * 1).sum().backward()
        return got

    assert run(jitgrad) == run(torch) == [(4, 5), (4, 5)]


@pytest.mark.parametrize("shapes", [[(3,), (3, 4)], [(4, 5), (5,)], [(3,), (3,)],
                                    [(4, 5), (5, 6), (6, 2)], [(2, 5), (5, 6), (6, 9)],
                                    [(3,), (3, 7), (7, 2), (2, 9), (9,)],
                                    [(10, 3), (3, 20), (20, 2), (2, 15), (15, 4)]])
def test_multi_dot_multiplies_in_torchs_order(shapes):
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    out = []
    for lib, counter_cls in ((jitgrad, FlopCounterMode), (torch, TorchFlopCounterMode)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        with counter_cls(display=False) as counter:
            y = lib.linalg.multi_dot(ts)
            y.sum().backward()
        out.append((counter.get_total_flops(), tuple(y.shape), y.grad_fn.name(),
                    y.detach().numpy().round(8).tolist(),
                    [t.grad.numpy().round(8).tolist() for t in ts]))
    assert out[0] == out[1]


@pytest.mark.parametrize("shapes, dtype2, text", [
    ([(2,)], None, "expected at least 2 tensors but got 1"),
    ([(2, 2, 2), (2, 2)], None, "the first tensor must be 1D or 2D but got 3D"),
    ([(2, 2), (2, 2, 2)], None, "the last tensor must be 1D or 2D but got 3D"),
    ([(2, 2), (2,), (2, 2)], None, "tensor 1 must be 2D but got 1D"),
    ([(2, 2), (2, 2)], "float64", "all tensors must have be the same dtype but tensor 0 is "
                                  "float and tensor 1 double"),
    ([(2, 3), (3, 4), (5, 2)], None, r"tensors 1 and 2 with shapes \[3, 4\] and \[5, 2\] "
                                     "cannot be multiplied")])
def test_multi_dot_errors_match_torch(shapes, dtype2, text):
    for lib in (jitgrad, torch):
        ts = [lib.zeros(s) for s in shapes]
        if dtype2:
            ts[1] = ts[1].to(getattr(lib, dtype2))
        with pytest.raises(RuntimeError, match="multi_dot\\(\\): " + text):
            lib.linalg.multi_dot(ts)
