"""One LSTM layer (one direction) as one op, as torch's CPU build runs a float32 ``nn.LSTM``:
oneDNN's ``mkldnn_rnn_layer``, recorded as one ``MkldnnRnnLayerBackward0`` node per layer and
direction whose parents are (input, weight_ih, weight_hh, bias_ih, bias_hh, h0, c0).

The forward is the per-step computation of ``lstm_step`` (the input projection of every
step in one matrix product, then ``h @ weight_hh.T + bias_hh`` and the gates each step) on
NumPy arrays, with no autograd between the steps; it also returns the gates and cells of every
step (torch's fourth output, the "workspace"), which the backward reads. The backward is
backpropagation through time on arrays, one op; with ``create_graph`` it is the per-step graph
instead (torch's ``mkldnn_rnn_layer_differentiable_backward``), so higher derivatives work.

``nn.LSTM`` takes this path where torch takes oneDNN's (float32 on the CPU, no ``proj_size``,
not a packed sequence) and nothing else watches (no jit or vmap trace, forward AD or
autocast); elsewhere it runs the per-step ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..ops import registry
from ..ops.registry import OPAQUE, apply, defop, state
from ..tensor import Tensor
from . import functional as F


def lstm_step(gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None,
              w_hr: Tensor | None) -> tuple[Tensor, Tensor]:
    """One step of the per-step path: torch's cell, its graph included (hidden projection
    first, one split of the gates)."""
    i, f, g, o = (F.linear(h, w_hh, b_hh) + gi).unsafe_chunk(4, -1)
    i, f, g, o = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o)
    c = f * c + i * g
    h = o * F.tanh(c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return registry.OPS["sigmoid"].impl(x)


def _steps(n: int, reverse: bool) -> range:
    return range(n - 1, -1, -1) if reverse else range(n)


def _layer_impl(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_hh.shape[1]
    gi = np.matmul(x.reshape(steps * batch, -1), w_ih.T).reshape(steps, batch, 4 * hidden)
    if b_ih is not None:
        gi = b_ih + gi
    out = np.empty((steps, batch, hidden), x.dtype)
    work = np.empty((steps, batch, 5 * hidden), x.dtype)  # i, f, g, o, c of every step
    h, c = h0, c0
    for t in _steps(steps, reverse):
        pre = np.matmul(h, w_hh.T)
        if b_hh is not None:
            pre = b_hh + pre
        pre = pre + gi[t]
        gates = work[t]
        gates[:, :4 * hidden] = _sigmoid(pre)  # (the cell gate's is overwritten next)
        g = gates[:, 2 * hidden:3 * hidden] = np.tanh(pre[:, 2 * hidden:3 * hidden])
        i, f, o = gates[:, :hidden], gates[:, hidden:2 * hidden], gates[:, 3 * hidden:4 * hidden]
        c = gates[:, 4 * hidden:] = f * c + i * g
        h = out[t] = o * np.tanh(c)
    return out, np.array(h), np.array(c), work


def _layer_meta(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
    steps, batch, hidden = x.shape[0], x.shape[1], w_hh.shape[1]
    return (((steps, batch, hidden), (batch, hidden), (batch, hidden),
             (steps, batch, 5 * hidden)), (x.dtype,) * 4)


def _backward_impl(g_out, g_hy, g_cy, x, w_ih, w_hh, h0, c0, out, work, reverse):
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_hh.shape[1]
    dt = x.dtype
    dgates = np.empty((steps, batch, 4 * hidden), dt)
    h_prev = np.empty((steps, batch, hidden), dt)  # the h each step read
    dh = np.zeros((batch, hidden), dt) if g_hy is None else g_hy
    dc = np.zeros((batch, hidden), dt) if g_cy is None else g_cy
    order = list(_steps(steps, reverse))
    for n in range(steps - 1, -1, -1):  # the steps in the order opposite to the forward's
        t = order[n]
        before = order[n - 1] if n else None
        h_prev[t] = h0 if before is None else out[before]
        c_before = c0 if before is None else work[before, :, 4 * hidden:]
        i, f, g, o, c = (work[t, :, k * hidden:(k + 1) * hidden] for k in range(5))
        if g_out is not None:
            dh = dh + g_out[t]
        tc = np.tanh(c)
        dc = dc + dh * o * (1 - tc * tc)
        dgates[t, :, 0:hidden] = dc * g * (1 - i) * i
        dgates[t, :, hidden:2 * hidden] = dc * c_before * (1 - f) * f
        dgates[t, :, 2 * hidden:3 * hidden] = dc * i * (1 - g * g)
        dgates[t, :, 3 * hidden:] = dh * tc * (1 - o) * o
        dc = dc * f
        dh = np.matmul(dgates[t], w_hh)
    rows = dgates.reshape(steps * batch, 4 * hidden)
    g_x = np.matmul(rows, w_ih).reshape(x.shape)
    g_w_ih = np.matmul(rows.T, x.reshape(steps * batch, -1))
    g_w_hh = np.matmul(rows.T, h_prev.reshape(steps * batch, hidden))
    g_b = rows.sum(0)
    return g_x, g_w_ih, g_w_hh, g_b, np.array(dh), np.array(dc)


def _backward_meta(g_out, g_hy, g_cy, x, w_ih, w_hh, h0, c0, out, work, reverse):
    shapes = (tuple(x.shape), tuple(w_ih.shape), tuple(w_hh.shape), (w_hh.shape[0],),
              tuple(h0.shape), tuple(c0.shape))
    return shapes, (x.dtype,) * 6


def _not_differentiable(*args: Any) -> Any:
    raise RuntimeError("derivative for aten::mkldnn_rnn_layer_backward is not implemented")


def _no_forward_ad(name: str) -> Any:
    def rule(*args: Any) -> Any:  # (never reached from nn.LSTM: forward AD takes the per-step
        # ops; an op applied directly under a dual level meets torch's error)
        raise NotImplementedError(
            f"Trying to use forward AD with {name} that does not support it because it has not "
            "been implemented yet.\nPlease file an issue to PyTorch at https://github.com/"
            "pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize "
            "its implementation or submit a PR adding the implementation to derivatives.yaml")
    return rule


LSTM_LAYER_BACKWARD = defop(
    "mkldnn_rnn_layer_backward", _backward_impl, kind=OPAQUE, n_outputs=6, meta=_backward_meta,
    vjp=(_not_differentiable,) * 10 + (None,), jvp=_no_forward_ad("mkldnn_rnn_layer_backward"))


def _layer_vjp(grads, ans, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
    g_out, g_hy, g_cy = grads[:3]
    if state.grad_enabled:  # create_graph: the per-step graph's gradients (differentiable)
        return _differentiable_backward((g_out, g_hy, g_cy), x, w_ih, w_hh, b_ih, b_hh, h0, c0,
                                        reverse)
    out, _, _, work = ans
    g_x, g_w_ih, g_w_hh, g_b, g_h0, g_c0 = apply(
        LSTM_LAYER_BACKWARD, g_out, g_hy, g_cy, x, w_ih, w_hh, h0, c0, out, work,
        reverse=reverse)
    return (g_x, g_w_ih, g_w_hh, None if b_ih is None else g_b, None if b_hh is None else g_b,
            g_h0, g_c0)


def _differentiable_backward(grads, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
    from ..autograd import grad

    inputs = (x, w_ih, w_hh, b_ih, b_hh, h0, c0)
    wrt = [k for k, t in enumerate(inputs) if t is not None and t.requires_grad]
    gi = F.linear(x, w_ih, b_ih).unbind(0)  # (as the per-step path's layers compute it)
    h, c, hs = h0, c0, [None] * x.shape[0]
    for t in _steps(x.shape[0], reverse):
        h, c = lstm_step(gi[t], h, c, w_hh, b_hh, None)
        hs[t] = h
    from ..ops.movement import stack

    outs = [(o, g) for o, g in zip((stack(hs), h, c), grads) if g is not None]
    found = grad([o for o, _ in outs], [inputs[k] for k in wrt], [g for _, g in outs],
                 create_graph=True, allow_unused=True)
    result: list = [None] * len(inputs)
    for k, g in zip(wrt, found):
        result[k] = g
    return tuple(result)


LSTM_LAYER = defop(
    "mkldnn_rnn_layer", _layer_impl, kind=OPAQUE, n_outputs=4, meta=_layer_meta,
    node_name="MkldnnRnnLayerBackward0", save=(0, 1, 2, 3, 4, 5, 6), save_output=True,
    vjp=_layer_vjp, jvp=_no_forward_ad("mkldnn_rnn_layer"),
    outputs_requiring_grad=lambda args, params: (True, True, True, False))


def takes_fused_path(mode: str, proj_size: int, x: Tensor, weights: list) -> bool:
    """Whether ``nn.LSTM`` runs its layers as ``LSTM_LAYER`` (see the module docstring)."""
    if mode != "LSTM" or proj_size or x.shape[0] == 0 or state.traces or state.autocast \
            or registry.fw_hook is not None or x._trace is not None:
        return False
    return all(t is None or (t._dtype is dtypes.float32 and type(t._data) is np.ndarray)
               for t in [x] + weights)


def lstm_layer(x: Tensor, weights: tuple, h0: Tensor, c0: Tensor, reverse: bool
               ) -> tuple[Tensor, Tensor, Tensor]:
    """(output, last h, last c) of one layer and direction over (steps, batch, features)."""
    w_ih, w_hh, b_ih, b_hh, _ = weights
    out, h, c, _ = apply(LSTM_LAYER, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse=reverse)
    return out, h, c
