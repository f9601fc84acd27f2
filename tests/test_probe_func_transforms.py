"""Probes of torch.func (vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
linearize, functional_call, stack_module_state, replace_all_batch_norm_modules_ and their
compositions): each case runs the same code on torch and jitgrad and compares the results, the
warnings and the error type/text. Only cases where jitgrad agrees with torch are kept."""

import copy
import math
import re
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        v = np.asarray(x.detach().to("cpu").numpy())
        return ("T", tuple(x.shape), d, v)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, dict):
        return ("dict", [(k, _norm(v)) for k, v in x.items()])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (bool, int, float, complex, str, type(None))):
        return (type(x).__name__, x)
    if isinstance(x, type):
        return ("type", x.__name__)
    return ("other", type(x).__name__)


def _eq(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            rtol = 1e-6 if a.dtype.itemsize * (2 if a.dtype.kind == "f" else 1) >= 16 else 1e-5
            return bool(np.allclose(a, b, rtol=rtol, atol=1e-12, equal_nan=True))
        return bool((a == b).all())
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    return a == b


def _msg(s):
    s = str(s).replace("jitgrad", "torch").replace("PyTorch", "torch")
    return re.sub(r" \(Triggered internally at [^)]*\)", "", s)


def _internal(w):
    # torch's forward-AD helpers script functions on first use, and linearize traces with fx:
    # warnings about torch itself
    m = str(w.message)
    return "`torch.jit.script` is deprecated" in m or "get_attr Node with no underlying" in m


def _run(fn, T):
    log = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = ("ok", _norm(fn(T, log)))
        except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
            r = ("err", type(e).__name__, _msg(e))
    ws = [(x.category.__name__, _msg(x.message)) for x in w if not _internal(x)]
    return r, _norm(log), ws


def E(f):
    """Runs f, returning its result or its error's type and text (compared with torch's)."""
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, _msg(e))


def t(T, v, dtype=None, rg=False):
    return T.tensor(v, dtype=dtype or T.float64, requires_grad=rg)


def ar(T, *shape, dtype=None):
    n = math.prod(shape)
    return (T.arange(n, dtype=dtype or T.float64).reshape(shape) * 0.37 - 1.1).sin()


_PROBES = []


def P(fn):  # noqa: N802 (registers one probe)
    _PROBES.append(fn)
    return fn


# ---------------------------------------------------------------- vmap: in_dims / out_dims
@P
def vmap_basic(T, log):
    return T.func.vmap(T.sin)(ar(T, 3, 4))


@P
def vmap_in_dims_1(T, log):
    return T.func.vmap(lambda x: x * 2, in_dims=1)(ar(T, 3, 4))


@P
def vmap_in_dims_neg(T, log):
    return T.func.vmap(lambda x: x.sum(), in_dims=-1)(ar(T, 3, 4))


@P
def vmap_in_dims_tuple_none(T, log):
    f = T.func.vmap(lambda x, y: x @ y, in_dims=(0, None))
    return f(ar(T, 5, 3), ar(T, 3, 2))


@P
def vmap_in_dims_tuple_mixed(T, log):
    f = T.func.vmap(lambda x, y: x * y, in_dims=(1, 0))
    return f(ar(T, 2, 4), ar(T, 4, 2))


@P
def vmap_in_dims_dict(T, log):
    f = T.func.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": 1},))
    return f({"a": ar(T, 3, 2), "b": ar(T, 2, 3)})


@P
def vmap_in_dims_nested_list(T, log):
    f = T.func.vmap(lambda xs, y: xs[0] * xs[1] + y, in_dims=([0, None], 1))
    return f([ar(T, 3, 2), ar(T, 2)], ar(T, 2, 3))


@P
def vmap_in_dims_prefix(T, log):
    # an int for a whole pytree argument
    f = T.func.vmap(lambda d: d["a"] * d["b"], in_dims=(0,))
    return f({"a": ar(T, 3, 2), "b": ar(T, 3, 2)})


@P
def vmap_kwargs_unbatched(T, log):
    f = T.func.vmap(lambda x, scale=1.0: x * scale)
    return f(ar(T, 3, 2), scale=3.0)


@P
def vmap_kwargs_tensor_unbatched(T, log):
    f = T.func.vmap(lambda x, b=None: x + b)
    return f(ar(T, 3, 2), b=ar(T, 3, 2))


@P
def vmap_out_dims_1(T, log):
    return T.func.vmap(lambda x: x * 2, out_dims=1)(ar(T, 3, 4))


@P
def vmap_out_dims_neg(T, log):
    return T.func.vmap(lambda x: x.unsqueeze(0), out_dims=-1)(ar(T, 3, 4))


@P
def vmap_out_dims_tuple(T, log):
    f = T.func.vmap(lambda x: (x, x.sum()), out_dims=(1, 0))
    return f(ar(T, 3, 4))


@P
def vmap_out_dims_none_unbatched(T, log):
    f = T.func.vmap(lambda x, y: (x * 2, y), in_dims=(0, None), out_dims=(0, None))
    return f(ar(T, 3, 2), ar(T, 2))


@P
def vmap_out_unbatched_broadcast(T, log):
    # an output that does not depend on the batched input is expanded
    return T.func.vmap(lambda x, y: y, in_dims=(0, None))(ar(T, 3, 2), ar(T, 4))


@P
def vmap_returns_dict(T, log):
    r = T.func.vmap(lambda x: {"s": x.sum(), "m": x.max()})(ar(T, 3, 4))
    return r


@P
def vmap_returns_list(T, log):
    return T.func.vmap(lambda x: [x, x + 1])(ar(T, 2, 2))


@P
def vmap_out_dims_dict_prefix(T, log):
    return T.func.vmap(lambda x: {"a": x, "b": x * 2}, out_dims={"a": 1, "b": 0})(ar(T, 3, 2))


@P
def vmap_scalar_output(T, log):
    return T.func.vmap(lambda x: (x * x).sum())(ar(T, 4, 3))


@P
def vmap_int_tensor(T, log):
    x = T.arange(12).reshape(3, 4)
    return T.func.vmap(lambda v: v * 2 + v.sum())(x)


@P
def vmap_bool_tensor(T, log):
    x = T.tensor([[True, False], [False, False], [True, True]])
    return T.func.vmap(lambda v: v.any())(x)


@P
def vmap_float32(T, log):
    return T.func.vmap(lambda v: v.exp() / v.exp().sum())(ar(T, 3, 4, dtype=T.float32))


@P
def vmap_batch_size_1(T, log):
    return T.func.vmap(lambda v: v.sum(-1))(ar(T, 1, 2, 3))


@P
def vmap_shape_inside(T, log):
    def f(x):
        log.append((tuple(x.shape), x.dim(), x.numel(), x.size(-1), x.ndim))
        return x

    T.func.vmap(f)(ar(T, 3, 4, 5))
    T.func.vmap(f, in_dims=2)(ar(T, 3, 4, 5))
    return None


@P
def vmap_chunk_size(T, log):
    return T.func.vmap(lambda x: x.cumsum(0), chunk_size=2)(ar(T, 5, 3))


@P
def vmap_chunk_size_1(T, log):
    return T.func.vmap(lambda x, y: x @ y, in_dims=(0, None), chunk_size=1)(
        ar(T, 3, 2), ar(T, 2, 2)
    )


@P
def vmap_chunk_size_big(T, log):
    return T.func.vmap(lambda x: x.sum(), chunk_size=100)(ar(T, 3, 2))


@P
def vmap_chunk_size_zero_err(T, log):
    return T.func.vmap(lambda x: x, chunk_size=0)(ar(T, 3, 2))


@P
def vmap_chunk_size_neg_err(T, log):
    return T.func.vmap(lambda x: x, chunk_size=-1)(ar(T, 3, 2))


@P
def vmap_nested(T, log):
    f = T.func.vmap(T.func.vmap(lambda a, b: a * b, in_dims=(None, 0)), in_dims=(0, None))
    return f(ar(T, 3), ar(T, 4))


