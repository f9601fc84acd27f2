"""``jitgrad.save``/``jitgrad.load``: round trips of tensors, state_dicts and optimizer states,
and the safety of ``weights_only=True`` (the default): no pickled object is loaded, no code
from the file runs."""

from __future__ import annotations

import io
import json
import math
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import jitgrad
from jitgrad import nn


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    jitgrad.save(obj, buf)
    buf.seek(0)
    return jitgrad.load(buf, **load_kw)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                   "float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)], ids=str)
def test_tensor_round_trip_every_dtype(dtype, shape):
    data = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    t = jitgrad.tensor(data)
    out = _roundtrip(t)
    assert out.dtype is t.dtype and tuple(out.shape) == shape
    np.testing.assert_array_equal(out.numpy(), data)


def test_non_contiguous_and_requires_grad(tmp_path):
    x = jitgrad.arange(12.0).reshape(3, 4).t()
    w = jitgrad.randn(3, requires_grad=True)
    path = tmp_path / "t.pt"
    jitgrad.save({"x": x, "w": w}, path)
    out = jitgrad.load(path)
    np.testing.assert_array_equal(out["x"].numpy(), x.numpy())
    assert out["w"].requires_grad and out["w"].is_leaf and not out["x"].requires_grad
    jitgrad.save(x, str(tmp_path / "s.pt"))  # a str path as well
    assert jitgrad.load(str(tmp_path / "s.pt")).tolist() == x.tolist()


def test_containers_and_scalars_keep_their_types():
    obj = OrderedDict(a=1, b=[1.5, (2, "s")], c={3: None, "k": True, (1, 2): b"\x00\xff"},
                      d=jitgrad.Size([2, 3]), e=jitgrad.float64, f=math.inf, g=-math.inf,
                      h=1 + 2j, i={1, 2}, j=jitgrad.device("cpu"))
    out = _roundtrip(obj)
    assert type(out) is OrderedDict and list(out) == list(obj)
    assert out["b"] == [1.5, (2, "s")] and type(out["b"][1]) is tuple
    assert out["c"] == {3: None, "k": True, (1, 2): b"\x00\xff"}
    assert isinstance(out["d"], jitgrad.Size) and out["d"] == (2, 3)
    assert out["e"] is jitgrad.float64 and out["f"] == math.inf and out["g"] == -math.inf
    assert out["h"] == 1 + 2j and out["i"] == {1, 2} and out["j"] == jitgrad.device("cpu")
    assert math.isnan(_roundtrip(math.nan))


def test_a_tensor_saved_twice_loads_as_one():
    t = jitgrad.ones(3)
    a, b = _roundtrip([t, t])
    assert a is b


def test_module_state_dict_round_trip():
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    sd = _roundtrip(model.state_dict())
    assert list(sd) == list(model.state_dict())
    fresh = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    fresh.load_state_dict(sd)
    x = jitgrad.randn(5, 4)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    # the keys and shapes are torch's, so the values move to a torch model
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})
    # (float32 sums of terms of size about 1, summed in another order: an absolute bound too,
    # for outputs that cancel to near 0)
    np.testing.assert_allclose(tmodel(torch.from_numpy(x.numpy())).detach().numpy(),
                               model(x).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_parameters_load_as_parameters():
    p = nn.Parameter(jitgrad.randn(3))
    out = _roundtrip({"p": p})["p"]
    assert isinstance(out, nn.Parameter) and out.requires_grad


def test_optimizer_state_dict_round_trip():
    w = nn.Parameter(jitgrad.randn(3))
    opt = jitgrad.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    out = _roundtrip(sd)
    assert out["param_groups"] == sd["param_groups"]
    assert set(out["state"]) == set(sd["state"])  # int keys stay ints
    for k, st in sd["state"].items():
        for name, v in st.items():
            got = out["state"][k][name]
            if isinstance(v, jitgrad.Tensor):
                np.testing.assert_array_equal(got.numpy(), v.numpy())
            else:
                assert got == v


class _Custom:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _Custom) and other.v == self.v


