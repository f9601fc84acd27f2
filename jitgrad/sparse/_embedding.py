"""``embedding(..., sparse=True)``: the weight's gradient as a sparse COO tensor.

torch's layout: one entry per looked-up index (in the order of ``input``, those equal to
``padding_idx`` left out), each the gradient row of that lookup; not coalesced, so repeated
indices stay repeated until something coalesces them. ``EmbeddingBag(sparse=True)`` gets the
same through ``embedding``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.nn_ops2 import EMBEDDING, _embedding_impl, _embedding_meta
from ..ops import registry
from ..ops.registry import Tensor
from ._ops import _index, _op, from_values, run
from ._storage import COO


def _sparse_grad(g: Tensor, ans: Any, weight: Any, indices: Any, padding_idx: int,
                 scale_grad_by_freq: bool) -> Any:
    """The sparse gradient w.r.t. ``weight``: ``g``'s rows at the looked-up indices."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    n, dim = weight.shape
    flat = np.asarray(indices._data).reshape(-1).astype(np.int64)
    rows = g.reshape(-1, dim)
    if padding_idx >= 0:
        keep = np.flatnonzero(flat != padding_idx)
        if keep.size != flat.size:
            rows = rows.index_select(0, _index(keep))
            flat = flat[keep]
    placeholder = np.broadcast_to(np.zeros((), g._data.dtype), (flat.size, dim))
    return from_values(rows, COO(flat[None], placeholder, (n, dim)))


EMBEDDING_SPARSE = _op("embedding", _embedding_impl, _embedding_meta, (_sparse_grad, None),
                       save=(1,), node="EmbeddingBackward0", jvp=EMBEDDING.jvp)


def embedding_sparse(weight: Tensor, indices: Tensor, padding_idx: int,
                     scale_grad_by_freq: bool) -> Tensor:
    """``weight[indices]`` (dense), whose gradient w.r.t. ``weight`` is sparse."""
    if registry.state.traces:
        raise NotImplementedError("jitgrad.jit cannot trace embedding(..., sparse=True) (its "
                                  "weight's gradient is a sparse tensor): use sparse=False in "
                                  "the compiled function")
    return run(EMBEDDING_SPARSE, weight, indices, padding_idx=int(padding_idx),
               scale_grad_by_freq=bool(scale_grad_by_freq))
