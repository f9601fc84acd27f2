"""Tensor.untyped_storage / storage / set_ and jitgrad.UntypedStorage, against torch's."""

import warnings

import numpy as np
import pytest

import jitgrad as jg


def _walk(m):
    """What a script reads of storages; the same on torch and jitgrad."""
    out = []
    t = m.arange(6.0).reshape(2, 3)
    s = t.untyped_storage()
    out += [s.nbytes(), s.size(), len(s), s.element_size(), s[0], s[4], str(s.device),
            s.data_ptr() == t.data_ptr(), s.tolist()]
    out += [t[1].untyped_storage().data_ptr() == s.data_ptr(), t.t().untyped_storage().nbytes(),
            t[1].storage_offset(), t[:, 1].storage_offset(), t.t().contiguous().data_ptr() ==
            s.data_ptr()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = t.storage()
        out += [ts.size(), str(ts.dtype).split(".")[1], ts[1], ts.tolist(), ts.element_size(),
                ts.nbytes(), t[1].storage().size(), m.is_storage(ts), m.is_storage(s),
                m.is_storage(t)]
        e = m.empty(0)
        e.set_(ts, 2, (2, 2), (1, 2))
    out += [e.tolist(), e.storage_offset(), e.stride()]
    e[0, 0] = 100.0  # a view of t's memory
    out += [t.tolist()]
    e = m.empty(0).set_(s)
    out += [e.tolist()]
    e = m.empty(0).set_(t)
    out += [e.tolist(), e.data_ptr() == t.data_ptr(), e.is_set_to(t)]
    e = m.empty(0).set_(s, 1, (2,))
    out += [e.tolist(), e.set_().tolist()]
    out += [m.UntypedStorage([1, 2, 44]).tolist(), s == t.untyped_storage(),
            s.clone().data_ptr() != s.data_ptr()]
    s[0] = 1  # a byte written through the storage
    out += [t[0, 0].item() != 100.0]
    return out


def test_storages_as_torch():
    torch = pytest.importorskip("torch")
    assert _walk(jg) == _walk(torch)


@pytest.mark.parametrize("make", [
    lambda m: m.tensor([1, 2]).set_(m.tensor([3.0, 4.0])),
    lambda m: m.ones(2, requires_grad=True).set_(m.zeros(2)),
    lambda m: m.empty(0, dtype=m.float64).set_(m.zeros(3).storage()),
])
def test_set_errors_as_torch(make):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as theirs:
            make(torch)
        with pytest.raises(RuntimeError) as ours:
            make(jg)
    assert str(ours.value).replace("jitgrad", "torch") == str(theirs.value).splitlines()[0]


def test_typed_storage_warns_as_torch():
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        jg.zeros(2).storage()


def test_set_out_of_the_storage_raises_instead_of_reading_past_it():
    s = jg.zeros(6).untyped_storage()
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
        jg.empty(0).set_(s, 4, (3,))


def test_set_bumps_the_version_and_views_share_writes():
    base = jg.zeros(4)
    t = jg.empty(0)
    v0 = t._version
    t.set_(base.untyped_storage(), 1, (2,))
    assert t._version == v0 + 1
    t.add_(1.0)
    np.testing.assert_array_equal(base.numpy(), [0.0, 1.0, 1.0, 0.0])
    assert t.storage_offset() == 1