def test_other_objects_need_weights_only_false():
    obj = {"w": jitgrad.ones(2), "extra": _Custom(3)}
    buf = io.BytesIO()
    jitgrad.save(obj, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        jitgrad.load(buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        jitgrad.load(buf, weights_only=True)
    buf.seek(0)
    out = jitgrad.load(buf, weights_only=False)
    assert out["extra"] == _Custom(3) and out["w"].tolist() == [1.0, 1.0]


_RAN = []


class _Payload:
    def __reduce__(self):
        return (_RAN.append, ("code ran",))


def test_weights_only_runs_no_code_from_a_crafted_file():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "jitgrad", "version": 1,
                                                 "root": {"pickle": 0}}))
        zf.writestr("pickles/0.pkl", pickle.dumps(_Payload()))
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        jitgrad.load(buf)
    assert _RAN == []


def test_object_arrays_are_refused():
    buf = io.BytesIO()
    arr = io.BytesIO()
    np.save(arr, np.array([_Custom(1)], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "jitgrad", "version": 1,
                                                 "root": {"tensor": 0}}))
        zf.writestr("tensors/0.npy", arr.getvalue())
    buf.seek(0)
    with pytest.raises(ValueError, match="allow_pickle=False"):
        jitgrad.load(buf)


def test_foreign_files_and_devices_give_clear_errors(tmp_path):
    with pytest.raises(pickle.UnpicklingError, match="not a jitgrad file"):
        jitgrad.load(io.BytesIO(b"not a zip"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", b"")
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="no manifest.json"):
        jitgrad.load(buf)
    path = tmp_path / "x.pt"
    jitgrad.save(jitgrad.ones(2), path)
    assert jitgrad.load(path, map_location="cpu").tolist() == [1.0, 1.0]
    assert jitgrad.load(path, map_location=jitgrad.device("cpu")).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="jitgrad loads tensors on the CPU"):
        jitgrad.load(path, map_location="cuda")


def test_safe_globals_allowlist_what_weights_only_unpickles():
    import argparse
    import collections

    obj = {"args": argparse.Namespace(lr=0.1), "extra": _Custom(3),
           "counts": collections.Counter("aab")}
    buf = io.BytesIO()
    jitgrad.save(obj, buf)
    S = jitgrad.serialization
    buf.seek(0)
    assert S.get_unsafe_globals_in_checkpoint(buf) == ["argparse.Namespace",
                                                       f"{__name__}._Custom"]
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL "
                       "argparse.Namespace was not an allowed global by default. Please use "
                       r"`jitgrad.serialization.add_safe_globals\(\[argparse.Namespace\]\)`"):
        jitgrad.load(buf)
    with S.safe_globals([argparse.Namespace, _Custom]):
        buf.seek(0)
        out = jitgrad.load(buf)
        assert S.get_safe_globals() == [argparse.Namespace, _Custom]
    assert out["args"].lr == 0.1 and out["extra"] == _Custom(3) and out["counts"]["a"] == 2
    assert S.get_safe_globals() == []
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        jitgrad.load(buf)  # (the context's allowlist ended with it)
    S.add_safe_globals([argparse.Namespace, (_Custom, f"{__name__}._Custom")])
    try:
        buf.seek(0)
        assert jitgrad.load(buf)["extra"] == _Custom(3)
        buf.seek(0)
        assert S.get_unsafe_globals_in_checkpoint(buf) == []
    finally:
        S.clear_safe_globals()
    assert S.get_safe_globals() == []


def test_a_refused_global_runs_no_code(tmp_path):
    import os

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    path = tmp_path / "evil.pt"
    jitgrad.save({"p": Payload()}, str(path))
    assert jitgrad.serialization.get_unsafe_globals_in_checkpoint(str(path)) in (
        [f"{os.name}.system"], ["posix.system"], ["os.system"])
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        jitgrad.load(str(path))
    assert not marker.exists()


def test_a_state_dict_keeps_its_metadata_and_numpy_scalars_stay_numpy():
    import numpy as np

    model = jitgrad.nn.Sequential(jitgrad.nn.Linear(2, 2), jitgrad.nn.BatchNorm1d(2))
    buf = io.BytesIO()
    jitgrad.save(model.state_dict(), buf)
    buf.seek(0)
    loaded = jitgrad.load(buf)
    assert loaded._metadata == model.state_dict()._metadata  # (the modules' versions)
    assert loaded._metadata["1"]["version"] == 2
    buf = io.BytesIO()
    jitgrad.save({"best": np.float64(1.5), "step": np.int64(3), "plain": 2.5}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="numpy"):  # (pickled, as torch's)
        jitgrad.load(buf)
    buf.seek(0)
    values = jitgrad.load(buf, weights_only=False)
    assert type(values["best"]) is np.float64 and type(values["step"]) is np.int64
    assert type(values["plain"]) is float
