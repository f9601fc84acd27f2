"""Probes of tensor creation and shape manipulation (tensor/as_tensor/from_numpy, *_like,
arange/linspace/logspace, cat/stack/split families, views, gather/scatter, index ops,
diagonals): each case runs the same code on torch and jitgrad and compares values, dtypes,
shapes, gradients, warnings and the error type/text. Only cases that agree are kept."""

import math
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

_CASES = []


def case(fn):
    _CASES.append(fn)
    return fn


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        v = x.detach()
        if d == "bfloat16":
            v = v.float()
        return ("T", tuple(x.shape), d, v.tolist(), x.requires_grad)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__ if type(x) in (tuple, list) else "tuple", [_norm(i) for i in x])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (bool, int, float, complex, str, type(None))):
        return (type(x).__name__, x)
    if isinstance(x, np.ndarray):
        return ("nd", str(x.dtype), x.tolist())
    return ("other", type(x).__name__, str(x).split(".")[-1])


def _eq(a, b, rtol):
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if a == b or (math.isnan(a) and math.isnan(b)):
            return True
        return abs(a - b) <= rtol * max(1.0, abs(a))
    if isinstance(a, complex):
        return _eq(a.real, b.real, rtol) and _eq(a.imag, b.imag, rtol)
    if isinstance(a, tuple) and len(a) == 5 and a[0] == "T" and len(b) == 5:
        tol = {"float64": 1e-6, "complex128": 1e-6}.get(a[2], 1e-5)
        return a[1:3] == b[1:3] and a[4] == b[4] and _eq(a[3], b[3], tol)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y, rtol) for x, y in zip(a, b))
    return a == b


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, str(x.message).split(" (Triggered internally")[0]) for x in w]
        return ("ok", _norm(r), _norm(log), repr(ws).replace("jitgrad", "torch"))
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, str(e).replace("jitgrad", "torch"), _norm(log))


def G(T, f, *shapes, dtype=None):
    """Gradients of sum(f(*xs) * weights) w.r.t. xs (deterministic inputs)."""
    dtype = dtype or T.float64
    xs = []
    for k, s in enumerate(shapes):
        n = int(np.prod(s))
        xs.append((T.arange(n, dtype=dtype).reshape(s) * 0.5 + k).requires_grad_())
    y = f(*xs)
    w = T.arange(y.numel(), dtype=y.dtype).reshape(y.shape) + 1
    gs = T.autograd.grad((y * w).sum(), xs, allow_unused=True)
    return y, gs


def A(T, *s, dtype=None):
    n = int(np.prod(s))
    return T.arange(n, dtype=dtype).reshape(s)


# ---------------- creation ----------------
@case
def tensor_list_inference(T, log):
    def tensor_bool_list():
        return T.tensor([True, False])

    def tensor_int_list():
        return T.tensor([1, 2, 3])

    def tensor_mixed_int_float():
        return T.tensor([1, 2.5, True])

    def tensor_mixed_bool_int():
        return T.tensor([True, 2])

    def tensor_complex_list():
        return T.tensor([1, 2j, 3.5])

    def tensor_nested():
        return T.tensor([[1, 2], [3, 4.0]])

    return (
        tensor_bool_list(),
        tensor_int_list(),
        tensor_mixed_int_float(),
        tensor_mixed_bool_int(),
        tensor_complex_list(),
        tensor_nested(),
    )


@case
def tensor_empty_lists(T, log):
    def tensor_empty_list():
        return T.tensor([])

    def tensor_empty_nested():
        return T.tensor([[], []])

    return tensor_empty_list(), tensor_empty_nested()


@case
def tensor_scalar_float(T, log):
    return T.tensor(3.5), T.tensor(3), T.tensor(True), T.tensor(1 + 2j)


@case
def tensor_ragged_err(T, log):
    return T.tensor([[1, 2], [3]])


@case
def tensor_dtype_kw(T, log):
    return T.tensor([1.7, -2.2], dtype=T.int32), T.tensor([0, 2], dtype=T.bool)


@case
def tensor_requires_grad_int_err(T, log):
    return T.tensor([1, 2], requires_grad=True)


@case
def tensor_requires_grad(T, log):
    return T.tensor([1.0], requires_grad=True)


@case
def tensor_from_tuple(T, log):
    return T.tensor(((1, 2), (3, 4)))


@case
def tensor_from_numpy_arrays(T, log):
    return T.tensor(np.array([1, 2], dtype=np.int16)), T.tensor(np.float32(2.5))


@case
def tensor_list_of_0d_tensors(T, log):
    return T.tensor([T.tensor(1.5), T.tensor(2.0)])


@case
def tensor_copy_construct_warns_and_large_int(T, log):
    return T.tensor(T.ones(2)), T.tensor([2**40, 1])


@case
def tensor_default_dtype(T, log):
    old = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        return T.tensor([1.5]), T.tensor([1j]), T.arange(0.0, 1.0, 0.5), T.zeros(1)
    finally:
        T.set_default_dtype(old)


@case
def as_tensor_shares_numpy(T, log):
    a = np.array([1.0, 2.0])
    t = T.as_tensor(a)
    a[0] = 9.0
    return t


@case
def as_tensor_dtype_copy(T, log):
    a = np.array([1.0, 2.0])
    t = T.as_tensor(a, dtype=T.float32)
    a[0] = 9.0
    return t


@case
def as_tensor_same_tensor(T, log):
    x = T.tensor([1.0])
    return T.as_tensor(x) is x, T.as_tensor(x, dtype=T.float64)


@case
def as_tensor_list(T, log):
    return T.as_tensor([[1, 2]], dtype=T.float16)


@case
def from_numpy_dtypes(T, log):
    out = []
    for dt in (np.bool_, np.uint8, np.int8, np.int32, np.int64, np.float16, np.complex64):
        out.append(T.from_numpy(np.array([1, 0], dtype=dt)))
    return out


