"""nn modules of issue 15 against torch: losses, activations, containers, Flatten/Unflatten,
Embedding (repr, state_dict keys, values and gradients in float32/float64), the new
functional ops (pad modes, one_hot, normalize, l1_loss ...) with gradcheck in float64, and
torch's error texts."""

import re
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.nn import functional as F

from torch_compare import same_error

TOL = {"float32": {"rtol": 1e-5, "atol": 1e-6}, "float64": {"rtol": 1e-10, "atol": 1e-12}}
DTYPES = pytest.mark.parametrize("dtype", ["float32", "float64"])


def _torch():
    return pytest.importorskip("torch")


def _run_both(build, arrays, dtype, grad=True, check_name=True):
    """``build(lib)`` returns a function of tensors; runs it on both libraries with the same
    float arrays (requiring grad) and compares the outputs and the input gradients."""
    torch = _torch()
    outs, grads = [], []
    for lib in (jitgrad, torch):
        ts = [(lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=grad)
               if a.dtype.kind == "f" else lib.tensor(a)) if isinstance(a, np.ndarray) else a
              for a in arrays]
        out = build(lib)(*ts)
        outs.append(out)
        if grad:
            go = np.random.default_rng(7).standard_normal(tuple(out.shape))
            out.backward(lib.tensor(go, dtype=out.dtype))
            grads.append([t.grad for t in ts if isinstance(t, lib.Tensor) and t.requires_grad])
    j, t = outs
    assert tuple(j.shape) == tuple(t.shape)
    assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(), **TOL[dtype])
    if t.grad_fn is not None and check_name:
        assert j.grad_fn.name() == t.grad_fn.name()
    for a, b in zip(*grads) if grad else ():
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL[dtype])
    return j, t


def _rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------- repr and state_dict


REPRS = [
    lambda m: m.MSELoss(), lambda m: m.L1Loss(reduction="sum"), lambda m: m.SmoothL1Loss(),
    lambda m: m.HuberLoss(delta=2.0), lambda m: m.BCELoss(), lambda m: m.BCEWithLogitsLoss(),
    lambda m: m.CrossEntropyLoss(label_smoothing=0.1), lambda m: m.NLLLoss(),
    lambda m: m.Sigmoid(), lambda m: m.Tanh(), lambda m: m.ReLU(), lambda m: m.LeakyReLU(),
    lambda m: m.LeakyReLU(0.2, inplace=True), lambda m: m.ELU(), lambda m: m.ELU(0.5, True),
    lambda m: m.GELU(), lambda m: m.SiLU(), lambda m: m.Softplus(), lambda m: m.Softplus(2, 5),
    lambda m: m.Softmax(), lambda m: m.Softmax(dim=1), lambda m: m.LogSoftmax(dim=-1),
    lambda m: m.Flatten(), lambda m: m.Flatten(0, 2), lambda m: m.Unflatten(1, (2, 3)),
    lambda m: m.Identity(), lambda m: m.Dropout(0.2), lambda m: m.Embedding(10, 3),
    lambda m: m.Embedding(10, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0,
                          scale_grad_by_freq=True),
    lambda m: m.LayerNorm(4), lambda m: m.ModuleList(),
    lambda m: m.ModuleList([m.Linear(2, 2), m.Linear(2, 2), m.ReLU(), m.Linear(2, 3)]),
    lambda m: m.ModuleDict({"act": m.ReLU(), "lin": m.Linear(3, 4)}),
    lambda m: m.Sequential(m.Flatten(), m.ModuleList([m.Tanh(), m.Tanh()]), m.Sigmoid()),
    lambda m: m.ParameterDict({"b": m.Parameter(m_ones(m, 2))}),
]


def m_ones(m, *shape):
    lib = jitgrad if m is nn else _torch()
    return lib.ones(*shape)


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_repr_matches_torch(i):
    torch = _torch()
    theirs = repr(REPRS[i](torch.nn)).replace("torch", "jitgrad")
    assert repr(REPRS[i](nn)) == theirs


