"""The pointwise ops of ops/elementwise2.py on dtypes torch rejects."""

import pytest

import jitgrad


@pytest.mark.parametrize("dtype,name", [(jitgrad.int64, "Long"), (jitgrad.int32, "Int"),
                                        (jitgrad.bool, "Bool")])
def test_frac_of_an_integer_or_bool_tensor_is_not_implemented_as_in_torch(dtype, name):
    with pytest.raises(NotImplementedError, match=f"\"frac_cpu\" not implemented for '{name}'"):
        jitgrad.frac(jitgrad.ones(2, dtype=dtype))
    assert jitgrad.frac(jitgrad.tensor([1.5, -2.25])).tolist() == [0.5, -0.25]
