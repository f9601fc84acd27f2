"""uint16, uint32 and uint64, torch's limited-support dtypes: what torch computes on them
(creation, casts, views, ``==``, ``*``, bitwise and/or/xor, sums, sorting, unique) gives
torch's values; what it refuses raises torch's error; promotion, iinfo, printing and
serialization as torch's."""

import io

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

NAMES = ("uint16", "uint32", "uint64")


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e).split("\n")[0])
    if hasattr(r, "tolist") and hasattr(r, "dtype"):
        return ("ok", str(r.dtype).split(".")[-1], np.asarray(r.tolist()).tolist())
    if isinstance(r, (jg.dtype, torch.dtype)):
        return ("ok", str(r).split(".")[-1])
    return ("ok", r)


CASES = {
    "mul": lambda m, x: x * x, "mul_scalar": lambda m, x: x * 3, "eq": lambda m, x: x == x,
    "ne_scalar": lambda m, x: x != 2, "band": lambda m, x: x & x, "bor": lambda m, x: x | x,
    "bxor": lambda m, x: x ^ x, "to_float": lambda m, x: x.to(m.float32),
    "to_long": lambda m, x: x.to(m.int64), "to_bool": lambda m, x: x.bool(),
    "true_div": lambda m, x: x / 2, "plus_float": lambda m, x: x + 1.5,
    "sum": lambda m, x: x.sum(), "sum_dim": lambda m, x: x.sum(0), "prod": lambda m, x: x.prod(),
    "cumsum": lambda m, x: x.cumsum(0), "sort": lambda m, x: x.sort()[0],
    "argsort": lambda m, x: x.argsort(), "unique": lambda m, x: x.unique(),
    "cat": lambda m, x: m.cat([x, x]), "stack": lambda m, x: m.stack([x, x]),
    "slice": lambda m, x: x[1:], "index": lambda m, x: x[m.tensor([2, 0])],
    "mask": lambda m, x: x[x == 2], "reshape": lambda m, x: x.reshape(3, 1).t(),
    "clone": lambda m, x: x.clone(), "fill": lambda m, x: x.clone().fill_(7),
    "where": lambda m, x: m.where(x == 1, x, x * 2), "zeros": lambda m, x: m.zeros(2,
                                                                                   dtype=x.dtype),
    "full": lambda m, x: m.full((2,), 5, dtype=x.dtype), "ones_like": lambda m, x: m.ones_like(x),
    "copy_from_float": lambda m, x: m.empty(3, dtype=x.dtype).copy_(m.tensor([1.5, 2, 3])),
    "tolist": lambda m, x: x.tolist(), "item": lambda m, x: x[0].item(),
    "any": lambda m, x: x.any(), "equal": lambda m, x: m.equal(x, x),
    # refused by torch
    "add": lambda m, x: x + x, "add_scalar": lambda m, x: x + 1, "sub": lambda m, x: x - x,
    "lt": lambda m, x: x < 2, "neg": lambda m, x: -x, "abs": lambda m, x: x.abs(),
    "max": lambda m, x: x.max(), "amax": lambda m, x: x.amax(), "argmax": lambda m, x: x.argmax(),
    "floordiv": lambda m, x: x // x, "minimum": lambda m, x: m.minimum(x, x),
    "pow": lambda m, x: x ** 2, "mean": lambda m, x: x.mean(), "sign": lambda m, x: x.sign(),
    "clamp": lambda m, x: x.clamp(0, 1), "gather": lambda m, x: x.gather(0, m.tensor([0])),
    "masked_fill": lambda m, x: x.masked_fill(x == 1, 0), "nonzero": lambda m, x: x.nonzero(),
    "matmul": lambda m, x: x @ x, "arange": lambda m, x: m.arange(3, dtype=x.dtype),
    "promote_long": lambda m, x: x + m.tensor([1]), "promote_bool": lambda m, x: x * m.tensor(
        [True, False, True]),
    "requires_grad": lambda m, x: m.zeros(2, dtype=x.dtype, requires_grad=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", NAMES)
def test_ops_on_limited_uints_match_torch(name, case):
    fn = CASES[case]
    jx = jg.tensor([1, 2, 3], dtype=getattr(jg, name))
    tx = torch.tensor([1, 2, 3], dtype=getattr(torch, name))
    assert _outcome(lambda: fn(jg, jx)) == _outcome(lambda: fn(torch, tx))


@pytest.mark.parametrize("name", NAMES)
def test_promotion_and_result_type_match_torch(name):
    for other in ("bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64",
                  "complex64", "uint16", "uint32", "uint64"):
        got = _outcome(lambda o=other: jg.promote_types(getattr(jg, name), getattr(jg, o)))
        ref = _outcome(lambda o=other: torch.promote_types(getattr(torch, name),
                                                           getattr(torch, o)))
        assert got == ref
    jx, tx = jg.tensor([1], dtype=getattr(jg, name)), torch.tensor([1], dtype=getattr(torch, name))
    for arg in (1, 1.5, True):
        assert str(jg.result_type(jx, arg)).split(".")[-1] == \
            str(torch.result_type(tx, arg)).split(".")[-1]
    assert jg.result_type(jx, jg.tensor(1)) == getattr(jg, name)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_iinfo_and_printing_match_torch(name):
    d, td = getattr(jg, name), getattr(torch, name)
    assert (d.is_signed, d.itemsize, d.is_floating_point, d.is_complex) == \
        (td.is_signed, td.itemsize, td.is_floating_point, td.is_complex)
    assert repr(jg.iinfo(d)) == repr(torch.iinfo(td))
    assert (jg.iinfo(d).max, jg.iinfo(d).bits) == (torch.iinfo(td).max, torch.iinfo(td).bits)
    for data in ([1, 2], [], 5):
        got = repr(jg.tensor(data, dtype=d)).replace("jitgrad", "torch")
        assert got == repr(torch.tensor(data, dtype=td))
    x = jg.tensor([1, 2], dtype=d)
    assert x.type() == f"jitgrad.{torch.tensor([1], dtype=td).type().split('.')[-1]}"
    assert x.is_signed() is False and x.element_size() == td.itemsize
    assert x.numpy().dtype == np.dtype(name)


def test_uint64_values_beyond_int64_and_wrapping_casts_match_torch():
    big = [2 ** 64 - 1, 2 ** 63]
    assert repr(jg.tensor(big, dtype=jg.uint64)).replace("jitgrad", "torch") == \
        repr(torch.tensor(big, dtype=torch.uint64))
    for name in NAMES:
        got = jg.tensor([-1, 70000]).to(getattr(jg, name)).tolist()
        assert got == torch.tensor([-1, 70000]).to(getattr(torch, name)).tolist()


@pytest.mark.parametrize("name", NAMES)
def test_save_load_and_numpy_round_trip(name):
    d = getattr(jg, name)
    x = jg.tensor([1, 2, 3], dtype=d)
    buf = io.BytesIO()
    jg.save({"x": x, "dtype": d}, buf)
    buf.seek(0)
    back = jg.load(buf)
    assert back["dtype"] is d and back["x"].dtype is d and back["x"].tolist() == [1, 2, 3]
    assert jg.from_numpy(np.array([5, 6], dtype=name)).dtype is d


def test_the_check_is_off_until_a_limited_dtype_is_used_and_jit_refuses_as_eager():
    import subprocess
    import sys

    code = ("import jitgrad, jitgrad.dtypes as d; jitgrad.ones(2) + 1; "
            "assert not d.limited_live; jitgrad.uint16; assert d.limited_live")
    subprocess.run([sys.executable, "-c", code], check=True)
    x = jg.tensor([1, 2], dtype=jg.uint32)
    assert jg.jit(lambda a: a * 2)(x).tolist() == [2, 4]
    with pytest.raises(NotImplementedError, match="\"add_stub\" not implemented for 'UInt32'"):
        jg.jit(lambda a: a + 2)(x)
