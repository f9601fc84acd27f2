"""jitgrad.nn: Parameter, Module registration/state_dict/repr, Linear init, layers vs torch."""

import copy
import math
import pickle
import re
from collections import OrderedDict

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.nn import functional as F



def tt(t, requires_grad=False):
    """A torch copy of a jitgrad tensor."""
    import torch

    out = torch.tensor(np.array(t.detach().numpy()))
    return out.requires_grad_(requires_grad)


def arr(t):
    return t.detach().numpy() if isinstance(t, jitgrad.Tensor) else t.detach().cpu().numpy()


def copy_weights(src_torch, dst):
    """Copies a torch module's parameters into the same-structured jitgrad module."""
    sd = {k: jitgrad.tensor(v.detach().numpy()) for k, v in src_torch.state_dict().items()}
    dst.load_state_dict(sd)


def torch_text(s):
    return s.replace("jitgrad.Size", "torch.Size").replace("jitgrad.", "torch.")


# ---------------------------------------------------------------- Parameter


def test_parameter_basics_and_repr():
    torch = pytest.importorskip("torch")
    p = nn.Parameter(jitgrad.ones(2))
    tp = torch.nn.Parameter(torch.ones(2))
    assert isinstance(p, jitgrad.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert repr(p) == repr(tp) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    q = nn.Parameter(jitgrad.ones(2), requires_grad=False)
    assert repr(q) == repr(torch.nn.Parameter(torch.ones(2), requires_grad=False))
    assert not q.requires_grad
    assert repr(nn.Parameter()) == repr(torch.nn.Parameter())


def test_parameter_shares_data_and_version_counter():
    t = jitgrad.ones(3)
    p = nn.Parameter(t)
    t[0] = 5.0
    assert p.tolist() == [5.0, 1.0, 1.0]
    assert p._version == t._version == 1


def test_parameter_from_non_leaf_is_a_leaf_and_int_raises():
    x = jitgrad.ones(2, requires_grad=True)
    p = nn.Parameter(x * 2)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype "
                                           "can require gradients$"):
        nn.Parameter(jitgrad.tensor([1, 2]))
    assert nn.Parameter(jitgrad.tensor([1, 2]), requires_grad=False).dtype is jitgrad.int64


def test_parameter_ops_return_plain_tensors_and_copies_keep_type():
    p = nn.Parameter(jitgrad.ones(2))
    assert type(p * 2) is jitgrad.Tensor and type(p.detach()) is jitgrad.Tensor
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and d.requires_grad and d.tolist() == [1.0, 1.0]
    assert not np.shares_memory(d.numpy(force=True), p.numpy(force=True))
    r = pickle.loads(pickle.dumps(nn.Parameter(jitgrad.ones(2), requires_grad=False)))
    assert type(r) is nn.Parameter and not r.requires_grad


# ---------------------------------------------------------------- Module registration


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.scale = nn.Parameter(jitgrad.ones(1))
        self.register_buffer("steps", jitgrad.zeros(1))
        self.register_buffer("tmp", jitgrad.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def torch_net():
    """``Net`` built with torch.nn (named TorchNet)."""
    import torch

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 3)
            self.act = torch.nn.Tanh()
            self.fc2 = torch.nn.Linear(3, 2, bias=False)
            self.scale = torch.nn.Parameter(torch.ones(1))
            self.register_buffer("steps", torch.zeros(1))
            self.register_buffer("tmp", torch.zeros(1), persistent=False)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x))) * self.scale

    return TorchNet()


def test_registration_and_traversal_match_torch():
    pytest.importorskip("torch")
    m, tm = Net(), torch_net()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()] == \
        ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in m.named_children()] == [n for n, _ in tm.named_children()]
    assert list(m.children()) == [m.fc1, m.act, m.fc2]
    assert len(list(m.modules())) == 4
    assert [p.shape for p in m.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in m.named_parameters(prefix="net")][1] == "net.fc1.weight"
    assert list(m.state_dict()) == list(tm.state_dict()) == \
        ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight"]


