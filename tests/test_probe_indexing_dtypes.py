"""Probes of indexing, creation and type promotion: each case runs the same code on torch and
on jitgrad and compares values, dtypes, shapes, requires_grad, gradients and error types (and
texts unless the case says otherwise). Only cases where jitgrad agrees with torch are kept."""

import math

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

_CASES = []


def P(name, fn, errtext=True):  # noqa: N802 (registers one probe)
    _CASES.append((name, fn, errtext))


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        v = x.detach().to("cpu")
        if d == "bfloat16":
            v = v.float()
        return ("T", tuple(x.shape), d, v.numpy().tolist(), x.requires_grad)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (bool, int, float, complex, str, type(None))):
        return (type(x).__name__, x)
    return ("other", type(x).__name__, str(x).split(".")[-1])


def _eq(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-5 * max(1, abs(a))
    if isinstance(a, complex):
        return _eq(a.real, b.real) and _eq(a.imag, b.imag)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    return a == b


def _call(fn, mod):
    try:
        return _norm(fn(mod))
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("EXC", type(e).__name__, str(e).split("\n")[0][:200])


def _same(fn, errtext):
    a, b = _call(fn, torch), _call(fn, jitgrad)
    if a[0] == "EXC" and b[0] == "EXC" and not errtext:
        return a[1] == b[1], (a, b)
    return _eq(a, b), (a, b)


def _group_p1():
    def a(T):
        return T.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)

    # advanced indexing
    P("adv int list", lambda T: a(T)[[0, 1]])
    P("adv two lists", lambda T: a(T)[[0, 1], [1, 2]])
    P("adv sep by slice", lambda T: a(T)[[0, 1], :, [1, 2]])
    P("adv adjacent after slice", lambda T: a(T)[:, [0, 1], [1, 2]])
    P("adv None ellipsis", lambda T: a(T)[None, ..., [0, 1]])
    P("adv ellipsis mid", lambda T: a(T)[[1], ..., [0, 2]])
    P("adv tensor idx 2d", lambda T: a(T)[T.tensor([[0, 1], [1, 0]])])
    P("adv tensor idx 2d broadcast", lambda T: a(T)[T.tensor([[0], [1]]), :, T.tensor([0, 1, 2])])
    P("adv bool mask full", lambda T: a(T)[a(T) > 100])
    P(
        "adv bool mask first dims",
        lambda T: a(T)[T.tensor([[True, False, True], [False, True, False]])],
    )
    P("adv bool mask with slice", lambda T: a(T)[:, T.tensor([True, False, True])])
    P("adv bool mask with int", lambda T: a(T)[1, T.tensor([True, False, True]), 2])
    P("adv bool list", lambda T: a(T)[[True, False]])
    P("adv negative int", lambda T: a(T)[-1, -2])
    P("adv negative list", lambda T: a(T)[[-1, 0], [-3, 2]])
    P("adv negative tensor", lambda T: a(T)[T.tensor([-1, -2])])
    P("adv int sep tensors", lambda T: a(T)[T.tensor([0, 1]), 0, :, T.tensor([1, 3])])
    P("adv None between", lambda T: a(T)[T.tensor([0, 1]), None, T.tensor([1, 2])])
    P(
        "adv slice step",
        lambda T: a(T)[:, ::2, 1:3, ::-1] if T is torch else a(T)[:, ::2, 1:3, ::-1],
    )
    P("adv 0d tensor idx", lambda T: a(T)[T.tensor(1)])
    P("adv 0d tensor idx and list", lambda T: a(T)[T.tensor(1), [0, 2]])
    P("adv None None", lambda T: a(T)[None, 0, None].shape)
    P("adv out of range", lambda T: a(T)[5], errtext=False)
    P("adv out of range msg", lambda T: a(T)[5])
    P("adv out of range tensor", lambda T: a(T)[T.tensor([5])], errtext=False)
    P("adv out of range tensor msg", lambda T: a(T)[T.tensor([5])])
    P("adv float index", lambda T: a(T)[T.tensor([1.0])], errtext=False)
    P("adv float index msg", lambda T: a(T)[T.tensor([1.0])])
    P("adv too many", lambda T: a(T)[0, 0, 0, 0, 0], errtext=False)
    P("adv too many msg", lambda T: a(T)[0, 0, 0, 0, 0])
    P("adv bool mask wrong shape", lambda T: a(T)[T.tensor([True, False, True])], errtext=False)
    P("adv uint8 mask", lambda T: a(T)[T.tensor([1, 0], dtype=T.uint8)])
    P("adv int32 idx", lambda T: a(T)[T.tensor([1, 0], dtype=T.int32)])
    P("adv empty list", lambda T: a(T)[[]])
    P("adv empty tensor long", lambda T: a(T)[T.tensor([], dtype=T.long)])
    P("adv list of lists", lambda T: a(T)[[[0, 1], [1, 0]]])
    P("adv tuple idx", lambda T: a(T)[(0, 1)])
    P("adv ellipsis only", lambda T: a(T)[...])
    P("adv two ellipsis", lambda T: a(T)[..., ...], errtext=False)
    P("adv view semantics slice", lambda T: (lambda x: (x[0].add_(100), x)[1])(a(T).clone()))
    P("adv copy semantics", lambda T: (lambda x: (x[[0]].add_(100), x)[1])(a(T).clone()))
    P("1d bool mask result", lambda T: T.tensor([1.0, 2.0, 3.0])[T.tensor([True, False, True])])
    P("0d index with None", lambda T: T.tensor(5.0)[None])
    P("0d index with ...", lambda T: T.tensor(5.0)[...])
    P("0d index with int", lambda T: T.tensor(5.0)[0], errtext=False)
    P("0d index with int msg", lambda T: T.tensor(5.0)[0])
    P("slice out of range", lambda T: a(T)[10:20].shape)
    P("slice neg", lambda T: a(T)[-5:-1, -2:].shape)
    P("numpy int idx", lambda T: a(T)[np.int64(1)])
    P("numpy array idx", lambda T: a(T)[np.array([0, 1])])
    P("numpy bool idx", lambda T: a(T)[np.array([True, False])])
    P("adv mask + tensor", lambda T: a(T)[T.tensor([True, False]), T.tensor([1])])
    P("adv mask + list mid", lambda T: a(T)[:, T.tensor([True, False, True]), :, [0, 1]])
    P(
        "index with tensor requires grad",
        lambda T: (lambda x: (x[[0, 0, 1]].sum().backward(), x.grad)[1])(
            T.ones(3, requires_grad=True)
        ),
    )
    P(
        "index grad 2d adv",
        lambda T: (
            lambda x: (
                (x[T.tensor([[0, 1], [1, 1]]), 1:] * T.arange(8.0).reshape(2, 2, 2))
                .sum()
                .backward(),
                x.grad,
            )[1]
        )(T.ones(3, 3, requires_grad=True)),
    )
    P(
        "index grad mask",
        lambda T: (lambda x: ((x[x > 0.5] ** 2).sum().backward(), x.grad)[1])(
            T.tensor([0.1, 0.6, 0.9], requires_grad=True)
        ),
    )