@P
def vmap_nested_dot(T, log):
    f = T.func.vmap(T.func.vmap(T.dot, in_dims=(None, 0)), in_dims=(0, None))
    return f(ar(T, 2, 3), ar(T, 4, 3))


@P
def vmap_nested_3(T, log):
    f = T.func.vmap(T.func.vmap(T.func.vmap(lambda x: x.sum())))
    return f(ar(T, 2, 3, 4, 5))


@P
def vmap_nested_in_dims(T, log):
    f = T.func.vmap(T.func.vmap(lambda x: x * 3, in_dims=1), in_dims=1)
    return f(ar(T, 2, 3, 4))


# ---------------------------------------------------------------- vmap: ops
@P
def vmap_matmul_both(T, log):
    return T.func.vmap(T.matmul)(ar(T, 4, 2, 3), ar(T, 4, 3, 5))


@P
def vmap_matmul_mv(T, log):
    return T.func.vmap(T.mv, in_dims=(None, 0))(ar(T, 2, 3), ar(T, 4, 3))


@P
def vmap_mm_in_dims1(T, log):
    return T.func.vmap(T.mm, in_dims=(1, None))(ar(T, 2, 4, 3), ar(T, 3, 2))


@P
def vmap_outer(T, log):
    return T.func.vmap(T.outer)(ar(T, 3, 2), ar(T, 3, 4))


@P
def vmap_einsum(T, log):
    return T.func.vmap(lambda a, b: T.einsum("ij,jk->ik", a, b))(ar(T, 2, 3, 4), ar(T, 2, 4, 2))


@P
def vmap_sum_dims(T, log):
    f = T.func.vmap(lambda x: (x.sum(0), x.sum(-1), x.sum((0, 1)), x.sum(1, keepdim=True)))
    return f(ar(T, 2, 3, 4))


@P
def vmap_mean_var(T, log):
    f = T.func.vmap(lambda x: (x.mean(-1), x.var(0), x.std(), x.prod(1)))
    return f(ar(T, 2, 3, 4))


@P
def vmap_max_dim(T, log):
    def f(x):
        r = x.max(dim=1)
        return r.values, r.indices, x.argmax(), x.amax(0)

    return T.func.vmap(f)(ar(T, 3, 2, 4))


@P
def vmap_sort_topk(T, log):
    def f(x):
        s = T.sort(x, descending=True)
        k = T.topk(x, 2)
        return s.values, s.indices, k.values, k.indices

    return T.func.vmap(f)(ar(T, 3, 5))


@P
def vmap_indexing(T, log):
    f = T.func.vmap(lambda x: (x[0], x[:, 1], x[-1, ::2], x[None, 1:]))
    return f(ar(T, 2, 3, 4))


@P
def vmap_index_tensor_unbatched(T, log):
    idx = T.tensor([2, 0])
    return T.func.vmap(lambda x: x[idx])(ar(T, 3, 5))


@P
def vmap_gather_index_select(T, log):
    i = T.tensor([[0, 2], [1, 1]])

    def f(x):
        return T.gather(x, 1, i), x.index_select(0, T.tensor([1, 0])), x.take_along_dim(i, 1)

    return T.func.vmap(f)(ar(T, 3, 2, 3))


@P
def vmap_where(T, log):
    f = T.func.vmap(lambda x, y: T.where(x > 0, x, y))
    return f(ar(T, 3, 4), ar(T, 3, 4) * 10)


@P
def vmap_where_scalar(T, log):
    return T.func.vmap(lambda x: T.where(x > 0, x, 0.0))(ar(T, 3, 4))


@P
def vmap_cat_stack(T, log):
    y = ar(T, 2)

    def f(x):
        return T.cat([x, y]), T.stack([x, y]), T.stack([x, y], dim=1), T.cat([x, x], dim=-1)

    return T.func.vmap(f)(ar(T, 3, 2))


@P
def vmap_cat_2d(T, log):
    f = T.func.vmap(lambda a, b: T.cat([a, b], 1), in_dims=(0, 1))
    return f(ar(T, 3, 2, 2), ar(T, 2, 3, 1))


@P
def vmap_softmax(T, log):
    F = T.nn.functional
    f = T.func.vmap(lambda x: (F.softmax(x, dim=-1), x.log_softmax(0), T.softmax(x, 1)))
    return f(ar(T, 3, 2, 4))


@P
def vmap_conv2d(T, log):
    F = T.nn.functional
    w = ar(T, 4, 2, 3, 3)
    return T.func.vmap(lambda x: F.conv2d(x, w, padding=1))(ar(T, 3, 1, 2, 5, 5))


@P
def vmap_conv2d_unbatched_input(T, log):
    F = T.nn.functional
    w = ar(T, 3, 4, 2, 3, 3)
    return T.func.vmap(lambda x, w: F.conv2d(x, w), in_dims=(None, 0))(ar(T, 1, 2, 5, 5), w)


@P
def vmap_conv2d_both(T, log):
    F = T.nn.functional
    f = T.func.vmap(lambda x, w, b: F.conv2d(x, w, b, stride=2))
    return f(ar(T, 2, 1, 2, 5, 5), ar(T, 2, 3, 2, 3, 3), ar(T, 2, 3))


@P
def vmap_conv1d(T, log):
    F = T.nn.functional
    return T.func.vmap(lambda x: F.conv1d(x, ar(T, 2, 1, 3)))(ar(T, 3, 1, 1, 6))


@P
def vmap_layer_norm(T, log):
    F = T.nn.functional
    w, b = ar(T, 4) + 2, ar(T, 4)
    f = T.func.vmap(lambda x: (F.layer_norm(x, (4,)), F.layer_norm(x, (4,), w, b, eps=1e-3)))
    return f(ar(T, 3, 2, 4))


@P
def vmap_layer_norm_batched_weight(T, log):
    F = T.nn.functional
    f = T.func.vmap(lambda x, w: F.layer_norm(x, (2, 3), w))
    return f(ar(T, 2, 4, 2, 3), ar(T, 2, 2, 3) + 2)


@P
def vmap_linear_fn(T, log):
    F = T.nn.functional
    f = T.func.vmap(F.linear, in_dims=(0, 0, None))
    return f(ar(T, 3, 2, 4), ar(T, 3, 5, 4), ar(T, 5))


@P
def vmap_module_call(T, log):
    T.manual_seed(0)
    m = T.nn.Linear(3, 2).double()
    with T.no_grad():
        m.weight.copy_(ar(T, 2, 3))
        m.bias.copy_(ar(T, 2))
    return T.func.vmap(m)(ar(T, 4, 5, 3))


@P
def vmap_cross_entropy(T, log):
    F = T.nn.functional
    f = T.func.vmap(lambda x, y: F.cross_entropy(x, y))
    return f(ar(T, 3, 4, 5), T.tensor([[0, 1, 2, 3], [4, 4, 0, 0], [1, 2, 3, 4]]))


@P
def vmap_mse_loss(T, log):
    F = T.nn.functional
    f = T.func.vmap(lambda x, y: F.mse_loss(x, y, reduction="sum"))
    return f(ar(T, 3, 4), ar(T, 3, 4) * 2)


@P
def vmap_elementwise(T, log):
    def f(x):
        return x.abs().sqrt(), x.clamp(-0.5, 0.5), T.tanh(x), x.exp().log1p(), x.sigmoid()

    return T.func.vmap(f)(ar(T, 3, 4))


@P
def vmap_activations(T, log):
    F = T.nn.functional
    return T.func.vmap(lambda x: (F.relu(x), F.gelu(x), F.silu(x), F.leaky_relu(x, 0.1)))(
        ar(T, 3, 4)
    )


@P
def vmap_broadcast_binary(T, log):
    f = T.func.vmap(lambda x, y: x + y, in_dims=(0, None))
    return f(ar(T, 3, 4, 1), ar(T, 5))


@P
def vmap_broadcast_both_batched(T, log):
    return T.func.vmap(lambda x, y: x * y)(ar(T, 3, 4, 1), ar(T, 3, 5))