@case
def from_numpy_shares(T, log):
    a = np.zeros(3)
    t = T.from_numpy(a)
    t[1] = 5.0
    return a.tolist(), t


@case
def from_numpy_noncontig(T, log):
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = T.from_numpy(a)
    return t, t.stride()


@case
def from_numpy_bad_type(T, log):
    return T.from_numpy([1, 2])


@case
def zeros_ones_full_forms(T, log):
    def zeros_ones_full():
        return (
            T.zeros(2, 3),
            T.ones((2,), dtype=T.int8),
            T.zeros([]),
            T.full((2, 2), 7),
            T.full((2,), 1.5),
            T.full((1,), True),
            T.full((2,), 3, dtype=T.float64),
        )

    def full_complex():
        return T.full((2,), 1 + 1j)

    return zeros_ones_full(), full_complex()


@case
def zeros_negative_err(T, log):
    return T.zeros(2, -1)


@case
def empty_shape(T, log):
    e = T.empty(2, 0, 3)
    return e.shape, e.dtype, e.numel(), T.empty(3, dtype=T.int64).dtype


@case
def like_fns(T, log):
    x = T.tensor([[1, 2]], dtype=T.int32)
    return (
        T.zeros_like(x),
        T.ones_like(x, dtype=T.float64),
        T.full_like(x, 2.7),
        T.full_like(x, 2.7, dtype=T.float32),
        T.empty_like(x).shape,
        T.empty_like(x, dtype=T.bool).dtype,
    )


@case
def like_requires_grad(T, log):
    x = T.ones(2, requires_grad=True)
    return T.zeros_like(x), T.ones_like(x, requires_grad=True)


@case
def new_methods(T, log):
    x = T.tensor([1.0], dtype=T.float64)
    return (
        x.new_zeros(2),
        x.new_ones((1, 2), dtype=T.int32),
        x.new_full((2,), 3),
        x.new_tensor([1, 2]),
        x.new_empty(3).shape,
    )


@case
def arange_forms(T, log):
    return (
        T.arange(5),
        T.arange(1, 4),
        T.arange(0, 1, 0.25),
        T.arange(5.0),
        T.arange(10, 0, -3),
        T.arange(0, 5, 2, dtype=T.float32),
        T.arange(1, 2.5, 0.5, dtype=T.int64),
    )


@case
def arange_empty(T, log):
    return T.arange(0), T.arange(5, 5), T.arange(3, 1, 1)


@case
def arange_zero_step(T, log):
    return T.arange(0, 1, 0)


@case
def arange_wrong_sign(T, log):
    return T.arange(0, 5, -1)


@case
def arange_tensor_args(T, log):
    return T.arange(T.tensor(3)), T.arange(T.tensor(1.5), 4)


@case
def linspace_forms(T, log):
    return (
        T.linspace(0, 1, 5),
        T.linspace(-1, 1, steps=1),
        T.linspace(0, 10, 0),
        T.linspace(0, 10, 4, dtype=T.int64),
        T.linspace(0, 1, 3, dtype=T.float64),
        T.linspace(2, 0, 5),
    )


@case
def linspace_neg_steps(T, log):
    return T.linspace(0, 1, -1)


@case
def logspace_forms(T, log):
    return (
        T.logspace(0, 2, 3),
        T.logspace(0, 3, 4, base=2),
        T.logspace(0, 1, 1, dtype=T.float64),
        T.logspace(-1, 1, 3, base=10.0, dtype=T.float64),
    )


@case
def eye_forms(T, log):
    return T.eye(3), T.eye(2, 3), T.eye(3, 1, dtype=T.int64), T.eye(0), T.eye(2, dtype=T.bool)


@case
def eye_negative(T, log):
    return T.eye(-1)


@case
def tril_triu(T, log):
    x = A(T, 3, 4)
    return T.tril(x), T.triu(x), T.tril(x, 1), T.triu(x, -1), x.tril(-5), x.triu(diagonal=2)


@case
def tril_batched(T, log):
    return T.tril(A(T, 2, 3, 3, dtype=T.float32)), T.triu(A(T, 2, 2, 3))


@case
def tril_1d_err(T, log):
    return T.tril(T.ones(3))


@case
def tril_triu_indices(T, log):
    return (
        T.tril_indices(3, 3),
        T.triu_indices(3, 4, 1),
        T.tril_indices(4, 3, -1),
        T.triu_indices(2, 2, offset=-1),
        T.tril_indices(0, 0),
        T.tril_indices(3, 3, dtype=T.int32),
    )


@case
def meshgrid_ij_xy(T, log):
    a, b = T.tensor([1, 2, 3]), T.tensor([4, 5])
    return T.meshgrid(a, b, indexing="ij"), T.meshgrid(a, b, indexing="xy")


@case
def meshgrid_list_arg(T, log):
    return T.meshgrid([T.tensor([1, 2]), T.tensor([3])], indexing="ij")


@case
def meshgrid_three_xy(T, log):
    r = T.meshgrid(T.arange(2), T.arange(3), T.arange(4), indexing="xy")
    return [t.shape for t in r]


@case
def meshgrid_bad_indexing(T, log):
    return T.meshgrid(T.arange(2), T.arange(3), indexing="foo")


# ---------------- joining ----------------
@case
def cat_basic(T, log):
    a, b = A(T, 2, 3), A(T, 1, 3)
    return T.cat([a, b]), T.cat((a, a), dim=1), T.cat([a, b], dim=-2), T.concat([b, b])


@case
def cat_promotion(T, log):
    return (
        T.cat([T.tensor([1], dtype=T.int32), T.tensor([1.5])]),
        T.cat([T.tensor([True]), T.tensor([2], dtype=T.uint8)]),
        T.cat([T.tensor([1.0], dtype=T.float16), T.tensor([2.0], dtype=T.float64)]),
        T.cat([T.tensor([1]), T.tensor([1j])]),
    )


@case
def cat_legacy_empty(T, log):
    return T.cat([T.tensor([]), A(T, 2, 2, dtype=T.float32)]), T.cat([T.empty(0), T.ones(2)])