def test_shared_parameter_listed_once():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, nn.ReLU(), a)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_setattr_rules_and_errors():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(jitgrad.ones(1))

    with pytest.raises(AttributeError,
                       match=r"^cannot assign parameters before Module.__init__\(\) call$"):
        Early()
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=re.escape(
            "cannot assign 'jitgrad.FloatTensor' as parameter 'weight' (torch.nn.Parameter or "
            "None expected)")):
        lin.weight = jitgrad.ones(2, 2)
    lin.bias = None
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(TypeError, match="as child module '0'"):
        seq.__setattr__("0", 3)
    with pytest.raises(AttributeError, match="^'Linear' object has no attribute 'nope'$"):
        lin.nope  # noqa: B018
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        lin.register_buffer("forward", jitgrad.zeros(1))
    with pytest.raises(ValueError, match="^Cannot assign non-leaf Tensor to parameter 'w'"):
        lin.register_parameter("w", _non_leaf_parameter())
    with pytest.raises(TypeError, match="cannot assign 'jitgrad.FloatTensor' object to "
                                        "parameter 'w'"):
        lin.register_parameter("w", jitgrad.ones(1))
    with pytest.raises(KeyError, match=r'parameter name can.+t contain'):
        lin.register_parameter("a.b", None)
    del lin.weight
    assert [n for n, _ in lin.named_parameters()] == []


def _non_leaf_parameter():
    p = nn.Parameter(jitgrad.ones(1))  # torch reaches this state through Tensor subclassing
    p._grad_fn = (jitgrad.ones(1, requires_grad=True) * 2).grad_fn
    return p


def test_reassigning_a_name_moves_it_between_tables():
    m = nn.Module()
    m.x = nn.Linear(1, 1)
    assert "x" in m._modules
    m.x = nn.Parameter(jitgrad.ones(1))
    assert "x" in m._parameters and "x" not in m._modules
    m.register_buffer("b", jitgrad.zeros(1))
    m.b = jitgrad.ones(1)
    assert m._buffers["b"].tolist() == [1.0]
    with pytest.raises(TypeError, match="as buffer 'b'"):
        m.b = 3


def test_train_eval_and_zero_grad():
    m = Net()
    assert m.training and m.fc1.training
    assert m.eval() is m and not m.fc1.training and not m.act.training
    assert m.train() is m and m.fc2.training
    with pytest.raises(ValueError, match="^training mode is expected to be boolean$"):
        m.train("x")
    m(jitgrad.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    grads = [p.grad for p in m.parameters()]
    m.zero_grad(set_to_none=False)
    assert all(p.grad is g and not np.any(g.numpy()) for p, g in zip(m.parameters(), grads))
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_forward_missing_and_call_hooks():
    with pytest.raises(NotImplementedError,
                       match='^Module \\[Module\\] is missing the required "forward" function$'):
        nn.Module()(1)
    lin = nn.Linear(2, 2)
    seen = []
    h = lin.register_forward_hook(lambda mod, args, out: out * 0)
    h2 = lin.register_forward_pre_hook(lambda mod, args: seen.append(args[0].shape))
    assert not np.any(lin(jitgrad.ones(3, 2)).detach().numpy())
    assert seen == [(3, 2)]
    h.remove()
    h2.remove()
    assert np.any(lin(jitgrad.ones(3, 2)).detach().numpy())


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Sequential(
        nn.Linear(3, 2, bias=False), nn.GELU(approximate="tanh")), nn.Tanh(), nn.GELU(),
        nn.SiLU(), nn.Dropout(0.25), nn.LayerNorm(5), nn.ReLU(inplace=True), nn.Identity())
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Sequential(
        torch.nn.Linear(3, 2, bias=False), torch.nn.GELU(approximate="tanh")), torch.nn.Tanh(),
        torch.nn.GELU(), torch.nn.SiLU(), torch.nn.Dropout(0.25), torch.nn.LayerNorm(5),
        torch.nn.ReLU(inplace=True), torch.nn.Identity())
    assert repr(m) == repr(tm)
    assert repr(nn.Module()) == repr(torch.nn.Module()) == "Module()"
    assert repr(Net()) == repr(torch_net()).replace("TorchNet", "Net")


# ---------------------------------------------------------------- state_dict


