"""``SparseAdam``: torch's lazy Adam for sparse gradients (``Embedding(sparse=True)``).

Only the entries of each (coalesced) gradient are updated: their moments move towards the
gradient's values and the parameter takes Adam's step there; every other entry, moments
included, stays as it is. A dense gradient is refused with torch's error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..ops.creation import zeros_like
from ..sparse import sparse_coo_tensor
from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam on the entries of sparse gradients (torch.optim.SparseAdam).

    For each parameter with a sparse gradient (coalesced, negated if ``maximize``), at its
    indices only: ``m += (1 - beta1) * (g - m)``, ``v += (1 - beta2) * (g * g - v)``, and
    ``p -= lr * sqrt(1 - beta2 ** step) / (1 - beta1 ** step) * m / (sqrt(v) + eps)``.

    Args:
        params: parameters or param-group dicts (dense, real).
        lr: learning rate (> 0). Default: 1e-3.
        betas: the running averages' coefficients.
        eps: added to the denominator (> 0). Default: 1e-8.
        maximize: maximize the objective.
    """

    _sparse_grads = True

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             f"support complex parameters")

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr = group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"]
        eps = group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if not p.grad.is_sparse:
                raise RuntimeError("SparseAdam does not support dense gradients, please "
                                   "consider Adam instead")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            grad = -p.grad if group["maximize"] else p.grad
            grad = grad.coalesce()  # (the update is not linear: one entry per index)
            values = grad._values()
            if values.numel() == 0:
                continue
            exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], state["step"]

            old_avg = exp_avg.sparse_mask(grad)._values()
            avg_update = values.sub(old_avg).mul_(1 - beta1)
            exp_avg.add_(_at(grad, avg_update))
            old_sq = exp_avg_sq.sparse_mask(grad)._values()
            sq_update = values.pow(2).sub_(old_sq).mul_(1 - beta2)
            exp_avg_sq.add_(_at(grad, sq_update))
            numer = avg_update.add_(old_avg)
            denom = sq_update.add_(old_sq).sqrt_().add_(eps)
            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            p.add_(_at(grad, -step_size * numer.div_(denom)))


def _at(grad: Any, values: Tensor) -> Any:
    """A sparse tensor with coalesced ``grad``'s indices and ``values`` (torch's ``grad.new``:
    no warning about the invariant checks)."""
    return sparse_coo_tensor(grad._indices(), values, grad.shape, check_invariants=False)