def test_parameter_list_repr_matches_torch():
    torch = _torch()
    ours = nn.ParameterList([nn.Parameter(jitgrad.ones(2)),
                             nn.Parameter(jitgrad.ones(2, 3, dtype=jitgrad.float64))])
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)),
                                     torch.nn.Parameter(torch.ones(2, 3, dtype=torch.float64))])
    assert repr(ours) == repr(theirs).replace("torch", "jitgrad")


STATE_KEYS = [
    lambda m, t: m.CrossEntropyLoss(weight=t(3)), lambda m, t: m.NLLLoss(weight=t(3)),
    lambda m, t: m.BCELoss(weight=t(3)), lambda m, t: m.BCEWithLogitsLoss(pos_weight=t(3)),
    lambda m, t: m.BCEWithLogitsLoss(weight=t(3), pos_weight=t(3)),
    lambda m, t: m.CrossEntropyLoss(), lambda m, t: m.Embedding(4, 2),
    lambda m, t: m.ModuleList([m.Linear(2, 2), m.Sequential(m.Linear(2, 1), m.ReLU())]),
    lambda m, t: m.ModuleDict({"b": m.Linear(2, 2), "a": m.LayerNorm(2)}),
    lambda m, t: m.ParameterList([m.Parameter(t(2)), m.Parameter(t(3))]),
    lambda m, t: m.ParameterDict({"w": m.Parameter(t(2)), "b": m.Parameter(t(1))}),
]