@P
def vmap_python_scalar_arith(T, log):
    return T.func.vmap(lambda x: 2 ** x - 1 / (x + 3) + x % 0.3)(ar(T, 3, 4))


@P
def vmap_views(T, log):
    def f(x):
        return x.reshape(-1), x.view(2, 6), x.t(), x.permute(1, 0), x.transpose(0, -1), x.flatten()

    return T.func.vmap(f)(ar(T, 3, 4, 3))


@P
def vmap_unsqueeze_squeeze(T, log):
    f = T.func.vmap(lambda x: (x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(), x[None].squeeze(0)))
    return f(ar(T, 3, 1, 4))


@P
def vmap_expand_repeat(T, log):
    f = T.func.vmap(lambda x: (x.expand(3, 2), x.repeat(2, 1), x.flip(0), x.roll(1)))
    return f(ar(T, 4, 2))


@P
def vmap_chunk_split(T, log):
    return T.func.vmap(lambda x: (x.chunk(2), x.split([1, 3]), x.unbind()))(ar(T, 3, 4))


@P
def vmap_creation_like(T, log):
    f = T.func.vmap(lambda x: (T.zeros_like(x), T.ones_like(x) * x, x.new_zeros(2), T.ones(2) + x))
    return f(ar(T, 3, 2))


@P
def vmap_trace_diag(T, log):
    f = T.func.vmap(lambda x: (T.trace(x), T.diag(x), x.diagonal(), T.tril(x), x.triu(1)))
    return f(ar(T, 2, 3, 3))


@P
def vmap_cumsum_cumprod(T, log):
    return T.func.vmap(lambda x: (x.cumsum(-1), x.cumprod(0)))(ar(T, 3, 2, 4))


@P
def vmap_norm(T, log):
    f = T.func.vmap(lambda x: (x.norm(), T.linalg.vector_norm(x, dim=-1), x.norm(p=1, dim=0)))
    return f(ar(T, 3, 2, 4))


@P
def vmap_masked_fill(T, log):
    return T.func.vmap(lambda x: x.masked_fill(x > 0, -1.0))(ar(T, 3, 4))


@P
def vmap_dtype_cast(T, log):
    return T.func.vmap(lambda x: (x.float(), x.to(T.int64), (x > 0).long()))(ar(T, 3, 2))


@P
def vmap_dropout_eval(T, log):
    F = T.nn.functional
    return T.func.vmap(lambda x: F.dropout(x, 0.5, training=False))(ar(T, 3, 2))


@P
def vmap_zero_batch(T, log):
    return T.func.vmap(lambda x: x * 2)(T.ones(0, 3))


@P
def vmap_empty_sample(T, log):
    return T.func.vmap(lambda x: x.sum())(T.ones(3, 0))


# ---------------------------------------------------------------- vmap: in-place
@P
def vmap_inplace_batched(T, log):
    def f(x):
        x.mul_(2).add_(1)
        return x

    x = ar(T, 3, 2)
    r = T.func.vmap(f)(x)
    return r, x


@P
def vmap_inplace_batched_other(T, log):
    def f(x, y):
        x.add_(y)
        return x

    x = ar(T, 3, 2)
    T.func.vmap(f)(x, ar(T, 3, 2))
    return x


@P
def vmap_inplace_unbatched_self_err(T, log):
    def f(x, y):
        return x.add_(y)

    return T.func.vmap(f, in_dims=(None, 0))(ar(T, 2), ar(T, 3, 2))


# ---------------------------------------------------------------- vmap: errors
@P
def vmap_item_err(T, log):
    return T.func.vmap(lambda x: x.sum().item())(ar(T, 3, 2))

@P
def vmap_float_err(T, log):
    return T.func.vmap(lambda x: float(x.sum()))(ar(T, 3, 2))


@P
def vmap_tolist_err(T, log):
    return T.func.vmap(lambda x: x.tolist())(ar(T, 3, 2))


@P
def vmap_control_flow_err(T, log):
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    return T.func.vmap(f)(ar(T, 3, 2))


@P
def vmap_bad_in_dims_type(T, log):
    return T.func.vmap(lambda x: x, in_dims="a")(ar(T, 3, 2))


@P
def vmap_bad_in_dims_float(T, log):
    return T.func.vmap(lambda x: x, in_dims=0.5)(ar(T, 3, 2))


@P
def vmap_in_dims_len_mismatch(T, log):
    return T.func.vmap(lambda x, y: x, in_dims=(0, 0, 0))(ar(T, 3), ar(T, 3))


@P
def vmap_in_dims_out_of_range(T, log):
    return T.func.vmap(lambda x: x, in_dims=2)(ar(T, 3, 2))


@P
def vmap_in_dims_neg_out_of_range(T, log):
    return T.func.vmap(lambda x: x, in_dims=-3)(ar(T, 3, 2))


@P
def vmap_in_dims_nontensor(T, log):
    return T.func.vmap(lambda x, n: x * n, in_dims=(0, 0))(ar(T, 3), 2)


@P
def vmap_in_dims_nontensor_none(T, log):
    return T.func.vmap(lambda x, n: x * n, in_dims=(0, None))(ar(T, 3), 2)


@P
def vmap_all_none_err(T, log):
    return T.func.vmap(lambda x: x, in_dims=None)(ar(T, 3))


@P
def vmap_no_tensor_args_err(T, log):
    return T.func.vmap(lambda x: x)(3.0)


@P
def vmap_batch_mismatch(T, log):
    return T.func.vmap(lambda x, y: x + y)(ar(T, 3, 2), ar(T, 4, 2))


@P
def vmap_batch_mismatch_in_dims(T, log):
    return T.func.vmap(lambda x, y: x + y, in_dims=(0, 1))(ar(T, 3, 2), ar(T, 2, 2))


@P
def vmap_nontensor_output_err(T, log):
    return T.func.vmap(lambda x: 3)(ar(T, 3, 2))


@P
def vmap_none_output_err(T, log):
    return T.func.vmap(lambda x: None)(ar(T, 3, 2))


@P
def vmap_str_output_err(T, log):
    return T.func.vmap(lambda x: (x, "a"))(ar(T, 3, 2))


@P
def vmap_out_dims_len_mismatch(T, log):
    return T.func.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(ar(T, 3, 2))


@P
def vmap_out_dims_out_of_range(T, log):
    return T.func.vmap(lambda x: x, out_dims=3)(ar(T, 3, 2))


@P
def vmap_randomness_bad(T, log):
    return T.func.vmap(lambda x: x, randomness="nope")(ar(T, 3, 2))


@P
def vmap_randomness_error(T, log):
    return T.func.vmap(lambda x: x + T.rand(2, dtype=T.float64))(ar(T, 3, 2))


@P
def vmap_randomness_error_randn_like(T, log):
    return T.func.vmap(lambda x: T.randn_like(x))(ar(T, 3, 2))


@P
def vmap_randomness_error_dropout(T, log):
    F = T.nn.functional
    return T.func.vmap(lambda x: F.dropout(x, 0.5))(ar(T, 3, 2))


# ---------------------------------------------------------------- vmap: randomness
def _rows_distinct(r):
    return [bool((r[i] != r[0]).any()) for i in range(1, r.shape[0])]


@P
def vmap_randomness_different(T, log):
    r = T.func.vmap(lambda x: x * 0 + T.rand(4, dtype=T.float64), randomness="different")(
        ar(T, 3, 2)[:, :1]
    )
    return tuple(r.shape), _rows_distinct(r), bool(((r >= 0) & (r < 1)).all())


@P
def vmap_randomness_same(T, log):
    r = T.func.vmap(lambda x: x * 0 + T.rand(4, dtype=T.float64), randomness="same")(
        ar(T, 3, 2)[:, :1]
    )
    return tuple(r.shape), _rows_distinct(r)


@P
def vmap_randomness_like_different(T, log):
    r = T.func.vmap(lambda x: T.randn_like(x), randomness="different")(ar(T, 3, 5))
    return tuple(r.shape), _rows_distinct(r), r.dtype


