"""Small torch modules scripts import: ``jitgrad.types``, ``nn.modules.utils``, ``storage``,
``utils.weak``, ``utils.dlpack`` and ``futures``, checked against torch's."""

import gc
import shutil
import threading

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def test_types_aliases():
    import jitgrad.types as T

    assert T._dtype is jitgrad.dtype and T._device is jitgrad.device
    assert T.Number == (int | float | bool) and T._Number == (int, float, bool)
    assert set(T.__all__) == set(torch.types.__all__)
    assert jitgrad.types is T  # (the package serves it as an attribute, as torch.types)

    def f(x: T.Number, d: T.Device = None, s: T._size = (1,)) -> T._TensorOrTensors:
        return x

    assert f(2) == 2


def test_nn_modules_utils_match_torch():
    from torch.nn.modules import utils as tu

    from jitgrad.nn.modules import utils as ju

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for arg in (3, (1, 2), [4, 5, 6]):
            assert getattr(ju, name)(arg) == getattr(tu, name)(arg)
        assert getattr(ju, name).__name__ == name
    assert ju._ntuple(5)(2) == tu._ntuple(5)(2) == (2,) * 5
    assert ju._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert ju._list_with_default([None, 3], [1, 7, 8]) == [7, 3]
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        ju._list_with_default([None, 3], [1, 7])
    sd = {"module.a": 1, "b": 2}
    ju.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd == {"a": 1, "b": 2}
    assert jitgrad.nn.modules.utils._pair(2) == (2, 2)  # (served lazily, as torch.nn.modules)
    from jitgrad.nn.modules import Linear
    from jitgrad.nn.modules.module import Module

    assert Linear is jitgrad.nn.Linear and Module is jitgrad.nn.Module


def test_global_module_forward_hooks():
    from jitgrad.nn.modules.module import (register_module_forward_hook,
                                           register_module_forward_pre_hook)

    seen = []
    m = jitgrad.nn.Sequential(jitgrad.nn.Linear(2, 2), jitgrad.nn.ReLU())
    m[0].register_forward_hook(lambda mod, args, out: seen.append(("own", type(mod).__name__)))
    pre = register_module_forward_pre_hook(
        lambda mod, args: seen.append(("pre", type(mod).__name__)))
    post = register_module_forward_hook(
        lambda mod, args, out: seen.append(("post", type(mod).__name__)))
    m(jitgrad.randn(1, 2))
    pre.remove()
    post.remove()
    m(jitgrad.randn(1, 2))
    assert seen == [("pre", "Sequential"), ("pre", "Linear"), ("post", "Linear"),
                    ("own", "Linear"), ("pre", "ReLU"), ("post", "ReLU"),
                    ("post", "Sequential"), ("own", "Linear")]


def test_storage_module():
    import jitgrad.storage as S

    t = jitgrad.arange(4.0)
    assert isinstance(t.untyped_storage(), S.UntypedStorage)
    assert S.UntypedStorage(3).size() == torch.UntypedStorage(3).size() == 3
    assert t.untyped_storage().nbytes() == torch.arange(4.0).untyped_storage().nbytes()
    assert set(S.__all__) == set(torch.storage.__all__)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        assert isinstance(t.storage(), S.TypedStorage)


def test_weak_dictionaries():
    from jitgrad.utils.weak import (TensorWeakRef, WeakIdKeyDictionary, WeakIdRef,
                                    WeakTensorKeyDictionary)

    assert WeakTensorKeyDictionary is WeakIdKeyDictionary
    a, b = jitgrad.ones(2), jitgrad.ones(2)  # (equal values: keyed by identity)
    d = WeakIdKeyDictionary({a: "a"})
    d[b] = "b"
    assert d[a] == "a" and d[b] == "b" and len(d) == 2
    r = TensorWeakRef(a)
    ref = WeakIdRef(b)
    assert r() is a and ref() is b and hash(ref) == id(b)
    del a
    gc.collect()
    assert len(d) == 1 and r() is None
    with pytest.raises(AssertionError, match="expected torch.Tensor"):
        TensorWeakRef(np.ones(2))