@pytest.mark.parametrize("i", range(len(STATE_KEYS)))
def test_state_dict_keys_match_torch(i):
    torch = _torch()
    ours = STATE_KEYS[i](nn, lambda n: jitgrad.ones(n))
    theirs = STATE_KEYS[i](torch.nn, lambda n: torch.ones(n))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict({k: jitgrad.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


# ---------------------------------------------------------------- losses


def _loss_cases():
    rng = _rng()
    x, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    p, q = rng.uniform(0.05, 0.95, (4, 3)), rng.uniform(0, 1, (4, 3))
    w3 = rng.uniform(0.5, 2, (3,))
    logits, cls = rng.standard_normal((4, 3)), np.array([0, 2, 1, 2])
    cases = []
    for r in ("mean", "sum", "none"):
        cases += [
            (f"MSELoss-{r}", lambda m, r=r: m.MSELoss(reduction=r), (x, t)),
            (f"L1Loss-{r}", lambda m, r=r: m.L1Loss(reduction=r), (x, t)),
            (f"SmoothL1Loss-{r}", lambda m, r=r: m.SmoothL1Loss(reduction=r, beta=0.7), (x, t)),
            (f"SmoothL1Loss_beta0-{r}", lambda m, r=r: m.SmoothL1Loss(reduction=r, beta=0.0),
             (x, t)),
            (f"HuberLoss-{r}", lambda m, r=r: m.HuberLoss(reduction=r, delta=0.6), (x, t)),
            (f"BCELoss-{r}", lambda m, r=r: m.BCELoss(reduction=r), (p, q)),
            (f"BCEWithLogitsLoss-{r}", lambda m, r=r: m.BCEWithLogitsLoss(reduction=r), (x, q)),
            (f"CrossEntropyLoss-{r}", lambda m, r=r: m.CrossEntropyLoss(reduction=r),
             (logits, cls)),
            (f"CrossEntropyLoss_smooth-{r}",
             lambda m, r=r: m.CrossEntropyLoss(reduction=r, label_smoothing=0.2),
             (logits, cls)),
            (f"CrossEntropyLoss_probs-{r}", lambda m, r=r: m.CrossEntropyLoss(reduction=r),
             (logits, q / q.sum(1, keepdims=True))),
            (f"NLLLoss-{r}", lambda m, r=r: m.NLLLoss(reduction=r, ignore_index=1),
             (logits, cls)),
        ]
    cases += [
        ("BCELoss-weight", lambda m: m.BCELoss(weight=_const(m, w3)), (p, q)),
        ("BCEWithLogitsLoss-pos_weight",
         lambda m: m.BCEWithLogitsLoss(pos_weight=_const(m, w3)), (x, q)),
        ("BCEWithLogitsLoss-both", lambda m: m.BCEWithLogitsLoss(
            weight=_const(m, w3), pos_weight=_const(m, w3[::-1].copy()), reduction="sum"),
         (x, q)),
        ("CrossEntropyLoss-weight", lambda m: m.CrossEntropyLoss(weight=_const(m, w3)),
         (logits, cls)),
        ("CrossEntropyLoss-weight_smooth_ignore", lambda m: m.CrossEntropyLoss(
            weight=_const(m, w3), label_smoothing=0.3, ignore_index=2), (logits, cls)),
        ("NLLLoss-weight", lambda m: m.NLLLoss(weight=_const(m, w3)), (logits, cls)),
    ]
    return cases


def _const(m, a):
    lib = jitgrad if m is nn else _torch()
    return lib.tensor(a, dtype=lib.get_default_dtype())


LOSS_CASES = _loss_cases()


@DTYPES
@pytest.mark.parametrize("name,make,arrays", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_loss_modules_match_torch(name, make, arrays, dtype):
    torch = _torch()

    def build(lib):
        module = make(nn if lib is jitgrad else torch.nn)
        if dtype == "float64":
            module = module.double()
        return module
    # (torch divides the probabilities' mean by a Python number: DivBackward1, a name jitgrad's
    # div does not give)
    _run_both(build, list(arrays), dtype, check_name=name != "CrossEntropyLoss_probs-mean")


def test_loss_functional_weights_and_legacy_arguments():
    torch = _torch()
    rng = _rng()
    x, t, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.uniform(0.5, 2, (3, 4))
    for r in ("mean", "sum", "none"):
        _run_both(lambda lib, r=r: lambda a, b: lib.nn.functional.l1_loss(
            a, b, reduction=r, weight=lib.tensor(w)), [x, t], "float64")
        _run_both(lambda lib, r=r: lambda a, b: lib.nn.functional.huber_loss(
            a, b, reduction=r, weight=lib.tensor(w)), [x, t], "float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_both(lambda lib: lambda a, b: lib.nn.functional.smooth_l1_loss(
            a, b, size_average=False), [x, t], "float64")
        _run_both(lambda lib: lambda a, b: lib.nn.functional.binary_cross_entropy_with_logits(
            a, b, reduce=False), [x, rng.uniform(0, 1, (3, 4))], "float64")
    with pytest.warns(UserWarning, match="target size"):
        F.l1_loss(jitgrad.ones(3, 1), jitgrad.ones(3))
    assert torch is not None


def test_loss_broadcast_target_warns_and_matches_torch():
    rng = _rng()
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss"):
            _run_both(lambda lib, name=name: lambda a, b: getattr(lib.nn.functional, name)(
                a, b), [x, t], "float64")


@pytest.mark.parametrize("fn,msg_fn", [
    (lambda L: L.nn.functional.binary_cross_entropy(L.tensor([0.5, 1.5]), L.tensor([1.0, 0.0])),
     None),
    (lambda L: L.nn.functional.binary_cross_entropy(L.ones(3, 1) * 0.5, L.ones(3)), None),
    (lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.ones(3, 1), L.ones(3)), None),
    (lambda L: L.nn.functional.smooth_l1_loss(L.ones(3), L.ones(3), beta=-1.0), None),
    (lambda L: L.nn.functional.huber_loss(L.ones(3), L.ones(3), delta=0.0), None),
    (lambda L: L.nn.functional.l1_loss(L.ones(3), L.ones(3), reduction="avg"), None),
    (lambda L: L.nn.functional.l1_loss(L.ones(3), L.ones(3), weight=L.ones(2)), None),
    (lambda L: L.nn.MSELoss(reduction="bad")(L.ones(2), L.ones(2)), None),
])
def test_loss_errors_match_torch(fn, msg_fn):
    _torch()
    same_error(fn)


def test_bce_clamps_log_at_minus_100_like_torch():
    _run_both(lambda lib: lambda a, b: lib.nn.functional.binary_cross_entropy(
        a, b, reduction="none"), [np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5])],
        "float64", grad=False)


