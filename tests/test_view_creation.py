"""Views that torch forbids changing in place, against torch: the pieces of ``split``,
``chunk`` and ``unbind`` (multi-output views), views made under ``no_grad`` or
``inference_mode`` and changed with grad mode on, and views of such views. Each case either
raises torch's error text (naming the view's node) or gives torch's gradients."""

import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _split_piece(lib):
    x = lib.randn(4, 3, requires_grad=True)
    y = x * 2
    a, _ = y.split(2)
    a.mul_(3)
    return a


def _unbind_piece(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    a = y.unbind(1)[2]
    a.add_(1)
    return a


def _chunk_middle(lib):
    y = lib.randn(6, 3, requires_grad=True) * 2
    a = y.chunk(3)[1]
    a.mul_(2)
    return a


def _one_piece(lib):  # (one piece is still a multi-output view)
    y = lib.randn(4, 3, requires_grad=True) * 2
    a = y.split(4)[0]
    a.mul_(3)
    return a


def _split_with_sizes(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    a = y.split_with_sizes([1, 3])[1]
    a.mul_(2)
    return a


def _view_of_piece(lib):  # (a view of a piece inherits its kind; the error names its node)
    y = lib.randn(4, 3, requires_grad=True) * 2
    a = y.split(2)[1].t()
    a.mul_(2)
    return a


def _base_changed_then_piece_used(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    a, _ = y.split(2)
    y.mul_(2)
    return a * 2


def _other_view_changed(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    a, _ = y.split(2)
    y[3].add_(1)
    return a.grad_fn


def _piece_of_constant_with_grad_value(lib):  # (no node: torch's no_grad text, its quirk)
    a = lib.randn(4, 3).split(2)[0]
    a.add_(lib.ones(2, 3, requires_grad=True))
    return a


def _no_grad_view(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    with lib.no_grad():
        v = y[0]
    v.mul_(2)
    return v


def _no_grad_view_of_leaf(lib):
    x = lib.randn(4, 3, requires_grad=True)
    with lib.no_grad():
        v = x[0]
    v.mul_(2)
    return v


def _no_grad_view_of_constant(lib):
    x = lib.randn(4, 3)
    with lib.no_grad():
        v = x[0]
    v.mul_(lib.ones(3, requires_grad=True))
    return v


def _no_grad_piece(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    with lib.no_grad():
        a = y.split(2)[1]
    a.mul_(2)
    return a


def _no_grad_view_of_view(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    a = y[1:]
    with lib.no_grad():
        b = a[0]
    b.mul_(2)
    return b


def _view_of_no_grad_view(lib):  # (made with grad on, it inherits no_grad's kind)
    y = lib.randn(4, 3, requires_grad=True) * 2
    with lib.no_grad():
        a = y[1:]
    b = a[0]
    b.mul_(2)
    return b


def _no_grad_view_changed_under_no_grad(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    with lib.no_grad():
        v = y[0]
    with lib.no_grad():
        v.mul_(2)
    return v.grad_fn


def _inference_view(lib):
    y = lib.randn(4, 3, requires_grad=True) * 2
    with lib.inference_mode():
        a = y[0]
    a.mul_(2)
    return a


CASES = [_split_piece, _unbind_piece, _chunk_middle, _one_piece, _split_with_sizes,
         _view_of_piece, _base_changed_then_piece_used, _other_view_changed,
         _piece_of_constant_with_grad_value, _no_grad_view, _no_grad_view_of_leaf,
         _no_grad_view_of_constant, _no_grad_piece, _no_grad_view_of_view,
         _no_grad_view_changed_under_no_grad, _inference_view]


def _error(lib, case):
    with pytest.raises(RuntimeError) as info:
        case(lib)
    return str(info.value)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_forbidden_in_place_change_raises_torchs_error(case):
    assert _error(jitgrad, case) == _error(torch, case)


def test_view_of_a_no_grad_view_is_refused():
    # the view (Select) of a no_grad view is recorded, its node leading nowhere, and named
    ours, theirs = _error(jitgrad, _view_of_no_grad_view), _error(torch, _view_of_no_grad_view)
    assert ours.startswith("Output 0 of Select is a view of a view which was created in no_grad "
                           "mode and is being modified inplace")
    assert ours == theirs


@pytest.mark.parametrize("lib", [jitgrad, torch], ids=["jitgrad", "torch"])
def test_ops_on_a_no_grad_view_record_a_node_leading_nowhere(lib):
    base = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        v = base[:2]
    y = v * 2  # (a binary lane) and a general-path op
    z = lib.nn.functional.softplus(v)
    for out in (y, z):
        assert out.requires_grad and out.grad_fn is not None
        assert all(edge == (None, 0) for edge in out.grad_fn.next_functions)
    (y.sum() + z.sum()).backward()  # reaches nothing
    assert base.grad is None and v.grad is None
    w = v[0]
    assert w.requires_grad and w.grad_fn.name() == "SelectBackward0"


@pytest.mark.parametrize("lib", [jitgrad, torch], ids=["jitgrad", "torch"])
def test_allowed_cases_and_requires_grad(lib):
    x = lib.randn(4, 3, requires_grad=True)
    y = x * 2
    with lib.no_grad():
        v = y[0]
    # a view made under no_grad requires grad when its base does (it has no node of its own)
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    # pieces of a tensor that needs no grad, changed with no grad value: allowed
    c = lib.ones(4, 3)
    p = c.split(2)[0]
    p.add_(1)
    assert c.sum().item() == 18
    # unsafe_split's pieces are not views for autograd: they may be changed in place
    a = lib.unsafe_split(y, 2)[0]
    a.mul_(3)
    a.sum().backward()
    assert x.grad.sum().item() == pytest.approx(36.0)
    # changing the base with the piece unused afterwards: allowed, gradients through the base
    z = lib.randn(4, 3, requires_grad=True)
    w = z * 2
    w.split(2)
    w.mul_(2)
    w.sum().backward()
    assert z.grad.sum().item() == pytest.approx(48.0)


def test_is_view_matches_torch():
    results = []
    for lib in (jitgrad, torch):
        x = lib.randn(3, 4)
        results.append([x[1:]._is_view(), x._is_view(), x.t()._is_view(),
                        x.detach()._is_view(), x.split(2)[0]._is_view(), (x + 1)._is_view(),
                        x.view(12)._is_view(), x[1:].detach()._is_view()])
    assert results[0] == results[1]
