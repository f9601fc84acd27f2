"""Lazy modules, UninitializedParameter/UninitializedBuffer and nn.Buffer, against torch."""

import copy

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
from jitgrad.nn.lazy import LazyModuleMixin

LAZY = [("LazyLinear", (3,), {}, (2, 5)), ("LazyConv1d", (4, 3), dict(groups=2), (2, 4, 6)),
        ("LazyConv2d", (4, 3), dict(padding=1, bias=False), (2, 3, 6, 6)),
        ("LazyConv3d", (2, 2), {}, (3, 3, 3, 3)),
        ("LazyConvTranspose1d", (2, 2), {}, (3, 5)),
        ("LazyConvTranspose2d", (2, 3), dict(stride=2, output_padding=1), (1, 3, 4, 4)),
        ("LazyConvTranspose3d", (2, 2), dict(stride=2), (1, 3, 2, 2, 2)),
        ("LazyBatchNorm1d", (), {}, (4, 3)), ("LazyBatchNorm2d", (), {}, (2, 3, 2, 2)),
        ("LazyBatchNorm3d", (), dict(momentum=None), (2, 3, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), dict(affine=False), (2, 3, 4)),
        ("LazyInstanceNorm2d", (), {}, (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), dict(track_running_stats=False), (2, 3, 2, 3, 2))]


@pytest.mark.parametrize("name,args,kw,shape", LAZY)
def test_lazy_vs_torch(name, args, kw, shape):
    torch = pytest.importorskip("torch")
    mj, mt = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(mj) == repr(mt)
    assert isinstance(mj, LazyModuleMixin) and mj.has_uninitialized_params()
    assert list(mj.state_dict()) == list(mt.state_dict())
    assert [type(v).__name__ for v in mj.state_dict().values()] == \
        [type(v).__name__ for v in mt.state_dict().values()]
    params = list(mj.parameters())
    a = np.random.default_rng(0).standard_normal(shape)
    oj, ot = mj(jitgrad.tensor(a, dtype=jitgrad.float32)), mt(torch.tensor(a).float())
    # materialized: the eager class, the same Parameter objects, torch's shapes and repr
    assert type(mj).__name__ == type(mt).__name__ and not isinstance(mj, LazyModuleMixin)
    assert type(mj) is getattr(nn, type(mt).__name__)
    assert repr(mj) == repr(mt)
    assert [id(p) for p in mj.parameters()] == [id(p) for p in params]
    assert all(type(p) is nn.Parameter for p in params)
    assert [(k, tuple(v.shape), type(v).__name__) for k, v in mj.state_dict().items()] == \
        [(k, tuple(v.shape), type(v).__name__) for k, v in mt.state_dict().items()]
    assert oj.shape == tuple(ot.shape)
    # with torch's weights the outputs agree
    mj.load_state_dict({k: jitgrad.tensor(v.detach().numpy()) for k, v in
                        mt.state_dict().items()})
    mj.eval(), mt.eval()
    np.testing.assert_allclose(mj(jitgrad.tensor(a, dtype=jitgrad.float32)).detach().numpy(),
                               mt(torch.tensor(a).float()).detach().numpy(), atol=1e-5)


def test_default_init_statistics_after_materialize():
    m = nn.LazyLinear(200)
    m(jitgrad.randn(2, 100))
    bound = 1 / np.sqrt(100)
    w = m.weight.detach().numpy()
    assert w.shape == (200, 100) and np.abs(w).max() <= bound and w.std() > bound / 3
    bn = nn.LazyBatchNorm2d()
    bn(jitgrad.randn(4, 5, 3, 3))
    np.testing.assert_array_equal(bn.weight.detach().numpy(), np.ones(5))
    assert bn.num_batches_tracked.item() == 1 and bn.running_var.shape == (5,)


def test_optimizer_after_dry_run_trains():
    model = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(1))
    x, y = jitgrad.randn(8, 2, 5, 5), jitgrad.randn(8, 1)
    model(x)  # the dry run
    assert type(model[0]) is nn.Conv2d and type(model[3]) is nn.Linear
    assert model[3].in_features == 36
    opt = jitgrad.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_uninitialized_parameter_and_buffer():
    p = nn.UninitializedParameter()
    assert isinstance(p, nn.Parameter) and p.requires_grad and repr(p) == \
        "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        p.shape
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.requires_grad
    b = nn.UninitializedBuffer(dtype=jitgrad.float64)
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize((4,))
    assert type(b) is jitgrad.Tensor and b.dtype == jitgrad.float64 and b.shape == (4,)
    q = copy.deepcopy(nn.LazyLinear(2))
    assert q.has_uninitialized_params()
    assert type(copy.deepcopy(nn.UninitializedParameter())) is nn.UninitializedParameter


def test_has_uninitialized_and_incomplete_initialization():
    class Half(LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.UninitializedParameter()
            self.b = nn.UninitializedParameter()

        def initialize_parameters(self, x):
            self.a.materialize(x.shape)

        def forward(self, x):
            return x

    m = Half()
    with pytest.raises(RuntimeError, match="module Half has not been fully initialized"):
        m(jitgrad.ones(2))
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented"):
        type("NoInit", (LazyModuleMixin, nn.Module), {})()(jitgrad.ones(1))


def test_load_state_dict_materializes():
    src = nn.Linear(5, 3)
    m = nn.LazyLinear(3)
    m.load_state_dict(src.state_dict())
    assert not m.has_uninitialized_params() and m.weight.shape == (3, 5)
    assert isinstance(m, nn.LazyLinear)  # the class changes on the first forward
    np.testing.assert_array_equal(m.weight.detach().numpy(), src.weight.detach().numpy())
    x = jitgrad.randn(2, 5)
    np.testing.assert_array_equal(m(x).detach().numpy(), src(x).detach().numpy())
    assert type(m) is nn.Linear
    other = nn.LazyLinear(3)
    other.load_state_dict(nn.LazyLinear(3).state_dict())  # uninitialized into uninitialized
    assert other.has_uninitialized_params()


def test_buffer_registration():
    torch = pytest.importorskip("torch")

    def make(lib):
        m = lib.nn.Module()
        m.kept = lib.nn.Buffer(lib.ones(2))
        m.temp = lib.nn.Buffer(lib.zeros(3), persistent=False)
        m.plain = lib.ones(1)
        return m

    mj, mt = make(jitgrad), make(torch)
    assert [n for n, _ in mj.named_buffers()] == [n for n, _ in mt.named_buffers()] == \
        ["kept", "temp"]
    assert list(mj.state_dict()) == list(mt.state_dict()) == ["kept"]
    b = nn.Buffer(jitgrad.ones(2))
    assert isinstance(b, nn.Buffer) and isinstance(b, jitgrad.Tensor)
    assert not isinstance(jitgrad.ones(2), nn.Buffer) and b.persistent
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'kept'"):
        mj.kept = 3