# ---------------------------------------------------------------- activations


ACTIVATIONS = [
    ("Sigmoid", lambda m: m.Sigmoid()), ("Tanh", lambda m: m.Tanh()),
    ("ReLU", lambda m: m.ReLU()), ("LeakyReLU", lambda m: m.LeakyReLU(0.1)),
    ("ELU", lambda m: m.ELU(0.7)), ("GELU", lambda m: m.GELU("tanh")),
    ("SiLU", lambda m: m.SiLU()), ("Softplus", lambda m: m.Softplus(2.0, 1.5)),
    ("Softmax", lambda m: m.Softmax(dim=1)), ("LogSoftmax", lambda m: m.LogSoftmax(dim=0)),
]


@DTYPES
@pytest.mark.parametrize("name,make", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_modules_match_torch(name, make, dtype):
    torch = _torch()
    x = _rng().standard_normal((3, 5)) * 2
    _run_both(lambda lib: make(nn if lib is jitgrad else torch.nn), [x], dtype)


@pytest.mark.parametrize("name", ["leaky_relu", "elu"])
def test_inplace_activations_match_torch(name):
    torch = _torch()
    x = _rng().standard_normal((3, 4))

    def build(lib):
        def f(a):
            b = a * 1.0
            getattr(lib.nn.functional, name)(b, inplace=True)
            return b
        return f
    _run_both(build, [x], "float64")
    j, t = build(jitgrad)(jitgrad.tensor(x, requires_grad=True)), \
        build(torch)(torch.tensor(x, requires_grad=True))
    assert j.grad_fn.name() == t.grad_fn.name()
    saved = {"leaky_relu": ["result", "negative_slope"],
             "elu": ["result", "alpha", "scale", "input_scale"]}[name]
    for key in saved:
        got, want = getattr(j.grad_fn, f"_saved_{key}"), getattr(t.grad_fn, f"_saved_{key}")
        if isinstance(want, (int, float)):
            assert got == want
        else:
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())


def test_functional_inplace_forms():
    torch = _torch()
    x = _rng().standard_normal((2, 3))
    for name in ("leaky_relu_", "elu_"):
        a, b = jitgrad.tensor(x), torch.tensor(x)
        getattr(F, name)(a)
        getattr(torch.nn.functional, name)(b)
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_inplace_with_negative_slope_raises_like_torch():
    _torch()
    for name in ("leaky_relu", "elu"):
        def run(L, name=name):
            y = L.ones(2, requires_grad=True) * 1
            getattr(L.nn.functional, name)(y, -0.1, inplace=True)
            y.sum().backward()
        same_error(run)


def test_softmax_module_without_dim_warns_like_torch():
    x = jitgrad.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        nn.Softmax()(x)


@pytest.mark.parametrize("fn", [lambda x: F.leaky_relu(x, 0.3), lambda x: F.elu(x, 0.5),
                                lambda x: F.softplus(x, 2.0, 3.0)])
def test_templates_match_eager_under_numba(fn):
    pytest.importorskip("numba")
    x = jitgrad.tensor([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -1.5, 2.0, 30.0, -30.0],
                       dtype=jitgrad.float64)
    with np.errstate(all="ignore"):
        eager = fn(x).numpy()
        compiled = jitgrad.jit(fn, backend="numba")(x).numpy()
    np.testing.assert_allclose(compiled, eager, rtol=1e-12, equal_nan=True)