@case
def cat_empty_2d(T, log):
    return T.cat([T.ones(0, 3), T.ones(2, 3)]), T.cat([T.ones(2, 0), T.ones(2, 3)], 1)


@case
def cat_shape_mismatch(T, log):
    return T.cat([T.ones(2, 3), T.ones(2, 4)])


@case
def cat_ndim_mismatch(T, log):
    return T.cat([T.ones(2, 3), T.ones(3)])


@case
def cat_empty_list(T, log):
    return T.cat([])


@case
def cat_0d(T, log):
    return T.cat([T.tensor(1.0), T.tensor(2.0)])


@case
def cat_bad_dim(T, log):
    return T.cat([T.ones(2), T.ones(2)], dim=1)


@case
def cat_out(T, log):
    out = T.empty(4)
    r = T.cat([T.ones(2), T.zeros(2)], out=out)
    return r is out, out


@case
def stack_forms(T, log):
    a, b = A(T, 2, 3), A(T, 2, 3) + 10
    return T.stack([a, b]), T.stack([a, b], 1), T.stack((a, b), dim=-1), T.stack([T.tensor(1)])


@case
def stack_promotion(T, log):
    return T.stack([T.tensor([1]), T.tensor([2.0], dtype=T.float64)])


@case
def stack_mismatch(T, log):
    return T.stack([T.ones(2), T.ones(3)])


@case
def stack_empty(T, log):
    return T.stack([])


@case
def stack_bad_dim(T, log):
    return T.stack([T.ones(2), T.ones(2)], dim=3)


@case
def hvd_stack(T, log):
    a, b = T.tensor([1, 2]), T.tensor([3, 4])
    m, n = A(T, 2, 2), A(T, 2, 2) + 4
    return (
        T.hstack([a, b]),
        T.vstack([a, b]),
        T.dstack([a, b]),
        T.hstack([m, n]),
        T.vstack([m, n]),
        T.dstack([m, n]),
        T.row_stack([a, b]),
    )


@case
def column_stack(T, log):
    return (
        T.column_stack([T.tensor([1, 2]), T.tensor([3, 4])]),
        T.column_stack([T.tensor([1, 2]), A(T, 2, 2)]),
        T.column_stack([T.tensor(1), T.tensor(2.0)]),
    )


@case
def hstack_0d(T, log):
    return T.hstack([T.tensor(1), T.tensor(2)]), T.vstack([T.tensor(1), T.tensor(2)])


# ---------------- splitting ----------------
@case
def split_forms(T, log):
    x = A(T, 5, 2)
    return (
        T.split(x, 2),
        x.split([1, 4]),
        T.split(x, 1, dim=1),
        x.split(10),
        T.split(x, [2, 3], 0),
    )


@case
def split_bad_sizes(T, log):
    return A(T, 5).split([2, 2])


@case
def split_zero(T, log):
    return A(T, 5).split(0)


@case
def split_zero_sizes(T, log):
    return A(T, 3).split([0, 3, 0])


@case
def chunk_forms(T, log):
    x = A(T, 5, 6)
    return T.chunk(x, 2), x.chunk(3, dim=1), x.chunk(4, 1), A(T, 6).chunk(4), A(T, 0).chunk(2)


@case
def chunk_zero_err(T, log):
    return A(T, 4).chunk(0)


@case
def tensor_split_forms(T, log):
    x = A(T, 7)
    return (
        T.tensor_split(x, 3),
        T.tensor_split(x, [1, 5]),
        T.tensor_split(x, (6, 2)),
        x.tensor_split(10),
        T.tensor_split(A(T, 2, 5), 2, dim=1),
        T.tensor_split(x, T.tensor(3)),
        T.tensor_split(x, T.tensor([2, 4])),
    )


@case
def tensor_split_0d_err(T, log):
    return T.tensor_split(T.tensor(1.0), 2)


@case
def unbind_forms(T, log):
    x = A(T, 2, 3)
    return T.unbind(x), x.unbind(1), x.unbind(dim=-1)


@case
def hsplit_vsplit_dsplit(T, log):
    x = A(T, 4, 4, 2)
    return T.hsplit(x, 2), T.vsplit(x, [1, 3]), T.dsplit(x, 2), T.hsplit(A(T, 6), 3)


@case
def hsplit_bad(T, log):
    return T.hsplit(A(T, 5, 5), 2)


@case
def vsplit_1d_err(T, log):
    return T.vsplit(A(T, 4), 2)


# ---------------- views / reshapes ----------------
@case
def view_forms(T, log):
    x = A(T, 2, 3, 4)
    return x.view(6, 4), x.view(-1), x.view(2, -1, 2), x.view((4, 6)), x.view(T.Size([24]))


@case
def view_bad_numel(T, log):
    return A(T, 2, 3).view(4, 2)


@case
def view_two_minus_one(T, log):
    return A(T, 6).view(-1, -1)


@case
def view_noncontig_err(T, log):
    return A(T, 2, 3).t().view(6)


@case
def view_dtype(T, log):
    x = T.tensor([1.0, 2.0])
    return x.view(T.int32), T.tensor([1, 2], dtype=T.int16).view(T.uint8)


@case
def view_shares(T, log):
    x = T.zeros(4)
    v = x.view(2, 2)
    v[0, 1] = 3.0
    return x, v._base is x


@case
def reshape_forms(T, log):
    x = A(T, 2, 3)
    y = x.t().reshape(6)
    return x.reshape(3, 2), T.reshape(x, (-1,)), y, x.reshape(1, 2, 1, 3), T.tensor(5).reshape(1)


@case
def reshape_bad(T, log):
    return A(T, 6).reshape(4, -1)


@case
def reshape_empty(T, log):
    return T.ones(0, 3).reshape(3, 0, 2).shape, T.ones(0).reshape(2, -1, 0).shape


@case
def reshape_empty_ambiguous(T, log):
    return T.ones(0, 3).reshape(-1, 0)


