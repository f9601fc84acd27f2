"""``torch.nn.functional.ctc_loss``: the Connectionist Temporal Classification loss.

The forward variables (alpha) and the backward variables (beta) are computed in log space
over the whole batch at once (one NumPy step per time step, vectorized over the batch and the
extended target ``blank l1 blank l2 ... blank``). The per-sample negative log-likelihoods are
one node, ``CtcLossBackward0``, whose gradient is torch's: ``exp(log_probs) - exp(log(sum of
alpha * beta over the positions of class c) + nll - log_probs)`` for ``t < input_length``, 0
after. That formula is the gradient with respect to the logits *before* ``log_softmax`` (torch
folds the softmax Jacobian in, and ``log_softmax``'s backward leaves it unchanged because the
rows of the gradient sum to 0), so, as in torch, ``log_probs`` must be a ``log_softmax``
output for the gradient to be the true one; ``gradcheck`` holds through ``log_softmax``.
The reductions are composed (``'mean'`` divides each loss by its target length, clamped to 1,
and averages over the batch, as torch).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ops.autocast_policy import FP32, autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..ops.random_nodes import record_draws, unimplemented_node
from ..ops.creation import tensor
from ..ops.selection import where
from ..tensor import Tensor

__all__ = ["ctc_loss"]

_NEG_INF = -np.inf


def _check(what: str) -> str:
    return f"{what} (while checking arguments for ctc_loss_allocate_outputs)"


def _targets_table(targets: np.ndarray, tl: np.ndarray, batch: int) -> np.ndarray:
    """The targets as a (batch, longest) table, from the padded 2-D or concatenated 1-D form."""
    longest = int(tl.max()) if batch else 0
    table = np.zeros((batch, max(longest, 1)), dtype=np.int64)
    if targets.ndim == 1:
        total = int(tl.sum())
        if targets.shape[0] != total:
            raise RuntimeError(_check(
                f"Expected tensor to have size {total} at dimension 0, but got size "
                f"{targets.shape[0]} for argument #2 'targets'"))
        start = 0
        for b in range(batch):
            table[b, :tl[b]] = targets[start:start + tl[b]]
            start += tl[b]
    else:
        if batch and targets.shape[1] < longest:
            raise RuntimeError(_check(
                f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                f"{targets.shape[1]} for argument #2 'targets'"))
        table[:, :longest] = targets[:, :longest]
    return table


def _alpha_beta(lp: np.ndarray, ext: np.ndarray, il: np.ndarray, tl: np.ndarray,
                blank: int, need_beta: bool) -> tuple:
    """log alpha and (optionally) log beta, both (T, N, S), and the per-sample nll (N,)."""
    steps, batch, _ = lp.shape
    s_len = ext.shape[1]
    rows = np.arange(batch)[:, None]
    emit = lp[:, rows, ext]  # (T, N, S): log_probs of each extended label
    # the skip over a blank: allowed onto a label different from the one two before
    skip = np.zeros_like(ext, dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    pos = np.arange(s_len)[None, :]
    valid = pos < (2 * tl + 1)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        alpha = np.full((steps, batch, s_len), _NEG_INF, dtype=lp.dtype)
        if steps:
            alpha[0, :, 0] = emit[0, :, 0]
            if s_len > 1:
                alpha[0, :, 1] = np.where(tl > 0, emit[0, :, 1], _NEG_INF)
        for t in range(1, steps):
            prev = alpha[t - 1]
            acc = prev.copy()
            acc[:, 1:] = np.logaddexp(acc[:, 1:], prev[:, :-1])
            two = np.full_like(prev, _NEG_INF)
            two[:, 2:] = prev[:, :-2]
            acc = np.where(skip, np.logaddexp(acc, two), acc)
            alpha[t] = np.where(valid, acc + emit[t], _NEG_INF)
        last = np.clip(il - 1, 0, None)
        b_idx = np.arange(batch)
        end_blank = alpha[last, b_idx, 2 * tl]
        end_label = np.where(tl > 0, alpha[last, b_idx, np.clip(2 * tl - 1, 0, None)], _NEG_INF)
        nll = -np.logaddexp(end_blank, end_label)
        nll = np.where(il > 0, nll, np.where(tl > 0, np.inf, 0.0)).astype(lp.dtype)
        if not need_beta:
            return alpha, None, nll
        beta = np.full((steps, batch, s_len), _NEG_INF, dtype=lp.dtype)
        skip_back = np.zeros_like(skip)  # from s + 2 onto s: the skip allowed at s + 2
        skip_back[:, :-2] = skip[:, 2:]
        for t in range(steps - 1, -1, -1):
            start = np.full((batch, s_len), _NEG_INF, dtype=lp.dtype)
            start[b_idx, 2 * tl] = emit[t, b_idx, 2 * tl]
            lab = np.clip(2 * tl - 1, 0, None)
            start[b_idx, lab] = np.where(tl > 0, emit[t, b_idx, lab], start[b_idx, lab])
            if t + 1 < steps:
                nxt = beta[t + 1]
                acc = nxt.copy()
                acc[:, :-1] = np.logaddexp(acc[:, :-1], nxt[:, 1:])
                two = np.full_like(nxt, _NEG_INF)
                two[:, :-2] = nxt[:, 2:]
                acc = np.where(skip_back, np.logaddexp(acc, two), acc)
                rec = np.where(valid, acc + emit[t], _NEG_INF)
            else:
                rec = np.full_like(start, _NEG_INF)
            here = (t == il - 1)[:, None]
            before = (t < il - 1)[:, None]
            beta[t] = np.where(here, start, np.where(before, rec, _NEG_INF))
    return alpha, beta, nll


def _ctc_grad(lp: np.ndarray, ext: np.ndarray, il: np.ndarray, tl: np.ndarray, blank: int,
              zero_infinity: bool) -> np.ndarray:
    alpha, beta, nll = _alpha_beta(lp, ext, il, tl, blank, need_beta=True)
    steps, batch, classes = lp.shape
    with np.errstate(invalid="ignore", over="ignore"):
        ab = alpha + beta
        lcab = np.full(lp.shape, _NEG_INF, dtype=lp.dtype)
        rows = np.arange(batch)
        for s in range(ext.shape[1]):
            cls = ext[:, s]
            lcab[:, rows, cls] = np.logaddexp(lcab[:, rows, cls], ab[:, :, s])
        grad = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
    inside = np.arange(steps)[:, None] < il[None, :]
    grad = np.where(inside[:, :, None], grad, 0.0)
    if zero_infinity:
        grad = np.where(np.isinf(nll)[None, :, None], 0.0, grad)
    return grad.astype(lp.dtype, copy=False)


def _np(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _prepare(lp: np.ndarray, targets: np.ndarray, il: np.ndarray, tl: np.ndarray,
             blank: int) -> np.ndarray:
    """Checks the values as torch does and returns the extended targets (N, 2 * S + 1)."""
    steps, batch, _ = lp.shape
    il = il.astype(np.int64).reshape(-1)
    tl = tl.astype(np.int64).reshape(-1)
    for b in range(batch):
        if il[b] > steps:
            raise RuntimeError(_check(
                f"Expected input_lengths to have value at most {steps}, but got value {il[b]}"))
        if il[b] < 0 or tl[b] < 0:
            raise RuntimeError(_check("Expected input_lengths and target_lengths to be "
                                      "non-negative"))
    table = _targets_table(targets.astype(np.int64), tl, batch)
    ext = np.full((batch, 2 * table.shape[1] + 1), blank, dtype=np.int64)
    ext[:, 1::2] = np.where(np.arange(table.shape[1])[None, :] < tl[:, None], table, blank)
    return ext


class _CtcLoss(Function):
    """The per-sample losses; targets and lengths are (non-differentiable) tensor inputs, so a
    ``jit``-traced call reads their values on every call."""

    @staticmethod
    def forward(ctx, log_probs: Tensor, targets: Tensor, il: Tensor, tl: Tensor,  # noqa: ANN001
                blank: int, zero_infinity: bool) -> Tensor:
        lp = _np(log_probs)
        il_a, tl_a = _np(il).astype(np.int64), _np(tl).astype(np.int64)
        ext = _prepare(lp, _np(targets), il_a, tl_a, blank)
        _, _, nll = _alpha_beta(lp, ext, il_a, tl_a, blank, need_beta=False)
        ctx.save_for_backward(log_probs, targets, il, tl)
        ctx.blank = blank
        ctx.zero_infinity = zero_infinity
        return tensor(nll, dtype=log_probs.dtype, device=log_probs.device)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        log_probs, targets, il, tl = ctx.saved_tensors
        with no_grad():
            lp = _np(log_probs)
            il_a, tl_a = _np(il).astype(np.int64), _np(tl).astype(np.int64)
            ext = _prepare(lp, _np(targets), il_a, tl_a, ctx.blank)
            g = _ctc_grad(lp, ext, il_a, tl_a, ctx.blank, ctx.zero_infinity)
            go = _np(grad).reshape(1, -1, 1)
            out = tensor(g * go, dtype=log_probs.dtype, device=log_probs.device)
        # (with create_graph, the gradient depends on log_probs and the incoming gradient
        # through torch's _ctc_loss_backward, which has no derivative: its node, as torch's)
        return record_draws(_CTC_BACKWARD, (grad, log_probs), out), None, None, None, None, None


_CTC_BACKWARD = unimplemented_node("ctc_loss_backward_result", "_ctc_loss_backward", 2)
_CtcLoss._backward_cls.__name__ = "CtcLossBackward0"
_CtcLoss._backward_cls.__qualname__ = "CtcLossBackward0"


def _length_tensor(lengths: Tensor | Sequence[int] | int, name: str) -> Tensor:
    if isinstance(lengths, Tensor):
        return lengths.reshape(-1)
    if isinstance(lengths, (int, np.integer)):
        raise TypeError(f"ctc_loss(): argument '{name}' must be tuple of ints or Tensor, not "
                        f"{type(lengths).__name__}")
    return tensor(np.asarray(list(lengths), dtype=np.int64).reshape(-1))


def _pad_concatenated(targets: Tensor, lengths: list[int]) -> Tensor:
    """Concatenated 1-D targets with static lengths as the padded (N, longest) table, by a
    gather (so a ``jit`` trace does not read the targets' values)."""
    total = sum(lengths)
    if targets.shape[0] != total:
        raise RuntimeError(_check(
            f"Expected tensor to have size {total} at dimension 0, but got size "
            f"{targets.shape[0]} for argument #2 'targets'"))
    longest = max(max(lengths, default=0), 1)
    starts = np.cumsum([0] + lengths[:-1])
    pos = starts[:, None] + np.arange(longest)[None, :]
    valid = np.arange(longest)[None, :] < np.asarray(lengths)[:, None]
    if total == 0:
        return targets.new_zeros((len(lengths), longest))
    idx = tensor(np.where(valid, pos, 0).reshape(-1), device=targets.device)
    return targets.index_select(0, idx).reshape(len(lengths), longest)


@autocast_policy(FP32)
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """The Connectionist Temporal Classification loss (torch.nn.functional.ctc_loss).

    Args:
        log_probs: ``(T, N, C)`` (or unbatched ``(T, C)``) log-probabilities, e.g. the output
            of ``log_softmax``.
        targets: ``(N, S)`` padded targets, or the ``(sum(target_lengths),)`` concatenation.
        input_lengths: the ``N`` input lengths (a tensor or a sequence of ints), each ``<= T``.
        target_lengths: the ``N`` target lengths.
        blank: the blank label.
        reduction: ``'none'`` (per-sample losses), ``'sum'`` or ``'mean'`` (each loss divided
            by its target length, then averaged over the batch).
        zero_infinity: zero the infinite losses (inputs too short to align) and their
            gradients.

    Returns:
        The loss.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    lp_t = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp_t.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be 2-D (unbatched) or 3-D, but got "
                           f"{log_probs.ndim}-D")
    if not lp_t.dtype.is_floating_point:
        raise RuntimeError(f'"ctc_loss_cpu" not implemented for '
                           f"'{str(lp_t.dtype).replace('jitgrad.', '').capitalize()}'")
    steps, batch, classes = lp_t.shape
    il = _length_tensor(input_lengths, "input_lengths")
    tl = _length_tensor(target_lengths, "target_lengths")
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    if il.shape[0] != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    tg = targets.reshape(1, -1) if unbatched else targets
    if tg.ndim == 1 and not isinstance(target_lengths, Tensor):
        tg = _pad_concatenated(tg, [int(n) for n in target_lengths])
    losses = _CtcLoss.apply(lp_t, tg, il, tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        losses = where(losses == float("inf"), 0.0, losses)
    if reduction == "mean":
        return (losses / tl.to(device=losses.device, dtype=losses.dtype).clamp_min(1)).mean()
    if reduction == "sum":
        return losses.sum()
    return losses.squeeze(0) if unbatched else losses
