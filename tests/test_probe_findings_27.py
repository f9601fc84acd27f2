"""What the session-27 probes (tests/test_probe_*.py) found jitgrad doing differently from
torch, each fixed and checked here against torch (or against the value torch gives)."""

import warnings

import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _outcome(fn, lib):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(lib)
        return "ok", out, [_message(w) for w in caught]
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return type(e).__name__, str(e).replace("torch", "jitgrad")


def _message(w) -> str:  # (without torch's "(Triggered internally at ...)" suffix)
    return str(w.message).split(" (Triggered internally at")[0]


def _same(fn):
    expected, got = _outcome(fn, torch), _outcome(fn, jitgrad)
    assert got == expected


def test_a_tensor_lr_is_copied_by_schedulers_not_aliased():
    # (base_lrs and get_last_lr() were the optimizer's own lr tensor, filled in place by each
    # step: LambdaLR compounded to 9.8e-05 where torch reaches 0.00625)
    def run(T):
        w = T.zeros(2, requires_grad=True)
        opt = T.optim.SGD([w], lr=T.tensor(0.1))
        sched = T.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
        seen = []
        for _ in range(4):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        return [round(float(x[0]), 7) for x in seen], [round(float(b), 7) for b in sched.base_lrs]

    assert run(jitgrad) == run(torch) == ([0.05, 0.025, 0.0125, 0.00625], [0.1])


def test_backward_inputs_non_leaf_retains_its_grad_and_accumulates():
    def run(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        y = (h * h).sum()
        y.backward(inputs=[h], retain_graph=True)
        first = (h.retains_grad, h.grad.tolist(), x.grad)
        y.backward()
        return first, h.grad.tolist(), x.grad.tolist()

    assert run(jitgrad) == run(torch) == ((True, [4.0, 8.0], None), [8.0, 16.0], [8.0, 16.0])
    _same(lambda T: (T.ones(2, requires_grad=True) * T.ones(2)).sum().backward(
        inputs=[T.ones(2)]))


def test_a_hook_that_changes_the_gradient_dtype_is_refused():
    def run(T):
        x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
        x.register_hook(lambda g: g.float())
        (x * 2).sum().backward()

    _same(run)


def test_post_accumulate_grad_hook_checks():
    def returns_value(T):
        x = T.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda t: t.grad * 100)
        x.sum().backward()

    _same(returns_value)
    _same(lambda T: T.ones(1).register_post_accumulate_grad_hook(print))


@pytest.mark.parametrize("value", ["yes", 0, 1.0])
def test_set_grad_enabled_takes_only_a_bool(value):
    _same(lambda T: T.set_grad_enabled(value))
    assert jitgrad.is_grad_enabled()


def test_inference_tensors_have_no_version_counter():
    def run(T):
        with T.inference_mode():
            x = T.ones(2)
        return x._version

    _same(run)