@case
def flatten_forms(T, log):
    x = A(T, 2, 3, 4)
    return (
        x.flatten(),
        T.flatten(x, 1),
        x.flatten(0, 1),
        x.flatten(start_dim=-2, end_dim=-1),
        T.tensor(3).flatten(),
    )


@case
def flatten_bad_order(T, log):
    return A(T, 2, 3, 4).flatten(2, 1)


@case
def unflatten_forms(T, log):
    x = A(T, 2, 12)
    return x.unflatten(1, (3, 4)), T.unflatten(x, -1, (2, -1)), x.unflatten(0, (1, 2))


@case
def unflatten_bad(T, log):
    return A(T, 2, 12).unflatten(1, (5, 2))


@case
def squeeze_forms(T, log):
    x = T.ones(1, 2, 1, 3, 1)
    return (
        x.squeeze().shape,
        x.squeeze(0).shape,
        x.squeeze(1).shape,
        x.squeeze((0, 2)).shape,
        T.squeeze(x, dim=(-1, 1)).shape,
        x.squeeze(-1).shape,
        T.tensor(1.0).squeeze().shape,
        T.tensor(1.0).squeeze(0).shape,
    )


@case
def squeeze_bad_dim(T, log):
    return T.ones(1, 2).squeeze(2)


@case
def squeeze_dup_dims(T, log):
    return T.ones(1, 2).squeeze((0, 0))


@case
def unsqueeze_forms(T, log):
    x = A(T, 2, 3)
    return x.unsqueeze(0).shape, x.unsqueeze(-1).shape, T.unsqueeze(x, 2).shape, x.unsqueeze(-3)


@case
def unsqueeze_bad(T, log):
    return A(T, 2, 3).unsqueeze(3)


@case
def permute_forms(T, log):
    x = A(T, 2, 3, 4)
    return x.permute(2, 0, 1), T.permute(x, (1, 2, 0)), x.permute(-1, 0, -2).stride()


@case
def permute_bad(T, log):
    return A(T, 2, 3).permute(0, 0)


@case
def permute_wrong_len(T, log):
    return A(T, 2, 3).permute(0)


@case
def movedim_forms(T, log):
    x = A(T, 2, 3, 4)
    return (
        x.movedim(0, -1).shape,
        T.movedim(x, (0, 1), (2, 0)).shape,
        T.moveaxis(x, -1, 0).shape,
        x.movedim(1, 1),
    )


@case
def movedim_bad(T, log):
    return A(T, 2, 3).movedim((0, 1), (0,))


@case
def transpose_forms(T, log):
    x = A(T, 2, 3, 4)
    return (
        x.transpose(0, 2).shape,
        T.transpose(x, -1, -2).stride(),
        x.swapaxes(0, 1).shape,
        T.swapdims(x, 1, 2).shape,
        A(T, 2, 3).t(),
        A(T, 3).t(),
        A(T, 2, 3).T,
        A(T, 2, 3, 4).mT.shape,
    )


@case
def transpose_bad(T, log):
    return A(T, 2, 3).transpose(0, 2)


@case
def t_3d_err(T, log):
    return A(T, 2, 3, 4).t()


@case
def expand_forms(T, log):
    x = T.tensor([[1], [2]])
    e = x.expand(2, 3)
    return e, e.stride(), x.expand(4, -1, 2), x.expand_as(T.ones(3, 2, 5)), T.tensor(1).expand(2)


@case
def expand_bad(T, log):
    return T.ones(2, 3).expand(2, 4)


@case
def expand_fewer_dims(T, log):
    return T.ones(2, 3).expand(3)


@case
def expand_neg_new_dim(T, log):
    return T.ones(3).expand(-1, 3)


@case
def repeat_forms(T, log):
    x = T.tensor([1, 2])
    return x.repeat(2), x.repeat(2, 3), A(T, 2, 2).repeat(1, 2), x.repeat((1, 1, 2)), x.repeat(0)


@case
def repeat_too_few(T, log):
    return A(T, 2, 2).repeat(2)


@case
def repeat_interleave_forms(T, log):
    x = T.tensor([[1, 2], [3, 4]])
    return (
        x.repeat_interleave(2),
        T.repeat_interleave(x, 2, dim=0),
        x.repeat_interleave(T.tensor([1, 2]), dim=1),
        T.repeat_interleave(T.tensor([2, 0, 1])),
        x.repeat_interleave(3, dim=-1, output_size=6),
    )


@case
def repeat_interleave_bad(T, log):
    return T.tensor([1, 2]).repeat_interleave(T.tensor([1, 2, 3]), dim=0)


@case
def tile_forms(T, log):
    x = T.tensor([1, 2])
    return x.tile(2), T.tile(x, (2, 2)), A(T, 2, 2).tile((2,)), A(T, 2, 2).tile((1, 1, 2))


@case
def roll_forms(T, log):
    x = A(T, 3, 4)
    return (
        x.roll(1),
        T.roll(x, -1, 0),
        x.roll((1, 2), (0, 1)),
        x.roll(5, dims=1),
        T.roll(x, shifts=(1,), dims=(-1,)),
    )


@case
def roll_mismatch(T, log):
    return A(T, 3, 4).roll((1, 2), 0)


@case
def flip_forms(T, log):
    x = A(T, 2, 3)
    return x.flip(0), T.flip(x, [0, 1]), x.flip(-1), T.fliplr(x), T.flipud(x), x.flip(())


@case
def flip_dup(T, log):
    return A(T, 2, 3).flip((0, 0))


@case
def fliplr_1d_err(T, log):
    return T.fliplr(A(T, 3))


@case
def rot90_forms(T, log):
    x = A(T, 2, 3)
    return x.rot90(), T.rot90(x, 2), x.rot90(-1), x.rot90(1, [1, 0]), T.rot90(x, 5, (0, 1))


@case
def rot90_bad(T, log):
    return A(T, 2, 3).rot90(1, (0, 0))