def _group_p2():
    def z(T, *s, dt=None):
        return T.zeros(*s, dtype=dt or T.float32)

    def setit(T, x, idx, v):
        x[idx] = v
        return x

    P("set list", lambda T: setit(T, z(T, 5), [0, 2], 1.5))
    P(
        "set dup list last wins?",
        lambda T: setit(T, z(T, 5), T.tensor([1, 1, 1]), T.tensor([1.0, 2.0, 3.0])).shape,
    )
    P("set broadcast row", lambda T: setit(T, z(T, 3, 4), 1, T.arange(4.0)))
    P("set broadcast adv", lambda T: setit(T, z(T, 3, 4), [0, 2], T.arange(4.0)))
    P(
        "set broadcast adv col",
        lambda T: setit(T, z(T, 3, 4), (slice(None), [0, 2]), T.tensor([[1.0], [2.0], [3.0]])),
    )
    P(
        "set mask scalar",
        lambda T: setit(T, T.arange(6.0).reshape(2, 3), T.arange(6).reshape(2, 3) > 2, -1),
    )
    P(
        "set mask tensor vals",
        lambda T: setit(
            T, T.arange(6.0).reshape(2, 3), T.arange(6).reshape(2, 3) > 2, T.tensor([7.0, 8.0, 9.0])
        ),
    )
    P(
        "set mask row broadcast",
        lambda T: setit(
            T, T.arange(6.0).reshape(2, 3), T.tensor([True, False]), T.tensor([7.0, 8.0, 9.0])
        ),
    )
    P("set int tensor with float scalar", lambda T: setit(T, T.zeros(3, dtype=T.int64), 0, 2.7))
    P(
        "set int tensor with float 0d",
        lambda T: setit(T, T.zeros(3, dtype=T.int64), 0, T.tensor(2.7)),
    )
    P("set int tensor with neg float", lambda T: setit(T, T.zeros(3, dtype=T.int64), 0, -2.7))
    P("set float tensor with int 0d", lambda T: setit(T, z(T, 3), 1, T.tensor(3)))
    P(
        "set float16 with f64 0d",
        lambda T: setit(T, z(T, 3, dt=T.float16), 1, T.tensor(3.3, dtype=T.float64)),
    )
    P("set bool with int", lambda T: setit(T, T.zeros(3, dtype=T.bool), 1, 5))
    P(
        "set bool with float tensor",
        lambda T: setit(T, T.zeros(3, dtype=T.bool), slice(None), T.tensor([0.0, 0.5, 2.0])),
    )
    P("set uint8 with 300", lambda T: setit(T, T.zeros(3, dtype=T.uint8), 1, 300), errtext=False)
    P("set int with complex", lambda T: setit(T, z(T, 3), 1, 1 + 2j), errtext=False)
    P("set complex with real", lambda T: setit(T, T.zeros(3, dtype=T.complex64), 1, 2.5))
    P("set ellipsis", lambda T: setit(T, z(T, 2, 3), ..., 4.0))
    P("set None", lambda T: setit(T, z(T, 2, 3), (None, 0), T.tensor([1.0, 2.0, 3.0])))
    P(
        "set slice step",
        lambda T: setit(T, z(T, 6), slice(None, None, 2), T.tensor([1.0, 2.0, 3.0])),
    )
    P(
        "set shape mismatch",
        lambda T: setit(T, z(T, 6), slice(0, 3), T.tensor([1.0, 2.0])),
        errtext=False,
    )
    P("set shape mismatch msg", lambda T: setit(T, z(T, 6), slice(0, 3), T.tensor([1.0, 2.0])))
    P(
        "set adv mismatch",
        lambda T: setit(T, z(T, 6), [0, 1, 2], T.tensor([1.0, 2.0])),
        errtext=False,
    )
    P("set adv mismatch msg", lambda T: setit(T, z(T, 6), [0, 1, 2], T.tensor([1.0, 2.0])))
    P("set neg idx", lambda T: setit(T, z(T, 6), -1, 9.0))
    P("set neg tensor idx", lambda T: setit(T, z(T, 6), T.tensor([-1, -2]), 9.0))
    P("set with src with leading 1 dims", lambda T: setit(T, z(T, 2, 3), 0, T.ones(1, 1, 3)))
    # index_put_
    P(
        "index_put_ accumulate dup",
        lambda T: z(T, 5).index_put_(
            (T.tensor([1, 1, 3]),), T.tensor([1.0, 2.0, 3.0]), accumulate=True
        ),
    )
    P(
        "index_put_ accumulate bcast",
        lambda T: z(T, 3, 2).index_put_(
            (T.tensor([0, 0, 2]),), T.tensor([1.0, 2.0]), accumulate=True
        ),
    )
    P(
        "index_put_ 2d idx",
        lambda T: z(T, 3, 3).index_put_(
            (T.tensor([0, 1, 1]), T.tensor([2, 0, 0])), T.tensor(1.0), accumulate=True
        ),
    )
    P(
        "index_put_ neg",
        lambda T: z(T, 4).index_put_((T.tensor([-1, -1]),), T.tensor(1.0), accumulate=True),
    )
    P(
        "index_put_ bool",
        lambda T: z(T, 4).index_put_((T.tensor([True, False, True, False]),), T.tensor(1.0)),
    )
    P(
        "index_put_ int tensor",
        lambda T: T.zeros(4, dtype=T.int64).index_put_(
            (T.tensor([0, 0]),), T.tensor(3), accumulate=True
        ),
    )
    P(
        "index_put_ dtype mismatch",
        lambda T: z(T, 4).index_put_((T.tensor([0, 0]),), T.tensor(3, dtype=T.float64)),
        errtext=False,
    )
    P(
        "index_put_ dtype mismatch msg",
        lambda T: z(T, 4).index_put_((T.tensor([0, 0]),), T.tensor([3.0], dtype=T.float64)),
    )
    P("index_put out-of-place", lambda T: T.index_put(z(T, 4), (T.tensor([1]),), T.tensor(2.0)))
    P("index_put list indices", lambda T: z(T, 4).index_put_([T.tensor([1])], T.tensor(2.0)))
    P("index_put oob", lambda T: z(T, 4).index_put_((T.tensor([4]),), T.tensor(2.0)), errtext=False)
    P("index_put oob msg", lambda T: z(T, 4).index_put_((T.tensor([4]),), T.tensor(2.0)))

    # grads through setitem / index_put
    def g1(T):
        w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = T.zeros(5)
        x[T.tensor([0, 2, 4])] = w * 2
        (x * T.arange(5.0)).sum().backward()
        return w.grad

    P("grad setitem value", g1)

    def g2(T):
        w = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        x = w * 1
        x[1] = 0.0
        (x * T.arange(4.0)).sum().backward()
        return w.grad

    P("grad setitem overwritten", g2)

    def g3(T):
        w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = T.tensor([5.0, 6.0], requires_grad=True)
        y = w.index_put((T.tensor([0, 0]),), v, accumulate=True)
        (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        return w.grad, v.grad

    P("grad index_put accumulate", g3)

    def g4(T):
        w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = w.clone()
        y[y > 1.5] = 0
        (y * y).sum().backward()
        return w.grad

    P("grad setitem mask", g4)


def _group_p3():
    def x23(T):
        return T.arange(6.0).reshape(2, 3)

    P("masked_fill bcast mask", lambda T: x23(T).masked_fill(T.tensor([True, False, True]), -1.0))
    P("masked_fill col mask", lambda T: x23(T).masked_fill(T.tensor([[True], [False]]), 7))
    P(
        "masked_fill 0d tensor val",
        lambda T: x23(T).masked_fill(T.tensor([True, False, True]), T.tensor(9.0)),
    )
    P(
        "masked_fill int tensor float val",
        lambda T: T.arange(4).masked_fill(T.tensor([True, False, True, False]), 2.5),
    )
    P(
        "masked_fill nonbool mask",
        lambda T: x23(T).masked_fill(T.tensor([1, 0, 1]), -1.0),
        errtext=False,
    )
    P("masked_fill nonbool mask msg", lambda T: x23(T).masked_fill(T.tensor([1, 0, 1]), -1.0))
    P(
        "masked_fill 1d val",
        lambda T: x23(T).masked_fill(T.tensor([True, False, True]), T.tensor([9.0])),
        errtext=False,
    )
    P(
        "masked_fill inplace bcast self err",
        lambda T: T.zeros(3).masked_fill_(T.tensor([[True], [False]]), 1.0),
        errtext=False,
    )
    P(
        "masked_fill out of place bcast self",
        lambda T: T.zeros(3).masked_fill(T.tensor([[True], [False]]), 1.0),
    )
    P("masked_fill -inf", lambda T: x23(T).masked_fill(x23(T) > 2, float("-inf")))
    P(
        "masked_fill bool tensor",
        lambda T: T.tensor([True, False]).masked_fill(T.tensor([True, True]), False),
    )
    P(
        "masked_fill float val on bool",
        lambda T: T.tensor([True, False]).masked_fill(T.tensor([True, True]), 0.0),
    )
    P(
        "masked_scatter",
        lambda T: x23(T).masked_scatter(T.tensor([True, False, True]), T.arange(10.0, 20.0)),
    )
    P(
        "masked_scatter col",
        lambda T: x23(T).masked_scatter(
            T.tensor([[False], [True]]), T.arange(10.0, 20.0).reshape(2, 5)
        ),
    )
    P(
        "masked_scatter too small",
        lambda T: x23(T).masked_scatter(T.tensor([True, True, True]), T.arange(2.0)),
        errtext=False,
    )
    P("masked_select bcast", lambda T: T.masked_select(x23(T), T.tensor([True, False, True])))
    P(
        "masked_select bcast both",
        lambda T: T.masked_select(T.arange(3.0), T.tensor([[True], [False]])),
    )
    P("masked_select method", lambda T: x23(T).masked_select(x23(T) > 1))
    P("nonzero", lambda T: T.nonzero(T.tensor([[0, 1, 0], [2, 0, 3]])))
    P("nonzero as_tuple", lambda T: T.nonzero(T.tensor([[0, 1, 0], [2, 0, 3]]), as_tuple=True))
    P("nonzero as_tuple 0d", lambda T: T.nonzero(T.tensor(3), as_tuple=True))
    P("nonzero 0d", lambda T: T.nonzero(T.tensor(3)))
    P("nonzero 0d zero", lambda T: T.nonzero(T.tensor(0)))
    P("nonzero empty", lambda T: T.nonzero(T.zeros(0, 3)))
    P("nonzero as_tuple method", lambda T: T.tensor([0.0, 1.0, -2.0]).nonzero(as_tuple=True))
    P("nonzero bool", lambda T: T.tensor([True, False, True]).nonzero())
    P("nonzero nan", lambda T: T.tensor([float("nan"), 0.0]).nonzero())
    P("argwhere", lambda T: T.argwhere(T.tensor([[0, 1], [1, 0]])))
    P("count_nonzero dim", lambda T: T.count_nonzero(T.tensor([[0, 1], [1, 1]]), dim=-1))

    # grads of masked ops
    def gm(T):
        x = T.arange(6.0, requires_grad=True)
        y = x.masked_fill(x > 2, 0.0)
        (y * y).sum().backward()
        return x.grad

    P("grad masked_fill", gm)

    def gms(T):
        x = T.arange(6.0, requires_grad=True)
        s = T.ones(6, requires_grad=True)
        y = x.masked_scatter(T.tensor([True, False, True, False, False, True]), s * 3)
        (y * T.arange(6.0)).sum().backward()
        return x.grad, s.grad

    P("grad masked_scatter", gms)

    def gsel(T):
        x = T.arange(6.0, requires_grad=True).reshape(2, 3)
        x.retain_grad()
        y = T.masked_select(x, T.tensor([True, False, True]))
        (y * T.arange(4.0)).sum().backward()
        return x.grad

    P("grad masked_select bcast", gsel)


def _group_p4():
    def x(T):
        return T.arange(12.0).reshape(3, 4)

    P("take", lambda T: T.take(x(T), T.tensor([[0, -1], [5, 11]])))
    P("take oob", lambda T: T.take(x(T), T.tensor([12])), errtext=False)
    P("take oob msg", lambda T: T.take(x(T), T.tensor([12])))
    P("take_along_dim", lambda T: T.take_along_dim(x(T), T.tensor([[0], [2], [1]]), dim=1))
    P("take_along_dim neg dim", lambda T: T.take_along_dim(x(T), T.tensor([[0, 1, 2, 0]]), dim=-2))
    P("take_along_dim no dim", lambda T: T.take_along_dim(x(T), T.tensor([3, 0])))
    P("take_along_dim bcast", lambda T: T.take_along_dim(x(T), T.tensor([[1]]), dim=1))
    P("take_along_dim argsort", lambda T: T.take_along_dim(x(T), T.argsort(-x(T), dim=1), dim=1))
    P("gather", lambda T: T.gather(x(T), 1, T.tensor([[0, 0], [1, 0], [3, 3]])))
    P("gather neg dim", lambda T: T.gather(x(T), -2, T.tensor([[0, 1, 2, 0]])))
    P("gather smaller idx", lambda T: x(T).gather(0, T.tensor([[2]])))
    P("gather oob", lambda T: x(T).gather(1, T.tensor([[4]])), errtext=False)
    P("gather oob msg", lambda T: x(T).gather(1, T.tensor([[4]])))
    P("gather neg idx", lambda T: x(T).gather(1, T.tensor([[-1]])), errtext=False)
    P("gather int32 idx", lambda T: x(T).gather(1, T.tensor([[1]], dtype=T.int32)), errtext=False)
    P("gather int32 idx msg", lambda T: x(T).gather(1, T.tensor([[1]], dtype=T.int32)))
    P("gather dim mismatch msg", lambda T: x(T).gather(1, T.tensor([1])))
    P(
        "scatter src",
        lambda T: T.zeros(3, 4).scatter(
            1, T.tensor([[0, 1], [2, 3], [1, 1]]), T.arange(1.0, 7.0).reshape(3, 2)
        ),
    )
    P("scatter value", lambda T: T.zeros(3, 4).scatter(-1, T.tensor([[0], [2], [3]]), 5.0))
    P(
        "scatter reduce add",
        lambda T: T.ones(3, 4).scatter(
            1, T.tensor([[0, 0], [2, 3], [1, 1]]), T.arange(1.0, 7.0).reshape(3, 2), reduce="add"
        ),
    )
    P(
        "scatter reduce multiply",
        lambda T: T.ones(3, 4).scatter(
            1,
            T.tensor([[0, 0], [2, 3], [1, 1]]),
            T.arange(1.0, 7.0).reshape(3, 2),
            reduce="multiply",
        ),
    )
    P(
        "scatter_ value reduce",
        lambda T: T.ones(3, 4).scatter_(
            1, T.tensor([[0, 0], [2, 3], [1, 1]]), 2.0, reduce="multiply"
        ),
    )
    P(
        "scatter_add",
        lambda T: T.zeros(5).scatter_add(
            0, T.tensor([0, 1, 0, 4, 4]), T.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        ),
    )
    P(
        "scatter_add neg dim",
        lambda T: T.zeros(2, 3).scatter_add(-1, T.tensor([[0, 0], [2, 2]]), T.ones(2, 2)),
    )
    P(
        "scatter_add_ int",
        lambda T: T.zeros(5, dtype=T.int64).scatter_add_(
            0, T.tensor([0, 0, 1]), T.tensor([1, 2, 3])
        ),
    )
    P(
        "scatter_add dtype mismatch",
        lambda T: T.zeros(5).scatter_add(0, T.tensor([0]), T.tensor([1], dtype=T.float64)),
        errtext=False,
    )
    P(
        "scatter_add dtype mismatch msg",
        lambda T: T.zeros(5).scatter_add(0, T.tensor([0]), T.tensor([1], dtype=T.float64)),
    )
    for red in ["sum", "prod", "mean", "amax", "amin"]:
        for inc in [True, False]:
            P(
                f"scatter_reduce {red} {inc}",
                lambda T, red=red, inc=inc: T.full((2, 4), 2.0).scatter_reduce(
                    1,
                    T.tensor([[0, 0, 1, 1], [3, 3, 3, 0]]),
                    T.tensor([[1.0, 5.0, 3.0, -4.0], [6.0, 7.0, 8.0, 9.0]]),
                    reduce=red,
                    include_self=inc,
                ),
            )
            P(
                f"scatter_reduce int {red} {inc}",
                lambda T, red=red, inc=inc: T.full((5,), 3).scatter_reduce(
                    -1,
                    T.tensor([0, 0, 1, 1, 4]),
                    T.tensor([1, 6, 4, 5, 8]),
                    reduce=red,
                    include_self=inc,
                ),
            )
    P(
        "scatter_reduce bad reduce",
        lambda T: T.zeros(3).scatter_reduce(0, T.tensor([0]), T.ones(1), reduce="max"),
        errtext=False,
    )
    P(
        "scatter_reduce bad reduce msg",
        lambda T: T.zeros(3).scatter_reduce(0, T.tensor([0]), T.ones(1), reduce="max"),
    )
    P("index_select", lambda T: x(T).index_select(-1, T.tensor([3, 0, 3])))
    P("index_select 0d idx", lambda T: x(T).index_select(0, T.tensor(1)))
    P("index_select neg", lambda T: x(T).index_select(0, T.tensor([-1])), errtext=False)
    P("index_select 2d idx", lambda T: x(T).index_select(0, T.tensor([[1]])), errtext=False)
    P("index_select int32", lambda T: x(T).index_select(0, T.tensor([1], dtype=T.int32)))
    P("index_add_", lambda T: T.zeros(3, 4).index_add_(0, T.tensor([0, 2, 0]), T.ones(3, 4)))
    P(
        "index_add alpha",
        lambda T: T.zeros(3, 4).index_add(-1, T.tensor([1, 1]), T.ones(3, 2), alpha=2.5),
    )
    P(
        "index_add int alpha",
        lambda T: T.zeros(4, dtype=T.int64).index_add(
            0, T.tensor([1, 1]), T.tensor([2, 3]), alpha=2
        ),
    )
    P(
        "index_copy_",
        lambda T: T.zeros(3, 4).index_copy_(1, T.tensor([3, 0]), T.arange(6.0).reshape(3, 2)),
    )
    P(
        "index_copy out of place",
        lambda T: T.index_copy(T.zeros(4), 0, T.tensor([2]), T.tensor([5.0])),
    )
    P("index_fill_", lambda T: T.zeros(3, 4).index_fill_(-1, T.tensor([0, 3]), -2.0))
    P("index_fill 0d tensor", lambda T: T.zeros(3, 4).index_fill(0, T.tensor([1]), T.tensor(4.0)))
    P(
        "index_fill int with float",
        lambda T: T.zeros(3, dtype=T.int64).index_fill(0, T.tensor([1]), 2.9),
    )
    P(
        "index_reduce prod",
        lambda T: T.ones(3).index_reduce(0, T.tensor([0, 0, 2]), T.tensor([2.0, 3.0, 4.0]), "prod"),
    )
    P(
        "index_reduce mean no self",
        lambda T: T.ones(3).index_reduce(
            0, T.tensor([0, 0, 2]), T.tensor([2.0, 3.0, 4.0]), "mean", include_self=False
        ),
    )

    # grads
    def gg(T):
        a = T.arange(12.0, requires_grad=True)
        b = a.reshape(3, 4)
        y = T.gather(b, -1, T.tensor([[0, 0], [1, 3], [2, 2]]))
        (y * T.arange(6.0).reshape(3, 2)).sum().backward()
        return a.grad

    P("grad gather", gg)

    def gt(T):
        a = T.arange(12.0, requires_grad=True)
        y = T.take(a.reshape(3, 4), T.tensor([0, 0, 5]))
        (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        return a.grad

    P("grad take", gt)

    def gtad(T):
        a = T.arange(12.0, requires_grad=True)
        y = T.take_along_dim(a.reshape(3, 4), T.tensor([[0], [3], [3]]), dim=1)
        (y * 3).sum().backward()
        return a.grad

    P("grad take_along_dim", gtad)

    def gsc(T):
        a = T.arange(8.0, requires_grad=True)
        s = T.ones(2, 2, requires_grad=True)
        y = a.reshape(2, 4).scatter(1, T.tensor([[0, 1], [2, 3]]), s * 2)
        (y * T.arange(8.0).reshape(2, 4)).sum().backward()
        return a.grad, s.grad

    P("grad scatter", gsc)

    def gsa(T):
        a = T.arange(8.0, requires_grad=True)
        s = T.ones(2, 2, requires_grad=True)
        y = a.reshape(2, 4).scatter_add(-1, T.tensor([[0, 0], [2, 3]]), s * 2)
        (y * T.arange(8.0).reshape(2, 4)).sum().backward()
        return a.grad, s.grad

    P("grad scatter_add", gsa)
    for red in ["sum", "prod", "mean", "amax", "amin"]:
        for inc in [True, False]:

            def gsr(T, red=red, inc=inc):
                a = T.tensor([2.0, 1.0, 3.0, 5.0], requires_grad=True)
                s = T.tensor([1.0, 5.0, 3.0, -4.0, 3.0], requires_grad=True)
                y = a.scatter_reduce(0, T.tensor([0, 0, 1, 1, 2]), s, reduce=red, include_self=inc)
                (y * T.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
                return y, a.grad, s.grad

            P(f"grad scatter_reduce {red} {inc}", gsr)

    def gis(T):
        a = T.arange(12.0, requires_grad=True)
        y = a.reshape(3, 4).index_select(1, T.tensor([0, 0, 2]))
        (y * T.arange(9.0).reshape(3, 3)).sum().backward()
        return a.grad

    P("grad index_select", gis)

    def gia(T):
        a = T.zeros(3, 2, requires_grad=True)
        s = T.ones(3, 2, requires_grad=True)
        y = a.index_add(0, T.tensor([0, 0, 2]), s, alpha=3)
        (y * T.arange(6.0).reshape(3, 2)).sum().backward()
        return a.grad, s.grad

    P("grad index_add", gia)

    def gic(T):
        a = T.zeros(3, 2, requires_grad=True)
        s = T.ones(2, 2, requires_grad=True)
        y = a.index_copy(0, T.tensor([2, 0]), s)
        (y * T.arange(6.0).reshape(3, 2)).sum().backward()
        return a.grad, s.grad

    P("grad index_copy", gic)

    def gif(T):
        a = T.ones(3, 2, requires_grad=True)
        y = a.index_fill(1, T.tensor([0]), 5.0)
        (y * T.arange(6.0).reshape(3, 2)).sum().backward()
        return a.grad

    P("grad index_fill", gif)


def _group_p6():
    I = lambda T, d="int64": T.tensor([7, -7, 0, 5]).to(getattr(T, d))
    Z = lambda T, d="int64": T.tensor([0, 0, 0, 2]).to(getattr(T, d))
    for d in ["int64", "int32", "int8", "uint8", "int16"]:
        P(
            f"intdiv0 floor_divide {d}",
            lambda T, d=d: T.floor_divide(I(T, d), Z(T, d)),
            errtext=False,
        )
        P(f"intdiv0 floor_divide msg {d}", lambda T, d=d: T.floor_divide(I(T, d), Z(T, d)))
        P(f"intdiv0 // scalar 0 {d}", lambda T, d=d: I(T, d) // 0)
        P(f"intdiv0 remainder {d}", lambda T, d=d: T.remainder(I(T, d), Z(T, d)))
        P(f"intdiv0 % scalar 0 {d}", lambda T, d=d: I(T, d) % 0)
        P(f"intdiv0 fmod {d}", lambda T, d=d: T.fmod(I(T, d), Z(T, d)))
        P(f"intdiv0 div {d}", lambda T, d=d: T.div(I(T, d), Z(T, d)))
        P(f"intdiv0 div trunc {d}", lambda T, d=d: T.div(I(T, d), Z(T, d), rounding_mode="trunc"))
        P(f"intdiv0 div floor {d}", lambda T, d=d: T.div(I(T, d), Z(T, d), rounding_mode="floor"))
        P(f"intdiv0 / 0 {d}", lambda T, d=d: I(T, d) / 0)
    P("intdiv floor neg", lambda T: T.tensor([-7, 7, -7]) // T.tensor([2, -2, -2]))
    P("intdiv remainder neg", lambda T: T.tensor([-7, 7, -7]) % T.tensor([2, -2, -2]))
    P("fmod neg", lambda T: T.fmod(T.tensor([-7, 7, -7]), T.tensor([2, -2, -2])))
    P(
        "float floor_divide neg",
        lambda T: T.tensor([-7.0, 7.0, -7.0, 1.0]) // T.tensor([2.0, -2.0, 0.0, 0.0]),
    )
    P(
        "float remainder",
        lambda T: (
            T.tensor([-7.0, 7.0, -7.0, 1.0, 5.0]) % T.tensor([2.0, -2.0, 0.0, 0.0, float("inf")])
        ),
    )
    P("int64 min // -1", lambda T: T.tensor([-(2**63)]) // -1, errtext=False)
    P("int overflow add", lambda T: T.tensor([2**62]) * 4)
    P("int8 overflow", lambda T: T.tensor([100], dtype=T.int8) + 100)
    P("uint8 sub underflow", lambda T: T.tensor([1], dtype=T.uint8) - 2)
    P("uint8 neg scalar", lambda T: T.tensor([1], dtype=T.uint8) * -1)
    P("int pow neg exponent", lambda T: T.tensor([2, 1, -1]) ** -1, errtext=False)
    P("int pow neg exponent msg", lambda T: T.tensor([2, 1, -1]) ** -1)
    P("int pow neg tensor exponent", lambda T: T.tensor([2, 1, -1]) ** T.tensor([-1, -2, -3]))
    P("int pow float", lambda T: T.tensor([2, 3]) ** 0.5)
    P("scalar ** int tensor", lambda T: 2 ** T.tensor([1, 3]))
    P("float scalar ** int tensor", lambda T: 2.0 ** T.tensor([1, 3]))
    P("int pow big", lambda T: T.tensor([3]) ** 50)
    P("bool + bool", lambda T: T.tensor([True]) + T.tensor([True]))
    P("bool - bool", lambda T: T.tensor([True]) - T.tensor([True]), errtext=False)
    P("bool - bool msg", lambda T: T.tensor([True]) - T.tensor([True]))
    P("neg bool", lambda T: -T.tensor([True]), errtext=False)
    P("neg bool msg", lambda T: -T.tensor([True]))
    P("bool * bool", lambda T: T.tensor([True, False]) * T.tensor([True, True]))
    P("bool / bool", lambda T: T.tensor([True, False]) / T.tensor([True, True]))
    P("bool // int", lambda T: T.tensor([True, False]) // 1)
    P("bool ** 2", lambda T: T.tensor([True, False]) ** 2)
    P("~int", lambda T: ~T.tensor([5, -1]))
    P("~bool", lambda T: ~T.tensor([True, False]))
    P("~float", lambda T: ~T.tensor([1.0]), errtext=False)
    P("bitwise and int bool", lambda T: T.tensor([5]) & T.tensor([True]))
    P("bitwise float err", lambda T: T.tensor([5.0]) & 1, errtext=False)
    P("shift", lambda T: T.tensor([1, 8]) << 2)
    P("shift right neg", lambda T: T.tensor([-8]) >> 1)
    P("float16 overflow", lambda T: T.tensor([60000.0], dtype=T.float16) * 2)
    P("bf16 + 0d f32", lambda T: T.tensor([1.5], dtype=T.bfloat16) + T.tensor(1.3))
    P("f16 + bf16", lambda T: T.tensor([1.5], dtype=T.float16) + T.tensor([1.3], dtype=T.bfloat16))
    P(
        "f16 0d + bf16 0d",
        lambda T: T.tensor(1.5, dtype=T.float16) + T.tensor(1.3, dtype=T.bfloat16),
    )
    P("int 0d + float 0d", lambda T: T.tensor(1) + T.tensor(1.5))
    P("int tensor + float64 0d", lambda T: T.tensor([1]) + T.tensor(1.5, dtype=T.float64))
    P("f32 tensor + f64 0d", lambda T: T.tensor([1.0]) + T.tensor(1.5, dtype=T.float64))
    P("f32 tensor + c128 0d", lambda T: T.tensor([1.0]) + T.tensor(1.5j, dtype=T.complex128))
    P(
        "f64 tensor + c64 0d",
        lambda T: T.tensor([1.0], dtype=T.float64) + T.tensor(1.5j, dtype=T.complex64),
    )
    P("f64 tensor + complex scalar", lambda T: T.tensor([1.0], dtype=T.float64) + 1j)
    P("int8 + int 0d big", lambda T: T.tensor([1], dtype=T.int8) + T.tensor(1000))
    P("uint8 + int8", lambda T: T.tensor([1], dtype=T.uint8) + T.tensor([1], dtype=T.int8))
    P("uint8 + int8 0d", lambda T: T.tensor([1], dtype=T.uint8) + T.tensor(-1, dtype=T.int8))
    P("result_type", lambda T: T.result_type(T.tensor([1], dtype=T.int32), 1.0))
    P(
        "result_type 2",
        lambda T: T.result_type(T.tensor(1, dtype=T.int32), T.tensor([1], dtype=T.uint8)),
    )
    P("result_type scalars", lambda T: T.result_type(1, 1.0))
    P("promote_types", lambda T: T.promote_types(T.uint8, T.int8))
    P("promote_types f16 bf16", lambda T: T.promote_types(T.float16, T.bfloat16))
    P(
        "can_cast",
        lambda T: (
            T.can_cast(T.float32, T.int32),
            T.can_cast(T.int32, T.float32),
            T.can_cast(T.float64, T.float16),
        ),
    )
    P("iadd int += float", lambda T: (lambda x: x.__iadd__(1.5))(T.tensor([1])), errtext=False)
    P("iadd int += float msg", lambda T: (lambda x: x.add_(1.5))(T.tensor([1])))
    P("iadd float += complex msg", lambda T: (lambda x: x.add_(1j))(T.tensor([1.0])))
    P(
        "imul float16 *= f64 tensor",
        lambda T: (lambda x: x.mul_(T.tensor([1.5], dtype=T.float64)))(
            T.tensor([1.0], dtype=T.float16)
        ),
    )
    P("idiv int /= 2", lambda T: (lambda x: x.div_(2))(T.tensor([3])), errtext=False)
    P("idiv int /= 2 msg", lambda T: (lambda x: x.div_(2))(T.tensor([3])))
    P("ifloordiv int", lambda T: (lambda x: x.floor_divide_(2))(T.tensor([3])))
    P(
        "add alpha int float",
        lambda T: T.add(T.tensor([1]), T.tensor([1]), alpha=1.5),
        errtext=False,
    )
    P("add alpha int float msg", lambda T: T.add(T.tensor([1]), T.tensor([1]), alpha=1.5))
    P("add alpha bool", lambda T: T.add(T.tensor([True]), T.tensor([True]), alpha=2), errtext=False)
    P("sub alpha", lambda T: T.sub(T.tensor([1.0]), T.tensor([1.0]), alpha=3))
    P("true_divide int", lambda T: T.true_divide(T.tensor([3]), 2))
    P(
        "comparisons mixed",
        lambda T: (
            T.tensor([1, 2]) < 1.5,
            T.tensor([1.0]) == T.tensor([1]),
            T.tensor([True]) == 1,
            T.tensor([1 + 1j]) == 1 + 1j,
        ),
    )
    P("complex lt err", lambda T: T.tensor([1 + 1j]) < 1, errtext=False)
    P("complex lt err msg", lambda T: T.tensor([1 + 1j]) < 1)
    P(
        "nan comparisons",
        lambda T: (
            T.tensor([float("nan")]) == T.tensor([float("nan")]),
            T.tensor([float("nan")]) != float("nan"),
            T.tensor([float("nan")]) < 1,
        ),
    )
    P("int vs big float", lambda T: T.tensor([2**53 + 1]) == float(2**53))
    P("int64 vs large int", lambda T: T.tensor([1], dtype=T.int8) == 257)
    P("uint8 > -1", lambda T: T.tensor([1], dtype=T.uint8) > -1)
    P("eq method returns", lambda T: T.tensor([1, 2]).eq(2))
    P(
        "equal",
        lambda T: (
            T.equal(T.tensor([1, 2]), T.tensor([1.0, 2.0])),
            T.equal(T.tensor([1]), T.tensor([1, 1])),
        ),
    )
    P("isclose int", lambda T: T.isclose(T.tensor([1, 2]), T.tensor([1, 3])))
    P("maximum int float", lambda T: T.maximum(T.tensor([1, 5]), T.tensor([2.5, 1.0])))
    P("clamp int float", lambda T: T.clamp(T.tensor([1, 5]), min=2.5))
    P("clamp int with int tensor", lambda T: T.clamp(T.tensor([1, 5]), max=T.tensor(3)))
    P("where scalars", lambda T: T.where(T.tensor([True, False]), 1, 0))
    P("where int float scalars", lambda T: T.where(T.tensor([True, False]), 1, 0.5))
    P("where bool scalars", lambda T: T.where(T.tensor([True, False]), True, False))
    P(
        "where tensor scalar",
        lambda T: T.where(T.tensor([True, False]), T.tensor([1, 2], dtype=T.int32), 2.5),
    )
    P(
        "where f16 tensor scalar",
        lambda T: T.where(T.tensor([True, False]), T.tensor([1, 2], dtype=T.float16), 2.5),
    )
    P("where complex scalar", lambda T: T.where(T.tensor([True, False]), T.tensor([1.0, 2.0]), 1j))
    P(
        "where tensors mixed",
        lambda T: T.where(
            T.tensor([True, False]), T.tensor([1, 2]), T.tensor([1.0, 2.0], dtype=T.float64)
        ),
    )
    P(
        "where 0d tensor",
        lambda T: T.where(T.tensor([True, False]), T.tensor([1, 2], dtype=T.int32), T.tensor(0.5)),
    )
    P("where bcast", lambda T: T.where(T.tensor([[True], [False]]), T.arange(3.0), -1.0))
    P(
        "where uint8 cond",
        lambda T: T.where(T.tensor([1, 0], dtype=T.uint8), 1.0, 0.0),
        errtext=False,
    )
    P("where 1 arg", lambda T: T.where(T.tensor([[0, 1], [1, 1]])))
    P("tensor.where", lambda T: T.tensor([1.0, 2.0]).where(T.tensor([True, False]), 0))

    def gw(T):
        a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
        y = T.where(a > 1.5, a * a, b)
        y.sum().backward()
        return a.grad, b.grad

    P("grad where", gw)

    def gw2(T):
        a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = T.where(a > 1.5, a, 0.0)
        (y * 3).sum().backward()
        return a.grad

    P("grad where scalar", gw2)

    def gpromo(T):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        y = (a.double() * T.tensor([2], dtype=T.int64)).half()
        y.float().sum().backward()
        return a.grad, y.dtype

    P("grad promo chain", gpromo)

    def gdiv(T):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        y = T.tensor([3, 4]) / a + a % 1.5
        y.sum().backward()
        return a.grad

    def gpow(T):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        y = 2**a + a**2 + a ** T.tensor([1, 2])
        y.sum().backward()
        return a.grad

    P("grad pow", gpow)


def _group_p7():
    P("tensor float", lambda T: T.tensor(1.5))
    P("tensor int", lambda T: T.tensor(3))
    P("tensor bool", lambda T: T.tensor(True))
    P("tensor complex", lambda T: T.tensor(1 + 2j))
    P("tensor mixed int float", lambda T: T.tensor([1, 2.5]))
    P("tensor mixed bool int", lambda T: T.tensor([True, 2]))
    P("tensor mixed bool float", lambda T: T.tensor([True, 2.5]))
    P("tensor mixed complex", lambda T: T.tensor([1, 2j]))
    P("tensor nested", lambda T: T.tensor([[1, 2], [3, 4]]))
    P("tensor ragged", lambda T: T.tensor([[1, 2], [3]]), errtext=False)
    P("tensor ragged msg", lambda T: T.tensor([[1, 2], [3]]))
    P("tensor empty list", lambda T: T.tensor([]))
    P("tensor empty nested", lambda T: T.tensor([[], []]))
    P("tensor big int", lambda T: T.tensor([2**63]), errtext=False)
    P("tensor big int msg", lambda T: T.tensor([2**63]))
    P("tensor neg big int", lambda T: T.tensor([-(2**63)]))
    P("tensor dtype int from float", lambda T: T.tensor([1.7, -1.7], dtype=T.int64))
    P("tensor dtype uint8 from neg", lambda T: T.tensor([-1], dtype=T.uint8), errtext=False)
    P("tensor dtype bool from float", lambda T: T.tensor([0.0, 0.1], dtype=T.bool))
    P("tensor from tensors list", lambda T: T.tensor([T.tensor(1.0), T.tensor(2.0)]))
    P("tensor from tensors list int", lambda T: T.tensor([T.tensor(1), T.tensor(2)]))
    P(
        "tensor from tensors 1d",
        lambda T: T.tensor([T.tensor([1.0]), T.tensor([2.0])]),
        errtext=False,
    )
    P("tensor from tuple", lambda T: T.tensor((1, 2)))
    P("tensor requires_grad", lambda T: T.tensor([1.0, 2.0], requires_grad=True))
    P("tensor requires_grad int", lambda T: T.tensor([1, 2], requires_grad=True), errtext=False)
    P("tensor requires_grad int msg", lambda T: T.tensor([1, 2], requires_grad=True))
    P("tensor from tensor", lambda T: T.tensor(T.tensor([1.0, 2.0])))
    P("tensor numpy scalar f32", lambda T: T.tensor(np.float32(1.5)))
    P("tensor numpy scalar f64", lambda T: T.tensor(np.float64(1.5)))
    P("tensor numpy scalar int32", lambda T: T.tensor(np.int32(3)))
    P("tensor list of numpy f32", lambda T: T.tensor([np.float32(1.5), np.float32(2)]))
    P("tensor list of numpy int16", lambda T: T.tensor([np.int16(1), np.int16(2)]))
    P(
        "tensor list of numpy arrays",
        lambda T: T.tensor(
            [np.array([1.0, 2.0], dtype=np.float32), np.array([3.0, 4.0], dtype=np.float32)]
        ),
    )
    for nd in [
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "complex64",
        "complex128",
        "uint16",
        "uint32",
    ]:
        P(f"tensor np {nd}", lambda T, nd=nd: T.tensor(np.array([1, 0, 2]).astype(nd)))
        P(f"as_tensor np {nd}", lambda T, nd=nd: T.as_tensor(np.array([1, 0, 2]).astype(nd)))
        P(f"from_numpy {nd}", lambda T, nd=nd: T.from_numpy(np.array([1, 0, 2]).astype(nd)))
    P(
        "from_numpy shares",
        lambda T: (lambda a: (T.from_numpy(a).add_(1), a.tolist())[1])(np.zeros(3)),
    )
    P(
        "as_tensor shares",
        lambda T: (lambda a: (T.as_tensor(a).add_(1), a.tolist())[1])(np.zeros(3)),
    )
    P(
        "as_tensor dtype copy",
        lambda T: (lambda a: (T.as_tensor(a, dtype=T.float32).add_(1), a.tolist())[1])(np.zeros(3)),
    )
    P(
        "tensor copies numpy",
        lambda T: (lambda a: (T.tensor(a).add_(1), a.tolist())[1])(np.zeros(3)),
    )
    P("as_tensor tensor same", lambda T: (lambda t: T.as_tensor(t) is t)(T.zeros(2)))
    P("as_tensor list", lambda T: T.as_tensor([1, 2.0]))
    P("as_tensor dtype", lambda T: T.as_tensor([1, 2], dtype=T.float16))
    P("from_numpy np 0d", lambda T: T.from_numpy(np.array(3.5)))
    P("from_numpy non-contig", lambda T: T.from_numpy(np.arange(6.0).reshape(2, 3).T))
    P("from_numpy neg stride", lambda T: T.from_numpy(np.arange(6.0)[::-1]), errtext=False)
    P("from_numpy object", lambda T: T.from_numpy(np.array(["a"])), errtext=False)
    P("arange int", lambda T: T.arange(5))
    P("arange float", lambda T: T.arange(0, 1, 0.25))
    P("arange int float step", lambda T: T.arange(0, 5, 2.0))
    P("arange float end", lambda T: T.arange(5.0))
    P("arange neg step", lambda T: T.arange(5, 0, -2))
    P("arange tensor args", lambda T: T.arange(T.tensor(5)))
    P("arange dtype", lambda T: T.arange(5, dtype=T.float16))
    P("arange bad step", lambda T: T.arange(0, 5, -1), errtext=False)
    P("arange bad step msg", lambda T: T.arange(0, 5, -1))
    P("arange step 0", lambda T: T.arange(0, 5, 0), errtext=False)
    P("arange requires_grad", lambda T: T.arange(3.0, requires_grad=True))
    P("arange fp precision", lambda T: T.arange(1, 2.2, 0.3))
    P("arange np int", lambda T: T.arange(np.int64(4)))
    P("range deprecated", lambda T: T.range(0, 3) if hasattr(T, "range") else None)
    P("linspace", lambda T: T.linspace(0, 1, 5))
    P("linspace int args", lambda T: T.linspace(0, 10, 5))
    P("linspace dtype int", lambda T: T.linspace(0, 10, 4, dtype=T.int64))
    P("linspace steps 1", lambda T: T.linspace(3, 10, 1))
    P("linspace steps 0", lambda T: T.linspace(3, 10, 0))
    P("linspace neg steps", lambda T: T.linspace(3, 10, -1), errtext=False)
    P("linspace tensor args", lambda T: T.linspace(T.tensor(0.0), T.tensor(1.0), 3))
    P("logspace", lambda T: T.logspace(0, 2, 3))
    P("logspace base", lambda T: T.logspace(0, 2, 3, base=2))
    P("full int", lambda T: T.full((2,), 3))
    P("full float", lambda T: T.full((2,), 3.0))
    P("full bool", lambda T: T.full((2,), True))
    P("full complex", lambda T: T.full((2,), 1j))
    P("full dtype", lambda T: T.full((2,), 3.7, dtype=T.int32))
    P("full list size", lambda T: T.full([2, 1], 1))
    P("full int size", lambda T: T.full(2, 1), errtext=False)
    P("full_like", lambda T: T.full_like(T.zeros(2, dtype=T.int32), 2.7))
    P("full_like dtype", lambda T: T.full_like(T.zeros(2, dtype=T.int32), 2.7, dtype=T.float64))
    P("zeros_like", lambda T: T.zeros_like(T.zeros(2, 3, dtype=T.float16)))
    P(
        "empty_like dtype shape",
        lambda T: (lambda e: (e.shape, e.dtype, e.requires_grad))(
            T.empty_like(T.zeros(2, 3, dtype=T.bfloat16))
        ),
    )
    P(
        "empty_like rg",
        lambda T: (lambda e: (e.shape, e.dtype, e.requires_grad))(
            T.empty_like(T.zeros(2, 3), requires_grad=True)
        ),
    )
    P(
        "empty_like from rg",
        lambda T: (lambda e: (e.shape, e.dtype, e.requires_grad))(
            T.empty_like(T.zeros(2, 3, requires_grad=True))
        ),
    )
    P("ones_like dtype", lambda T: T.ones_like(T.zeros(2), dtype=T.bool))
    P("rand_like int", lambda T: T.rand_like(T.zeros(2, dtype=T.int64)), errtext=False)
    P("randint dtype", lambda T: T.randint(0, 5, (3,)).dtype)
    P("randn dtype", lambda T: T.randn(3, dtype=T.float64).dtype)
    P("zeros dtype default", lambda T: T.zeros(2).dtype)
    P("zeros tuple size", lambda T: T.zeros((2, 3)).shape)
    P("zeros Size", lambda T: T.zeros(T.Size([2, 3])).shape)
    P("zeros neg", lambda T: T.zeros(-1), errtext=False)
    P("zeros neg msg", lambda T: T.zeros(-1))
    P("eye", lambda T: T.eye(2, 3, dtype=T.int32))
    P("empty shape", lambda T: T.empty(0, 3).shape)
    P("scalar_tensor", lambda T: T.scalar_tensor(3))
    P(
        "set_default_dtype",
        lambda T: (
            T.set_default_dtype(T.float64),
            T.tensor([1.5]),
            T.tensor(1 + 1j),
            T.arange(2.0),
            T.full((1,), 1.0),
            T.zeros(1),
            T.tensor([1]).float(),
            T.tensor([1]) / 2,
            T.set_default_dtype(T.float32),
        )[1:-1],
    )
    P("get_default_dtype", lambda T: T.get_default_dtype())


def _group_p8():
    F = lambda T: T.tensor([1.7, -1.7, 300.5, -300.5, 0.0])
    P("arange 1.5 int32", lambda T: T.arange(1.5, dtype=T.int32))
    P("arange tensor int end float step", lambda T: T.arange(0, T.tensor(2), 0.5))
    for d in [
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
        "float16",
        "bfloat16",
        "float64",
        "complex64",
    ]:
        P(f"to {d}", lambda T, d=d: F(T).to(getattr(T, d)))
        P(f"type {d}", lambda T, d=d: F(T).type(getattr(T, d)))
    P("int()", lambda T: F(T).int())
    P("long()", lambda T: F(T).long())
    P("short()", lambda T: F(T).short())
    P("char()", lambda T: F(T).char())
    P("byte()", lambda T: F(T).byte())
    P("bool()", lambda T: F(T).bool())
    P("half()", lambda T: F(T).half())
    P("bfloat16()", lambda T: F(T).bfloat16())
    P("double()", lambda T: F(T).double())
    P("cfloat()", lambda T: F(T).cfloat())
    P("type str", lambda T: F(T).type("torch.IntTensor"))
    P("type str double", lambda T: F(T).type("torch.DoubleTensor"))
    P("to other tensor", lambda T: F(T).to(T.tensor([1], dtype=T.int8)))
    P("to same returns self", lambda T: (lambda x: x.to(T.float32) is x)(F(T)))
    P("to copy", lambda T: (lambda x: x.to(T.float32, copy=True) is x)(F(T)))
    P("to device dtype", lambda T: F(T).to("cpu", T.int32))
    P("to kw", lambda T: F(T).to(dtype=T.float64))
    P("nan to int", lambda T: T.tensor([float("nan")]).int().dtype)
    P("inf to bool", lambda T: T.tensor([float("inf"), float("nan"), 0.0]).bool())
    P("nan to bool", lambda T: T.tensor([float("nan")]).to(T.bool))
    P("neg to uint8 from int", lambda T: T.tensor([-1, 256, 257]).to(T.uint8))
    P("int64 to int8 wrap", lambda T: T.tensor([200, -200, 2**40 + 5]).to(T.int8))
    P("int64 to int32 wrap", lambda T: T.tensor([2**40 + 5, 2**31]).int())
    P("int to f16 overflow", lambda T: T.tensor([70000]).half())
    P("f64 to f32 overflow", lambda T: T.tensor([1e300], dtype=T.float64).float())
    P("complex to float", lambda T: T.tensor([1 + 2j]).float())
    P("complex to int", lambda T: T.tensor([1.7 + 2j]).long())
    P("complex to bool", lambda T: T.tensor([0 + 2j, 0j]).bool())
    P("bool to float", lambda T: T.tensor([True, False]).float())
    P("bf16 round", lambda T: T.tensor([1.00390625, 1.01171875, 3.14159]).bfloat16())
    P("f16 round", lambda T: T.tensor([1.00048828125, 65519.0, 65520.0]).half())
    P("item float", lambda T: T.tensor(1.5).item())
    P("item f16", lambda T: T.tensor(1.5, dtype=T.float16).item())
    P("item bf16", lambda T: T.tensor(1.1, dtype=T.bfloat16).item())
    P("item f32 precision", lambda T: T.tensor(0.1).item())
    P("item int", lambda T: T.tensor(3, dtype=T.int8).item())
    P("item uint8", lambda T: T.tensor(255, dtype=T.uint8).item())
    P("item bool", lambda T: T.tensor(True).item())
    P("item complex", lambda T: T.tensor(1 + 2j).item())
    P("item 1-elem", lambda T: T.tensor([[4]]).item())
    P("item multi", lambda T: T.tensor([1, 2]).item(), errtext=False)
    P("item multi msg", lambda T: T.tensor([1, 2]).item())
    P("item rg", lambda T: T.tensor(2.0, requires_grad=True).item())
    P("tolist", lambda T: T.tensor([[1, 2]]).tolist())
    P("tolist float32", lambda T: T.tensor([0.1]).tolist())
    P("tolist f16", lambda T: T.tensor([0.1], dtype=T.float16).tolist())
    P("tolist bf16", lambda T: T.tensor([0.1], dtype=T.bfloat16).tolist())
    P("tolist bool", lambda T: T.tensor([True]).tolist())
    P("tolist complex", lambda T: T.tensor([1j]).tolist())
    P("tolist 0d", lambda T: T.tensor(5).tolist())
    P("tolist empty", lambda T: T.zeros(0, 2).tolist())
    P("tolist uint8", lambda T: T.tensor([200], dtype=T.uint8).tolist())
    P("tolist rg", lambda T: T.tensor([1.0], requires_grad=True).tolist())
    P("float()", lambda T: float(T.tensor([2.5])))
    P("int() py", lambda T: int(T.tensor(-2.7)))
    P("bool() py", lambda T: bool(T.tensor([0.0])))
    P("bool() multi", lambda T: bool(T.tensor([0.0, 1.0])), errtext=False)
    P("bool() multi msg", lambda T: bool(T.tensor([0.0, 1.0])))
    P("complex()", lambda T: complex(T.tensor(1 + 1j)))
    P("index()", lambda T: [10, 20, 30][T.tensor(1)])
    P("index() float", lambda T: [10, 20, 30][T.tensor(1.0)], errtext=False)
    P("int() of nan", lambda T: int(T.tensor(float("nan"))), errtext=False)
    P("float() of int", lambda T: float(T.tensor(3)))
    P("format", lambda T: f"{T.tensor(2.5):.2f}")
    P("round py", lambda T: round(T.tensor(2.567).item(), 2))

    # grads through conversions
    def gc(T):
        a = T.tensor([1.5, 2.5], requires_grad=True)
        y = a.double() * 2 + a.half().float() + a.to(T.float64)
        y.sum().backward()
        return a.grad, y.dtype

    P("grad conversions", gc)

    def gci(T):
        a = T.tensor([1.5, 2.5], requires_grad=True)
        return a.long().requires_grad, a.bool().requires_grad, a.long().grad_fn is None

    P("int conv no grad", gci)

    def gcc(T):
        a = T.tensor([1.5, 2.5], requires_grad=True)
        y = a.to(T.complex64)
        (y * (1 + 1j)).real.sum().backward()
        return a.grad

    P("grad complex conv", gcc)

    def gtype(T):
        a = T.tensor([1.5, 2.5], requires_grad=True)
        y = a.type(T.float64)
        (y * y).sum().backward()
        return a.grad

    P("grad type()", gtype)


def _group_p9():
    X = lambda T: T.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    CL = lambda T: X(T).contiguous(memory_format=T.channels_last)
    P("cl strides", lambda T: CL(T).stride())
    P(
        "cl is_contiguous",
        lambda T: (CL(T).is_contiguous(), CL(T).is_contiguous(memory_format=T.channels_last)),
    )
    P("cl values", lambda T: CL(T))
    P("clone preserve cl", lambda T: CL(T).clone().stride())
    P("clone contiguous_format", lambda T: CL(T).clone(memory_format=T.contiguous_format).stride())
    P("clone cl from contig", lambda T: X(T).clone(memory_format=T.channels_last).stride())
    P("contiguous of cl", lambda T: CL(T).contiguous().stride())
    P("to memory_format", lambda T: X(T).to(memory_format=T.channels_last).stride())
    P("empty_like preserve", lambda T: T.empty_like(CL(T)).stride())
    P("zeros_like preserve", lambda T: T.zeros_like(CL(T)).stride())
    P("cl elementwise preserves", lambda T: (CL(T) + 1).stride())
    P("cl + contig", lambda T: (CL(T) + X(T)).stride())
    P(
        "cl 3d err",
        lambda T: T.zeros(2, 3, 4).contiguous(memory_format=T.channels_last),
        errtext=False,
    )
    P("cl 3d err msg", lambda T: T.zeros(2, 3, 4).contiguous(memory_format=T.channels_last))
    P(
        "cl3d",
        lambda T: T.zeros(2, 3, 4, 5, 6).contiguous(memory_format=T.channels_last_3d).stride(),
    )
    P("transpose stride", lambda T: X(T).transpose(1, 3).stride())
    P(
        "transpose contiguous",
        lambda T: (
            X(T).transpose(1, 3).is_contiguous(),
            X(T).transpose(1, 3).contiguous().stride(),
        ),
    )
    P("clone of transpose preserve", lambda T: X(T).transpose(1, 3).clone().stride())
    P("clone of slice", lambda T: X(T)[:, ::2].clone().stride())
    P("clone of expand", lambda T: T.zeros(3, 1).expand(3, 4).clone().stride())
    P("expand stride", lambda T: T.zeros(3, 1).expand(3, 4).stride())
    P("contiguous is self", lambda T: (lambda x: x.contiguous() is x)(X(T)))
    P(
        "clone requires grad",
        lambda T: (lambda x: (x.clone().requires_grad, x.clone().grad_fn is not None))(
            T.ones(2, requires_grad=True)
        ),
    )
    P("clone detach", lambda T: T.ones(2, requires_grad=True).clone().detach().requires_grad)
    P(
        "size-1 dims contiguous",
        lambda T: T.zeros(1, 3, 1, 1).contiguous(memory_format=T.channels_last).is_contiguous(),
    )
    P(
        "1x1 cl strides",
        lambda T: T.zeros(2, 3, 1, 1).contiguous(memory_format=T.channels_last).stride(),
    )
    P(
        "permute cl is_contiguous cl",
        lambda T: (
            X(T)
            .permute(0, 2, 3, 1)
            .contiguous()
            .permute(0, 3, 1, 2)
            .is_contiguous(memory_format=T.channels_last)
        ),
    )
    P("clone storage independent", lambda T: (lambda x: (x.clone().add_(1), x)[1])(X(T)))

    def gcl(T):
        a = X(T).requires_grad_()
        y = a.contiguous(memory_format=T.channels_last).clone()
        (y * T.arange(120.0).reshape(2, 3, 4, 5)).sum().backward()
        return a.grad

    P("grad cl clone", gcl)
    # Misc: index on views + inplace
    P(
        "setitem on view updates base",
        lambda T: (lambda x: (x.t()[0].fill_(9), x)[1])(T.zeros(2, 3)),
    )
    P(
        "adv setitem on view",
        lambda T: (lambda x: (x[:, 1:].__setitem__([0], 5.0), x)[1])(T.zeros(2, 3)),
    )
    P(
        "setitem ellipsis none",
        lambda T: (lambda x: (x.__setitem__((..., None, 1), 5.0), x)[1])(T.zeros(2, 3)),
    )
    P(
        "setitem chained",
        lambda T: (lambda x: (x[0].__setitem__(T.tensor([True, False, True]), 7.0), x)[1])(
            T.zeros(2, 3)
        ),
    )
    P(
        "getitem bool mask 2d + setitem",
        lambda T: (lambda x: (x.__setitem__(x < 3, x[x < 3] * 10), x)[1])(
            T.arange(6.0).reshape(2, 3)
        ),
    )
    P(
        "setitem self-overlap",
        lambda T: (lambda x: (x.__setitem__(slice(1, None), x[:-1].clone()), x)[1])(T.arange(5.0)),
    )


def _group_p10():
    def a(T):
        return T.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)

    S = slice(None)
    cases = {
        "list,S,int": lambda T: ([0, 1], S, 0),
        "list,S,int,S": lambda T: ([0, 1], S, 0, S),
        "int,list": lambda T: (0, [0, 1]),
        "list,int": lambda T: ([0, 1], 0),
        "S,list,int": lambda T: (S, [0, 1], 0),
        "S,list,int,list": lambda T: (S, [0, 1], 0, [1, 2]),
        "0dT,S,0dT": lambda T: (T.tensor(0), S, T.tensor(1)),
        "0dT alone": lambda T: (T.tensor(1),),
        "S,0dT": lambda T: (S, T.tensor(1)),
        "mask,S,int": lambda T: (T.tensor([True, False]), S, 1),
        "S,mask,int": lambda T: (S, T.tensor([True, False, True]), 1),
        "int,int,list": lambda T: (1, 2, [0, 3]),
        "list,int,list": lambda T: ([0, 1], 2, [0, 3]),
        "list,S,list,int": lambda T: ([0, 1], S, [0, 3], 1),
        "2dlist,S,int": lambda T: (T.tensor([[0], [1]]), S, 1),
    }
    for k, f in cases.items():
        P("getitem " + k, lambda T, f=f: a(T)[f(T)])

        def st(T, f=f):
            x = T.zeros(2, 3, 4, 5, dtype=T.int64)
            r = a(T)[f(T)]
            x[f(T)] = r
            return x

        P("setitem " + k, st)


def _group_p11():
    def iadd_dup(T):
        x = T.zeros(4)
        x[T.tensor([1, 1, 2])] += 1
        return x

    P("x[idx] += dup", iadd_dup)

    def iadd_mask(T):
        x = T.arange(4.0)
        x[x > 1] *= 10
        return x

    P("x[mask] *= ", iadd_mask)
    P("out= same dtype", lambda T: (lambda o: (T.add(T.tensor([1.0]), 1, out=o), o)[1])(T.zeros(1)))
    P(
        "out= int from float",
        lambda T: (lambda o: (T.add(T.tensor([1.5]), 1, out=o), o)[1])(T.zeros(1, dtype=T.int64)),
        errtext=False,
    )
    P(
        "out= int from float msg",
        lambda T: (lambda o: (T.add(T.tensor([1.5]), 1, out=o), o)[1])(T.zeros(1, dtype=T.int64)),
    )
    P(
        "out= float from int",
        lambda T: (lambda o: (T.add(T.tensor([1]), 1, out=o), o)[1])(T.zeros(1, dtype=T.float64)),
    )
    P(
        "out= resize",
        lambda T: (lambda o: (T.add(T.tensor([1.0, 2.0]), 1, out=o), o)[1])(T.zeros(0)),
    )
    P(
        "out= comparison float",
        lambda T: (lambda o: (T.lt(T.tensor([1.0, 2.0]), 1.5, out=o), o)[1])(T.zeros(2)),
    )
    P(
        "gather out",
        lambda T: (lambda o: (T.gather(T.arange(4.0), 0, T.tensor([3, 0]), out=o), o)[1])(
            T.zeros(2)
        ),
    )
    P(
        "index_select out",
        lambda T: (lambda o: (T.index_select(T.arange(4.0), 0, T.tensor([3, 0]), out=o), o)[1])(
            T.zeros(2)
        ),
    )
    P(
        "setitem int tensor float tensor",
        lambda T: (lambda x: (x.__setitem__(slice(None), T.tensor([1.9, -1.9])), x)[1])(
            T.zeros(2, dtype=T.int32)
        ),
    )
    P(
        "setitem float from rg tensor",
        lambda T: (lambda x: (x.__setitem__(0, T.tensor(2.0, requires_grad=True)), x)[1])(
            T.zeros(2)
        ),
    )
    P(
        "setitem leaf rg err",
        lambda T: (lambda x: x.__setitem__(0, 1.0))(T.zeros(2, requires_grad=True)),
        errtext=False,
    )
    P(
        "setitem leaf rg err msg",
        lambda T: (lambda x: x.__setitem__(0, 1.0))(T.zeros(2, requires_grad=True)),
    )
    P(
        "setitem nan into int",
        lambda T: (lambda x: (x.__setitem__(0, float("nan")), x.dtype)[1])(
            T.zeros(2, dtype=T.int32)
        ),
        errtext=False,
    )
    P(
        "setitem inf into int",
        lambda T: (lambda x: x.__setitem__(0, float("inf")))(T.zeros(2, dtype=T.int32)),
        errtext=False,
    )
    P(
        "setitem big into int8",
        lambda T: (lambda x: (x.__setitem__(0, 1000), x)[1])(T.zeros(2, dtype=T.int8)),
        errtext=False,
    )
    P(
        "setitem big into int8 msg",
        lambda T: (lambda x: (x.__setitem__(0, 1000), x)[1])(T.zeros(2, dtype=T.int8)),
    )
    P("fill_ int8 overflow", lambda T: T.zeros(2, dtype=T.int8).fill_(1000), errtext=False)
    P("fill_ int with float", lambda T: T.zeros(2, dtype=T.int32).fill_(2.9))
    P("fill_ 0d tensor", lambda T: T.zeros(2).fill_(T.tensor(3)))
    P("fill_ 1d tensor err", lambda T: T.zeros(2).fill_(T.tensor([3.0])), errtext=False)
    P("full int8 overflow", lambda T: T.full((2,), 1000, dtype=T.int8), errtext=False)
    P("add int8 overflow scalar", lambda T: T.zeros(2, dtype=T.int8) + 1000, errtext=False)
    P("uint8 + -1 scalar", lambda T: T.zeros(2, dtype=T.uint8) + (-1), errtext=False)
    P("tensor([1000], int8)", lambda T: T.tensor([1000], dtype=T.int8), errtext=False)
    P("torch.tensor(True)+1", lambda T: T.tensor(True) + 1)
    P(
        "0d int + 0d bool + float list",
        lambda T: T.tensor(1) + T.tensor(True) + T.tensor([1.5], dtype=T.float16),
    )
    P("sum int8 dtype", lambda T: T.tensor([100, 100], dtype=T.int8).sum())
    P("sum bool dtype", lambda T: T.tensor([True, True]).sum())
    P("mean int err", lambda T: T.tensor([1, 2]).mean(), errtext=False)
    P("mean int err msg", lambda T: T.tensor([1, 2]).mean())
    P("prod int32", lambda T: T.tensor([1, 2], dtype=T.int32).prod())
    P("cumsum uint8", lambda T: T.tensor([200, 100], dtype=T.uint8).cumsum(0))
    P("abs int8 min", lambda T: T.tensor([-128], dtype=T.int8).abs())
    P("sqrt int", lambda T: T.tensor([4]).sqrt())
    P("sigmoid bool", lambda T: T.tensor([True]).sigmoid())
    P("round int", lambda T: T.tensor([3]).round())
    P("floor int dtype", lambda T: T.tensor([3]).floor())
    P("neg uint8", lambda T: -T.tensor([1], dtype=T.uint8))
    P("sign bool", lambda T: T.tensor([True, False]).sign())
    P("argmax dtype", lambda T: T.tensor([1.0, 3.0]).argmax())
    P("max returns", lambda T: T.tensor([[1.0, 3.0], [4.0, 0.0]]).max(dim=-1))
    P("sort indices dtype", lambda T: T.tensor([3, 1]).sort())


def _group_p12():
    i8 = lambda T: T.zeros(3, dtype=T.int8)
    P(
        "masked_fill uint8 neg",
        lambda T: T.zeros(2, dtype=T.uint8).masked_fill(T.tensor([True, False]), -1),
    )
    P("where uint8 -1", lambda T: T.where(T.tensor([True, False]), T.zeros(2, dtype=T.uint8), -1))
    P("mul int8 1000", lambda T: i8(T) * 1000)
    P(
        "index_put int8 ovf",
        lambda T: i8(T).index_put_((T.tensor([0]),), T.tensor(1000)),
        errtext=False,
    )
    P(
        "bool masked_fill 2",
        lambda T: T.zeros(2, dtype=T.bool).masked_fill(T.tensor([True, False]), 2),
    )
    P(
        "masked_fill bool float",
        lambda T: T.zeros(2, dtype=T.bool).masked_fill(T.tensor([True, False]), 0.5),
    )
    P(
        "where int tensor nan",
        lambda T: T.where(T.tensor([True, False]), T.zeros(2, dtype=T.int64), float("nan")),
    )


def _group_promotion():
    dts = [
        "bool",
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ]
    scalars = [True, 2, 2.5, 1 + 1j]

    def mk(T, d, v=None):
        if d == "bool":
            return T.tensor([True, False, True])
        return T.tensor([1, 2, 3] if v is None else v).to(getattr(T, d))

    def c32(d, other):  # (float16 with complex is complex32 in torch, not probed)
        return d == "float16" and (other == 1 + 1j or str(other).startswith("complex"))

    arith = ("add", "mul", "sub", "div", "true_divide", "floor_divide", "remainder", "pow")
    for op in arith + ("eq", "lt", "maximum", "atan2", "fmod"):
        cases = []
        for d in dts:
            for s in scalars:
                if c32(d, s):
                    continue
                cases.append((f"{d} {s!r}", lambda T, op=op, d=d, s=s: getattr(T, op)(mk(T, d), s)))
                if op in arith:
                    cases.append(
                        (f"{s!r} {d}", lambda T, op=op, d=d, s=s: getattr(T, op)(s, mk(T, d)))
                    )
            if op in ("add", "div", "floor_divide", "remainder"):
                for d2 in dts:
                    if c32(d, d2) or c32(d2, d):
                        continue
                    cases.append(
                        (
                            f"{d} {d2}",
                            lambda T, op=op, d=d, d2=d2: getattr(T, op)(mk(T, d), mk(T, d2)),
                        )
                    )
                    cases.append(
                        (
                            f"{d} 0d {d2}",
                            lambda T, op=op, d=d, d2=d2: getattr(T, op)(mk(T, d), mk(T, d2, 2)),
                        )
                    )

        def run(cases=cases):
            bad = []
            for name, fn in cases:
                ok, got = _same(fn, errtext=False)
                if not ok:
                    bad.append((name, got))
            return bad

        P(f"promotion matrix {op}", run)


for _name, _value in list(globals().items()):
    if _name.startswith("_group_"):
        _value()


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name,fn,errtext", _CASES, ids=[c[0] for c in _CASES])
def test_probe(name, fn, errtext):
    if name.startswith("promotion matrix"):
        assert fn() == []
        return
    ok, got = _same(fn, errtext)
    assert ok, got
