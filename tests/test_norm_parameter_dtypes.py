"""The dtypes of batch/layer/group norm's parameters (weight, bias, running stats): torch's CPU
rule, the input's dtype or float32 for a float16/bfloat16 input, anything else refused with
torch's errors (they were promoted silently), and the input's dtype out."""

import pytest

import jitgrad

CALLS = {
    "batch_norm_eval": lambda L, x, P: L.nn.functional.batch_norm(
        x, L.zeros(4, dtype=P), L.ones(4, dtype=P)),
    "batch_norm_train_weight": lambda L, x, P: L.nn.functional.batch_norm(
        x, None, None, weight=L.ones(4, dtype=P), training=True),
    "batch_norm_train_stats": lambda L, x, P: L.nn.functional.batch_norm(
        x, L.zeros(4, dtype=P), L.ones(4, dtype=P), training=True),
    "batch_norm_module": lambda L, x, P: L.nn.BatchNorm2d(4).to(P)(x),
    "layer_norm": lambda L, x, P: L.nn.functional.layer_norm(
        x, (3,), L.ones(3, dtype=P), L.zeros(3, dtype=P)),
    "group_norm": lambda L, x, P: L.nn.functional.group_norm(
        x, 2, L.ones(4, dtype=P), L.zeros(4, dtype=P)),
}
PAIRS = [("float64", "float32"), ("float32", "float64"), ("bfloat16", "float32"),
         ("float16", "float32"), ("bfloat16", "float64"), ("float32", "bfloat16"),
         ("bfloat16", "float16"), ("float32", "float32")]


def _outcome(lib, name, x_dtype, p_dtype):
    x = lib.ones(2, 4, 3, 3, dtype=getattr(lib, x_dtype)).cumsum(-1)
    try:
        out = CALLS[name](lib, x, getattr(lib, p_dtype))
    except RuntimeError as e:
        return "raised", str(e)
    return "ok", str(out.dtype).split(".")[-1]


@pytest.mark.parametrize("x_dtype,p_dtype", PAIRS)
@pytest.mark.parametrize("name", list(CALLS))
def test_parameter_dtypes_as_torch(name, x_dtype, p_dtype):
    ours = _outcome(jitgrad, name, x_dtype, p_dtype)
    if x_dtype == p_dtype or x_dtype in ("bfloat16", "float16") and p_dtype == "float32":
        assert ours == ("ok", x_dtype)
    elif x_dtype in ("float32", "float64") and p_dtype in ("float32", "float64"):
        assert ours[0] == "raised" and ours[1].startswith("mixed dtype (CPU): ")
    torch = pytest.importorskip("torch")
    assert ours == _outcome(torch, name, x_dtype, p_dtype)