def test_state_dict_round_trip_and_detached_values():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    assert all(not v.requires_grad and v.grad_fn is None for v in sd.values())
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight
    res = b.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>"
    assert res.missing_keys == [] and res.unexpected_keys == []
    x = jitgrad.randn(3, 4)
    np.testing.assert_array_equal(arr(a(x)), arr(b(x)))
    w = b.fc1.weight
    b.load_state_dict(Net().state_dict())
    assert b.fc1.weight is w  # copied in place
    assert w._version >= 1


def test_load_state_dict_errors_match_torch():
    torch = pytest.importorskip("torch")
    m, tm = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 2))), \
        torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                            torch.nn.Sequential(torch.nn.Linear(3, 2)))
    sd, tsd = dict(m.state_dict()), dict(tm.state_dict())
    for d, mk in ((sd, jitgrad.zeros), (tsd, torch.zeros)):
        del d["0.bias"]
        d["foo"] = mk(1)
        d["2.0.bar"] = mk(1)
        d["2.0.weight"] = mk(5, 5)
    with pytest.raises(RuntimeError) as ours:
        m.load_state_dict(sd)
    with pytest.raises(RuntimeError) as theirs:
        tm.load_state_dict(tsd)
    assert torch_text(str(ours.value)) == str(theirs.value)
    d2 = dict(sd)
    d2["2.0.weight"] = m.state_dict()["2.0.weight"]
    td2 = dict(tsd)
    td2["2.0.weight"] = tm.state_dict()["2.0.weight"]
    res, tres = m.load_state_dict(d2, strict=False), tm.load_state_dict(td2, strict=False)
    assert res.missing_keys == tres.missing_keys == ["0.bias"]
    assert res.unexpected_keys == tres.unexpected_keys
    assert repr(res) == repr(tres)
    with pytest.raises(TypeError, match="^Expected state_dict to be dict-like, got"):
        m.load_state_dict([1, 2])


def test_load_state_dict_assign():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    sd = a.state_dict()
    b.load_state_dict(sd, assign=True)
    assert isinstance(b.weight, nn.Parameter) and b.weight.requires_grad
    np.testing.assert_array_equal(arr(b.weight), arr(a.weight))


def test_module_to_double():
    m = Net().double()
    assert all(p.dtype is jitgrad.float64 for p in m.parameters())
    assert m.steps.dtype is jitgrad.float64
    out = m(jitgrad.randn(2, 4, dtype=jitgrad.float64))
    assert out.dtype is jitgrad.float64
    assert all(p.dtype is jitgrad.float32 for p in m.to(jitgrad.float32).parameters())


# ---------------------------------------------------------------- Linear


def test_linear_init_bounds_and_statistics():
    torch = pytest.importorskip("torch")
    jitgrad.manual_seed(1)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = arr(lin.weight), arr(lin.bias)
    assert w.shape == (300, 400) and b.shape == (300,)
    assert w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-a, a): mean 0, variance a^2 / 3; 120000 samples put both within a few percent.
    assert abs(w.mean()) < 0.01 * bound
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.02
    assert np.abs(w).max() > 0.99 * bound
    assert lin.in_features == 400 and lin.out_features == 300
    tl = torch.nn.Linear(400, 300)  # same distribution in torch
    assert abs(tl.weight.detach().numpy().var() / w.var() - 1) < 0.03


def test_linear_init_is_seeded():
    jitgrad.manual_seed(7)
    a = nn.Linear(5, 3)
    jitgrad.manual_seed(7)
    b = nn.Linear(5, 3)
    np.testing.assert_array_equal(arr(a.weight), arr(b.weight))
    np.testing.assert_array_equal(arr(a.bias), arr(b.bias))
    assert not np.array_equal(arr(a.weight), arr(nn.Linear(5, 3).weight))