@P
def vmap_randomness_like_same(T, log):
    r = T.func.vmap(lambda x: T.randn_like(x), randomness="same")(ar(T, 3, 5))
    return tuple(r.shape), _rows_distinct(r)


@P
def vmap_dropout_same(T, log):
    F = T.nn.functional
    r = T.func.vmap(lambda x: F.dropout(x, 0.5), randomness="same")(T.ones(4, 50))
    return tuple(r.shape), _rows_distinct(r), sorted(set(r.flatten().tolist()))


@P
def vmap_dropout_different(T, log):
    F = T.nn.functional
    r = T.func.vmap(lambda x: F.dropout(x, 0.5), randomness="different")(T.ones(4, 50))
    return tuple(r.shape), _rows_distinct(r), sorted(set(r.flatten().tolist()))


@P
def vmap_randomness_unbatched_input_different(T, log):
    # "different" with a random op whose input is not batched still draws per sample
    r = T.func.vmap(lambda x, y: T.rand_like(y) + 0 * x, in_dims=(0, None),
                    randomness="different")(ar(T, 3), ar(T, 5))
    return tuple(r.shape), _rows_distinct(r)


# ---------------------------------------------------------------- vmap + autograd
@P
def vmap_backward_through(T, log):
    x = t(T, [[1.0, 2.0], [3.0, -1.0]], rg=True)
    y = T.func.vmap(lambda v: (v.sin() * v).sum())(x)
    y.sum().backward()
    return y, x.grad


@P
def vmap_backward_weight(T, log):
    w = t(T, [[0.5, -1.0], [2.0, 0.1]], rg=True)
    y = T.func.vmap(lambda v: (w @ v).tanh().sum())(ar(T, 3, 2))
    (g,) = T.autograd.grad(y.sum(), w)
    return y, g


# ---------------------------------------------------------------- grad
def f_sc(x):
    return (x.sin() * x).sum()


@P
def grad_basic(T, log):
    return T.func.grad(f_sc)(ar(T, 4))


@P
def grad_float32(T, log):
    return T.func.grad(lambda x: (x ** 3).sum())(ar(T, 2, 3, dtype=T.float32))


@P
def grad_0d(T, log):
    return T.func.grad(lambda x: x.exp() * x)(t(T, 0.7))


@P
def grad_argnums_1(T, log):
    return T.func.grad(lambda x, y: (x * y ** 2).sum(), argnums=1)(ar(T, 3), ar(T, 3) + 2)


@P
def grad_argnums_tuple(T, log):
    return T.func.grad(lambda x, y: (x * y ** 2).sum(), argnums=(0, 1))(ar(T, 3), ar(T, 3) + 2)


@P
def grad_argnums_neg(T, log):
    return T.func.grad(lambda x, y: (x * y ** 2).sum(), argnums=-1)(ar(T, 3), ar(T, 3) + 2)


@P
def grad_has_aux(T, log):
    def f(x):
        y = (x ** 2).sum()
        return y, {"y": y, "x2": x * 2}

    return T.func.grad(f, has_aux=True)(ar(T, 3))


@P
def grad_has_aux_not_tuple_err(T, log):
    return T.func.grad(lambda x: (x ** 2).sum(), has_aux=True)(ar(T, 3))


@P
def grad_has_aux_wrong_len_err(T, log):
    return T.func.grad(lambda x: ((x ** 2).sum(), 1, 2), has_aux=True)(ar(T, 3))


@P
def grad_has_aux_nontensor_aux(T, log):
    return T.func.grad(lambda x: ((x ** 2).sum(), 3), has_aux=True)(ar(T, 3))


@P
def grad_nonscalar_err(T, log):
    return T.func.grad(lambda x: x ** 2)(ar(T, 3))


@P
def grad_nontensor_output_err(T, log):
    return T.func.grad(lambda x: 3.0)(ar(T, 3))


@P
def grad_int_input_err(T, log):
    return T.func.grad(lambda x: (x * 2).sum())(T.arange(3))


@P
def grad_python_float_input_err(T, log):
    return T.func.grad(lambda x: x * 2)(3.0)


@P
def grad_independent_output(T, log):
    return T.func.grad(lambda x, y: (y ** 2).sum())(ar(T, 3), ar(T, 2))


@P
def grad_dict_input(T, log):
    def f(p):
        return (p["w"] * p["b"].sum()).sum()

    return T.func.grad(f)({"w": ar(T, 2, 2), "b": ar(T, 3)})


@P
def grad_tuple_input(T, log):
    return T.func.grad(lambda xs: (xs[0] * xs[1]).sum())((ar(T, 3), ar(T, 3) + 1))


@P
def grad_kwargs(T, log):
    return T.func.grad(lambda x, scale=1.0: (x * scale).sum())(ar(T, 3), scale=4.0)


@P
def grad_of_grad(T, log):
    return T.func.grad(T.func.grad(lambda x: x.sin() * x ** 3))(t(T, 0.3))


@P
def grad_of_grad_of_grad(T, log):
    return T.func.grad(T.func.grad(T.func.grad(lambda x: x.exp() * x.cos())))(t(T, 0.3))


@P
def grad_requires_grad_false_outside(T, log):
    x = ar(T, 3)
    g = T.func.grad(f_sc)(x)
    return g, g.requires_grad, x.requires_grad, x.grad


@P
def grad_requires_grad_input(T, log):
    x = ar(T, 3).requires_grad_()
    g = T.func.grad(lambda v: (v ** 3).sum())(x)
    (gg,) = T.autograd.grad(g.sum(), x)
    return g, g.requires_grad, gg


@P
def grad_closure_param(T, log):
    w = t(T, [1.0, -2.0, 0.5], rg=True)
    g = T.func.grad(lambda x: (w * x ** 2).sum())(ar(T, 3))
    g.sum().backward()
    return g, g.requires_grad, w.grad


@P
def grad_and_value_basic(T, log):
    return T.func.grad_and_value(f_sc)(ar(T, 4))


@P
def grad_and_value_argnums(T, log):
    f = T.func.grad_and_value(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))
    return f(ar(T, 3), ar(T, 3))


@P
def grad_and_value_has_aux(T, log):
    def f(x):
        return (x ** 2).sum(), (x.max(), [x.min()])

    return T.func.grad_and_value(f, has_aux=True)(ar(T, 4))


@P
def grad_and_value_nonscalar_err(T, log):
    return T.func.grad_and_value(lambda x: x)(ar(T, 3))


@P
def grad_through_functions(T, log):
    F = T.nn.functional

    def f(x):
        y = F.softmax(x, -1) * F.layer_norm(x, (4,))
        return T.where(x > 0, y, x ** 2).sum() + T.cat([x, x.flip(-1)], -1).norm()

    return T.func.grad(f)(ar(T, 3, 4))


@P
def grad_conv2d(T, log):
    F = T.nn.functional
    x = ar(T, 1, 2, 5, 5)
    return T.func.grad(lambda w: F.conv2d(x, w, padding=1).tanh().sum())(ar(T, 3, 2, 3, 3))


# ---------------------------------------------------------------- vjp
@P
def vjp_basic(T, log):
    out, fn = T.func.vjp(T.sin, ar(T, 3))
    return out, fn(ar(T, 3) + 2)


@P
def vjp_multi_primals(T, log):
    out, fn = T.func.vjp(lambda x, y: x * y.exp(), ar(T, 3), ar(T, 3) + 1)
    return out, fn(T.ones(3, dtype=T.float64))


@P
def vjp_tuple_out(T, log):
    out, fn = T.func.vjp(lambda x: (x.sin(), x.sum()), ar(T, 3))
    return out, fn((ar(T, 3), t(T, 2.0)))


@P
def vjp_has_aux(T, log):
    out, fn, aux = T.func.vjp(lambda x: (x ** 2, {"a": x.sum()}), ar(T, 3), has_aux=True)
    return out, aux, fn(T.ones(3, dtype=T.float64))


