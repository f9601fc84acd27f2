"""``SparseAdam``: torch's lazy Adam for sparse gradients.

torch's ``SparseAdam`` only accepts sparse gradients (``Embedding(sparse=True)``) and raises
for a dense one. jitgrad has no sparse tensors (``Embedding(sparse=True)`` is refused), so
every gradient is dense and ``step`` raises torch's error, as torch does for a dense gradient;
the constructor checks its arguments as torch's does. Use ``Adam`` instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam on the non-zero entries of sparse gradients (torch.optim.SparseAdam).

    Args:
        params: parameters or param-group dicts (dense, real).
        lr: learning rate (> 0). Default: 1e-3.
        betas: the running averages' coefficients.
        eps: added to the denominator (> 0). Default: 1e-8.
        maximize: maximize the objective.
    """

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
        for p in group["params"]:
            if p.grad is not None:  # never sparse in jitgrad
                raise RuntimeError("SparseAdam does not support dense gradients, please "
                                   "consider Adam instead")
