"""bfloat16: float32 memory holding only bfloat16 values, every result rounded (to nearest,
ties to even), as torch computes its CPU bfloat16 ops in float and rounds their results; the
values, dtypes and gradients below equal torch's bit for bit."""

import io
import warnings

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _sgd(m, optimizer, **kw):
    p = m.nn.Parameter(m.tensor([0.1, 0.2, 0.3], dtype=m.bfloat16))
    opt = getattr(m.optim, optimizer)([p], lr=0.01, **kw)
    for _ in range(3):
        opt.zero_grad()
        (p * p * 3.3).sum().backward()
        opt.step()
    return p.detach()


def _linear(m):
    lin = m.nn.Linear(3, 2)
    with m.no_grad():
        lin.weight.copy_(m.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]]))
        lin.bias.fill_(0.05)
    return lin.bfloat16()(m.tensor([[1.0, 2.0, 3.0]], dtype=m.bfloat16))


def _gradient(m):
    w = m.tensor([0.5, -1.5, 2.25, 3.0], dtype=m.bfloat16, requires_grad=True)
    (w.tanh() * w + (w * 0.7).exp()).sum().backward()
    return w.grad


def _second_order(m):
    x = m.tensor([0.1, 0.2, 0.3], dtype=m.bfloat16, requires_grad=True)
    (g,) = m.autograd.grad((x.exp() * x).sum() + (x * 0.7).sum(), x, create_graph=True)
    (h,) = m.autograd.grad(g.sum(), x)
    return m.cat([g, h])


def _through_a_cast(m):
    x = m.tensor([0.1, 0.2], requires_grad=True)
    (x.to(m.bfloat16) * 3.3).sum().backward()
    return x.grad


def _inplace(m):
    z = m.tensor([0.1, 0.2], dtype=m.bfloat16)
    z.mul_(1.1)
    z.add_(m.tensor([0.01, 0.02]))
    z.add_(m.tensor([0.3, 0.7], dtype=m.bfloat16), alpha=-0.01)
    z[0] = 0.3333
    return z


def _autocast(m):
    a, b = m.tensor([[0.1, 0.2], [0.3, 0.4]]), m.tensor([[1.1], [2.2]])
    with m.autocast("cpu"):  # torch's CPU default: bfloat16
        return a @ b


def _saved(m):
    buf = io.BytesIO()
    m.save({"w": m.tensor([0.1, 3.3], dtype=m.bfloat16)}, buf)
    buf.seek(0)
    return m.load(buf)["w"]