def test_dlpack_round_trips():
    from jitgrad.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

    t = jitgrad.arange(6.0).reshape(2, 3)
    assert DLDeviceType(t.__dlpack_device__()[0]) is DLDeviceType.kDLCPU
    assert [(m.name, m.value) for m in DLDeviceType] == \
        [(m.name, m.value) for m in torch.utils.dlpack.DLDeviceType]
    u = from_dlpack(to_dlpack(t))  # a legacy capsule: shares memory, writeable
    u[1, 1] = 9.0
    assert t[1, 1].item() == 9.0
    tt = torch.utils.dlpack.from_dlpack(to_dlpack(t))
    tt[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    v = from_dlpack(torch.utils.dlpack.to_dlpack(tt))
    v[1, 2] = 3.0
    assert tt[1, 2].item() == 3.0
    a = np.arange(4, dtype=np.int32)
    w = from_dlpack(a)
    assert w.dtype is jitgrad.int32 and w.tolist() == [0, 1, 2, 3]
    np.from_dlpack(w)[0] = 7
    assert a[0] == 7
    with pytest.raises(TypeError):
        to_dlpack(a)
    # a capsule is consumed once (torch's error); a device capsule is refused, clearly
    cap = to_dlpack(t)
    from_dlpack(cap)
    for lib_from in (from_dlpack, torch.utils.dlpack.from_dlpack):
        with pytest.raises(RuntimeError, match="DLTensor capsules can be consumed only once"):
            lib_from(cap)
    from jitgrad import _dlpack

    cuda_cap = _dlpack.capsule(a.ctypes.data, a.shape, (1,), a.dtype, 2, a)
    assert _dlpack.capsule_device(cuda_cap) == (2, 0)
    with pytest.raises(RuntimeError, match="this one is on kDLCUDA: pass the tensor or array"):
        from_dlpack(cuda_cap)


def test_futures_match_torch():
    from jitgrad.futures import Future, collect_all, wait_all

    for future, collect, wait in ((Future, collect_all, wait_all),
                                  (torch.futures.Future, torch.futures.collect_all,
                                   torch.futures.wait_all)):
        f = future()
        chained = f.then(lambda fut: fut.wait() + 1)
        seen = []
        f.add_done_callback(lambda fut, seen=seen: seen.append(fut.value()))
        assert not f.done()
        f.set_result(3)
        assert f.done() and f.value() == 3 and chained.wait() == 4 and seen == [3]
        with pytest.raises(RuntimeError, match="Note that a Future can only be marked "
                                               "completed once"):
            f.set_result(5)
        g = future()
        g.set_exception(ValueError("x"))
        with pytest.raises(ValueError, match="x"):
            g.wait()
        with pytest.raises(AssertionError, match="is of type <class 'int'>, not an Exception"):
            future().set_exception(3)
        bad = f.then(lambda fut: 1 / 0)
        with pytest.raises(RuntimeError, match="Got the following error when running the "
                                               "callback: ZeroDivisionError: division by zero"):
            bad.wait()
        assert [x.wait() for x in collect([f, chained]).wait()] == [3, 4]
        assert wait([f, chained]) == [3, 4]
        with pytest.raises(ValueError, match="x"):
            wait([f, g])


def test_future_wakes_a_waiting_thread():
    from jitgrad.futures import Future

    f = Future()
    out = []
    th = threading.Thread(target=lambda: out.append(f.wait()))
    th.start()
    f.set_result(jitgrad.ones(2))
    th.join(5)
    assert out and out[0].tolist() == [1.0, 1.0]


def _hub_dir(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(
        "import jitgrad\n"
        "dependencies = ['numpy']\n\n"
        "def tiny(n=2, *, bias=True):\n"
        "    '''A tiny linear model.'''\n"
        "    return jitgrad.nn.Linear(n, 1, bias=bias)\n\n"
        "def _helper():\n"
        "    pass\n\n"
        "NOT_CALLABLE = 3\n")
    return repo


def test_hub_local_and_cached_repos(tmp_path, monkeypatch):
    import jitgrad.hub as hub

    repo = _hub_dir(tmp_path)
    m = hub.load(str(repo), "tiny", 3, source="local", bias=False)
    assert isinstance(m, jitgrad.nn.Linear) and m.weight.shape == (1, 3) and m.bias is None
    assert hub.list(str(repo)) == ["tiny"]
    assert hub.help(str(repo), "tiny") == "A tiny linear model."
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(ValueError, match='Unknown source: "web". Allowed values: "github" '
                                         '| "local".'):
        hub.load(str(repo), "tiny", source="web")
    with pytest.raises(ValueError, match="model should be a string of function name"):
        hub.load(str(repo), 3, source="local")
    # get_dir follows TORCH_HOME until set_dir; a GitHub repo is read from the cache only
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    assert hub.get_dir() == str(tmp_path / "home" / "hub")
    hub.set_dir(str(tmp_path / "hubdir"))
    assert hub.get_dir() == str(tmp_path / "hubdir")
    with pytest.raises(RuntimeError, match="jitgrad does no network access"):
        hub.load("someone/models", "tiny")
    shutil.copytree(repo, tmp_path / "hubdir" / "someone_models_main")
    assert isinstance(hub.load("someone/models", "tiny", verbose=False), jitgrad.nn.Linear)
    assert hub.list("someone/models:main", verbose=False) == ["tiny"]


def test_hub_downloads_file_urls(tmp_path, monkeypatch):
    import hashlib

    import jitgrad.hub as hub
    from jitgrad.utils.model_zoo import load_url

    monkeypatch.setattr(hub, "_hub_dir", str(tmp_path / "hubdir"))
    sd = {"w": jitgrad.arange(3.0)}
    src = tmp_path / "weights.pt"
    jitgrad.save(sd, str(src))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    named = tmp_path / f"weights-{digest[:8]}.pt"
    shutil.copy(src, named)
    dst = tmp_path / "copy.pt"
    hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix=digest[:6], progress=False)
    assert dst.read_bytes() == src.read_bytes()
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix="zz", progress=False)
    got = load_url(named.as_uri(), check_hash=True, progress=False)
    assert got["w"].tolist() == [0.0, 1.0, 2.0]
    assert (tmp_path / "hubdir" / "checkpoints" / named.name).exists()
    jitgrad.save({}, str(tmp_path / "empty.pt"))  # (one file in its zip: not torch's legacy)
    assert load_url((tmp_path / "empty.pt").as_uri(), progress=False) == {}
    # a torch checkpoint's URL: the same copy (in torch's layout) as torch.hub makes
    torch.save({"w": torch.arange(3.0)}, str(tmp_path / "t.pt"))
    torch_sd = torch.hub.load_state_dict_from_url((tmp_path / "t.pt").as_uri(),
                                                  model_dir=str(tmp_path / "t"), progress=False)
    hub.download_url_to_file((tmp_path / "t.pt").as_uri(), str(tmp_path / "t2.pt"),
                             progress=False)
    assert (tmp_path / "t2.pt").read_bytes() == (tmp_path / "t" / "t.pt").read_bytes()
    assert torch_sd["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="only file:// URLs can be read"):
        hub.download_url_to_file("https://example.com/x.pt", str(dst))
    with pytest.raises(RuntimeError, match="jitgrad does no network access"):
        load_url("https://example.com/y.pt", model_dir=str(tmp_path / "m"))
