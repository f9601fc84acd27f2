"""Python's number types as dtypes (``dtype=float``, ``x.to(bool)``), read as torch's argument
parser reads them (``bool``, ``int64``, ``float64``, ``complex128``) by every function that
takes a dtype; and torch's advice when ``tensor(t)`` copies a tensor."""

import warnings

import pytest

import jitgrad

CALLS = {
    "to": lambda L, y: y.to(float), "to_bool": lambda L, y: y.to(bool),
    "to_kw": lambda L, y: y.to(dtype=int), "to_device_dtype": lambda L, y: y.to("cpu", complex),
    "tensor": lambda L, y: L.tensor([1.5], dtype=float), "as_tensor": lambda L, y: L.as_tensor(
        [1], dtype=bool), "asarray": lambda L, y: L.asarray([1], dtype=complex),
    "zeros": lambda L, y: L.zeros(2, dtype=int), "ones": lambda L, y: L.ones(2, dtype=bool),
    "empty": lambda L, y: L.empty(2, dtype=float), "eye": lambda L, y: L.eye(2, dtype=bool),
    "full": lambda L, y: L.full((2,), 1, dtype=bool), "arange": lambda L, y: L.arange(
        3, dtype=float), "linspace": lambda L, y: L.linspace(0, 1, 3, dtype=float),
    "rand": lambda L, y: L.rand(2, dtype=float), "randn": lambda L, y: L.randn(2, dtype=complex),
    "randint": lambda L, y: L.randint(0, 3, (2,), dtype=int),
    "randperm": lambda L, y: L.randperm(3, dtype=int),
    "zeros_like": lambda L, y: L.zeros_like(y, dtype=bool),
    "full_like": lambda L, y: L.full_like(y, 2, dtype=int),
    "rand_like": lambda L, y: L.rand_like(y, dtype=float),
    "sum": lambda L, y: y.sum(dtype=float), "sum_dim": lambda L, y: L.sum(y, 0, dtype=float),
    "mean": lambda L, y: y.mean(dtype=float), "prod": lambda L, y: y.prod(dtype=int),
    "cumsum": lambda L, y: y.cumsum(0, dtype=float), "nansum": lambda L, y: L.nansum(
        y, dtype=float), "softmax": lambda L, y: L.nn.functional.softmax(y, 0, dtype=float),
    "log_softmax_method": lambda L, y: y.log_softmax(0, dtype=float),
    "vector_norm": lambda L, y: L.linalg.vector_norm(y, dtype=float),
    "new_zeros": lambda L, y: y.new_zeros(2, dtype=bool),
    "new_full": lambda L, y: y.new_full((2,), 3, dtype=int),
    "hann_window": lambda L, y: L.hann_window(4, dtype=float),
    "fftfreq": lambda L, y: L.fft.fftfreq(4, dtype=float),
    "linear": lambda L, y: L.nn.Linear(2, 3, dtype=float).weight,
    "lstm": lambda L, y: L.nn.LSTM(2, 2, dtype=float).weight_ih_l0,
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_python_number_types_are_dtypes_as_in_torch(name):
    torch = pytest.importorskip("torch")
    ours = CALLS[name](jitgrad, jitgrad.ones(2, 3))
    theirs = CALLS[name](torch, torch.ones(2, 3))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_signal_windows_refuse_python_types_as_torchs_python_code_does():
    with pytest.raises(ValueError, match="expects float32 or float64 dtypes, got: <class"):
        jitgrad.signal.windows.hann(4, dtype=float)


def test_python_types_without_torch():
    y = jitgrad.ones(2)
    assert y.to(float).dtype is jitgrad.float64 and y.to(bool).dtype is jitgrad.bool
    assert jitgrad.zeros(2, dtype=int).dtype is jitgrad.int64
    assert jitgrad.ones(1, dtype=complex).dtype is jitgrad.complex128
    assert jitgrad.finfo(float).bits == 64 and jitgrad.iinfo(int).bits == 64


def test_tensor_of_a_tensor_warns_at_the_users_line_as_torch():
    x = jitgrad.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jitgrad.tensor(x)
        x.new_tensor(x, dtype=float)
        jitgrad.tensor([x[0], x[1]])  # (a list of tensors: no advice, as torch)
        jitgrad.as_tensor(x)
        jitgrad.nn.functional.one_hot(jitgrad.tensor([0, 1]))  # (jitgrad's own copies: none)
    messages = [str(w.message) for w in caught]
    assert messages == [
        "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
        f"or sourceTensor.detach().clone().requires_grad_(True), rather than {fn}(sourceTensor)."
        for fn in ("torch.tensor", "tensor.new_tensor")]
    assert {w.filename for w in caught} == {__file__}
