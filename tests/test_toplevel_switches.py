"""torch's small runtime switches and build queries, the deprecated autocast setters and
autocast's cache/nesting bookkeeping, and the ``sym_*`` utilities, against torch's."""

import math
import warnings

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e))


def test_flush_denormal_is_refused_truthfully_with_torch_argument_errors():
    assert jg.set_flush_denormal(True) is False  # (NumPy/Numba cannot set FTZ/DAZ)
    assert jg.set_flush_denormal(False) is False
    assert np.float32(1e-40) != 0  # denormals keep their values
    for bad in (1, "x"):
        assert _outcome(lambda b=bad: jg.set_flush_denormal(b)) == \
            _outcome(lambda b=bad: torch.set_flush_denormal(b))


def test_interop_threads_set_once_as_torch(monkeypatch):
    from jitgrad import _runtime_switches as rs

    monkeypatch.setattr(rs, "_interop_threads", None)
    assert jg.get_num_interop_threads() >= 1
    for bad in (0, "a", True):
        with pytest.raises(RuntimeError):
            jg.set_num_interop_threads(bad)
    assert _outcome(lambda: jg.set_num_interop_threads("a"))[1] == \
        "set_num_interop_threads expects an int, but got str"
    jg.set_num_interop_threads(3)
    assert jg.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads after"):
        jg.set_num_interop_threads(2)


def test_init_num_threads_gives_a_new_thread_the_configured_count():
    import threading

    import numba

    before = jg.get_num_threads()
    jg.set_num_threads(1)
    try:
        seen = []

        def worker():
            jg.init_num_threads()
            seen.append(numba.get_num_threads())

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert seen == [1]
        assert jg.init_num_threads() is None
    finally:
        jg.set_num_threads(before)


def test_build_queries_answer_for_this_build():
    assert jg.has_lapack is True and jg.has_spectral is True
    assert isinstance(jg.has_mkl, bool) and isinstance(jg.has_openmp, bool)
    assert jg.is_vulkan_available() is False
    assert jg.compiled_with_cxx11_abi() is False


def test_set_default_tensor_type_warns_and_sets_the_dtype_as_torch():
    try:
        with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated"):
            jg.set_default_tensor_type(jg.DoubleTensor)
        assert jg.get_default_dtype() == jg.float64
        assert jg.tensor([1.0]).dtype == jg.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jg.set_default_tensor_type("torch.FloatTensor")
            assert jg.get_default_dtype() == jg.float32
            for bad in (jg.IntTensor, 5, "torch.cuda.FloatTensor"):
                t_bad = {jg.IntTensor: torch.IntTensor}.get(bad, bad)
                with pytest.raises(TypeError) as je:
                    jg.set_default_tensor_type(bad)
                with pytest.raises(TypeError) as te:
                    torch.set_default_tensor_type(t_bad)
                assert str(je.value) == str(te.value)
    finally:
        jg.set_default_dtype(jg.float32)
        torch.set_default_dtype(torch.float32)


def test_deprecated_autocast_setters_warn_and_set_as_torch():
    with pytest.warns(DeprecationWarning, match=r"set_autocast_cpu_enabled\(enabled\) is "):
        jg.set_autocast_cpu_enabled(True)
    try:
        assert jg.is_autocast_enabled("cpu")
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jg.set_autocast_cpu_enabled(False)
    assert not jg.is_autocast_enabled("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jg.set_autocast_cpu_dtype(jg.float16)
        assert jg.get_autocast_dtype("cpu") == jg.float16
        jg.set_autocast_cpu_dtype(jg.bfloat16)
        jg.set_autocast_gpu_dtype(jg.bfloat16)
        assert jg.get_autocast_dtype("cuda") == jg.bfloat16
        jg.set_autocast_gpu_dtype(jg.float16)
        for m in (jg, torch):
            with pytest.raises(TypeError, match=r"enabled must be a bool \(got int\)"):
                m.set_autocast_cpu_enabled(1)
            with pytest.raises(TypeError, match=r"dtype must be a torch.dtype \(got int\)"):
                m.set_autocast_cpu_dtype(1)


def _nesting(m):
    out = [m.autocast_increment_nesting(), m.autocast_increment_nesting(),
           m.autocast_decrement_nesting(), m.autocast_decrement_nesting(),
           m.autocast_decrement_nesting(), m.autocast_increment_nesting()]
    with m.autocast("cpu"):
        out.append(m.autocast_increment_nesting())
        out.append(m.autocast_decrement_nesting())
    out.append(m.autocast_increment_nesting())
    m.autocast_decrement_nesting()
    out.append(m.is_autocast_cache_enabled())
    m.set_autocast_cache_enabled(False)
    out.append(m.is_autocast_cache_enabled())
    with m.autocast("cpu", cache_enabled=True):
        out.append(m.is_autocast_cache_enabled())
    out.append(m.is_autocast_cache_enabled())
    m.set_autocast_cache_enabled(True)
    out.append(m.clear_autocast_cache())
    return out


def test_autocast_nesting_and_cache_flags_match_torch():
    assert _nesting(jg) == _nesting(torch)
    with pytest.raises(TypeError, match=r"enabled must be a bool \(got int\)"):
        jg.set_autocast_cache_enabled(1)


SYM_CASES = [("sym_int", (2.7,)), ("sym_int", (-2.7,)), ("sym_float", (3,)),
             ("sym_max", (1, 2.0)), ("sym_max", (3, 2)), ("sym_min", (3, 2)),
             ("sym_min", (np.int64(1), 2.5)), ("sym_not", (True,)), ("sym_ite", (True, 2, 3)),
             ("sym_ite", (False, "a", "b")), ("sym_sum", ([1, 2, 3],)), ("sym_sum", (1, 2.5)),
             ("sym_sqrt", (4,)), ("sym_sqrt", (-1,)), ("sym_max", ("a", 1)),
             ("sym_ite", (1, 2, 3)), ("sym_ite", (True, 2, 3.0)), ("sym_max", (True, 2))]


@pytest.mark.parametrize("name,args", SYM_CASES)
def test_sym_functions_match_torch_on_numbers(name, args):
    got = _outcome(lambda: getattr(jg, name)(*args))
    ref = _outcome(lambda: getattr(torch, name)(*args))
    assert got == ref
    if got[0] == "ok":
        assert type(got[1]) is type(ref[1])


def test_sym_functions_on_tensors():
    assert jg.sym_int(jg.tensor(2.5)) == 2
    assert jg.sym_float(jg.tensor(2)) == 2.0
    assert jg.sym_sqrt(jg.tensor(4.0)) == 2.0
    assert jg.sym_not(jg.tensor(True)) is False
    assert float(jg.sym_sum([jg.tensor(1.0), 2])) == 3.0
    assert jg.sym_sqrt.__name__ == torch.sym_sqrt.__name__ and math.isnan(jg.sym_sqrt(math.nan))
