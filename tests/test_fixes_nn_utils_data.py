"""nn.utils (fusion, rnn packing, prune, parametrize), utils.data and nn.init differences from
torch that the probes found, each fixed and checked here against torch."""

import collections
import importlib
import pickle
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _outcome(fn, lib):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(lib)
        return "ok", out, [(w.category.__name__, str(w.message)) for w in caught]
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return type(e).__name__, str(e).replace("torch", "jitgrad")


def _same(fn):
    expected, got = _outcome(fn, torch), _outcome(fn, jitgrad)
    assert got == expected


def _mod(lib, name):
    return importlib.import_module(f"{lib.__name__}.{name}")


def test_fused_bias_made_from_no_bias_does_not_require_grad():
    def run(T):
        nn = T.nn
        c, bn = nn.Conv2d(2, 3, 3, bias=False).eval(), nn.BatchNorm2d(3).eval()
        lin, bn1 = nn.Linear(2, 3, bias=False).eval(), nn.BatchNorm1d(3).eval()
        stats = (bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
        return (nn.utils.fuse_conv_bn_eval(c, bn).bias.requires_grad,
                nn.utils.fuse_conv_bn_weights(c.weight, None, *stats)[1].requires_grad,
                nn.utils.fuse_linear_bn_eval(lin, bn1).bias.requires_grad,
                nn.utils.fuse_conv_bn_eval(nn.Conv2d(2, 3, 3).eval(), bn).bias.requires_grad)

    assert run(jitgrad) == run(torch) == (False, False, False, True)
    _same(lambda T: T.nn.utils.fuse_linear_bn_eval(T.nn.Linear(3, 2).eval(),
                                                   T.nn.BatchNorm1d(3).eval()))
    _same(lambda T: T.nn.utils.fuse_conv_bn_eval(
        T.nn.Conv2d(2, 3, 3).eval(), T.nn.BatchNorm2d(3, track_running_stats=False).eval()))


def _packed(p):
    return tuple(None if t is None else t.tolist() for t in p)


def test_packed_sequence_constructor_defaults():
    def run(T):
        rnn = _mod(T, "nn.utils.rnn")
        return (_packed(rnn.PackedSequence(T.zeros(3), T.tensor([2, 1]))),
                _packed(rnn.PackedSequence((T.zeros(3), T.tensor([2, 1])))),
                _packed(rnn.PackedSequence(T.zeros(3), T.tensor([2, 1]), T.tensor([1, 0]))))

    assert run(jitgrad) == run(torch)
    assert run(torch)[2][3] == [1, 0]
    _same(lambda T: _mod(T, "nn.utils.rnn").PackedSequence(T.zeros(3)))


@pytest.mark.parametrize("args", [
    ((4, 3), [4, 2], {}), ((4, 3), "2d", {}), ((4, 3), "0d", {}), ((4, 3), [4, 2, 1, 1], {}),
    ((4, 3), [], {}), ((0, 3), [1, 1, 1], {}), ((4, 3), [4, 2, 1], {"batch_first": True}),
    ((4, 3), [4, 2, 0], {}), ((4, 3), [4, 1, 2], {}), ((4, 3), "2d", {"enforce_sorted": False}),
    ((4, 3), [1, 3, 2], {"enforce_sorted": False})])
def test_pack_padded_sequence_checks_lengths_as_torch(args):
    shape, lengths, kw = args

    def run(T):
        n = lengths
        if isinstance(lengths, str):
            n = T.tensor([[4, 2, 1]]) if lengths == "2d" else T.tensor(3)
        out = _mod(T, "nn.utils.rnn").pack_padded_sequence(T.zeros(shape), n, **kw)
        return _packed(out)

    _same(run)
    assert _outcome(run, torch)[0] != "ok" or args[1] == [1, 3, 2]


def test_prune_and_parametrize_shape_messages_print_sizes():
    class Flat(jitgrad.nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    class TorchFlat(torch.nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    flat = {jitgrad: Flat, torch: TorchFlat}
    prune = (lambda T: _mod(T, "nn.utils.prune"))
    _same(lambda T: prune(T).custom_from_mask(T.nn.Linear(3, 2), "weight", T.ones(3)))
    _same(lambda T: prune(T).l1_unstructured(T.nn.Linear(3, 2), "weight", 0.5,
                                             importance_scores=T.ones(3)))
    _same(lambda T: prune(T).L1Unstructured(0.5).prune(T.ones(2, 3), importance_scores=T.ones(3)))
    _same(lambda T: _mod(T, "nn.utils.parametrize").register_parametrization(
        T.nn.Linear(3, 2), "weight", flat[T]()))
    assert "default_mask shape jitgrad.Size([2, 3])" in _outcome(
        lambda T: prune(T).custom_from_mask(T.nn.Linear(3, 2), "weight", T.ones(3)), jitgrad)[1]


def test_concat_dataset_cumsum_and_deprecated_cummulative_sizes():
    def run(T):
        data = _mod(T, "utils.data")
        c = data.ConcatDataset([[1, 2], [3]])
        return c.cummulative_sizes, data.ConcatDataset.cumsum([[1], [2, 3]])

    _same(run)
    assert _outcome(run, jitgrad)[2] == [
        ("FutureWarning", "`cummulative_sizes` attribute is renamed to `cumulative_sizes`")]
    _same(lambda T: _mod(T, "utils.data").ConcatDataset([]))
    _same(lambda T: _mod(T, "utils.data").TensorDataset(T.zeros(2), T.zeros(3)))


def test_dataloader_generic_kind_worker_module_and_iterator_pickling():
    def run(T):
        data = _mod(T, "utils.data")
        loader = data.DataLoader[int]([1, 2])
        fetcher = data._DatasetKind.create_fetcher(data._DatasetKind.Map, [1, 2, 3], True,
                                                   data.default_collate, False)
        return (type(loader).__name__, data._DatasetKind.Iterable, fetcher.fetch([0, 2]).tolist(),
                _mod(T, "utils.data._utils.worker").get_worker_info(),
                type(iter(loader)).__name__)

    _same(run)
    _same(lambda T: pickle.dumps(iter(_mod(T, "utils.data").DataLoader([1, 2]))))


def test_default_convert_keeps_container_types():
    point = collections.namedtuple("point", "a b")

    class Rows(list):
        pass

    def run(T):
        convert = _mod(T, "utils.data").default_convert
        out = [convert(collections.OrderedDict(a=np.array([1, 2]))),
               convert(Rows([np.array([1])])), convert(point(np.array([1]), 2)),
               convert(range(3)), convert((np.array(1), 2))]
        return [(type(o).__name__, repr(o).replace("tensor", "T")) for o in out]

    _same(run)


def test_subset_overriding_only_getitem_raises_at_construction():
    def run(T):
        data = _mod(T, "utils.data")

        class Sub(data.Subset):
            def __getitem__(self, i):
                return i

        return Sub([1, 2], [0])

    _same(run)


@pytest.mark.parametrize("case", ["long", "int", "bool", "trunc", "xavier", "orthogonal", "std",
                                  "std_float", "std_long"])
def test_init_normal_checks_dtype_and_std(case):
    def run(T):
        init = _mod(T, "nn.init")
        calls = {
            "long": lambda: init.normal_(T.zeros(3, dtype=T.long)),
            "int": lambda: init.normal_(T.zeros(3, dtype=T.int)),
            "bool": lambda: init.normal_(T.zeros(3, dtype=T.bool)),
            "trunc": lambda: init.trunc_normal_(T.zeros(3, dtype=T.long)),
            "xavier": lambda: init.xavier_normal_(T.zeros(3, 3, dtype=T.int)),
            "orthogonal": lambda: init.orthogonal_(T.zeros(3, 3, dtype=T.long)),
            "std": lambda: init.normal_(T.zeros(3), 0, -1),
            "std_float": lambda: init.normal_(T.zeros(3), 0, -1e-20),
            "std_long": lambda: init.normal_(T.zeros(3, dtype=T.long), 0, -1.5),
        }
        calls[case]()

    _same(run)
    assert _outcome(run, jitgrad)[0] != "ok"


def test_init_normal_checks_on_meta_tensors():
    # (torch's texts, from its meta kernel: not compared live, its first meta call takes 2 s)
    init = jitgrad.nn.init
    with pytest.raises(RuntimeError, match=r"^normal expects std >= 0.0, but found std -1.0$"):
        init.normal_(jitgrad.zeros(3, device="meta"), 0, -1)
    with pytest.raises(RuntimeError, match=r"^expected a floating-point or complex dtype, but "
                                           r"got dtype=jitgrad.bool$"):
        init.normal_(jitgrad.zeros(3, dtype=jitgrad.bool, device="meta"))
