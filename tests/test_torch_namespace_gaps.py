"""Names of torch's top-level namespace that old or typed scripts use: the functions removed in
torch 1.9 (``solve``, ``eig``, ``lstsq``, ``symeig``, ``matrix_rank``) raise torch's text naming
the ``linalg`` replacement; ``jitgrad.return_types`` holds the named-tuple classes (isinstance,
pickling); ``jitgrad.to_dlpack`` / ``from_dlpack`` exchange host capsules."""

import pickle

import numpy as np
import pytest

import jitgrad

REMOVED = {"solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`",
           "eig": "L_complex = torch.linalg.eigvals(A)",
           "lstsq": "X = torch.linalg.lstsq(A, B).solution",
           "symeig": "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')",
           "matrix_rank": "Please use the `torch.linalg.matrix_rank` function instead."}


@pytest.mark.parametrize("name", list(REMOVED))
def test_functions_removed_in_torch_1_9_name_their_replacement(name):
    a = jitgrad.eye(3)
    with pytest.raises(RuntimeError, match="^This function was deprecated since version 1.9 "
                                           "and is now removed.") as info:
        getattr(jitgrad, name)(a, a)
    assert REMOVED[name] in str(info.value)
    if name != "matrix_rank":  # (torch's Tensor has the others as methods)
        with pytest.raises(RuntimeError, match="is now removed"):
            getattr(a, name)()


def test_the_linalg_functions_are_unaffected():
    a = jitgrad.tensor([[2.0, 0.0], [0.0, 4.0]])
    assert jitgrad.linalg.solve(a, jitgrad.ones(2)).tolist() == [0.5, 0.25]
    assert jitgrad.linalg.matrix_rank(a).item() == 2


def test_return_types_are_the_classes_ops_return():
    result = jitgrad.topk(jitgrad.tensor([1.0, 3.0, 2.0]), 2)
    assert isinstance(result, jitgrad.return_types.topk)
    assert type(jitgrad.max(jitgrad.ones(2, 2), 0)) is jitgrad.return_types.max
    assert "svd" in dir(jitgrad.return_types) and "linalg_slogdet" in dir(jitgrad.return_types)
    back = pickle.loads(pickle.dumps(result))
    assert type(back) is jitgrad.return_types.topk and back.indices.tolist() == [1, 2]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        jitgrad.return_types.nope


def test_to_dlpack_capsules_come_back_sharing_memory():
    x = jitgrad.arange(4.0)
    y = jitgrad.from_dlpack(jitgrad.to_dlpack(x))
    y[0] = 7.0
    assert x.tolist() == [7.0, 1.0, 2.0, 3.0]
    capsule = jitgrad.to_dlpack(x)
    jitgrad.utils.dlpack.from_dlpack(capsule)
    with pytest.raises(RuntimeError, match="consumed only once"):
        jitgrad.from_dlpack(capsule)
    np.testing.assert_array_equal(jitgrad.from_dlpack(np.arange(3)).numpy(), np.arange(3))


def test_matrix_transposes_of_other_ranks_raise_torchs_texts():
    vector = jitgrad.ones(3)
    for name in ("mT", "mH"):
        with pytest.raises(RuntimeError, match=f"^tensor.{name} is only supported on matrices "
                                               "or batches of matrices. Got 1-D tensor.$"):
            getattr(vector, name)
    with pytest.raises(RuntimeError, match=r"\(2-D tensors\). Got 1-D tensor.$"):
        vector.H
    with pytest.raises(RuntimeError, match="Got 3-D tensor. For batches of matrices, consider "
                                           "using tensor.mH$"):
        jitgrad.ones(2, 2, 2).H
    assert jitgrad.ones(2, 3).H.shape == (3, 2) and jitgrad.tensor(2.0).H.shape == ()
    assert jitgrad.ones(4, 2, 3).mT.shape == (4, 3, 2)


def test_slogdet_results_are_named_as_torchs():
    eye = jitgrad.eye(2)
    assert type(jitgrad.slogdet(eye)) is jitgrad.return_types.slogdet
    assert type(eye.slogdet()) is jitgrad.return_types.slogdet
    assert type(jitgrad.linalg.slogdet(eye)) is jitgrad.return_types.linalg_slogdet
    assert jitgrad.slogdet(eye * 2).logabsdet.item() == pytest.approx(2 * np.log(2.0))


def test_searchsorted_warns_once_per_kind_of_non_contiguous_tensor():
    from jitgrad import _config

    boundaries = jitgrad.sort(jitgrad.randn(6, 4), 0).values.t()
    values = jitgrad.randn(7, 4).t()
    _config.WARNED.difference_update({"searchsorted input value", "searchsorted boundary"})
    with pytest.warns(UserWarning) as record:
        jitgrad.searchsorted(boundaries, values)
        jitgrad.searchsorted(boundaries, values)
    texts = [str(w.message) for w in record]
    assert len(texts) == 2 and "input value tensor is non-contiguous" in texts[0]
    assert "boundary tensor is non-contiguous" in texts[1]
    assert texts[0].endswith("This message will only appear once per program.")
    expected = jitgrad.searchsorted(boundaries.contiguous(), values.contiguous())
    assert jitgrad.searchsorted(boundaries, values).tolist() == expected.tolist()