# ---------------------------------------------------------------- Flatten, Unflatten


@pytest.mark.parametrize("make", [lambda m: m.Flatten(), lambda m: m.Flatten(0, -2),
                                  lambda m: m.Unflatten(1, (3, 2)),
                                  lambda m: m.Unflatten(-1, (2, -1))])
def test_flatten_unflatten_match_torch(make):
    torch = _torch()
    x = _rng().standard_normal((2, 6, 4))
    if isinstance(make(torch.nn), torch.nn.Unflatten) and make(torch.nn).dim == 1:
        x = _rng().standard_normal((2, 6, 4))
    _run_both(lambda lib: make(nn if lib is jitgrad else torch.nn), [x], "float64")


def test_unflatten_errors_match_torch():
    _torch()
    same_error(lambda L: L.nn.Unflatten(1, (4, 2))(L.ones(2, 6)))
    same_error(lambda L: L.nn.Unflatten(1, [2, 1.5]))


# ---------------------------------------------------------------- Embedding


@DTYPES
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 1}, {"scale_grad_by_freq": True},
                                {"padding_idx": -2, "scale_grad_by_freq": True}],
                         ids=["plain", "padding", "freq", "both"])
def test_embedding_matches_torch(kw, dtype):
    torch = _torch()
    idx = np.array([[1, 3, 3], [0, 1, 3]])
    w = _rng().standard_normal((5, 4))
    _run_both(lambda lib: lambda weight: lib.nn.functional.embedding(lib.tensor(idx), weight,
                                                                     **kw), [w], dtype)
    assert torch is not None


def test_embedding_module_init_padding_and_from_pretrained():
    jitgrad.manual_seed(0)
    e = nn.Embedding(6, 3, padding_idx=2)
    assert e.weight.shape == (6, 3) and e.weight[2].abs().sum().item() == 0
    assert e.weight.abs().sum().item() > 0
    w = jitgrad.randn(4, 2)
    frozen = nn.Embedding.from_pretrained(w)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(jitgrad.tensor([3, 0])).numpy(), w.numpy()[[3, 0]])
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalizes_like_torch(norm_type):
    torch = _torch()
    w = _rng().standard_normal((5, 3)) * 2
    idx = np.array([[0, 2], [2, 4]])
    jw, tw = jitgrad.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    jo = F.embedding(jitgrad.tensor(idx), jw, max_norm=1.5, norm_type=norm_type)
    to = torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.5, norm_type=norm_type)
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(jw.detach().numpy(), tw.detach().numpy(), rtol=1e-12)
    jo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(jw.grad.numpy(), tw.grad.numpy())


def test_embedding_errors_match_torch():
    _torch()
    same_error(lambda L: L.nn.functional.embedding(L.tensor([5]), L.ones(3, 2)))
    same_error(lambda L: L.nn.functional.embedding(L.tensor([-1]), L.ones(3, 2)))
    same_error(lambda L: L.nn.functional.embedding(L.tensor([1.0]), L.ones(3, 2)))
    same_error(lambda L: L.nn.Embedding(3, 2, padding_idx=3))
    assert repr(nn.Embedding(3, 2, sparse=True)) == "Embedding(3, 2, sparse=True)"


def test_embedding_gradcheck_float64():
    w = jitgrad.randn(5, 3, dtype=jitgrad.float64, requires_grad=True)
    idx = jitgrad.tensor([[0, 4], [4, 1]])
    assert gradcheck(lambda w: F.embedding(idx, w), (w,))
    assert gradgradcheck(lambda w: F.embedding(idx, w) ** 2, (w,))


# ---------------------------------------------------------------- containers