@P
def vjp_called_twice(T, log):
    out, fn = T.func.vjp(lambda x: x.exp(), ar(T, 3))
    return fn(ar(T, 3)), fn(ar(T, 3) * 2)


@P
def vjp_dict_primal(T, log):
    out, fn = T.func.vjp(lambda p: p["a"] * p["b"], {"a": ar(T, 2), "b": ar(T, 2) + 1})
    return fn(T.ones(2, dtype=T.float64))


@P
def vjp_wrong_cotangent_shape(T, log):
    out, fn = T.func.vjp(lambda x: x.exp(), ar(T, 3))
    return fn(T.ones(4, dtype=T.float64))


@P
def vjp_wrong_cotangent_structure(T, log):
    out, fn = T.func.vjp(lambda x: (x.exp(), x), ar(T, 3))
    return fn(T.ones(3, dtype=T.float64))


@P
def vjp_has_aux_not_tuple(T, log):
    return T.func.vjp(lambda x: x.exp(), ar(T, 3), has_aux=True)


@P
def vjp_nontensor_output(T, log):
    return T.func.vjp(lambda x: 3.0, ar(T, 3))


@P
def vjp_nontensor_primal(T, log):
    return T.func.vjp(lambda x: x, 3.0)


@P
def vjp_independent_output(T, log):
    out, fn = T.func.vjp(lambda x, y: y * 2, ar(T, 2), ar(T, 2))
    return fn(T.ones(2, dtype=T.float64))


# ---------------------------------------------------------------- jvp
@P
def jvp_basic(T, log):
    return T.func.jvp(T.sin, (ar(T, 3),), (ar(T, 3) + 2,))


@P
def jvp_multi(T, log):
    f = lambda x, y: x * y.exp()  # noqa: E731
    return T.func.jvp(f, (ar(T, 3), ar(T, 3)), (T.ones(3, dtype=T.float64), ar(T, 3)))


@P
def jvp_tuple_out(T, log):
    return T.func.jvp(lambda x: (x.cos(), x.sum()), (ar(T, 3),), (ar(T, 3),))


@P
def jvp_has_aux(T, log):
    return T.func.jvp(lambda x: (x ** 2, x.sum()), (ar(T, 3),), (ar(T, 3),), has_aux=True)


@P
def jvp_float32(T, log):
    x = ar(T, 4, dtype=T.float32)
    return T.func.jvp(lambda v: v.tanh() @ v, (x,), (T.ones(4),))


@P
def jvp_primals_not_tuple(T, log):
    return T.func.jvp(T.sin, ar(T, 3), ar(T, 3))


@P
def jvp_len_mismatch(T, log):
    return T.func.jvp(lambda x, y: x * y, (ar(T, 3), ar(T, 3)), (ar(T, 3),))


@P
def jvp_shape_mismatch(T, log):
    return T.func.jvp(T.sin, (ar(T, 3),), (ar(T, 4),))


@P
def jvp_has_aux_not_tuple(T, log):
    return T.func.jvp(T.sin, (ar(T, 3),), (ar(T, 3),), has_aux=True)


@P
def jvp_dict_primal(T, log):
    f = lambda p: p["a"] * p["b"]  # noqa: E731
    return T.func.jvp(f, ({"a": ar(T, 2), "b": ar(T, 2)},), ({"a": T.ones(2), "b": T.zeros(2)},))


@P
def jvp_through_ops(T, log):
    F = T.nn.functional

    def f(x):
        return F.softmax(x, -1).sum(0), F.layer_norm(x, (3,)), x.max(0).values

    return T.func.jvp(f, (ar(T, 2, 3),), (ar(T, 2, 3) + 0.5,))


# ---------------------------------------------------------------- jacrev / jacfwd / hessian
def f_vec(x):
    return x.sin() * x.sum()


@P
def jacrev_basic(T, log):
    return T.func.jacrev(f_vec)(ar(T, 3))


@P
def jacfwd_basic(T, log):
    return T.func.jacfwd(f_vec)(ar(T, 3))


@P
def jacrev_2d(T, log):
    return T.func.jacrev(lambda x: x @ x.T)(ar(T, 2, 3))


@P
def jacfwd_2d(T, log):
    return T.func.jacfwd(lambda x: x @ x.T)(ar(T, 2, 3))


@P
def jacrev_scalar_out(T, log):
    return T.func.jacrev(lambda x: (x ** 2).sum())(ar(T, 3))


@P
def jacrev_scalar_in(T, log):
    return T.func.jacrev(lambda x: T.stack([x, x ** 2]))(t(T, 1.5))


@P
def jacfwd_scalar_in(T, log):
    return T.func.jacfwd(lambda x: T.stack([x, x ** 2]))(t(T, 1.5))


@P
def jacrev_argnums(T, log):
    return T.func.jacrev(lambda x, y: x * y, argnums=1)(ar(T, 3), ar(T, 3) + 2)


@P
def jacrev_argnums_tuple(T, log):
    return T.func.jacrev(lambda x, y: x * y.sum(), argnums=(0, 1))(ar(T, 2), ar(T, 3))


@P
def jacfwd_argnums_tuple(T, log):
    return T.func.jacfwd(lambda x, y: x * y.sum(), argnums=(0, 1))(ar(T, 2), ar(T, 3))


@P
def jacrev_has_aux(T, log):
    return T.func.jacrev(lambda x: (x.exp(), x.sum()), has_aux=True)(ar(T, 3))


@P
def jacfwd_has_aux(T, log):
    return T.func.jacfwd(lambda x: (x.exp(), {"s": x.sum()}), has_aux=True)(ar(T, 3))


@P
def jacrev_chunk_size(T, log):
    return T.func.jacrev(f_vec, chunk_size=2)(ar(T, 5))


@P
def jacrev_chunk_size_1(T, log):
    return T.func.jacrev(lambda x: x.cumsum(0), chunk_size=1)(ar(T, 4))


@P
def jacrev_chunk_size_zero(T, log):
    return T.func.jacrev(f_vec, chunk_size=0)(ar(T, 3))


@P
def jacrev_tuple_out(T, log):
    return T.func.jacrev(lambda x: (x.sin(), x.sum()))(ar(T, 3))


@P
def jacfwd_tuple_out(T, log):
    return T.func.jacfwd(lambda x: (x.sin(), x.sum()))(ar(T, 3))


@P
def jacrev_dict_in(T, log):
    return T.func.jacrev(lambda p: p["a"] * p["b"])({"a": ar(T, 2), "b": ar(T, 2) + 1})


@P
def jacfwd_dict_in(T, log):
    return T.func.jacfwd(lambda p: p["a"] * p["b"])({"a": ar(T, 2), "b": ar(T, 2) + 1})


@P
def jacrev_float32(T, log):
    return T.func.jacrev(lambda x: x.tanh() * 3)(ar(T, 3, dtype=T.float32))


@P
def jacrev_jacrev(T, log):
    return T.func.jacrev(T.func.jacrev(lambda x: (x.sin() * x.prod()).sum()))(ar(T, 3))


@P
def jacfwd_jacrev(T, log):
    return T.func.jacfwd(T.func.jacrev(lambda x: x.exp() * x.sum()))(ar(T, 2))


@P
def jacrev_jacfwd(T, log):
    return T.func.jacrev(T.func.jacfwd(lambda x: x.exp() * x.sum()))(ar(T, 2))


@P
def jacrev_nontensor_out(T, log):
    return T.func.jacrev(lambda x: 3.0)(ar(T, 3))


@P
def jacrev_argnums_out_of_range(T, log):
    return T.func.jacrev(lambda x: x, argnums=1)(ar(T, 3))


@P
def jacfwd_randomness_err(T, log):
    return T.func.jacfwd(lambda x: x * T.rand(3, dtype=T.float64))(ar(T, 3))


@P
def jacfwd_randomness_same(T, log):
    T.manual_seed(0)
    j = T.func.jacfwd(lambda x: x * T.rand(3, dtype=T.float64), randomness="same")(ar(T, 3))
    return tuple(j.shape), bool((j == T.diag(j.diagonal())).all())