@case
def narrow_forms(T, log):
    x = A(T, 4, 5)
    return x.narrow(0, 1, 2), T.narrow(x, -1, 2, 3), x.narrow(1, T.tensor(1), 2), x.narrow(0, -2, 2)


@case
def narrow_bad(T, log):
    return A(T, 4, 5).narrow(0, 3, 2)


@case
def unfold_forms(T, log):
    x = A(T, 7)
    return x.unfold(0, 3, 2), A(T, 2, 5).unfold(1, 2, 1), x.unfold(0, 7, 1), x.unfold(0, 2, 3)


@case
def unfold_too_big(T, log):
    return A(T, 3).unfold(0, 4, 1)


@case
def as_strided_forms(T, log):
    x = A(T, 9)
    return (
        x.as_strided((2, 2), (3, 1)),
        T.as_strided(x, (3,), (3,), 1),
        x.as_strided((2, 3), (0, 1)),
    )


@case
def as_strided_oob(T, log):
    return A(T, 4).as_strided((3, 3), (1, 1), 2)


@case
def contiguity_and_strides(T, log):
    def contiguity():
        x = A(T, 2, 3)
        t = x.t()
        c = t.contiguous()
        return (
            x.is_contiguous(),
            t.is_contiguous(),
            c.is_contiguous(),
            c.stride(),
            x.contiguous() is x,
            t.stride(1),
            x.stride(-1),
            x[:, ::2].stride(),
            T.ones(2, 1, 3).t().is_contiguous() if False else T.ones(1, 3).t().is_contiguous(),
        )

    def stride_of_expand_and_empty():
        return (
            T.ones(3, 1).expand(3, 4).is_contiguous(),
            T.tensor(1).stride(),
            T.ones(2, 3, 4)[:, 1].stride(),
        )

    return contiguity(), stride_of_expand_and_empty()


@case
def stride_bad_dim(T, log):
    return A(T, 2, 3).stride(2)


@case
def broadcast_to_forms(T, log):
    return (
        T.broadcast_to(T.tensor([1, 2]), (3, 2)),
        T.tensor([[1], [2]]).broadcast_to((2, 3)),
        T.broadcast_to(T.tensor(5), (2,)),
        T.broadcast_to(T.ones(2), (-1,)).shape,
    )


@case
def broadcast_to_bad(T, log):
    return T.broadcast_to(T.ones(3), (2, 2))


@case
def broadcast_tensors_forms(T, log):
    a, b, c = T.ones(2, 1), T.ones(3), T.tensor(2.0)
    return [t.shape for t in T.broadcast_tensors(a, b, c)], T.broadcast_tensors(a)[0].shape


@case
def broadcast_tensors_bad(T, log):
    return T.broadcast_tensors(T.ones(2), T.ones(3))


@case
def broadcast_shapes_forms(T, log):
    return (
        T.broadcast_shapes((2, 1), (3,), ()),
        T.broadcast_shapes((1,), (0,)),
        T.broadcast_shapes(4, (1, 1)),
        T.broadcast_shapes(),
    )


# ---------------- gather / scatter ----------------
@case
def gather_forms(T, log):
    x = A(T, 3, 4)
    i = T.tensor([[0, 1], [2, 0]])
    return T.gather(x, 1, i), x.gather(0, i), T.gather(x, -1, T.tensor([[3]])), x.gather(1, i[:0])


@case
def gather_oob(T, log):
    return A(T, 2, 2).gather(1, T.tensor([[2]]))


@case
def gather_int32_index(T, log):
    return A(T, 2, 2).gather(1, T.tensor([[1]], dtype=T.int32))


@case
def gather_float_index(T, log):
    return A(T, 2, 2).gather(1, T.tensor([[1.0]]))


@case
def gather_dim_mismatch(T, log):
    return A(T, 2, 2).gather(1, T.tensor([1]))


@case
def gather_grad(T, log):
    return G(T, lambda x: x.gather(1, T.tensor([[0, 0], [2, 1]])), (2, 3))


@case
def scatter_forms(T, log):
    x = T.zeros(3, 4)
    i = T.tensor([[0, 1], [2, 0]])
    s = A(T, 2, 2, dtype=T.float32) + 1
    return (
        x.scatter(1, i, s),
        T.scatter(x, 0, i, s),
        x.scatter(1, i, 5.0),
        T.ones(3, 4).scatter(1, i, 2.0, reduce="multiply"),
    )


@case
def scatter_inplace(T, log):
    x = T.zeros(5, dtype=T.int64)
    r = x.scatter_(0, T.tensor([4, 0]), T.tensor([7, 8]))
    return r is x, x


@case
def scatter_dtype_mismatch(T, log):
    return T.zeros(3).scatter(0, T.tensor([0]), T.tensor([1.0], dtype=T.float64))


@case
def scatter_grad(T, log):
    idx = T.tensor([[1, 0], [0, 2]])
    return G(T, lambda x, s: x.scatter(1, idx, s), (2, 3), (2, 2))


@case
def scatter_add_forms(T, log):
    i = T.tensor([0, 1, 0, 2, 2])
    src = T.tensor([1.0, 2, 3, 4, 5])
    return T.zeros(3).scatter_add(0, i, src), T.scatter_add(T.ones(3), 0, i, src)


@case
def scatter_add_grad(T, log):
    idx = T.tensor([0, 1, 0, 2])
    return G(T, lambda x, s: x.scatter_add(0, idx, s), (3,), (4,))


@case
def scatter_reduce_forms(T, log):
    i = T.tensor([0, 1, 0, 1, 2])
    src = T.tensor([1.0, 2, 3, 4, 5])
    x = T.tensor([10.0, 20, 30, 40])
    out = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            out.append(x.scatter_reduce(0, i, src, reduce=red, include_self=inc))
    return out


@case
def scatter_reduce_int_mean(T, log):
    i = T.tensor([0, 0, 1])
    x = T.tensor([1, 2, 3])
    return x.scatter_reduce(0, i, T.tensor([2, 3, 4]), "mean", include_self=True)