@pytest.mark.parametrize("shape", [(5, 4), (2, 5, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(shape, bias):
    torch = pytest.importorskip("torch")
    tl = torch.nn.Linear(4, 3, bias=bias)
    lin = nn.Linear(4, 3, bias=bias)
    copy_weights(tl, lin)
    x = jitgrad.randn(tuple(shape), requires_grad=True)
    tx = tt(x, True)
    y, ty = lin(x), tl(tx)
    np.testing.assert_allclose(arr(y), arr(ty), rtol=1e-6, atol=1e-6)
    if bias or len(shape) == 2:  # without bias, the node on top is matmul's (the core's)
        assert y.grad_fn.name() == ty.grad_fn.name()
    g = jitgrad.randn(tuple(y.shape))
    y.backward(g)
    ty.backward(tt(g))
    np.testing.assert_allclose(arr(x.grad), arr(tx.grad), rtol=1e-5, atol=1e-6)
    for p, tp in zip(lin.parameters(), tl.parameters()):
        np.testing.assert_allclose(arr(p.grad), arr(tp.grad), rtol=1e-5, atol=1e-6)


def test_linear_addmm_graph_like_torch():
    torch = pytest.importorskip("torch")
    lin = nn.Linear(3, 2)
    y = lin(jitgrad.randn(4, 3))
    names = [None if f is None or f[0] is None else f[0].name() for f in y.grad_fn.next_functions]
    tl = torch.nn.Linear(3, 2)
    ty = tl(torch.randn(4, 3))
    tnames = [None if f[0] is None else f[0].name().replace("torch::autograd::", "")
              for f in ty.grad_fn.next_functions]
    assert names == tnames == ["AccumulateGrad", None, "TBackward0"]


def test_linear_dtype_argument_and_bad_input():
    lin = nn.Linear(3, 2, dtype=jitgrad.float64)
    assert lin.weight.dtype is jitgrad.float64 and lin.bias.dtype is jitgrad.float64
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied "
                                                     "(4x5 and 3x2)")):
        lin(jitgrad.randn(4, 5, dtype=jitgrad.float64))


# ---------------------------------------------------------------- layers and Sequential


def test_sequential_container_protocol():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Tanh()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sl = s[1:]
    assert type(sl) is nn.Sequential and list(sl._modules) == ["1", "2"] and sl[0] is b
    with pytest.raises(IndexError, match="^index 3 is out of range$"):
        s[3]
    with pytest.raises(IndexError, match="^index -4 is out of range$"):
        s[-4]
    s[1] = nn.GELU()
    assert isinstance(s[1], nn.GELU)
    del s[0]
    assert list(s._modules) == ["0", "1"] and isinstance(s[0], nn.GELU)
    assert s.append(nn.ReLU()) is s and len(s) == 3
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"] and named.fc is named[0]


def test_mlp_forward_backward_matches_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8),
                             torch.nn.GELU(), torch.nn.Linear(8, 8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 8), torch.nn.SiLU(), torch.nn.LayerNorm(8),
                             torch.nn.Linear(8, 3))
    m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8),
                      nn.Tanh(), nn.Linear(8, 8), nn.SiLU(), nn.LayerNorm(8), nn.Linear(8, 3))
    copy_weights(tm, m)
    x = jitgrad.randn(10, 6)
    target = jitgrad.randint(0, 3, (10,))
    loss = F.cross_entropy(m(x), target)
    tloss = torch.nn.functional.cross_entropy(tm(tt(x)), tt(target))
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    loss.backward()
    tloss.backward()
    for (n, p), (tn, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert n == tn
        np.testing.assert_allclose(arr(p.grad), arr(tp.grad), rtol=1e-4, atol=1e-6)


def test_dropout_module_train_and_eval():
    d = nn.Dropout(0.5)
    x = jitgrad.ones(1000)
    y = arr(d(x))
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="^dropout probability has to be between 0 and 1, "
                                         "but got 1.5$"):
        nn.Dropout(1.5)


def test_layernorm_module_matches_torch():
    torch = pytest.importorskip("torch")
    ln, tln = nn.LayerNorm((3, 4)), torch.nn.LayerNorm((3, 4))
    with torch.no_grad():
        tln.weight.normal_()
        tln.bias.normal_()
    copy_weights(tln, ln)
    x = jitgrad.randn(2, 3, 4)
    np.testing.assert_allclose(arr(ln(x)), arr(tln(tt(x))), rtol=1e-5, atol=1e-5)
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None