@P
def hessian_basic(T, log):
    return T.func.hessian(lambda x: (x.sin() * x.prod()).sum())(ar(T, 3))


@P
def hessian_argnums(T, log):
    return T.func.hessian(lambda x, y: (x ** 2 * y ** 3).sum(), argnums=1)(ar(T, 2), ar(T, 2))


@P
def hessian_argnums_tuple(T, log):
    f = T.func.hessian(lambda x, y: (x ** 2 * y ** 3).sum(), argnums=(0, 1))
    return f(ar(T, 2), ar(T, 2) + 1)


@P
def hessian_2d(T, log):
    return T.func.hessian(lambda x: (x @ x.T).trace() + x.exp().sum())(ar(T, 2, 2))


@P
def hessian_vs_autograd(T, log):
    x = ar(T, 3)
    f = lambda v: (v.tanh() * v.sum() ** 2).sum()  # noqa: E731
    h1 = T.func.hessian(f)(x)
    h2 = T.autograd.functional.hessian(f, x)
    return bool(T.allclose(h1, h2)), h1


# ---------------------------------------------------------------- linearize
@P
def linearize_basic(T, log):
    out, fn = T.func.linearize(T.sin, ar(T, 3))
    return out, fn(ar(T, 3) + 1), fn(T.ones(3, dtype=T.float64))


@P
def linearize_multi(T, log):
    out, fn = T.func.linearize(lambda x, y: (x * y, x.sum()), ar(T, 3), ar(T, 3) + 1)
    return out, fn(ar(T, 3), T.ones(3, dtype=T.float64))


# ---------------------------------------------------------------- functional_call
def _lin(T, i=3, o=2, seed=0):
    m = T.nn.Linear(i, o).double()
    with T.no_grad():
        m.weight.copy_(ar(T, o, i) + seed)
        m.bias.copy_(ar(T, o) - seed)
    return m

@P
def fc_basic(T, log):
    m = _lin(T)
    p = {"weight": T.ones(2, 3, dtype=T.float64), "bias": T.zeros(2, dtype=T.float64)}
    return T.func.functional_call(m, p, (ar(T, 4, 3),)), m.weight


@P
def fc_partial(T, log):
    m = _lin(T)
    return T.func.functional_call(m, {"bias": T.ones(2, dtype=T.float64)}, ar(T, 3))


@P
def fc_kwargs(T, log):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.ones(2, dtype=T.float64))

        def forward(self, x, scale=1.0):
            return self.w * x * scale

    r = T.func.functional_call(M(), {"w": ar(T, 2)}, (ar(T, 2),), {"scale": 3.0})
    return r


@P
def fc_multiple_dicts(T, log):
    m = _lin(T)
    r = T.func.functional_call(
        m, ({"weight": T.ones(2, 3, dtype=T.float64)}, {"bias": ar(T, 2)}), (ar(T, 3),)
    )
    return r


@P
def fc_multiple_dicts_dup_err(T, log):
    m = _lin(T)
    d = {"bias": ar(T, 2)}
    return T.func.functional_call(m, (d, d), (ar(T, 3),))


@P
def fc_strict_missing(T, log):
    m = _lin(T)
    return T.func.functional_call(m, {"bias": ar(T, 2)}, (ar(T, 3),), strict=True)


@P
def fc_strict_unexpected(T, log):
    m = _lin(T)
    p = dict(m.named_parameters())
    p["extra"] = ar(T, 1)
    return T.func.functional_call(m, p, (ar(T, 3),), strict=True)


@P
def fc_nonstrict_unexpected(T, log):
    m = _lin(T)
    return T.func.functional_call(m, {"extra": ar(T, 1)}, (ar(T, 3),))


@P
def fc_buffers(T, log):
    m = T.nn.BatchNorm1d(2).double().eval()
    b = {"running_mean": ar(T, 2), "running_var": T.ones(2, dtype=T.float64) * 4}
    return T.func.functional_call(m, b, (ar(T, 3, 2),)), m.running_mean


def _tied(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = T.nn.Linear(2, 2, bias=False).double()
            self.b = T.nn.Linear(2, 2, bias=False).double()
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = M()
    with T.no_grad():
        m.a.weight.copy_(ar(T, 2, 2))
    return m


@P
def fc_tie_weights(T, log):
    m = _tied(T)
    w = T.eye(2, dtype=T.float64) * 2
    return T.func.functional_call(m, {"a.weight": w}, (ar(T, 2),))


@P
def fc_tie_weights_false(T, log):
    m = _tied(T)
    w = T.eye(2, dtype=T.float64) * 2
    return T.func.functional_call(m, {"a.weight": w}, (ar(T, 2),), tie_weights=False)


@P
def fc_tie_weights_conflict(T, log):
    m = _tied(T)
    w = T.eye(2, dtype=T.float64)
    return T.func.functional_call(m, {"a.weight": w, "b.weight": w * 2}, (ar(T, 2),))


@P
def fc_tie_weights_same_value(T, log):
    m = _tied(T)
    w = T.eye(2, dtype=T.float64) * 3
    return T.func.functional_call(m, {"a.weight": w, "b.weight": w}, (ar(T, 2),))


@P
def fc_grad_params(T, log):
    m = _lin(T)
    params = {k: v.detach() for k, v in m.named_parameters()}
    x, y = ar(T, 4, 3), ar(T, 4, 2)

    def loss(p):
        return ((T.func.functional_call(m, p, (x,)) - y) ** 2).mean()

    return T.func.grad(loss)(params)


@P
def fc_error_restores(T, log):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.ones(2, dtype=T.float64))

        def forward(self, x):
            raise ValueError("boom")

    m = M()
    r = E(lambda: T.func.functional_call(m, {"w": T.zeros(2)}, (ar(T, 2),)))
    return r, type(m.w).__name__, m.w


# ---------------------------------------------------------------- stack_module_state / ensembles
@P
def stack_state_basic(T, log):
    ms = [_lin(T, seed=i) for i in range(3)]
    p, b = T.func.stack_module_state(ms)
    return p, b, [v.requires_grad for v in p.values()]


@P
def stack_state_buffers(T, log):
    ms = [T.nn.BatchNorm1d(2).double() for _ in range(2)]
    with T.no_grad():
        ms[1].running_mean.fill_(3.0)
    p, b = T.func.stack_module_state(ms)
    return p, b


@P
def stack_state_empty_err(T, log):
    return T.func.stack_module_state([])


@P
def ensemble_vmap_same_x(T, log):
    ms = [_lin(T, seed=i) for i in range(3)]
    p, b = T.func.stack_module_state(ms)
    base = copy.deepcopy(ms[0])

    def f(p, b, x):
        return T.func.functional_call(base, (p, b), (x,))

    x = ar(T, 4, 3)
    r = T.func.vmap(f, in_dims=(0, 0, None))(p, b, x)
    ref = T.stack([m(x) for m in ms])
    return r, bool(T.allclose(r, ref))


@P
def ensemble_vmap_diff_x(T, log):
    ms = [_lin(T, seed=i) for i in range(3)]
    p, b = T.func.stack_module_state(ms)
    base = copy.deepcopy(ms[0])

    def f(p, b, x):
        return T.func.functional_call(base, (p, b), (x,))

    return T.func.vmap(f)(p, b, ar(T, 3, 4, 3))


@P
def ensemble_mlp_grad(T, log):
    def mk(s):
        m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 1)).double()
        with T.no_grad():
            for i, q in enumerate(m.parameters()):
                q.copy_(ar(T, *q.shape) + s + i)
        return m

    ms = [mk(s) for s in range(2)]
    p, b = T.func.stack_module_state(ms)
    base = copy.deepcopy(ms[0])
    x = ar(T, 5, 3)

    def loss(p, b):
        return T.func.functional_call(base, (p, b), (x,)).pow(2).mean()

    return T.func.vmap(T.func.grad(loss))(p, b)