@case
def scatter_reduce_bad_reduce(T, log):
    return T.zeros(3).scatter_reduce(0, T.tensor([0]), T.ones(1), "max")


@case
def scatter_reduce_grad_sum_mean(T, log):
    idx = T.tensor([0, 1, 0, 2])
    a = G(T, lambda x, s: x.scatter_reduce(0, idx, s, "sum"), (3,), (4,))
    b = G(T, lambda x, s: x.scatter_reduce(0, idx, s, "mean", include_self=False), (3,), (4,))
    return a, b


@case
def scatter_reduce_grad_amax(T, log):
    idx = T.tensor([0, 1, 0, 2])
    return G(T, lambda x, s: x.scatter_reduce(0, idx, s, "amax"), (3,), (4,))


@case
def scatter_reduce_grad_prod(T, log):
    idx = T.tensor([0, 1, 0, 2])
    return G(T, lambda x, s: x.scatter_reduce(0, idx, s * 1.5 + 0.5, "prod"), (3,), (4,))


# ---------------- index ops ----------------
@case
def index_select_forms(T, log):
    x = A(T, 3, 4)
    return (
        x.index_select(0, T.tensor([2, 0, 2])),
        T.index_select(x, -1, T.tensor([1])),
        x.index_select(1, T.tensor([], dtype=T.long)),
        T.tensor(5).index_select(0, T.tensor([0])),
        x.index_select(0, T.tensor(1)),
    )


@case
def index_select_oob(T, log):
    return A(T, 3).index_select(0, T.tensor([3]))


@case
def index_select_2d_index(T, log):
    return A(T, 3).index_select(0, T.tensor([[0]]))


@case
def index_add_forms(T, log):
    x = T.ones(3, 2)
    i = T.tensor([0, 2, 0])
    s = A(T, 3, 2, dtype=T.float32)
    return (
        x.index_add(0, i, s),
        T.index_add(x, 0, i, s, alpha=2),
        x.index_add(1, T.tensor([1]), x[:, :1]),
    )


@case
def index_add_shape_err(T, log):
    return T.ones(3, 2).index_add(0, T.tensor([0]), T.ones(2, 2))


@case
def index_copy_fill_forms(T, log):
    def index_copy_forms():
        x = T.zeros(4, 2)
        return x.index_copy(0, T.tensor([3, 1]), A(T, 2, 2, dtype=T.float32)), x

    def index_fill_forms():
        return A(T, 2, 3).index_fill(1, T.tensor([0, 2]), -1)

    return index_copy_forms(), index_fill_forms()


@case
def masked_select_forms(T, log):
    x = A(T, 2, 3)
    m = x % 2 == 0
    return (
        x.masked_select(m),
        T.masked_select(x, T.tensor([True, False, True])),
        x[:0].masked_select(m[:0]),
    )


@case
def masked_select_nonbool(T, log):
    return A(T, 3).masked_select(T.tensor([1, 0, 1]))


@case
def take_forms(T, log):
    x = A(T, 2, 3)
    return (
        T.take(x, T.tensor([0, 5, -1])),
        x.take(T.tensor([[1, 2], [3, 4]])),
        x.t().take(T.tensor([1])),
    )


@case
def take_oob(T, log):
    return A(T, 2, 3).take(T.tensor([6]))


@case
def take_along_dim_forms(T, log):
    x = T.tensor([[10, 30, 20], [60, 40, 50]])
    i = x.argsort(dim=1)
    return (
        T.take_along_dim(x, i, dim=1),
        T.take_along_dim(x, T.tensor([5, 0])),
        x.take_along_dim(T.tensor([[0], [1]]), 1),
    )


@case
def take_along_dim_broadcast(T, log):
    return T.take_along_dim(A(T, 2, 3), T.tensor([[2, 0]]), dim=1)


@case
def nonzero_forms(T, log):
    x = T.tensor([[0, 1, 0], [2, 0, 3]])
    return (
        x.nonzero(),
        T.nonzero(x, as_tuple=True),
        T.tensor(5).nonzero(),
        T.tensor(0).nonzero(as_tuple=True),
        T.zeros(2, 0).nonzero(),
        T.tensor([0.0, float("nan"), -0.0]).nonzero(),
        T.argwhere(x),
    )


@case
def where_forms(T, log):
    def where_one_arg():
        return T.where(T.tensor([[True, False], [False, True]])), T.where(T.tensor([0.0, 1.5]))

    def where_three_arg():
        c = T.tensor([True, False, True])
        return (
            T.where(c, T.tensor([1, 2, 3]), 0.5),
            T.where(c, 1.0, 0.0),
            T.where(c, T.ones(2, 1, dtype=T.float64), T.zeros(3)),
        )

    return where_one_arg(), where_three_arg()


@case
def where_grad(T, log):
    c = T.tensor([[True, False, True]])
    return G(T, lambda a, b: T.where(c, a, b), (2, 3), (3,))


# ---------------- diagonals ----------------
@case
def diag_forms(T, log):
    v = T.tensor([1, 2, 3])
    m = A(T, 3, 4)
    return T.diag(v), T.diag(v, 1), T.diag(v, -2), T.diag(m), m.diag(-1), m.diag(10)


@case
def diag_3d_err(T, log):
    return T.diag(T.ones(2, 2, 2))


@case
def diagonal_forms(T, log):
    x = A(T, 2, 3, 4)
    return (
        x.diagonal(),
        T.diagonal(x, 1, 1, 2),
        x.diagonal(offset=-1, dim1=-1, dim2=0),
        A(T, 3, 3).diagonal(5).shape,
        x.diagonal(0, 2, 1),
    )


@case
def diagonal_same_dims(T, log):
    return A(T, 3, 3).diagonal(0, 1, 1)


@case
def diagonal_is_view(T, log):
    x = T.zeros(3, 3)
    x.diagonal().fill_(2.0)
    return x, x.diagonal().stride()