def test_module_list_operations_match_torch():
    torch = _torch()
    for lib, m in ((jitgrad, nn), (torch, torch.nn)):
        ml = m.ModuleList([m.Linear(2, 2), m.ReLU()])
        ml.append(m.Tanh())
        ml.extend([m.Sigmoid()])
        ml.insert(1, m.Identity())
        assert [type(x).__name__ for x in ml] == ["Linear", "Identity", "ReLU", "Tanh",
                                                  "Sigmoid"]
        assert type(ml[-1]).__name__ == "Sigmoid" and len(ml[1:3]) == 2
        assert isinstance(ml[1:3], m.ModuleList)
        popped = ml.pop(1)
        assert type(popped).__name__ == "Identity" and list(ml._modules) == ["0", "1", "2", "3"]
        del ml[0]
        assert [type(x).__name__ for x in ml] == ["ReLU", "Tanh", "Sigmoid"]
        ml[0] = m.ELU()
        assert type(ml[0]).__name__ == "ELU"
        both = ml + m.ModuleList([m.ReLU()])
        assert len(both) == 4 and list(both._modules) == ["0", "1", "2", "3"]
        with pytest.raises(IndexError, match="index 7 is out of range"):
            ml[7]
        assert lib is not None


def test_module_dict_and_parameter_containers_register_parameters():
    torch = _torch()
    counts = []
    for m, t in ((nn, jitgrad), (torch.nn, torch)):
        md = m.ModuleDict({"a": m.Linear(2, 3)})
        md["b"] = m.Linear(3, 1)
        md.update([("c", m.ReLU())])
        assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
        md.pop("c")
        pl = m.ParameterList([m.Parameter(t.ones(2))])
        pl.append(t.zeros(3))  # a plain tensor becomes a Parameter
        assert isinstance(pl[1], m.Parameter) and len(pl) == 2
        pd = m.ParameterDict({"w": t.ones(2)})
        pd["v"] = m.Parameter(t.ones(1))
        assert isinstance(pd["w"], m.Parameter) and list(pd.keys()) == ["w", "v"]
        holder = m.Module()
        holder.md, holder.pl, holder.pd = md, pl, pd
        counts.append([n for n, _ in holder.named_parameters()])
    assert counts[0] == counts[1]


def test_containers_have_no_forward_like_torch():
    with pytest.raises(NotImplementedError):
        nn.ModuleList([nn.ReLU()])(jitgrad.ones(1))


def test_one_training_step_with_new_modules_matches_torch():
    torch = _torch()
    rng = _rng()
    x, y = rng.standard_normal((8, 2, 3)), rng.integers(0, 4, (8,))

    def model(m, lib):
        lib.manual_seed(0)
        net = m.Sequential(m.Flatten(), m.Linear(6, 5), m.LeakyReLU(0.1), m.Linear(5, 4),
                           m.ELU(), m.Linear(4, 4)).double()
        return net
    net, tnet = model(nn, jitgrad), model(torch.nn, torch)
    net.load_state_dict({k: jitgrad.tensor(v.numpy()) for k, v in tnet.state_dict().items()})
    for module, lib in ((net, jitgrad), (tnet, torch)):
        loss = lib.nn.CrossEntropyLoss(label_smoothing=0.1)(module(lib.tensor(x)),
                                                             lib.tensor(y))
        loss.backward()
    for (n, p), (tn, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        assert n == tn
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_public_names_exist():
    names = ("MSELoss L1Loss SmoothL1Loss HuberLoss BCELoss BCEWithLogitsLoss CrossEntropyLoss "
             "NLLLoss Sigmoid Tanh ReLU LeakyReLU ELU GELU SiLU Softplus Softmax LogSoftmax "
             "Flatten Unflatten Identity Dropout Embedding LayerNorm ModuleList ModuleDict "
             "ParameterList ParameterDict").split()
    assert [n for n in names if not hasattr(nn, n)] == []
    fnames = ("l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
              "binary_cross_entropy_with_logits leaky_relu elu softplus embedding pad one_hot "
              "normalize").split()
    assert [n for n in fnames if not hasattr(F, n)] == []
    assert re.match(r"^\w+$", "ok")