@P
def replace_bn(T, log):
    inner = T.nn.Sequential(T.nn.BatchNorm2d(3))
    m = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.BatchNorm1d(2), inner)
    r = T.func.replace_all_batch_norm_modules_(m)
    return (
        r is m,
        [(type(x).__name__, x.running_mean, x.running_var, x.num_batches_tracked,
          x.track_running_stats) for x in m.modules() if isinstance(x, T.nn.BatchNorm1d)
         or isinstance(x, T.nn.BatchNorm2d)],
    )


@P
def replace_bn_vmap(T, log):
    m = T.nn.BatchNorm1d(3).double()
    T.func.replace_all_batch_norm_modules_(m)
    return T.func.vmap(m)(ar(T, 2, 4, 3))


@P
def bn_vmap_running_stats_err(T, log):
    m = T.nn.BatchNorm1d(3).double()
    return T.func.vmap(m)(ar(T, 2, 4, 3))


# ---------------------------------------------------------------- compositions
@P
def per_sample_grads(T, log):
    w = ar(T, 3)
    x, y = ar(T, 5, 3), ar(T, 5)

    def loss(w, x, y):
        return ((w @ x).tanh() - y) ** 2

    g = T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(w, x, y)
    ref = []
    for i in range(5):
        wi = w.clone().requires_grad_()
        ref.append(T.autograd.grad(loss(wi, x[i], y[i]), wi)[0])
    ref = T.stack(ref)
    return g, bool(T.allclose(g, ref))


@P
def per_sample_grads_model(T, log):
    m = _lin(T, 3, 2)
    params = {k: v.detach() for k, v in m.named_parameters()}
    F = T.nn.functional

    def loss(p, x, y):
        out = T.func.functional_call(m, p, (x.unsqueeze(0),))
        return F.cross_entropy(out, y.unsqueeze(0))

    x, y = ar(T, 4, 3), T.tensor([0, 1, 1, 0])
    return T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


@P
def per_sample_grads_has_aux(T, log):
    def loss(w, x):
        v = (w * x).sum() ** 2
        return v, v.detach()

    f = T.func.vmap(T.func.grad(loss, has_aux=True), in_dims=(None, 0))
    return f(ar(T, 3), ar(T, 4, 3))


@P
def vmap_grad_and_value(T, log):
    return T.func.vmap(T.func.grad_and_value(lambda x: (x.sin() ** 2).sum()))(ar(T, 3, 2))


@P
def vmap_jvp(T, log):
    f = lambda x, v: T.func.jvp(lambda a: a.sin() * a.sum(), (x,), (v,))  # noqa: E731
    return T.func.vmap(f)(ar(T, 3, 2), ar(T, 3, 2) + 1)


@P
def vmap_jvp_basis(T, log):
    x = ar(T, 3)
    f = lambda v: T.func.jvp(lambda a: a.exp() * a.prod(), (x,), (v,))[1]  # noqa: E731
    return T.func.vmap(f)(T.eye(3, dtype=T.float64))


@P
def vmap_vjp(T, log):
    x = ar(T, 3)
    _, fn = T.func.vjp(lambda a: a.exp() * a.prod(), x)
    return T.func.vmap(fn)(T.eye(3, dtype=T.float64))


@P
def vmap_jacrev(T, log):
    return T.func.vmap(T.func.jacrev(lambda x: x.tanh() * x.sum()))(ar(T, 2, 3))


@P
def vmap_jacfwd(T, log):
    return T.func.vmap(T.func.jacfwd(lambda x: x.tanh() * x.sum()))(ar(T, 2, 3))


@P
def vmap_hessian(T, log):
    return T.func.vmap(T.func.hessian(lambda x: (x.sin() * x.prod()).sum()))(ar(T, 2, 3))


@P
def grad_of_vmap(T, log):
    return T.func.grad(lambda x: T.func.vmap(lambda r: (r ** 2).sum().sqrt())(x).sum())(
        ar(T, 3, 2)
    )


@P
def jacrev_of_vmap(T, log):
    return T.func.jacrev(T.func.vmap(lambda r: r.sin() * r[0]))(ar(T, 2, 2))


@P
def jvp_of_grad(T, log):
    x = ar(T, 3)
    return T.func.jvp(T.func.grad(lambda a: (a.exp() * a.sum()).sum()), (x,), (T.ones_like(x),))


@P
def vjp_of_vmap(T, log):
    out, fn = T.func.vjp(T.func.vmap(lambda r: r.cumsum(0)), ar(T, 2, 3))
    return out, fn(T.ones(2, 3, dtype=T.float64))


@P
def grad_jacrev_mix(T, log):
    return T.func.grad(lambda x: T.func.jacrev(lambda y: y.sin() * y)(x).sum())(ar(T, 3))


@P
def vmap_grad_nonscalar_err(T, log):
    return T.func.vmap(T.func.grad(lambda x: x ** 2))(ar(T, 3, 2))


@P
def vmap_vmap_grad(T, log):
    f = T.func.vmap(T.func.vmap(T.func.grad(lambda x: x.sin() * x)))
    return f(ar(T, 2, 3))


@P
def vmap_randomness_in_grad(T, log):
    def f(x):
        return (x * T.rand(2, dtype=T.float64)).sum()

    return T.func.vmap(T.func.grad(f))(ar(T, 3, 2))


# ---------------------------------------------------------------- more
@P
def vmap_in_dims_list_err(T, log):
    return T.func.vmap(lambda x, y: x + y, in_dims=[0, 0])(ar(T, 3), ar(T, 3))


@P
def vmap_in_dims_struct_mismatch(T, log):
    f = T.func.vmap(lambda d: d["a"], in_dims=({"a": 0},))
    return f({"a": ar(T, 3), "b": ar(T, 3)})


@P
def vmap_in_dims_nested_tuple_mismatch(T, log):
    f = T.func.vmap(lambda xs: xs[0], in_dims=((0, 0),))
    return f((ar(T, 3), ar(T, 3), ar(T, 3)))


@P
def vmap_numpy_err(T, log):
    return T.func.vmap(lambda x: x.numpy())(ar(T, 3, 2))


@P
def vmap_requires_grad_out(T, log):
    x = ar(T, 3, 2).requires_grad_()
    r = T.func.vmap(lambda v: v * 2)(x)
    return r.requires_grad, r.is_leaf


@P
def vmap_dot_1d(T, log):
    return T.func.vmap(T.dot)(ar(T, 3, 4), ar(T, 3, 4) + 1)


@P
def vmap_bmm(T, log):
    return T.func.vmap(T.bmm)(ar(T, 2, 3, 2, 4), ar(T, 2, 3, 4, 2))


@P
def vmap_scatter(T, log):
    i = T.tensor([[0, 1, 0]])
    f = T.func.vmap(lambda x, s: T.zeros(2, 3, dtype=T.float64).scatter_add(0, i, s))
    return f(ar(T, 2), ar(T, 2, 1, 3))


@P
def vmap_embedding(T, log):
    F = T.nn.functional
    w = ar(T, 5, 3)
    return T.func.vmap(lambda i: F.embedding(i, w))(T.tensor([[0, 4], [1, 1], [3, 2]]))


@P
def vmap_embedding_batched_weight(T, log):
    F = T.nn.functional
    i = T.tensor([0, 4, 2])
    return T.func.vmap(lambda w: F.embedding(i, w))(ar(T, 2, 5, 3))


@P
def vmap_linalg(T, log):
    L = T.linalg
    a = ar(T, 3, 3, 3) + 3 * T.eye(3, dtype=T.float64)
    f = T.func.vmap(lambda m, b: (L.solve(m, b), L.inv(m), L.det(m), T.inverse(m) @ b))
    return f(a, ar(T, 3, 3))


@P
def vmap_out_dims_too_big_0d(T, log):
    return T.func.vmap(lambda x: x.sum(), out_dims=1)(ar(T, 3, 2))


@P
def vmap_out_dims_int_for_tuple(T, log):
    return T.func.vmap(lambda x: (x, x.sum(0)), out_dims=1)(ar(T, 3, 2, 2))