@case
def diag_embed_forms(T, log):
    x = A(T, 2, 3)
    return (
        T.diag_embed(x),
        T.diag_embed(x, 1),
        T.diag_embed(x, offset=-1, dim1=0, dim2=2).shape,
        x.diag_embed(0, -1, -2).shape,
    )


@case
def diagflat_forms(T, log):
    return T.diagflat(A(T, 2, 2)), T.diagflat(T.tensor([1, 2]), 1), T.diagflat(T.tensor(3.0), -1)


# ---------------- gradients (grouped) ----------------
@case
def join_grads(T, log):
    def meshgrid_grad():
        return G(T, lambda a, b: T.stack(T.meshgrid(a, b, indexing="ij")), (2,), (3,))

    def cat_grad():
        return G(T, lambda a, b: T.cat([a, b], 1), (2, 1), (2, 3))

    def stack_grad():
        return G(T, lambda a, b: T.stack([a, b], -1), (2, 2), (2, 2))

    def vstack_grad():
        return G(T, lambda a, b: T.vstack([a, b]), (3,), (2, 3))

    def dstack_grad():
        return G(T, lambda a, b: T.dstack([a, b]), (2,), (1, 2))

    def column_stack_grad():
        return G(T, lambda a, b: T.column_stack([a, b]), (3,), (3, 2))

    return (
        meshgrid_grad(),
        cat_grad(),
        stack_grad(),
        vstack_grad(),
        dstack_grad(),
        column_stack_grad(),
    )


@case
def split_grads(T, log):
    def split_grad():
        return G(T, lambda x: T.split(x, [1, 2], 1)[1], (2, 3))

    def chunk_grad():
        return G(T, lambda x: x.chunk(3)[1] * 2 + x.chunk(3)[2], (6,))

    def unbind_grad():
        return G(T, lambda x: x.unbind(1)[0] * x.unbind(1)[2], (2, 3))

    def tensor_split_grad():
        return G(T, lambda x: T.tensor_split(x, [1, 3])[1], (5,))

    return split_grad(), chunk_grad(), unbind_grad(), tensor_split_grad()


@case
def view_grads(T, log):
    def reshape_grad():
        return G(T, lambda x: x.t().reshape(3, 2), (2, 3))

    def flatten_unflatten_grad():
        return G(T, lambda x: x.flatten(1).unflatten(1, (2, 3)).permute(0, 2, 1), (2, 3, 2))

    def squeeze_unsqueeze_grad():
        return G(T, lambda x: x.unsqueeze(1).squeeze(0).unsqueeze(-1), (1, 3))

    def permute_grad():
        return G(T, lambda x: x.permute(2, 0, 1), (2, 3, 2))

    def movedim_grad():
        return G(T, lambda x: T.movedim(x, (0, 2), (1, 0)), (2, 3, 2))

    def transpose_grad():
        return G(T, lambda x: x.transpose(0, 1) @ x, (2, 3))

    return (
        reshape_grad(),
        flatten_unflatten_grad(),
        squeeze_unsqueeze_grad(),
        permute_grad(),
        movedim_grad(),
        transpose_grad(),
    )


@case
def expand_grads(T, log):
    def expand_grad():
        return G(T, lambda x: x.expand(3, 2, 2), (2, 1))

    def expand_as_grad():
        return G(T, lambda x, y: x.expand_as(y) * y, (1, 3), (2, 3))

    def broadcast_grad():
        return G(T, lambda a, b: T.stack(T.broadcast_tensors(a, b)), (2, 1), (3,))

    def broadcast_to_grad():
        return G(T, lambda a: T.broadcast_to(a, (2, 3, 3)), (3, 1))

    return expand_grad(), expand_as_grad(), broadcast_grad(), broadcast_to_grad()


@case
def repeat_grads(T, log):
    def repeat_grad():
        return G(T, lambda x: x.repeat(2, 3), (2, 2))

    def repeat_interleave_grad():
        return G(T, lambda x: x.repeat_interleave(T.tensor([2, 0, 1]), dim=0), (3, 2))

    def tile_grad():
        return G(T, lambda x: x.tile((2, 1)), (2, 2))

    return repeat_grad(), repeat_interleave_grad(), tile_grad()


@case
def roll_flip_grads(T, log):
    def roll_grad():
        return G(T, lambda x: x.roll((1, -1), (0, 1)), (2, 3))

    def flip_grad():
        return G(T, lambda x: x.flip(1) * x, (2, 3))

    def rot90_grad():
        return G(T, lambda x: x.rot90(3), (2, 3))

    return roll_grad(), flip_grad(), rot90_grad()


@case
def narrow_unfold_strided_grads(T, log):
    def narrow_grad():
        return G(T, lambda x: x.narrow(1, 1, 2), (2, 4))

    def unfold_grad():
        return G(T, lambda x: x.unfold(0, 3, 1), (5,))

    def as_strided_grad():
        return G(T, lambda x: x.as_strided((2, 2), (1, 1)), (3,))

    return narrow_grad(), unfold_grad(), as_strided_grad()


@case
def diag_grads(T, log):
    def diag_grad():
        return G(T, lambda v: T.diag(v, 1), (3,)), G(T, lambda m: m.diag(-1), (3, 3))

    def diagonal_grad():
        return G(T, lambda x: x.diagonal(1, 0, 2), (3, 2, 4))

    def diag_embed_grad():
        return G(T, lambda x: T.diag_embed(x, -1), (2, 2))

    def diagflat_grad():
        return G(T, lambda x: T.diagflat(x, 1), (2, 2))

    return diag_grad(), diagonal_grad(), diag_embed_grad(), diagflat_grad()