def test_custom_function_backward_returning_a_number():
    def run(T):
        class Twice(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return 3.0

        Twice.apply(T.ones(2, requires_grad=True)).sum().backward()

    _same(run)


def test_autograd_grad_refuses_a_number_input():
    _same(lambda T: T.autograd.grad(T.ones(2, requires_grad=True).sum(), [1.0]))


def test_mark_dirty_of_a_tensor_that_is_not_an_input_warns():
    def run(T):
        class Dirty(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.mark_dirty(y)
                return y

            @staticmethod
            def backward(ctx, g):
                return g

        return Dirty.apply(T.ones(2, requires_grad=True)).tolist()

    _same(run)


def test_bool_keys_index_as_torch():
    def run(T):
        x = T.arange(6.0, requires_grad=True)
        y = x.reshape(2, 3)
        parts = [y[True], y[T.tensor(False)], y[True, 0], y[None, True, ..., False],
                 y[..., True, 1], y[[0, 1], True]]
        z = y.clone()
        z[True, 1] = 7.0
        z[False] = 1.0
        z[T.tensor(True), 0] = T.tensor([1.0, 2.0, 3.0])
        (sum(p.sum() for p in parts) + z.sum()).backward()
        return [p.tolist() for p in parts], z.tolist(), x.grad.tolist(), parts[0].grad_fn.name()

    _same(run)


def test_a_mask_of_the_wrong_shape_is_refused():
    # (x[:, mask] with a short mask indexed with the positions it had: [[0.], [3.]])
    for key in ("[:, T.tensor([True, False])]", "[[[True, False, True]]]",
                "[T.tensor([0, 1]), T.tensor([[True, False, True]])]"):
        _same(lambda T, key=key: eval(f"T.arange(6.0).reshape(2, 3){key}").tolist())


@pytest.mark.parametrize("expr", [
    "x.sum(())", "x.sum([])", "x.sum(dim=None, keepdim=True)", "x.mean(())",
    "x.mean(dim=None, keepdim=True)", "x.nansum(())", "x.nanmean([])", "x.var(())", "x.std(())",
    "T.var_mean(x, ())[0]", "x.count_nonzero(())", "x.norm(dim=())",
    "T.linalg.vector_norm(x, dim=())", "x.argmax(dim=None, keepdim=True)",
    "x.argmin(dim=None, keepdim=True)", "x.sum((), keepdim=True)", "x.all(())"])
def test_an_empty_dim_list_reduces_every_dim_and_keepdim_keeps_them(expr):
    # (x.sum(()) returned x unreduced; sum(dim=None, keepdim=True) dropped the kept dims)
    def run(T):
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]], requires_grad=True)
        out = eval(expr)
        grad = None
        if out.requires_grad and "var" not in expr and "std" not in expr:
            # (torch's var/std backward over dim=() counts N as 1: an inf gradient)
            grad = T.autograd.grad(out.sum(), x)[0].tolist()
        return tuple(out.shape), out.detach().double().flatten().tolist(), grad

    _same(run)