def test_mse_op_mean_gradient_with_broadcast_operands():
    # The op itself (not F.mse_loss, which expands first) divides by the broadcast numel.
    from jitgrad.ops.nn_ops import MSE_LOSS
    from jitgrad.ops.registry import apply

    x = jitgrad.randn(1, 3, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(4, 3, dtype=jitgrad.float64)
    apply(MSE_LOSS, x, y, reduction="mean").backward()
    expected = (2 * (x.detach().numpy() - y.numpy())).sum(0, keepdims=True) / 12
    np.testing.assert_allclose(arr(x.grad), expected, rtol=1e-12)


def test_train_mlp_example_runs_and_learns():
    import pathlib
    import subprocess
    import sys

    script = pathlib.Path(__file__).parent.parent / "examples" / "train_mlp.py"
    proc = subprocess.run([sys.executable, str(script), "--epochs", "4"], capture_output=True,
                          text=True, timeout=300, check=True)
    lines = proc.stdout.splitlines()
    losses = [float(line.split()[-1]) for line in lines if line.startswith("epoch")]
    assert len(losses) == 4 and losses[-1] < losses[0]
    acc = float(re.search(r"test accuracy (\d\.\d+)", proc.stdout).group(1))
    assert acc > 0.5  # 10 classes: chance is 0.1


# ---------------------------------------------------------------- nn.init and module utilities


def test_init_gains_and_errors_match_torch():
    torch = pytest.importorskip("torch")
    for name, param in [("linear", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3),
                        ("selu", None), ("conv2d", None)]:
        assert nn.init.calculate_gain(name, param) == torch.nn.init.calculate_gain(name, param)
    for args in [("foo",), ("leaky_relu", "x"), ("leaky_relu", True)]:
        with pytest.raises(ValueError) as theirs:
            torch.nn.init.calculate_gain(*args)
        with pytest.raises(ValueError, match="^" + re.escape(str(theirs.value)) + "$"):
            nn.init.calculate_gain(*args)
    with pytest.raises(ValueError, match="^Fan in and fan out can not be computed for tensor "
                                         "with fewer than 2 dimensions$"):
        nn.init.kaiming_uniform_(jitgrad.empty(3))
    with pytest.raises(ValueError, match=re.escape(
            "Mode fan_x not supported, please use one of ['fan_in', 'fan_out']")):
        nn.init.kaiming_normal_(jitgrad.empty(3, 3), mode="fan_x")
    with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
        nn.init.kaiming_uniform_(jitgrad.empty(0, 3))


@pytest.mark.parametrize("fn,std", [
    (lambda t: nn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
     math.sqrt(2 / 200)),
    (lambda t: nn.init.xavier_normal_(t, gain=2.0), 2 * math.sqrt(2 / 500)),
    (lambda t: nn.init.xavier_uniform_(t), math.sqrt(2 / 500)),
    (lambda t: nn.init.kaiming_uniform_(t, a=0.0), math.sqrt(2 / 300)),
    (lambda t: nn.init.normal_(t, 1.0, 0.5), 0.5),
    (lambda t: nn.init.uniform_(t, -1.0, 1.0), 1 / math.sqrt(3)),
])
def test_init_distributions(fn, std):
    p = nn.Parameter(jitgrad.empty(200, 300))
    assert fn(p) is p and p.requires_grad and p.grad_fn is None
    assert abs(arr(p).std() / std - 1) < 0.02  # 60000 samples


def test_init_constant_ones_zeros():
    p = nn.Parameter(jitgrad.empty(2, 3))
    assert arr(nn.init.constant_(p, 0.5)).tolist() == [[0.5] * 3] * 2
    assert arr(nn.init.ones_(p)).sum() == 6 and arr(nn.init.zeros_(p)).sum() == 0


def test_module_apply_get_submodule_requires_grad_and_device():
    m = Net()
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "Tanh", "Linear", "Net"]
    assert m.get_submodule("fc1") is m.fc1 and m.get_submodule("") is m
    with pytest.raises(AttributeError, match="^Net has no attribute `nope`$"):
        m.get_submodule("nope")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    assert m.to("cpu") is m
    assert "fc1" in dir(m) and "scale" in dir(m)


def test_module_deepcopy_and_pickle():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    x = jitgrad.randn(4, 2)
    for c in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(c[0].weight) is nn.Parameter and c[0].weight is not m[0].weight
        np.testing.assert_array_equal(arr(c(x)), arr(m(x)))
        with jitgrad.no_grad():
            c[0].weight.zero_()
        assert np.any(arr(m[0].weight))
