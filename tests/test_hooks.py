"""Hooks against torch: Tensor.register_hook, retain_grad, grad_fn hooks and pre-hooks,
post-accumulate-grad hooks, handles, the order in which they run, and torch's errors."""


import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

from torch_compare import arr, both, same_error  # noqa: E402



def leaf(lib, values=(1.0, 2.0)):
    return lib.tensor(list(values), dtype=lib.float64, requires_grad=True)




def test_tensor_hook_replaces_the_gradient_downstream():
    def fn(lib):
        x = leaf(lib)
        h = x * 2
        h.register_hook(lambda g: g * 10)
        (h * h).sum().backward()
        return x.grad

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))
    np.testing.assert_allclose(arr(j), [80.0, 160.0])


def test_leaf_hook_changes_what_is_accumulated_and_sees_the_gradient():
    seen = []
    x = leaf(jitgrad)
    x.register_hook(lambda g: seen.append(g.tolist()))
    x.register_hook(lambda g: g + 1)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [4.0, 4.0]


def test_hooks_on_one_tensor_run_in_registration_order():
    def fn(lib):
        x = leaf(lib)
        h = x * 1
        h.register_hook(lambda g: g + 1)
        h.register_hook(lambda g: g * 3)
        h.sum().backward()
        return x.grad

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))


def test_handle_remove_unregisters():
    for lib in (torch, jitgrad):
        x = leaf(lib)
        h = x * 2
        handle = h.register_hook(lambda g: g * 100)
        handle.remove()
        handle.remove()  # idempotent
        leaf_handle = x.register_hook(lambda g: g * 100)
        leaf_handle.remove()
        h.sum().backward()
        assert arr(x.grad).tolist() == [2.0, 2.0]


def test_hook_applies_to_autograd_grad_too():
    def fn(lib):
        x = leaf(lib)
        h = x.exp()
        h.register_hook(lambda g: g * -1)
        return lib.autograd.grad(h.sum(), x)[0]

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))


def test_retain_grad_and_retains_grad():
    def fn(lib):
        x = leaf(lib)
        h = x * 2
        assert not h.retains_grad and not x.retains_grad
        h.retain_grad()
        h.retain_grad()  # twice is fine
        x.retain_grad()  # a no-op on a leaf
        assert h.retains_grad and not x.retains_grad
        (h * h).sum().backward(retain_graph=True)
        (h * 3).sum().backward()
        return h.grad, x.grad

    (th, tx), (jh, jx) = both(fn)
    np.testing.assert_allclose(arr(jh), arr(th))
    np.testing.assert_allclose(arr(jx), arr(tx))


@pytest.mark.parametrize("retain_first", [True, False])
def test_retained_grad_sees_the_hooked_value_whatever_the_order(retain_first):
    def fn(lib):
        x = leaf(lib)
        h = x * 2
        if retain_first:
            h.retain_grad()
        h.register_hook(lambda g: g * 10)
        if not retain_first:
            h.retain_grad()
        (h * 3).sum().backward()
        return h.grad, x.grad

    (th, tx), (jh, jx) = both(fn)
    np.testing.assert_allclose(arr(jh), arr(th))
    np.testing.assert_allclose(arr(jx), arr(tx))


def test_grad_fn_post_hook_replaces_grad_inputs():
    def fn(lib):
        x = leaf(lib)
        y = leaf(lib, (3.0, 4.0))
        h = x * y
        calls = []

        def hook(grad_inputs, grad_outputs):
            calls.append((len(grad_inputs), len(grad_outputs)))
            return (grad_inputs[0] * 100, grad_inputs[1])

        h.grad_fn.register_hook(hook)
        (h * 3).sum().backward()
        return x.grad, y.grad, calls

    (tx, ty, tc), (jx, jy, jc) = both(fn)
    np.testing.assert_allclose(arr(jx), arr(tx))
    np.testing.assert_allclose(arr(jy), arr(ty))
    assert jc == tc == [(2, 1)]


def test_grad_fn_prehook_replaces_grad_outputs():
    def fn(lib):
        x = leaf(lib)
        h = x * 2
        h.grad_fn.register_prehook(lambda go: (go[0] * 100,))
        (h * 3).sum().backward()
        return x.grad

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))


def test_post_accumulate_grad_hook_sees_the_updated_grad():
    def fn(lib):
        x = leaf(lib)
        seen = []
        handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(arr(t.grad).tolist()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        handle.remove()
        (x * 3).sum().backward()
        return seen

    t, j = both(fn)
    assert j == t == [[2.0, 2.0], [5.0, 5.0]]


def test_hook_order_matches_torch():
    def fn(lib):
        log = []
        x = leaf(lib)
        h = x * 2
        out = h.sin()
        h.register_hook(lambda g: log.append("tensor h 1"))
        h.grad_fn.register_prehook(lambda go: log.append("prehook MulBackward0"))
        h.grad_fn.register_hook(lambda gi, go: log.append("posthook MulBackward0"))
        h.register_hook(lambda g: log.append("tensor h 2"))
        out.grad_fn.register_prehook(lambda go: log.append("prehook SinBackward0"))
        out.grad_fn.register_hook(lambda gi, go: log.append("posthook SinBackward0"))
        x.register_hook(lambda g: log.append("tensor x"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate x"))
        out.register_hook(lambda g: log.append("tensor out"))
        out.sum().backward()
        return log

    t, j = both(fn)
    assert j == t


def _error_cases():
    def post_acc_on_non_leaf(lib):
        (leaf(lib) * 2).register_post_accumulate_grad_hook(lambda t: None)

    def hook_without_grad(lib):
        lib.ones(2).register_hook(lambda g: g)

    def retain_without_grad(lib):
        lib.ones(2).retain_grad()

    def hook_changes_size(lib):
        h = leaf(lib) * 2

        def shrink(g):
            return g.sum()

        h.register_hook(shrink)
        h.sum().backward()

    def leaf_hook_changes_size(lib):
        x = leaf(lib)
        x.register_hook(lambda g: g.sum())
        (x * 2).sum().backward()

    def hook_returns_number(lib):
        h = leaf(lib) * 2
        h.register_hook(lambda g: 1.0)
        h.sum().backward()

    def post_hook_wrong_count(lib):
        h = leaf(lib) * 2
        h.grad_fn.register_hook(lambda gi, go: (gi[0],))
        (h * 3).sum().backward()

    def post_hook_returns_tensor(lib):
        h = leaf(lib) * 2
        h.grad_fn.register_hook(lambda gi, go: gi[0])
        (h * 3).sum().backward()

    def prehook_returns_tensor(lib):
        h = leaf(lib) * 2
        h.grad_fn.register_prehook(lambda go: go[0])
        (h * 3).sum().backward()

    def post_hook_fills_none(lib):
        h = leaf(lib) * 2
        h.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
        (h * 3).sum().backward()

    return [post_acc_on_non_leaf, hook_without_grad, retain_without_grad, hook_changes_size,
            leaf_hook_changes_size, hook_returns_number, post_hook_wrong_count,
            post_hook_returns_tensor, prehook_returns_tensor, post_hook_fills_none]


@pytest.mark.parametrize("case", _error_cases(), ids=lambda f: f.__name__)
def test_hook_errors_match_torch(case):
    same_error(case)


def test_handles_work_as_context_managers():
    x = leaf(jitgrad)
    h = x * 2
    with h.register_hook(lambda g: g * 0):
        pass
    h.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