def test_uint8_all_any_stay_uint8_and_bad_dims_raise_torch_errors():
    _same(lambda T: [str(r.dtype).split(".")[1] for r in (
        T.tensor([[1, 0], [2, 3]], dtype=T.uint8).all(),
        T.tensor([[1, 0], [2, 3]], dtype=T.uint8).any(1))])
    _same(lambda T: T.ones(2, 3).all(2))
    _same(lambda T: T.ones(2, 3).any((0, 0)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32"])
def test_bincount_weights_dtype(dtype):
    _same(lambda T: str(T.bincount(T.tensor([0, 2]), weights=T.tensor(
        [1, 2], dtype=getattr(T, dtype))).dtype).split(".")[1])


def test_gradients_at_degenerate_points_match_torch():
    nan = float("nan")

    def run(T):
        out = {}
        x = T.tensor([1.0, 1.0, 1.0], requires_grad=True)  # (std 0: torch's gradient is 0)
        out["std"] = T.autograd.grad(x.std(), x)[0].tolist()
        out["std_mean"] = T.autograd.grad(T.std_mean(x)[0], x)[0].tolist()
        b = T.tensor([0.0, 2.0, 0.0], requires_grad=True)
        e = T.tensor([0.0, 0.0, 2.0], requires_grad=True)  # (0 ** 0: torch's gradient is 0)
        out["pow"] = [g.tolist() for g in T.autograd.grad(T.pow(b, e).sum(), (b, e))]
        u = T.tensor([0.0, 0.0, 1.0], requires_grad=True)
        v = T.tensor([-1.0, -2.0, 1.0], requires_grad=True)
        out["xlog1py"] = [g.tolist() for g in T.autograd.grad(
            T.special.xlog1py(u, v).sum(), (u, v))]
        n = T.tensor([1.0, nan, nan], requires_grad=True)  # (max() shares among the NaNs)
        out["max"] = T.autograd.grad(n.max(), n)[0].tolist()
        out["min"] = T.autograd.grad(n.min(), n)[0].tolist()
        out["amax"] = T.autograd.grad(n.amax(), n)[0].tolist()
        m = T.tensor([nan, nan], requires_grad=True)
        out["nanmean"] = T.autograd.grad(m.nanmean(), m)[0].tolist()
        z = T.tensor([1 + 1j, -2j, 3.0], requires_grad=True)  # (a conjugate was missing)
        out["logsumexp"] = T.autograd.grad(T.logsumexp(z, 0), z, T.tensor(1 + 0j))[0].tolist()
        return repr(out)

    _same(run)


def test_bernoulli_of_a_0d_tensor():
    def run(T):
        T.manual_seed(0)
        return [T.bernoulli(T.tensor(0.3)).item(), T.tensor(0.5).bernoulli_(0.5).item(),
                T.distributions.Bernoulli(0.3).sample().item()]

    _same(run)


def test_broadcast_tensors_returns_a_tensor_of_the_shape_as_it_is():
    # (a distribution's parameter was a copy: d.loc.grad stayed None)
    def run(T):
        loc = T.tensor([0.0, 1.0], requires_grad=True)
        d = T.distributions.Normal(loc, T.tensor([1.0, 2.0]))
        d.log_prob(T.tensor([0.5, 0.5])).sum().backward()
        a, b = T.ones(2), T.ones(3, 2)
        out = T.broadcast_tensors(a, T.ones(2))
        return d.loc is loc, loc.grad.tolist(), out[0] is a, T.broadcast_tensors(a, b)[0] is a

    _same(run)


@pytest.mark.parametrize("mode,shape,factor", [
    ("nearest", (3, 2), 1.3), ("nearest", (2, 5), 1.3), ("nearest", (2, 2), 1.1),
    ("bilinear", (3, 5), 1.3), ("bilinear", (5, 2), 1.3), ("trilinear", (2, 3, 5), 1.3),
    ("nearest", (5,), 1.1), ("nearest", (2, 2, 2), 1.3), ("nearest-exact", (3, 5), 1.3)])
def test_interpolate_copies_a_dim_that_keeps_its_size_as_torch(mode, shape, factor):
    import numpy as np

    x = np.arange(np.prod(shape), dtype=np.float32).reshape((1, 1) + shape)

    def run(T):
        return T.nn.functional.interpolate(T.from_numpy(x), scale_factor=factor,
                                           mode=mode).numpy()

    got, expected = run(jitgrad), run(torch)
    assert got.shape == expected.shape and np.allclose(got, expected, rtol=1e-6, atol=0)


def test_prelu_shapes_and_reduction_elementwise_mean():
    def run(T):
        F = T.nn.functional
        out = [F.prelu(T.tensor(-2.0), T.tensor([0.3])).tolist()]
        x, y = T.tensor([1.0, 2.0, 3.0]), T.tensor([0.0, 0.0, 1.0])
        out += [F.l1_loss(x, y, reduction="elementwise_mean").item(),
                F.mse_loss(x, y, reduction="elementwise_mean").item()]
        return out

    _same(run)
    _same(lambda T: T.nn.functional.prelu(T.tensor([-2.0, 1.0, -1.0]), T.tensor([0.3, 0.2, 0.1])))


@pytest.mark.parametrize("target", ["T.ones(2, 1)", "T.tensor(1.0)", "T.ones(2)"])
def test_cosine_embedding_loss_checks_the_target_rank(target):
    _same(lambda T: T.nn.functional.cosine_embedding_loss(
        T.ones(2, 3), T.ones(2, 3), eval(target), reduction="none").tolist())


@pytest.mark.parametrize("kw", [{"beta": 0.5}, {"alpha": 1.5}, {"beta": 2.7, "alpha": -1.5},
                                {"beta": True}])
def test_integer_addmm_family_truncates_float_coefficients(kw):
    def run(T):
        i = T.ones(2, 2, dtype=T.int64)
        v = T.ones(2, dtype=T.int64)
        b = T.ones(1, 2, 2, dtype=T.int64)
        out = [T.addmm(i, i, i, **kw), T.addmv(v, i, v, **kw), T.baddbmm(b, b, b, **kw),
               T.addbmm(i, b, b, **kw)]
        return [(str(r.dtype).split(".")[1], r.tolist()) for r in out]

    _same(run)
    _same(lambda T: T.addr(T.ones(2, 2, dtype=T.int64), T.ones(2, dtype=T.int64),
                           T.ones(2, dtype=T.int64), **kw).tolist())


@pytest.mark.parametrize("expr", [
    "T.tensor([1, 2]).tile(2, 2)", "T.tile(T.tensor([1, 2]), (2,))",
    "T.arange(0, 1, 0.3, dtype=T.int32)", "T.arange(0, 1, 0.3, dtype=T.int64)",
    "T.arange(1, 4, 1.5, dtype=T.int16)", "T.linspace(0, 1 + 1j, 5)",
    "T.linspace(0, 1j, 3, dtype=T.float32)", "T.tensor_split(T.arange(5), indices=[2])",
    "T.arange(6).reshape(2, 3).tensor_split(sections=2, dim=1)",
    "T.tensor([1, 2]).repeat_interleave(T.tensor([3]))",
    "T.take_along_dim(T.arange(6).reshape(2, 3), T.tensor([[-1], [-3]]), 1)"])
def test_shape_and_creation_forms(expr):
    def run(T):
        out = eval(expr)
        return [t.tolist() for t in out] if isinstance(out, tuple) else (
            str(out.dtype).split(".")[1], out.tolist())

    _same(run)


@pytest.mark.parametrize("case", [
    ("error", "x + T.empty(2).uniform_()"), ("different", "x + T.empty(2).uniform_()"),
    ("same", "x + T.empty(2).uniform_()"), ("different", "x.clone().uniform_()"),
    ("same", "x.clone().normal_()"), ("error", "x.clone().normal_()")])
def test_inplace_random_inside_vmap_follows_the_randomness_mode(case):
    mode, body = case

    def run(T):
        out = T.func.vmap(lambda x: eval(body), randomness=mode)(T.ones(3, 2))
        return tuple(out.shape), bool((out == out[0]).all())

    _same(run)


def test_vmap_randomness_same_with_chunks_draws_one_sample():
    r = jitgrad.func.vmap(lambda x: jitgrad.rand_like(x), randomness="same", chunk_size=2)(
        jitgrad.ones(5, 4))
    assert bool((r == r[0]).all())


def test_linalg_edge_forms():
    def run(T):
        a = T.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=T.float64)
        return ([T.linalg.eigvalsh(a, UPLO=u).tolist() for u in ("l", "u")],
                T.linalg.eigh(a, UPLO="l")[0].tolist(),
                [tuple(T.linalg.matrix_exp(T.ones(*s)).shape) for s in ((0, 0), (2, 0, 0),
                                                                         (0, 2, 2))])

    _same(run)
    _same(lambda T: T.linalg.eigvalsh(T.eye(2), UPLO="x"))


def test_rnn_cell_repr_and_empty_tensor_strides():
    _same(lambda T: [repr(T.nn.RNNCell(2, 3, nonlinearity="relu")),
                     repr(T.nn.RNNCell(2, 3, bias=False))])
    _same(lambda T: [T.ones(0, 3).stride(), T.empty(2, 0, 3).stride(), T.zeros(0).stride(),
                     T.ones(3, 4)[:, :0].stride()])


@pytest.mark.parametrize("expr", [
    "T.zeros(3, dtype=T.int64).normal_()", "T.zeros(3).normal_(0, -1)",
    "T.zeros(3).normal_(0, float('nan'))", "T.zeros(2, dtype=T.float64).normal_(1, 0)"])
def test_tensor_normal_checks_std_and_dtype(expr):
    _same(lambda T: eval(expr).tolist())
