"""The meta device and devices as context managers, against torch: meta factories and ops
(shapes and dtypes from the ops' shape rules), printing, data access errors, mixing devices,
autograd on meta tensors, and the build-on-meta-then-materialize pattern of nn modules."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from torch_compare import same_error

import jitgrad
from jitgrad import nn


def _torch():
    return pytest.importorskip("torch")


def _meta(lib, *shape, **kw):
    return lib.empty(shape, device="meta", **kw)  # (no sizes: a 0-d tensor)


# ---------------------------------------------------------------- the device


def test_meta_device_names_match_torch():
    torch = _torch()
    for args in (("meta",), ("meta", 0), ("meta:0",)):
        assert repr(jitgrad.device(*args)) == repr(torch.device(*args))
        assert str(jitgrad.device(*args)) == str(torch.device(*args))
    assert jitgrad.device("meta") == "meta"
    with pytest.raises(RuntimeError, match="device type at start of device string: bogus"):
        jitgrad.device("bogus")


def test_device_context_sets_the_default_device_and_nests():
    torch = _torch()
    for lib in (torch, jitgrad):
        name = lib.__name__
        assert lib.get_default_device() == lib.device("cpu"), name
        with lib.device("meta") as d:
            assert d == lib.device("meta")
            assert lib.get_default_device() == lib.device("meta")
            assert lib.zeros(2).is_meta and lib.tensor([1.0]).is_meta
            assert not lib.Tensor(2, 3).is_meta, name  # (the legacy constructor: not one)
            with lib.device("cpu"):
                assert lib.get_default_device() == lib.device("cpu")
                assert not lib.zeros(2).is_meta
            assert lib.get_default_device() == lib.device("meta")
            assert lib.ones(1, device="cpu").device == lib.device("cpu")  # explicit wins
            assert lib.zeros_like(lib.ones(1, device="cpu")).device.type == "cpu"  # the input's
            assert lib.as_tensor(lib.ones(1, device="cpu")).is_meta
            assert lib.nn.Parameter().is_meta and lib.scalar_tensor(1.0).is_meta
        assert lib.get_default_device() == lib.device("cpu")
        with pytest.raises(ValueError):
            with lib.device("meta"):
                raise ValueError("left by an exception")
        assert lib.get_default_device() == lib.device("cpu")


def test_every_factory_follows_the_context():
    torch = _torch()
    makers = [
        lambda lib: lib.empty(2, 3), lambda lib: lib.zeros(2, 3), lambda lib: lib.ones((2,)),
        lambda lib: lib.full((2, 2), 3), lambda lib: lib.arange(10),
        lambda lib: lib.arange(0, 1, 0.1), lambda lib: lib.randn(2, 3), lambda lib: lib.rand(4),
        lambda lib: lib.randint(3, (2,)), lambda lib: lib.randperm(3), lambda lib: lib.eye(3),
        lambda lib: lib.linspace(0, 1, 5), lambda lib: lib.empty_strided((2, 3), (1, 2)),
        lambda lib: lib.tensor([1, 2]), lambda lib: lib.as_tensor([1.0]),
    ]
    for make in makers:
        with torch.device("meta"):
            want = make(torch)
        with jitgrad.device("meta"):
            got = make(jitgrad)
        assert got.is_meta and want.is_meta
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]


def test_set_default_device_meta_and_cuda_refused():
    jitgrad.set_default_device("meta")
    try:
        assert jitgrad.get_default_device() == jitgrad.device("meta")
        assert jitgrad.zeros(3).is_meta
    finally:
        jitgrad.set_default_device(None)
    assert not jitgrad.zeros(3).is_meta
    with pytest.raises(RuntimeError, match="the default device can only be 'cpu' or 'meta'"):
        with jitgrad.device("cuda"):
            pass  # (as set_default_device("cuda") does)
    assert jitgrad.get_default_device() == jitgrad.device("cpu")


def test_set_default_device_inside_a_block_lasts_like_torch():
    # (what torch 2.13 gives for this sequence; run on torch here, it would leave torch's mode
    # stack holding a device context that later set_default_device(None) calls restore)
    seen = []
    try:
        with jitgrad.device("meta"):
            jitgrad.set_default_device("cpu")  # at once, and after the block
            seen.append(jitgrad.get_default_device().type)
        seen.append(jitgrad.get_default_device().type)
        jitgrad.set_default_device("meta")
        with jitgrad.device("cpu"):
            seen.append(jitgrad.get_default_device().type)
        seen.append(jitgrad.get_default_device().type)
    finally:
        jitgrad.set_default_device(None)
    assert seen == ["cpu", "cpu", "cpu", "meta"]
    assert jitgrad.get_default_device() == jitgrad.device("cpu")


def test_default_device_is_per_thread():
    seen = []
    with jitgrad.device("meta"):
        t = threading.Thread(target=lambda: seen.append(jitgrad.zeros(1).device.type))
        t.start()
        t.join()
        assert jitgrad.zeros(1).is_meta
    assert seen == ["cpu"]


def test_cpu_work_inside_a_meta_block_stays_on_the_cpu():
    a = jitgrad.ones(3, device="cpu", requires_grad=True)
    with jitgrad.device("meta"):
        (a * a).sum().backward()
        b = jitgrad.ones(3, device="cpu").uniform_()
        c = jitgrad.where(a > 0, a, 0.0)
        x = jitgrad.ones(1, 2, 5, device="cpu")
        made = [x.clamp(min=jitgrad.zeros(5, device="cpu"), max=1.0),
                ~jitgrad.ones(3, dtype=jitgrad.int64, device="cpu"),
                nn.functional.pad(x, (2, 2), mode="circular"),
                nn.functional.pad(x, (2, 2), mode="reflect"),
                nn.functional.interpolate(x, scale_factor=2, mode="linear")]
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    assert b.is_cpu and c.is_cpu and all(t.is_cpu for t in made)


# ---------------------------------------------------------------- meta tensors


def test_meta_factories_match_torch():
    torch = _torch()
    makers = [
        lambda lib: lib.empty(2, 3, device="meta"),
        lambda lib: lib.zeros(2, 3, dtype=lib.int64, device="meta"),
        lambda lib: lib.ones((4,), device="meta", requires_grad=True),
        lambda lib: lib.randn(2, device="meta"), lambda lib: lib.rand(2, 2, device="meta"),
        lambda lib: lib.full((2, 2), 3, device="meta"),
        lambda lib: lib.full((2,), 1.5, device="meta"),
        lambda lib: lib.arange(10, device="meta"),
        lambda lib: lib.arange(0, 1, 0.1, device="meta"),
        lambda lib: lib.arange(5, 0, -2, device="meta"),
        lambda lib: lib.tensor([1.0, 2.0], device="meta"),
        lambda lib: lib.tensor(3, device="meta"),
        lambda lib: lib.zeros_like(lib.empty(2, 3, device="meta")),
        lambda lib: lib.ones_like(lib.ones(2, 3), device="meta"),
        lambda lib: lib.empty_like(lib.empty(2, dtype=lib.float16, device="meta")),
        lambda lib: lib.randn_like(lib.empty(3, device="meta")),
        lambda lib: lib.full_like(lib.empty(3, device="meta"), 7),
        lambda lib: lib.empty(2, 3, device="meta").new_zeros(4),
        lambda lib: lib.empty(2, 3, device="meta").new_tensor([1.0]),
        lambda lib: lib.ones(2, 3).to("meta"),
        lambda lib: lib.ones(2, 3).to(device="meta", dtype=lib.float16),
        lambda lib: lib.ones(2, requires_grad=True).to("meta"),
        lambda lib: lib.ones(2).to(lib.empty(1, dtype=lib.float64, device="meta")),
        lambda lib: lib.eye(3, 4, device="meta"),
        lambda lib: lib.ones(2).to("meta:0"), lambda lib: lib.empty(2, device="meta").to("meta:0"),
    ]
    for make in makers:
        want, got = make(torch), make(jitgrad)
        assert got.is_meta and got.device == jitgrad.device("meta")
        assert not got.is_cpu and not got.is_cuda
        assert repr(got) == repr(want).replace("torch.", "jitgrad.")


def test_empty_strided_keeps_its_strides():
    torch = _torch()
    for lib in (torch, jitgrad):
        t = lib.empty_strided((2, 3), (1, 2), device="meta")
        assert t.stride() == (1, 2) and not t.is_contiguous()
    t = jitgrad.empty(2, 3, device="meta")
    assert t.stride() == (3, 1) and t.is_contiguous() and t.nbytes == 24 and t.data_ptr() == 0


def test_meta_repr_matches_torch():
    torch = _torch()
    cases = [
        lambda lib: lib.empty(2, 3, device="meta"),
        lambda lib: lib.empty((), device="meta"),
        lambda lib: lib.empty((0,), device="meta"),
        lambda lib: lib.zeros(2, 3, dtype=lib.int64, device="meta"),
        lambda lib: lib.zeros(2, dtype=lib.bool, device="meta"),
        lambda lib: lib.zeros(2, 3, dtype=lib.float64, device="meta"),
        lambda lib: lib.zeros(2, 3, device="meta", requires_grad=True),
        lambda lib: lib.zeros(2, 3, device="meta", requires_grad=True) * 2,
        lambda lib: lib.nn.Parameter(lib.empty(3, 2, device="meta")),
    ]
    for case in cases:
        assert repr(case(jitgrad)) == repr(case(torch)).replace("torch.", "jitgrad.")
    assert str(jitgrad.empty(2, device="meta")) == "tensor(..., device='meta', size=(2,))"
    assert f"{_meta(jitgrad)}" == "tensor(..., device='meta', size=())"  # (no item() of a 0-d)
    same_error(lambda lib: format(_meta(lib), ".2f"))


_OPS = [
    lambda lib, x, y: x + y, lambda lib, x, y: x * 2.5, lambda lib, x, y: x @ y.t(),
    lambda lib, x, y: (x > 0), lambda lib, x, y: x.sum(1), lambda lib, x, y: x.mean(),
    lambda lib, x, y: x.max(1).indices, lambda lib, x, y: x.argmax(1),
    lambda lib, x, y: x.softmax(-1), lambda lib, x, y: x.exp().log1p(),
    lambda lib, x, y: x.reshape(3, 2), lambda lib, x, y: x.t(), lambda lib, x, y: x[0],
    lambda lib, x, y: x[:, 1:], lambda lib, x, y: x.unsqueeze(0).expand(4, 2, 3),
    lambda lib, x, y: lib.cat([x, y]), lambda lib, x, y: lib.stack([x, y], 1),
    lambda lib, x, y: lib.where(x > 0, x, y), lambda lib, x, y: x.to(lib.int32),
    lambda lib, x, y: x.to(lib.float64) + 1, lambda lib, x, y: x.clone(),
    lambda lib, x, y: lib.nn.functional.gelu(x), lambda lib, x, y: lib.cumsum(x, 0),
    lambda lib, x, y: x.topk(2).values, lambda lib, x, y: x.sort(1).indices,
    lambda lib, x, y: lib.einsum("ij,kj->ik", x, y), lambda lib, x, y: x.flip(0),
    lambda lib, x, y: lib.nn.functional.pad(x, (1, 1)),
    lambda lib, x, y: x.masked_fill(x > 0, 1.0), lambda lib, x, y: x.var(0),
    lambda lib, x, y: x.float().bool(), lambda lib, x, y: x + lib.tensor(1.0),
    lambda lib, x, y: x.clamp(min=y[0], max=y[1]), lambda lib, x, y: ~x.long(),
    lambda lib, x, y: lib.nn.functional.pad(x[None], (2, 2), mode="circular"),
    lambda lib, x, y: lib.nn.functional.pad(x[None], (2, 2), mode="reflect"),
    lambda lib, x, y: lib.nn.functional.interpolate(x[None], scale_factor=2, mode="linear"),
]


@pytest.mark.parametrize("i", range(len(_OPS)))
def test_ops_on_meta_tensors_give_torch_shapes_and_dtypes(i):
    torch = _torch()
    f = _OPS[i]
    want = f(torch, _meta(torch, 2, 3), _meta(torch, 2, 3))
    got = f(jitgrad, _meta(jitgrad, 2, 3), _meta(jitgrad, 2, 3))
    assert got.is_meta
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[1]


_FUNCTIONS = [  # functions that check values or compute outside ops on the CPU
    lambda lib: lib.any(_meta(lib, 3, 4), 1), lambda lib: _meta(lib, 3).all(),
    lambda lib: _meta(lib, 3, 4).any(dim=0, keepdim=True),
    lambda lib: lib.multinomial(_meta(lib, 4), 2),
    lambda lib: lib.multinomial(_meta(lib, 2, 4), 3, replacement=True),
    lambda lib: _meta(lib, 3, 4).scatter(1, _meta(lib, 3, 2, dtype=lib.int64), 1.0),
    lambda lib: lib.nn.functional.one_hot(_meta(lib, 3, dtype=lib.int64), 5),
    lambda lib: lib.ones(3).type_as(_meta(lib, 1, dtype=lib.float64)),
]


@pytest.mark.parametrize("i", range(len(_FUNCTIONS)))
def test_value_reading_functions_on_meta_match_torch(i):
    torch = _torch()
    want, got = _FUNCTIONS[i](torch), _FUNCTIONS[i](jitgrad)
    assert repr(got) == repr(want).replace("torch.", "jitgrad.")


def test_assert_close_compares_the_metadata_of_meta_tensors():
    same_error(lambda lib: lib.testing.assert_close(_meta(lib, 2, 3), _meta(lib, 2, 4)))
    same_error(lambda lib: lib.testing.assert_close(_meta(lib, 2, 3), lib.ones(2, 3)))
    same_error(lambda lib: lib.testing.assert_close(_meta(lib, 2), _meta(lib, 2, dtype=lib.int64)))
    jitgrad.testing.assert_close(_meta(jitgrad, 2, 3), _meta(jitgrad, 2, 3))


def test_multi_output_ops_and_views_on_meta():
    x = _meta(jitgrad, 4, 3)
    values, indices = x.max(1)
    assert values.is_meta and indices.dtype is jitgrad.int64 and tuple(indices.shape) == (4,)
    v = x.view(3, 4)
    assert v._base is x and x[0]._base is x
    q, r = jitgrad.linalg.qr(x)
    assert (tuple(q.shape), tuple(r.shape)) == ((4, 3), (3, 3))
    assert [t.is_meta for t in x.chunk(2)] == [True, True]
    assert list(map(tuple, map(lambda t: t.shape, list(_meta(jitgrad, 2))))) == [(), ()]


def test_in_place_ops_on_meta_tensors():
    x = _meta(jitgrad, 2, 3)
    assert x.add_(1).is_meta and x.mul_(_meta(jitgrad, 3)).is_meta
    assert x.uniform_() is x and x.normal_() is x and x.zero_() is x and x.fill_(2) is x
    assert x.copy_(jitgrad.ones(2, 3)) is x  # (a cpu source: nothing to copy, as torch)
    x[0] = 1.0
    assert x._version > 0
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(_meta(jitgrad, 4, 2, 3))


def test_indexing_meta_tensors():
    torch = _torch()
    for lib in (torch, jitgrad):
        x = _meta(lib, 4, 3)
        assert tuple(x[lib.tensor([0, 1])].shape) == (2, 3)  # a cpu index, as torch allows
        assert tuple(x[lib.tensor([0, 1], device="meta")].shape) == (2, 3)
        assert tuple(x[:, lib.tensor([2, 0], device="meta")].shape) == (4, 2)


def test_masked_writes_into_meta_tensors_like_torch():
    torch = _torch()
    out = {}
    for lib in (torch, jitgrad):
        x = lib.empty(3, 4, device="meta", requires_grad=True)
        y = x * 1
        mask = lib.empty(3, 4, dtype=lib.bool, device="meta")
        y[mask] = 0.0  # (the result's shape does not depend on the mask's values)
        y[lib.empty(3, dtype=lib.bool, device="meta")] = lib.empty(4, device="meta")
        y[mask] = lib.empty(5, device="meta")
        z = lib.empty(3, 4, device="meta")
        z[lib.ones(3, 4, dtype=lib.bool)] = 1.0  # a CPU mask
        out[lib] = [repr(t).replace("torch.", "jitgrad.") for t in (y, z)]
        with pytest.raises(NotImplementedError):
            z[mask]  # noqa: B018 - reading: the shape depends on the values
    assert out[jitgrad] == out[torch]


def test_data_access_errors_match_torch():
    torch = _torch()
    same_error(lambda lib: _meta(lib, 2, 3).item())
    same_error(lambda lib: _meta(lib).item())
    same_error(lambda lib: float(_meta(lib)))
    same_error(lambda lib: bool(_meta(lib)))
    same_error(lambda lib: int(_meta(lib, dtype=lib.int64)))
    same_error(lambda lib: _meta(lib, 2).numpy())
    same_error(lambda lib: _meta(lib, 2).tolist())
    same_error(lambda lib: _meta(lib, 2).to("cpu"))
    same_error(lambda lib: _meta(lib, 2).cpu())
    same_error(lambda lib: _meta(lib, 2).sum().item())
    same_error(lambda lib: np.asarray(_meta(lib, 2)))
    for name in ("nonzero", "unique"):
        for lib in (torch, jitgrad):
            with pytest.raises(NotImplementedError):
                getattr(_meta(lib, 3), name)()
    with pytest.raises(NotImplementedError, match="boolean mask indexing on meta tensors"):
        _meta(jitgrad, 3)[_meta(jitgrad, 3) > 0]
    with pytest.raises(NotImplementedError):
        jitgrad.equal(_meta(jitgrad, 3), _meta(jitgrad, 3))


def test_mixing_meta_and_cpu_tensors_matches_torch():
    same_error(lambda lib: _meta(lib, 2, 3) + lib.ones(2, 3))
    same_error(lambda lib: lib.ones(2, 3) + _meta(lib, 2, 3))
    same_error(lambda lib: lib.ones(3) + _meta(lib))
    same_error(lambda lib: lib.cat([_meta(lib, 2, 3), lib.ones(2, 3)]))
    # (which device torch expects depends on how each op checks its operands: jitgrad's is
    # always the first tensor's that is no number)
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device "
                                           "meta!"):
        _meta(jitgrad, 4).masked_fill(jitgrad.ones(4, dtype=jitgrad.bool), 1.0)
    with pytest.raises(RuntimeError, match="is not on the expected device"):
        nn.Linear(3, 2, device="meta")(jitgrad.ones(4, 3))
    assert (_meta(jitgrad, 2, 3) + jitgrad.tensor(1.0)).is_meta  # a 0-d cpu tensor: a number
    assert (jitgrad.tensor(1.0) + _meta(jitgrad, 2, 3)).is_meta


def test_broadcast_error_on_meta_tensors():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match"):
        _meta(jitgrad, 4) + _meta(jitgrad, 3)


def test_meta_results_cost_no_memory():
    w = nn.Linear(100_000, 100_000, device="meta").weight  # 40 GB as float32 values
    assert tuple(w.shape) == (100_000, 100_000) and w.is_meta
    big = _meta(jitgrad, 100_000, 100_000)
    out = (big @ big).relu().sum(0)
    assert tuple(out.shape) == (100_000,)


def test_dispatcher_looks_for_meta_only_once_one_exists():
    code = ("import jitgrad\nfrom jitgrad.ops import registry\n"
            "x = jitgrad.ones(2, requires_grad=True)\n(x * 2 + 1).sum().backward()\n"
            "assert registry.meta_live is False\n"
            "jitgrad.empty(1, device='meta')\nassert registry.meta_live is True\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_copy_and_pickle_meta_tensors():
    x = jitgrad.empty(2, 3, device="meta", requires_grad=True)
    for y in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert y.is_meta and tuple(y.shape) == (2, 3) and y.requires_grad
    p = copy.deepcopy(nn.Linear(2, 3, device="meta")).weight
    assert p.is_meta and isinstance(p, nn.Parameter)


def test_save_and_load_meta_tensors_and_map_location_meta(tmp_path):
    torch = _torch()
    for lib in (torch, jitgrad):
        path = tmp_path / f"{lib.__name__}.pt"
        sd = {"m": lib.nn.Linear(2, 3, device="meta").state_dict(), "i": lib.arange(4),
              "h": lib.ones(2, dtype=lib.bfloat16)}
        lib.save(sd, path)
        back = lib.load(path)
        assert back["m"]["weight"].is_meta and tuple(back["m"]["weight"].shape) == (3, 2)
        assert back["i"].tolist() == [0, 1, 2, 3]
        lazy = lib.load(path, map_location="meta")  # shapes and dtypes, no values read
        assert [repr(t).replace("torch.", "jitgrad.") for t in (lazy["i"], lazy["h"])] == [
            "tensor(..., device='meta', size=(4,), dtype=jitgrad.int64)",
            "tensor(..., device='meta', size=(2,), dtype=jitgrad.bfloat16)"]
        with lib.device("meta"):
            model = lib.nn.Linear(2, 3)
        model.load_state_dict(lazy["m"], assign=True)
        assert model.weight.is_meta


def test_jit_of_meta_tensors_runs_eagerly():
    f = jitgrad.jit(lambda a, b: (a @ b).tanh() + 1)
    out = f(_meta(jitgrad, 4, 3), _meta(jitgrad, 3, 2))
    assert out.is_meta and tuple(out.shape) == (4, 2)
    assert f(jitgrad.ones(1, 3), jitgrad.ones(3, 1)).item() == pytest.approx(np.tanh(3) + 1)


# ---------------------------------------------------------------- autograd


def test_backward_on_meta_gives_meta_gradients_like_torch():
    torch = _torch()
    res = {}
    for lib in (torch, jitgrad):
        x = _meta(lib, 2, 3)
        w = lib.empty(3, 4, device="meta", requires_grad=True)
        b = lib.empty(4, device="meta", requires_grad=True)
        y = ((x @ w + b).relu() * 2).logsumexp(1).mean()
        res[lib] = (repr(y).replace("torch.", "jitgrad."), y.grad_fn.name())
        y.backward()
        assert w.grad.is_meta and tuple(w.grad.shape) == (3, 4)
        assert b.grad.is_meta and tuple(b.grad.shape) == (4,)
        (gw,) = lib.autograd.grad((w * w).sum(), w)
        assert gw.is_meta and tuple(gw.shape) == (3, 4)
    assert res[jitgrad] == res[torch]


def test_backward_with_hooks_create_graph_and_accumulation_on_meta():
    w = jitgrad.empty(3, device="meta", requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.is_meta))
    for _ in range(2):  # the second backward accumulates into .grad
        (w.exp() * 3).sum().backward()
    assert seen == [True, True] and w.grad.is_meta
    (g,) = jitgrad.autograd.grad((w ** 3).sum(), w, create_graph=True)
    assert g.grad_fn is not None and g.is_meta
    (gg,) = jitgrad.autograd.grad(g.sum(), w)
    assert gg.is_meta and tuple(gg.shape) == (3,)


def test_in_place_views_forward_ad_and_func_on_meta_like_torch():
    torch = _torch()
    import torch.autograd.forward_ad as torch_fwad

    out = {}
    for lib, fwad in ((torch, torch_fwad), (jitgrad, jitgrad.autograd.forward_ad)):
        x = lib.empty(3, 4, device="meta", requires_grad=True)
        y = x * 2
        y[0] = 1.0  # through a view: CopySlices
        y[:, 1].mul_(3)
        y.relu_().sum().backward()
        with fwad.dual_level():
            d = fwad.make_dual(lib.empty(3, device="meta"), lib.empty(3, device="meta"))
            tangent = fwad.unpack_dual((d.sin() * 2).sum()).tangent
        g = lib.func.grad(lambda t: (t * t).sum())(lib.empty(3, device="meta"))
        out[lib] = [repr(t).replace("torch.", "jitgrad.") for t in (x.grad, tangent, g)] + [
            y.grad_fn.name()]
    assert out[jitgrad] == out[torch]


def test_rules_that_make_tensors_keep_their_operands_device():
    torch = _torch()
    import torch.autograd.forward_ad as torch_fwad

    def run(lib, fwad):
        x = lib.empty(3, 4, device="meta", requires_grad=True)
        (x.cumprod(1).sum() + lib.einsum("ii->i", x[:, :3]).sum() + x.max(1).values.sum()
         + x.median() + x.norm()).backward()
        out = [x.grad]
        with fwad.dual_level():
            d = fwad.make_dual(lib.empty(3, 4, device="meta"), lib.empty(3, 4, device="meta"))
            for f in (lambda t: t.max(1).values, lambda t: t.amax(0), lambda t: t.norm(),
                      lambda t: t.median(), lambda t: t.logsumexp(1)):
                out.append(fwad.unpack_dual(f(d)).tangent)
        return [repr(t).replace("torch.", "jitgrad.") for t in out]

    assert run(jitgrad, jitgrad.autograd.forward_ad) == run(torch, torch_fwad)
    fwad = jitgrad.autograd.forward_ad
    with jitgrad.device("meta"):  # the same rules on CPU tensors inside a meta block
        x = jitgrad.ones(3, 4, device="cpu", requires_grad=True)
        (x.cumprod(1).sum() + jitgrad.einsum("ii->i", x[:, :3]).sum() + x.median()).backward()
        with fwad.dual_level():
            d = fwad.make_dual(jitgrad.ones(3, 4, device="cpu"), jitgrad.ones(3, 4, device="cpu"))
            tangents = [fwad.unpack_dual(d.amax(0)).tangent, fwad.unpack_dual(d.norm()).tangent]
    assert x.grad.is_cpu and all(t.is_cpu for t in tangents)


def test_jacobians_of_meta_functions():
    x = jitgrad.empty(3, device="meta")
    for jac in (jitgrad.autograd.functional.jacobian(lambda t: t.sin(), x),
                jitgrad.func.jacrev(lambda t: t.sin())(x),
                jitgrad.func.jacfwd(lambda t: t.sin())(x),
                jitgrad.func.hessian(lambda t: t.sin().sum())(x)):
        assert jac.is_meta and tuple(jac.shape) == (3, 3)
    assert jitgrad.func.vmap(lambda t: t * 2)(_meta(jitgrad, 4, 3)).is_meta
    with jitgrad.device("meta"):  # of CPU functions inside a meta block
        cpu = jitgrad.ones(2, device="cpu")
        jacs = [jitgrad.autograd.functional.jacobian(lambda t: t * 2, cpu),
                jitgrad.func.jacrev(lambda t: t * 2)(cpu)]
    assert [j.tolist() for j in jacs] == [[[2.0, 0.0], [0.0, 2.0]]] * 2


def test_training_step_on_a_meta_model():
    with jitgrad.device("meta"):
        m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(144, 10))
    assert all(t.is_meta for t in m.state_dict().values())
    x = _meta(jitgrad, 2, 3, 8, 8)
    target = jitgrad.empty(2, dtype=jitgrad.int64, device="meta")
    opt = jitgrad.optim.Adam(m.parameters(), lr=0.1)
    loss = nn.functional.cross_entropy(m(x), target)
    loss.backward()
    opt.step()
    opt.zero_grad()
    assert loss.is_meta and all(p.is_meta for p in m.parameters())


# ---------------------------------------------------------------- modules


def test_module_to_meta_and_to_empty():
    torch = _torch()
    for lib in (torch, jitgrad):
        m = lib.nn.Linear(3, 2)
        assert m.to("meta") is m and m.weight.is_meta and isinstance(m.weight, lib.nn.Parameter)
        assert m(lib.ones(4, 3, device="meta")).shape == (4, 2)
        assert m.to_empty(device="cpu") is m and m.weight.device.type == "cpu"
        assert isinstance(m.weight, lib.nn.Parameter) and m.weight.requires_grad
        bn = lib.nn.BatchNorm1d(3, device="meta")
        assert bn.running_mean.is_meta and bn.num_batches_tracked.is_meta
        bn.to_empty(device="cpu", recurse=False)
        assert tuple(bn.running_mean.shape) == (3,) and bn.running_mean.is_cpu
        seq = lib.nn.Sequential(lib.nn.Linear(2, 2, device="meta"))
        seq.to_empty(device="cpu", recurse=False)  # (no parameters of its own)
        assert seq[0].weight.is_meta


def test_build_on_meta_then_load_state_dict_matches_torch():
    torch = _torch()
    outs = {}
    for lib in (torch, jitgrad):
        lib.manual_seed(0)
        src = lib.nn.Sequential(lib.nn.Linear(20, 30), lib.nn.ReLU(), lib.nn.Linear(30, 5))
        sd = {k: lib.tensor(np.random.default_rng(i).standard_normal(tuple(v.shape)),
                            dtype=lib.float32) for i, (k, v) in enumerate(src.state_dict().items())}
        with lib.device("meta"):
            model = lib.nn.Sequential(lib.nn.Linear(20, 30), lib.nn.ReLU(), lib.nn.Linear(30, 5))
        assert model[0].weight.is_meta
        model.to_empty(device="cpu")
        assert str(model.load_state_dict(sd)) == "<All keys matched successfully>"
        x = lib.tensor(np.linspace(-1, 1, 40).reshape(2, 20), dtype=lib.float32)
        outs[lib] = model(x).detach().numpy()
    np.testing.assert_allclose(outs[jitgrad], outs[torch], rtol=1e-5, atol=1e-6)


def test_load_state_dict_assign_onto_a_meta_model():
    torch = _torch()
    for lib in (torch, jitgrad):
        sd = lib.nn.Linear(4, 2).state_dict()
        with lib.device("meta"):
            model = lib.nn.Linear(4, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.load_state_dict(sd)  # copying into meta: a no-op, with torch's warning
        assert model.weight.is_meta
        assert any("copying from a non-meta parameter in the checkpoint to a meta parameter"
                   in str(w.message) for w in caught)
        model.load_state_dict(sd, assign=True)
        assert model.weight.device.type == "cpu" and isinstance(model.weight, lib.nn.Parameter)
        assert model.weight.requires_grad
        assert model.weight.detach().numpy().tolist() == sd["weight"].numpy().tolist()


def test_reset_parameters_after_to_empty():
    with jitgrad.device("meta"):
        model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 3))
    model.to_empty(device="cpu")
    for m in model.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    w = model[0].weight.detach().numpy()
    assert np.all(np.abs(w) <= 1 / np.sqrt(10)) and np.std(w) > 0
    assert tuple(model(jitgrad.ones(2, 10)).shape) == (2, 3)


def test_skip_init_builds_on_meta_then_allocates():
    torch = _torch()
    for lib in (torch, jitgrad):
        m = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4)
        assert m.weight.device.type == "cpu" and tuple(m.weight.shape) == (4, 3)
        m = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4, device="meta")
        assert m.weight.is_meta
    same_error(lambda lib: lib.nn.utils.skip_init(lib.nn.ReLU))