bf = "bfloat16"
CASES = {
    "create": lambda m: m.tensor([1.0, 2.5, 3.14159, -0.3, 1e-40, 3.4e38], dtype=m.bfloat16),
    "cast_from_float32": lambda m: m.tensor([0.1, 0.2, 0.3, 0.4]).to(m.bfloat16),
    "cast_from_int": lambda m: m.tensor([1, 257, 1000001]).to(m.bfloat16),
    "cast_to_int": lambda m: m.tensor([1.7, -2.5, 300.2], dtype=m.bfloat16).to(m.int32),
    "factories": lambda m: m.cat([m.zeros(2, dtype=m.bfloat16), m.full((2,), 1.2345,
                                  dtype=m.bfloat16), m.arange(0, 1, 0.3, dtype=m.bfloat16)]),
    "arithmetic": lambda m: (lambda x, y: m.stack([x + y, x * y, x / y, x - y * 2.7,
                                                   x.exp(), x.sin(), x.sqrt()]))(
        m.tensor([1.0, 2.5, 3.14159, 0.3], dtype=m.bfloat16),
        m.tensor([0.1, 0.2, 0.3, 0.4], dtype=m.bfloat16)),
    "promotion": lambda m: [str(d).split(".")[1] for d in (
        (m.ones(1, dtype=m.bfloat16) + m.ones(1)).dtype,
        (m.ones(1, dtype=m.bfloat16) + m.ones(1, dtype=m.float16)).dtype,
        (m.ones(1, dtype=m.bfloat16) + m.tensor([1])).dtype,
        (m.ones(1, dtype=m.bfloat16) + 1.5).dtype, m.promote_types(m.bfloat16, m.float16),
        (m.ones(1, dtype=m.bfloat16) + m.ones((), dtype=m.float64)).dtype)],
    "matmul_and_reductions": lambda m: (lambda a, b: m.cat([(a @ b).flatten(), a.sum(0),
                                                            a.mean(1), a.softmax(1).flatten(),
                                                            a.cumsum(1).flatten()]))(
        m.linspace(-1, 1, 12).reshape(3, 4).to(m.bfloat16),
        m.linspace(0, 2, 20).reshape(4, 5).to(m.bfloat16)),
    "long_sum": lambda m: m.tensor([0.1] * 300, dtype=m.bfloat16).sum(),
    "zero_dim_inplace": lambda m: m.tensor(0.3, dtype=m.bfloat16).mul_(1.1).add_(0.01)[None],
    "nn_functional": lambda m: m.cat([
        m.nn.functional.gelu(m.tensor([0.3, -1.2], dtype=m.bfloat16)),
        m.nn.functional.layer_norm(m.tensor([[0.3, -1.2, 2.0]], dtype=m.bfloat16), (3,))[0],
        m.nn.functional.conv1d(m.arange(6.0).reshape(1, 1, 6).to(m.bfloat16) / 7,
                               m.ones(1, 1, 3, dtype=m.bfloat16) / 3).flatten()]),
    "linear_module": _linear, "gradient": _gradient, "second_order": _second_order,
    "gradient_through_a_cast": _through_a_cast, "inplace": _inplace,
    "sgd_momentum": lambda m: _sgd(m, "SGD", momentum=0.9), "adam": lambda m: _sgd(m, "Adam"),
    "autocast_default": _autocast, "save_load": _saved,
    "item_and_repr": lambda m: [m.tensor(0.3, dtype=m.bfloat16).item(), repr(
        m.tensor([[1e-5, 3.14159], [1e10, -0.0]], dtype=m.bfloat16)).replace(m.__name__, "m")],
    "finfo": lambda m: [getattr(m.finfo(m.bfloat16), a) for a in (
        "bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")],
    "element_size": lambda m: [m.ones(3, dtype=m.bfloat16).element_size(),
                               m.ones(3, dtype=m.bfloat16).nbytes,
                               m.ones(3, 4, dtype=m.bfloat16).t().stride()],
}


def _plain(v):
    if isinstance(v, (jg.Tensor, torch.Tensor)):
        return (str(v.dtype).split(".")[1], v.detach().tolist())
    return v


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_dtypes_and_gradients_equal_torch(name):
    ours, theirs = _plain(CASES[name](jg)), _plain(CASES[name](torch))
    assert ours == theirs


def test_rounding_is_to_nearest_even_and_keeps_nan():
    halfway = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, np.nan, -np.inf], np.float32)
    got = jg.tensor(halfway, dtype=jg.bfloat16).float().numpy()
    np.testing.assert_array_equal(got[:2], [1.0, 1 + 2 * 2.0**-7])
    assert np.isnan(got[2]) and got[3] == -np.inf


@pytest.mark.parametrize("path", ["numpy", "numba"])
def test_rounding_equals_torch_bit_for_bit_on_nans_strides_and_0d(path, monkeypatch):
    # (round_to_bfloat16 works in one buffer updated in place, or in one Numba loop: NaN
    # payloads below the kept bits, a carry into the exponent, a strided view and a 0-d array
    # round as torch's do)
    from jitgrad import dtypes
    from jitgrad.ops import nn_kernels

    if path == "numpy":
        monkeypatch.setattr(dtypes, "bfloat16_loop", None)
    else:
        monkeypatch.setattr(dtypes, "_bfloat16_numpy_calls", dtypes._BFLOAT16_NUMPY_CALLS)
        assert dtypes.bfloat16_loop is nn_kernels._round_bfloat16
    bits = np.array([0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x3F808000, 0x3F818000, 0x3F80FFFF,
                     0x7F7FFFFF, 0x00008000, 0x80018000, 0x3F800000], np.uint32)
    rng = np.random.default_rng(0)
    for a in (bits.view(np.float32), rng.standard_normal((6, 8)).astype(np.float32)[:, ::3],
              np.array(1 + 2.0**-12, np.float32)):
        ours = jg.tensor(a).to(jg.bfloat16).float().numpy()
        theirs = torch.tensor(a).to(torch.bfloat16).float().numpy()
        assert ours.shape == theirs.shape
        nan = np.isnan(theirs)
        np.testing.assert_array_equal(np.isnan(ours), nan)
        np.testing.assert_array_equal(ours.view(np.uint32)[~nan], theirs.view(np.uint32)[~nan])
    exact = np.array([1.0, 0.5, -2.0], np.float32)  # (nothing to round: the array itself)
    assert dtypes.round_to_bfloat16(exact) is exact