@case
def select_like_grads(T, log):
    def index_select_grad():
        return G(T, lambda x: x.index_select(1, T.tensor([0, 2, 0])), (2, 3))

    def masked_select_grad():
        return G(T, lambda x: x.masked_select(T.tensor([[True, False, True]])), (2, 3))

    def take_grad():
        return G(T, lambda x: x.take(T.tensor([0, 0, 4])), (2, 3))

    def take_along_dim_grad():
        return G(T, lambda x: T.take_along_dim(x, T.tensor([[1], [0]]), 1), (2, 3))

    return index_select_grad(), masked_select_grad(), take_grad(), take_along_dim_grad()


@case
def index_add_copy_grads(T, log):
    def index_add_grad():
        idx = T.tensor([1, 1, 0])
        return G(T, lambda x, s: x.index_add(0, idx, s, alpha=3.0), (2, 2), (3, 2))

    def index_copy_grad():
        idx = T.tensor([2, 0])
        return G(T, lambda x, s: x.index_copy(0, idx, s), (3, 2), (2, 2))

    return index_add_grad(), index_copy_grad()


@case
def storage_offsets(T, log):
    x = A(T, 3, 4)
    return (
        x.narrow(1, 2, 2).storage_offset(),
        x.select(0, 2).storage_offset(),
        x.split(1)[2].storage_offset(),
        x.t()[2:].storage_offset(),
        x[1, 1:].as_strided((2,), (1,)),
        A(T, 8)[4:].view(2, 2).as_strided((1,), (1,)),
    )


@case
def tensor_inference_more(T, log):
    return (
        T.tensor([True, 1.5]),
        T.tensor([np.float32(1), np.float64(2)]),
        T.tensor(np.int64(3)),
        T.tensor([[[]]]),
        T.tensor(range(3)),
    )


@case
def tensor_list_of_1d_tensors(T, log):
    return T.tensor([T.tensor([1, 2]), T.tensor([3, 4])])


@case
def scatter_reduce_int_mean_more(T, log):
    x = T.tensor([1, 2, 3])
    return (
        x.scatter_reduce(0, T.tensor([0, 0, 1]), T.tensor([4, 7, 9]), "mean", include_self=False),
        x.scatter_reduce(0, T.tensor([0, 0]), T.tensor([-4, -7]), "mean"),
        x.scatter_reduce(0, T.tensor([0, 0]), T.tensor([5, 6]), "amin", include_self=False),
    )


@case
def scatter_reduce_grads_more(T, log):
    def g(vals, src, red, inc=True):
        x = T.tensor(vals, dtype=T.float64, requires_grad=True)
        s = T.tensor(src, dtype=T.float64, requires_grad=True)
        y = x.scatter_reduce(0, T.tensor([0, 0, 1]), s, red, include_self=inc)
        (y * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
        return y, x.grad, s.grad

    return (
        g([1.0, 2, 3], [4.0, 5, 6], "mean", False),
        g([4.0, 2, 3], [4.0, 4, 6], "amin"),
        g([4.0, 2, 3], [0.0, 4, 6], "prod"),
        g([4.0, 2, 3], [1.0, 4, 6], "amax", False),
        g([4.0, 2, 3], [3.0, 4, 6], "prod", False),
    )


@case
def nonzero_static_count(T, log):
    return (
        T.nonzero_static(T.tensor([0, 1, 1]), size=4, fill_value=-2),
        T.count_nonzero(A(T, 2, 3), dim=1),
        T.argwhere(T.tensor(1)),
    )


@case
def scatter_views_family(T, log):
    return (
        T.diagonal_scatter(T.zeros(2, 3), T.ones(2), 1),
        T.select_scatter(T.zeros(2, 3), T.ones(3), 0, 1),
        T.slice_scatter(T.zeros(4), T.ones(2), 0, 1, 4, 2),
        T.zeros(7, 3).fill_diagonal_(5.0, wrap=True),
    )


@case
def view_dtype_bad_size(T, log):
    return T.ones(3, dtype=T.int8).view(T.int32)


@case
def unfold_step_zero(T, log):
    return A(T, 4).unfold(0, 2, 0)


@case
def narrow_start_oob(T, log):
    return A(T, 4).narrow(0, 5, 0)


@case
def squeeze_0d_bad_dim(T, log):
    return T.tensor(1.0).squeeze(1)


@case
def gather_index_larger(T, log):
    return A(T, 2, 2).gather(1, T.tensor([[0, 1, 1]]))


# ---------------- misc composite gradients ----------------
@case
def view_chain_grad_float32(T, log):
    return G(
        T,
        lambda x: x.view(2, 6).t().reshape(3, 4).narrow(1, 1, 2).flip(0),
        (3, 4),
        dtype=T.float32,
    )


@case
def backward_accumulates_through_views(T, log):
    x = T.arange(6, dtype=T.float64).requires_grad_()
    y = x.view(2, 3)
    (y[0] * 2).sum().backward()
    (y.t()[1] * 3).sum().backward()
    return x.grad


@case
def inplace_on_view_grad(T, log):
    x = T.arange(4, dtype=T.float64).requires_grad_()
    y = x * 1
    y.view(2, 2)[0].mul_(5)
    y.sum().backward()
    return x.grad, y


@case
def zeros_int_dtype_requires_grad(T, log):
    return T.zeros(2, dtype=T.int64, requires_grad=True)


@case
def linspace_requires_grad(T, log):
    return T.linspace(0, 1, 3, requires_grad=True)


@case
def arange_float_steps_count(T, log):
    return T.arange(0, 1, 0.1).shape, T.arange(1, 2, 0.3), T.arange(-1.0, 1.0, 0.4, dtype=T.float64)


@case
def size_and_dim_queries(T, log):
    x = A(T, 2, 3, 4)
    return x.size(), x.size(-1), x.dim(), x.ndim, x.numel(), x.shape[1:], len(x), T.numel(x)


@case
def size_bad_dim(T, log):
    return A(T, 2, 3).size(3)


_IDS = [f.__name__ for f in _CASES]


@pytest.mark.parametrize("fn", _CASES, ids=_IDS)
def test_shape_creation_matches_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected, 1e-5), f"\n torch:   {expected}\n jitgrad: {got}"
