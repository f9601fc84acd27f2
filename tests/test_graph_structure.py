"""Autograd graphs as torch records them: for every op database record (``opdb.py``) and for
common ``nn`` modules, the whole backward DAG from the outputs' ``grad_fn`` down to the leaves
(node names, edges in order, ``None`` edges, which leaf each ``AccumulateGrad`` belongs to)
equals torch's, but for the differences listed in ``KNOWN``/``MODULE_KNOWN`` with their
reasons (each of which must still differ, so the lists cannot go stale). Also: grad_fn classes
named as torch's, and torch's warning when a tensor requiring grad becomes a Python float.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from opdb import OP_DB, convert

import jitgrad

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# record name -> why jitgrad's graph differs from torch's
KNOWN = {
    "getitem": "x[1:, idx]: torch records the basic slice as its own SliceBackward0 under "
               "IndexBackward0; jitgrad folds the slice into one IndexBackward0",
    "linalg.matrix_norm_svd": "ord=2/-2: torch permutes and reads output 1 (S) of a full "
                              "LinalgSvdBackward0; jitgrad takes the singular values directly",
    "linalg.svdvals": "torch's svdvals is output 1 (S) of LinalgSvdBackward0; jitgrad's node has "
                      "S as its output 0",
    "linalg.lu": "torch numbers only differentiable outputs (L is output_nr 0, U 1, P has none); "
                 "jitgrad numbers every output (P is 0)",
    "lu_unpack": "as linalg.lu: torch's output_nr counts only the differentiable outputs",
    "copy_": "torch's name() of the C++ node is 'torch::autograd::CopyBackwards'; jitgrad's is "
             "'CopyBackwards' (its repr and class name are the same in both)",
    "copy_slices": "torch's name() is 'torch::autograd::CopySlices'; jitgrad's is 'CopySlices'",
    "cosine_similarity": "torch's composite clamps and clones the norms (CloneBackward0) and "
                         "divides the inputs directly; jitgrad expands the inputs and adds eps",
    "pairwise_distance": "x - y + eps: torch adds a Scalar (AddBackward1, one edge); jitgrad "
                         "records AddBackward0 with a None edge for eps (no scalar-add op)",
    "rms_norm": "mean + eps: torch adds a Scalar (AddBackward1, one edge); jitgrad records "
                "AddBackward0 with a None edge",
    "fft.ifft": "torch conjugates twice (ConjBackward0 x2, NegViewBackward0) where jitgrad "
                "conjugates once",
    "fft.ihfft": "as fft.ifft: torch conjugates twice",
    "fft.ihfftn": "torch's ConjPhysicalBackward0 where jitgrad has ConjBackward0",
    "fft.ihfft2": "torch's ConjPhysicalBackward0 where jitgrad has ConjBackward0",
}


def signature(outputs, leaves: dict) -> tuple:
    """The DAG below ``outputs`` in a canonical form: (each output's (node id, output_nr) or
    None, the nodes in first-visit order as (id, name(), edges)); an edge is (node id or leaf
    name, input_nr), or None; ``leaves`` maps id(tensor) -> name for the AccumulateGrad leaves."""
    ids: dict = {}
    nodes = []

    def visit(n):
        if n is None:
            return None
        if id(n) in ids:
            return ids[id(n)]
        var = getattr(n, "variable", None)
        if var is not None and n.name().endswith("AccumulateGrad"):
            ids[id(n)] = key = f"leaf:{leaves.get(id(var), '?')}"
            return key
        ids[id(n)] = key = len(ids)
        entry = [key, n.name(), None]
        nodes.append(entry)
        entry[2] = tuple(None if c is None else (visit(c), nr) for c, nr in n.next_functions)
        return key

    roots = tuple((visit(o.grad_fn), o.output_nr) if getattr(o, "grad_fn", None) is not None
                  else None for o in outputs)
    return roots, tuple(tuple(e) for e in nodes)


def _is_float_array(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _build(rec, sample, lib):
    """The record's outputs on ``lib`` (float64, its floating inputs requiring grad) and the
    names of those inputs by id."""
    args = list(convert(sample.args, lib, lib.float64))
    kwargs = {k: convert(v, lib, lib.float64) for k, v in sample.kwargs.items()}
    inputs = [args[i] for i, a in enumerate(sample.args) if _is_float_array(a)] + \
        [kwargs[k] for k, v in sample.kwargs.items() if _is_float_array(v)]
    for t in inputs:
        t.requires_grad_()
    out = rec.run(lib, tuple(args), kwargs)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    return out, {id(t): i for i, t in enumerate(inputs)}


def _differences(rec) -> list:
    """(sample, jitgrad's signature, torch's) for each sample whose graphs differ."""
    found = []
    samples = rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))
    for i, s in enumerate(samples):
        try:
            tout, tleaves = _build(rec, s, torch)
        except RuntimeError:  # torch refuses the sample (test_ops checks jitgrad refuses too)
            continue
        jout, jleaves = _build(rec, s, jitgrad)
        js, ts = signature(jout, jleaves), signature(tout, tleaves)
        if js != ts:
            found.append((s.name or i, js, ts))
    return found


DIFFERENTIABLE = [pytest.param(rec, id=rec.name) for rec in OP_DB if rec.differentiable]


@pytest.mark.parametrize("rec", DIFFERENTIABLE)
def test_graph_matches_torch(rec):
    found = _differences(rec)
    if rec.name in KNOWN:
        assert found, f"{rec.name} now records torch's graph: take it out of KNOWN"
    else:
        assert found == []


def test_known_names_are_records():
    names = {rec.name for rec in OP_DB if rec.differentiable}
    assert sorted(set(KNOWN) - names) == []
    assert all(why.strip() for why in KNOWN.values())


def test_signature_sees_edges_names_and_leaves():
    x = jitgrad.ones(3, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.ones(3, dtype=jitgrad.float64, requires_grad=True)
    leaves = {id(x): "x", id(y): "y"}
    a = signature([(x * y).exp()], leaves)
    assert a == (((0, 0),), ((0, "ExpBackward0", ((1, 0),)),
                             (1, "MulBackward0", (("leaf:x", 0), ("leaf:y", 0)))))
    assert signature([(y * x).exp()], leaves) != a  # edge order counts
    assert signature([(x * 2.0).exp()], leaves) != a  # a None edge counts
    assert signature([(x * y).sin()], leaves) != a


# ---------------------------------------------------------------- grad_fn classes


def test_grad_fn_classes_are_named_as_torchs():
    from jitgrad.autograd.graph import Node
    from jitgrad.autograd.op_node import OpNode, UniformNode

    x = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    tx = torch.randn(3, dtype=torch.float64, requires_grad=True)
    cases = [lambda lib, x: x * x,  # a uniform node
             lambda lib, x: x * lib.ones(2, 1, dtype=lib.float64),  # broadcasting: a general one
             lambda lib, x: x.sum(), lambda lib, x: x.tanh(), lambda lib, x: x[1:],
             lambda lib, x: lib.nn.functional.softmax(x, 0), lambda lib, x: x.unbind()[0]]
    for case in cases:
        j, t = case(jitgrad, x).grad_fn, case(torch, tx).grad_fn
        assert type(j).__name__ == type(t).__name__ == j.name()
        assert isinstance(j, Node) and isinstance(j, OpNode)
        assert isinstance(t, torch.autograd.graph.Node)
    uniform, general = (x * x).grad_fn, (x * jitgrad.ones(2, 1, dtype=jitgrad.float64)).grad_fn
    assert isinstance(uniform, UniformNode) and not isinstance(general, UniformNode)
    assert type(uniform) is not type(general)  # one class per op and kind, made once:
    assert type((x * x).grad_fn) is type(uniform) and type((x * 3.0).grad_fn) is type(general)
    assert type(x.exp().grad_fn) is not type(uniform)
    assert {type(uniform): 1}.get(type((x * x).grad_fn)) == 1  # scripts key dicts on it
    assert not hasattr(uniform, "__dict__") or uniform.__dict__ == {}


def test_grad_fn_classes_keep_saved_values_and_backward():
    x = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    y = x * x
    assert y.grad_fn._saved_self is x and type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_next_functions_leave_out_non_differentiable_inputs_as_torch():
    def graph(lib):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        idx = lib.tensor([2, 0])
        return [lib.where(x > 0, x, x * 2).grad_fn, x.gather(0, idx).grad_fn,
                x[idx].grad_fn, (x / lib.tensor([2, 2, 2])).grad_fn, (x + 2).grad_fn,
                x.index_select(0, idx).grad_fn]
    for j, t in zip(graph(jitgrad), graph(torch)):
        assert j.name() == t.name()
        assert [n is None for n, _ in j.next_functions] == \
            [n is None for n, _ in t.next_functions]


# ---------------------------------------------------------------- Python scalars


TEXT = ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first.")


@pytest.fixture
def warn_once_again():
    from jitgrad import _config

    _config.WARNED.discard("scalar_of_grad")
    yield
    _config.WARNED.discard("scalar_of_grad")


@pytest.mark.parametrize("convert", [float, complex, lambda t: "%f" % t])  # noqa: UP031
def test_float_of_a_tensor_requiring_grad_warns_once(convert, warn_once_again):
    z = jitgrad.ones(3, requires_grad=True).sum()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        convert(z)
        convert(z)
    assert [(w.category, str(w.message)) for w in seen] == [(UserWarning, TEXT)]
    assert seen[0].filename == __file__  # (the caller's line)


@pytest.mark.parametrize("case", ["int", "bool", "item", "detached", "no_grad", "no_grad_leaf"])
def test_other_scalar_conversions_do_not_warn(case, warn_once_again):
    z = jitgrad.ones(1, requires_grad=True).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if case == "int":
            int(z)
        elif case == "bool":
            bool(z)
        elif case == "item":
            z.item()
        elif case == "detached":
            float(z.detach())
        else:
            with jitgrad.no_grad():
                float(z if case == "no_grad" else jitgrad.ones((), requires_grad=True))


def test_warn_always_repeats_the_scalar_warning(warn_once_again):
    z = jitgrad.ones((), requires_grad=True) * 2
    jitgrad.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            float(z)
            float(z)
    finally:
        jitgrad.set_warn_always(False)
    assert len(seen) == 2 and all(str(w.message) == TEXT for w in seen)


# ---------------------------------------------------------------- nn modules


def _lstm_step(lib, cls, **kw):
    m = getattr(lib.nn, cls)(4, 3, **kw)
    return m, lambda m, x: m(x)


def _module_cases():
    """name -> f(lib) returning (module, input shape, how to call it)."""
    nn = "nn"
    return {
        "linear_2d": lambda lib: (getattr(lib, nn).Linear(4, 3), (2, 4), None),
        "linear_3d": lambda lib: (getattr(lib, nn).Linear(4, 3), (2, 5, 4), None),
        "linear_no_bias_2d": lambda lib: (getattr(lib, nn).Linear(4, 3, bias=False), (2, 4),
                                          None),
        "linear_no_bias_3d": lambda lib: (getattr(lib, nn).Linear(4, 3, bias=False), (2, 5, 4),
                                          None),
        "conv2d": lambda lib: (lib.nn.Conv2d(2, 3, 3, padding=1), (2, 2, 5, 5), None),
        "conv_transpose2d": lambda lib: (lib.nn.ConvTranspose2d(2, 3, 3, stride=2),
                                         (2, 2, 4, 4), None),
        "batch_norm2d_train": lambda lib: (lib.nn.BatchNorm2d(3).train(), (4, 3, 2, 2), None),
        "batch_norm2d_eval": lambda lib: (lib.nn.BatchNorm2d(3).eval(), (4, 3, 2, 2), None),
        "layer_norm": lambda lib: (lib.nn.LayerNorm(4), (2, 3, 4), None),
        "embedding": lambda lib: (lib.nn.Embedding(5, 3), None,
                                  lambda m, x: m(lib.tensor([[0, 4], [2, 2]]))),
        "multihead_attention": lambda lib: (lib.nn.MultiheadAttention(4, 2), (3, 2, 4),
                                            lambda m, x: m(x, x, x)[0]),
        "cross_entropy": lambda lib: (lib.nn.CrossEntropyLoss(), (3, 5),
                                      lambda m, x: m(x, lib.tensor([1, 0, 4]))),
        "mse_loss": lambda lib: (lib.nn.MSELoss(), (3, 5),
                                 lambda m, x: m(x, lib.zeros(3, 5, dtype=lib.float64))),
        "dropout_train": lambda lib: (lib.nn.Dropout(0.5).train(), (3, 5), None),
    }


MODULES = _module_cases()

# module case -> why jitgrad's graph differs from torch's
MODULE_KNOWN = {
    "multihead_attention": "torch's fused in-projection and its bmm/baddbmm path record other "
                           "views (ReshapeAliasBackward0, UnsafeViewBackward0, CloneBackward0) "
                           "than jitgrad's composite",
}


def _module_signature(lib, name):
    module, shape, call = MODULES[name](lib)
    module = module.double()
    leaves = {id(p): n for n, p in module.named_parameters()}
    x = None
    if shape is not None:
        x = lib.ones(shape, dtype=lib.float64, requires_grad=True)
        leaves[id(x)] = "input"
    out = call(module, x) if call is not None else module(x)
    return signature(out if isinstance(out, (tuple, list)) else [out], leaves)


@pytest.mark.parametrize("name", list(MODULES))
def test_module_graph_matches_torch(name):
    j, t = _module_signature(jitgrad, name), _module_signature(torch, name)
    if name in MODULE_KNOWN:
        assert j != t, f"{name} now records torch's graph: take it out of MODULE_KNOWN"
    else:
        assert j == t


def test_post_hooks_see_the_grad_inputs_next_functions_lists():
    def run(lib):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        idx = lib.tensor([2, 0])
        seen = {}
        y = lib.where(x > 0, x, x * 2)
        y.grad_fn.register_hook(lambda gi, go: seen.update(where=len(gi)) or (gi[0] * 10, gi[1]))
        z = x.gather(0, idx)
        z.grad_fn.register_hook(lambda gi, go: seen.update(gather=len(gi)))
        (y.sum() + z.sum()).backward()
        return seen, x.grad.numpy()
    (js, jg), (ts, tg) = run(jitgrad), run(torch)
    assert js == ts == {"where": 2, "gather": 1}
    np.testing.assert_allclose(jg, tg)
