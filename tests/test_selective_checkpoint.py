"""``jitgrad.ops.aten`` (torch.ops.aten's names) and selective activation checkpointing
(``create_selective_checkpoint_contexts``), against torch where it is installed."""

import functools

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.ops.op_observers import observe_ops
from jitgrad.utils.checkpoint import (CheckpointPolicy, checkpoint,
                                      create_selective_checkpoint_contexts)

aten = jg.ops.aten


def test_aten_names_call_jitgrad_functions_and_are_one_object_each():
    x = jg.tensor([[-1.0, 2.0], [3.0, -4.0]])
    assert aten.relu(x).tolist() == [[0.0, 2.0], [3.0, 0.0]]
    assert aten.sum.dim_IntList(x, [1]).tolist() == [1.0, -1.0]
    assert aten.mm.default(x, x).tolist() == (x @ x).tolist()
    assert aten.gelu(x).tolist() == jg.nn.functional.gelu(x).tolist()
    assert aten.t.default(x).tolist() == x.t().tolist()
    assert aten.mm.default is aten.mm.default and aten.mm is jg.ops.aten.mm
    assert aten.mm.default.name() == "aten::mm" and aten.add.Tensor.name() == "aten::add.Tensor"
    assert str(aten.mm) == "aten.mm" and repr(aten.mm.default) == "aten.mm.default"
    assert aten.add.Tensor.overloadpacket is aten.add
    with pytest.raises(AttributeError, match="'_OpNamespace' 'aten' object has no attribute "
                                             "'no_such_op'"):
        aten.no_such_op  # noqa: B018
    with pytest.raises(AttributeError, match="The underlying op of 'aten.mm' has no overload "
                                             "name 'no_such_overload'"):
        aten.mm.no_such_overload  # noqa: B018


def test_flop_counts_are_keyed_by_the_aten_packets():
    from jitgrad.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        jg.ones(4, 5) @ jg.ones(5, 6)
    assert counter.get_flop_counts()["Global"][aten.mm] == 2 * 4 * 5 * 6


def _mm_tanh(a, w):
    return jg.mm(a, w).tanh()


def _count_mm_in_backward(context_fn):
    a = jg.randn(3, 4, requires_grad=True)
    w = jg.randn(4, 5, requires_grad=True)
    out = checkpoint(_mm_tanh, a, w, use_reentrant=False, context_fn=context_fn)
    calls = []

    def wrap(op, impl):
        if op.name != "mm":
            return impl

        def counted(*args, **params):
            calls.append(op.name)
            return impl(*args, **params)
        return counted
    remove = observe_ops(wrap)
    try:
        out.sum().backward()
    finally:
        remove()
    ref_a, ref_w = (t.detach().clone().requires_grad_() for t in (a, w))
    _mm_tanh(ref_a, ref_w).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ref_a.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), ref_w.grad.numpy(), rtol=1e-6)
    return len(calls)


def test_a_saved_matrix_product_is_not_recomputed():
    from jitgrad.utils.checkpoint import noop_context_fn

    # plain checkpointing: the recomputation's mm, then the two of mm's backward
    assert _count_mm_in_backward(noop_context_fn) == 3
    saving = functools.partial(create_selective_checkpoint_contexts, [aten.mm.default])
    assert _count_mm_in_backward(saving) == 2

    def policy(ctx, op, *args, **kwargs):
        assert not ctx.is_recompute and ctx.op_output is not None
        return op == aten.mm.default  # (a bool: True saves, as torch's older policies)
    assert _count_mm_in_backward(functools.partial(create_selective_checkpoint_contexts,
                                                   policy)) == 2


def test_the_policy_is_asked_about_each_op_as_torch_names_it():
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(str(op))
        return CheckpointPolicy.PREFER_RECOMPUTE
    w = jg.randn(5, 5, requires_grad=True)
    v = jg.randn(3, 5, requires_grad=True)
    out = checkpoint(lambda a, b: jg.sigmoid(jg.mm(jg.mm(a, b), b)) * b.sum(), v, w,
                     use_reentrant=False,
                     context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
    out.sum().backward()
    assert seen == ["aten.mm.default", "aten.mm.default", "aten.sigmoid.default",
                    "aten.sum.default", "aten.mul.Tensor"]


def test_bad_policies_are_refused_as_torch():
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload but got: "
                                         "aten.mm of type .*Please update the OpOverloadPacket"):
        create_selective_checkpoint_contexts([aten.mm])
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list "
                                        "of ops."):
        create_selective_checkpoint_contexts(3)


def test_selective_checkpoint_gradients_match_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((4, 6)), rng.standard_normal((6, 6))
    grads = {}
    for lib, cp in ((jg, __import__("jitgrad.utils.checkpoint").utils.checkpoint),
                    (torch, tcp)):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)

        def policy(ctx, op, *args, cp=cp, lib=lib, **kwargs):
            return cp.CheckpointPolicy.MUST_SAVE if op in (
                lib.ops.aten.mm.default, lib.ops.aten.sin.default) else \
                cp.CheckpointPolicy.PREFER_RECOMPUTE

        def block(a, b, lib=lib):
            return lib.nn.functional.layer_norm(lib.mm(a, b).sin() + a, (6,)).relu()

        out = cp.checkpoint(block, x, w, use_reentrant=False, context_fn=functools.partial(
            cp.create_selective_checkpoint_contexts, policy))
        (out ** 2).sum().backward()
        grads[lib] = (x.grad.numpy(), w.grad.numpy())
    for ours, theirs in zip(grads[jg], grads[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