@P
def vmap_closure_output(T, log):
    c = ar(T, 2)
    return T.func.vmap(lambda x: (x, c))(ar(T, 3, 2))


@P
def vmap_chunk_randomness_different(T, log):
    r = T.func.vmap(lambda x: T.rand_like(x), randomness="different", chunk_size=2)(ar(T, 5, 4))
    return tuple(r.shape), _rows_distinct(r)


@P
def vmap_nested_randomness(T, log):
    inner = T.func.vmap(lambda x: T.rand_like(x), randomness="same")
    r = T.func.vmap(inner, randomness="different")(ar(T, 2, 3, 4))
    return tuple(r.shape), _rows_distinct(r), [_rows_distinct(r[i]) for i in range(2)]


@P
def vmap_nested_randomness_inner_error(T, log):
    inner = T.func.vmap(lambda x: T.rand_like(x))
    return T.func.vmap(inner, randomness="different")(ar(T, 2, 3, 4))


@P
def vmap_grad_randomness_different(T, log):
    def f(x):
        return (x * T.rand_like(x)).sum()

    r = T.func.vmap(T.func.grad(f), randomness="different")(ar(T, 3, 4))
    return tuple(r.shape), _rows_distinct(r)


@P
def grad_item_inside(T, log):
    def f(x):
        log.append(type(x.sum().item()).__name__)
        return (x * 2).sum()

    return T.func.grad(f)(ar(T, 3))


@P
def grad_control_flow(T, log):
    def f(x):
        if x.sum() > 0:
            return (x ** 2).sum()
        return x.sum()

    return T.func.grad(f)(ar(T, 3)), T.func.grad(f)(ar(T, 3) + 2)


@P
def vjp_has_aux_nontensor(T, log):
    out, fn, aux = T.func.vjp(lambda x: (x ** 2, 3), ar(T, 3), has_aux=True)
    return out, aux, fn(T.ones(3, dtype=T.float64))


@P
def jvp_tangent_dtype(T, log):
    return T.func.jvp(T.sin, (ar(T, 3),), (ar(T, 3, dtype=T.float32),))


@P
def jacfwd_chunk_size_kw(T, log):
    return T.func.jacfwd(f_vec, chunk_size=2)(ar(T, 3))


@P
def jacrev_independent(T, log):
    return T.func.jacrev(lambda x, y: y * 2)(ar(T, 2), ar(T, 3))


@P
def jacfwd_independent(T, log):
    return T.func.jacfwd(lambda x, y: y * 2)(ar(T, 2), ar(T, 3))


@P
def hessian_nonscalar(T, log):
    return T.func.hessian(lambda x: x ** 3)(ar(T, 2))


@P
def jacrev_has_aux_not_tuple(T, log):
    return T.func.jacrev(lambda x: x * 2, has_aux=True)(ar(T, 3))


@P
def jacrev_int_input(T, log):
    return T.func.jacrev(lambda x: x * 2)(T.arange(3))


@P
def jacrev_argnums_neg(T, log):
    return T.func.jacrev(lambda x, y: x * y, argnums=-2)(ar(T, 2), ar(T, 2) + 1)


@P
def jacrev_0d_out_0d_in(T, log):
    return T.func.jacrev(lambda x: x.sin())(t(T, 0.5)), T.func.jacfwd(lambda x: x.sin())(t(T, 0.5))


@P
def stack_state_mismatch_err(T, log):
    return T.func.stack_module_state([T.nn.Linear(2, 2), T.nn.Linear(3, 2)])


@P
def stack_state_struct_mismatch_err(T, log):
    return T.func.stack_module_state([T.nn.Linear(2, 2), T.nn.Linear(2, 2, bias=False)])


@P
def stack_state_keys(T, log):
    m = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.BatchNorm1d(2))
    p, b = T.func.stack_module_state([m, copy.deepcopy(m)])
    return list(p), list(b), [tuple(v.shape) for v in b.values()], b["1.num_batches_tracked"]


@P
def replace_bn_eval(T, log):
    m = T.nn.BatchNorm1d(2).eval()
    T.func.replace_all_batch_norm_modules_(m)
    return m.running_mean, m.track_running_stats, m.training


@P
def fc_args_tensor_kwargs_none(T, log):
    m = _lin(T)
    return T.func.functional_call(m, {}, ar(T, 3), None)


@P
def fc_vmap_params(T, log):
    m = _lin(T)
    w = ar(T, 4, 2, 3)
    return T.func.vmap(lambda w, x: T.func.functional_call(m, {"weight": w}, (x,)),
                       in_dims=(0, None))(w, ar(T, 3))


@P
def fc_strict_both(T, log):
    m = _lin(T)
    return T.func.functional_call(m, {"bias": ar(T, 2), "zz": ar(T, 1)}, (ar(T, 3),), strict=True)


@P
def grad_one_elem_nonscalar(T, log):
    return T.func.grad(lambda x: x.sum(0, keepdim=True))(ar(T, 3))


@P
def grad_inner_no_grad(T, log):
    def f(x):
        with T.no_grad():
            c = x ** 2
        return (c * x).sum()

    return T.func.grad(f)(ar(T, 3))


@P
def grad_outer_no_grad(T, log):
    with T.no_grad():
        return T.func.grad(lambda x: (x ** 3).sum())(ar(T, 3))


@P
def grad_detach_inside(T, log):
    return T.func.grad(lambda x: (x.detach() * x).sum())(ar(T, 3))


@P
def vmap_no_grad_inside(T, log):
    x = ar(T, 3, 2).requires_grad_()

    def f(v):
        with T.no_grad():
            return v * 2

    r = T.func.vmap(f)(x)
    return r, r.requires_grad


@P
def jacrev_dict_out(T, log):
    return T.func.jacrev(lambda x: {"a": x.sin(), "b": x.sum()})(ar(T, 2))


@P
def jacfwd_dict_out(T, log):
    return T.func.jacfwd(lambda x: {"a": x.sin(), "b": x.sum()})(ar(T, 2))


@P
def hessian_dict_in(T, log):
    return T.func.hessian(lambda p: (p["a"] ** 2 * p["b"]).sum())({"a": ar(T, 2), "b": ar(T, 2)})


@P
def jacrev_chunk_has_aux(T, log):
    f = T.func.jacrev(lambda x: (x.exp(), x.sum()), has_aux=True, chunk_size=2)
    return f(ar(T, 3))


@P
def jacrev_chunk_big(T, log):
    return T.func.jacrev(lambda x: x ** 2, chunk_size=10)(ar(T, 3))


@P
def vjp_cotangent_dtype(T, log):
    out, fn = T.func.vjp(lambda x: x.exp(), ar(T, 3))
    return fn(T.ones(3))


@P
def vmap_list_input(T, log):
    return T.func.vmap(lambda xs: xs[0] + xs[1])([ar(T, 3, 2), ar(T, 3, 2)])


@P
def vmap_shape_int_use(T, log):
    return T.func.vmap(lambda x: T.zeros(x.shape[0], dtype=T.float64) + x.sum())(ar(T, 3, 2))


@P
def vmap_jacrev_argnums(T, log):
    f = T.func.jacrev(lambda x, y: x * y.sum(), argnums=(0, 1))
    return T.func.vmap(f)(ar(T, 2, 2), ar(T, 2, 3))


@P
def vmap_in_dims_kw_style(T, log):
    f = T.func.vmap(lambda x, y: x - y, in_dims=(None, 1), out_dims=1)
    return f(ar(T, 2), ar(T, 2, 3))


def _pair(fns):
    """One case that runs two neighbouring probes, each with its own log; an error in one is
    recorded (type and text) and the other still runs."""

    def case(T, log):
        out = []
        for f in fns:
            sub = []
            out.append((f.__name__, E(lambda f=f, sub=sub: f(T, sub)), sub))
        return out

    case.__name__ = "+".join(f.__name__ for f in fns)
    return case


_CASES = [_pair(_PROBES[i : i + 2]) for i in range(0, len(_PROBES), 2)]


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_func_transforms_match_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