def test_numpy_refuses_bfloat16_as_torch():
    x = jg.ones(2, dtype=jg.bfloat16)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        x.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        np.asarray(x)
    np.testing.assert_array_equal(x.float().numpy(), [1.0, 1.0])


def test_view_dtype_of_bfloat16_as_a_2_byte_dtype_reads_and_writes_its_bits():
    # (llm.c's write_bf16: t.to(torch.bfloat16).view(torch.int16).numpy().tobytes())
    values = [[1.5, -2.25, 3.0], [0.1, 7.0, 8.0]]
    ours = jg.tensor(values).to(jg.bfloat16)
    theirs = torch.tensor(values).to(torch.bfloat16)
    for dtype in ("int16", "float16"):
        np.testing.assert_array_equal(ours.view(getattr(jg, dtype)).numpy(),
                                      theirs.view(getattr(torch, dtype)).numpy())
        np.testing.assert_array_equal(ours.t().view(getattr(jg, dtype)).numpy(),
                                      theirs.t().view(getattr(torch, dtype)).numpy())
    assert ours.view(jg.int16).numpy().tobytes() == theirs.view(torch.int16).numpy().tobytes()
    # a view: writing its bits writes the bfloat16 values, and the other way round
    for x, m in ((ours, jg), (theirs, torch)):
        bits = x.view(m.int16)
        bits[0, 0] = 16448  # 3.0
        x[1, 2] = -1.0
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
    assert ours.view(jg.int16)[1, 2].item() == theirs.view(torch.int16)[1, 2].item()
    with pytest.raises(NotImplementedError, match="use .to\\(dtype\\) to convert"):
        ours.view(jg.uint8)  # (a 1-byte view would need the float32 bytes in between)
    with pytest.raises(NotImplementedError, match="use .to\\(dtype\\) to convert"):
        jg.ones(2, dtype=jg.int16).view(jg.bfloat16)


def test_jit_keeps_float32_inside_a_program_and_rounds_its_outputs():
    def f(t):
        return (t.exp() * t + t.tanh()).sum()

    x = jg.tensor([0.1, 0.2, 0.3], dtype=jg.bfloat16)
    value, grad = jg.jit(jg.func.value_and_grad(f))(x)
    assert value.dtype is jg.bfloat16 and grad.dtype is jg.bfloat16
    exact = f(x.double())
    assert abs(value.item() - exact.item()) <= 2.0**-7 * abs(exact.item())
    assert value.item() == jg.tensor(value.item(), dtype=jg.bfloat16).item()  # a bf16 value


def test_pickle_and_default_dtype():
    import pickle

    x = jg.tensor([0.1, 0.2], dtype=jg.bfloat16)
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is jg.bfloat16 and y.tolist() == x.tolist()
    jg.set_default_dtype(jg.bfloat16)
    try:
        assert jg.tensor([0.1]).dtype is jg.bfloat16
    finally:
        jg.set_default_dtype(jg.float32)


def test_cuda_refuses_bfloat16_with_a_clear_error():
    if not jg.cuda.is_available():
        pytest.skip("no cuda device (or simulator) in this process")
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="no bfloat16 on cuda"):
        jg.ones(2, dtype=jg.bfloat16).cuda()


def test_dlpack_refuses_bfloat16_instead_of_exporting_float32():
    with pytest.raises(BufferError, match="export .float\\(\\) instead"):
        jg.ones(2, dtype=jg.bfloat16).__dlpack__()
    assert np.from_dlpack(jg.ones(2, dtype=jg.bfloat16).float()).dtype == np.float32
