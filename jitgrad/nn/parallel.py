"""``jitgrad.nn.parallel.DistributedDataParallel``: data-parallel training over MPI ranks.

Importing this module does not import mpi4py; constructing the wrapper needs an initialized
``jitgrad.distributed`` process group.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..distributed.process_group import ProcessGroup, _resolve
from ..distributed.reducer import _FIRST_BUCKET_BYTES, Reducer
from ..ops import registry
from ..tensor import Tensor
from .module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25


def _describe(tensors: list) -> list[tuple]:
    return [(tuple(t.shape), str(t.dtype).replace("jitgrad.", "")) for t in tensors]


def _verify_same_model(pg: ProcessGroup, params: list, param_names: list[str], buffers: list,
                       buffer_names: list[str]) -> None:
    """Raises the same RuntimeError on every rank when shapes or dtypes differ between ranks.

    One small all-gather of (counts, checksum) settles the usual case; only on a mismatch are
    the full descriptions gathered, to name the parameter and the ranks.
    """
    meta = (_describe(params), _describe(buffers))
    checksum = zlib.crc32(repr(meta).encode())
    summaries = pg.comm.allgather((len(params), len(buffers), checksum))
    if all(s == summaries[0] for s in summaries):
        return
    everyone = pg.comm.allgather(meta)
    me = pg.rank()
    # Every rank reports the same pair: the first rank that differs from rank 0.
    other = next(r for r in range(pg.size()) if everyone[r] != everyone[0])
    for kind, k, names in (("params", 0, param_names), ("buffers", 1, buffer_names)):
        ref, bad = everyone[0][k], everyone[other][k]
        if len(ref) != len(bad):
            raise RuntimeError(
                f"DDP expects same model across all ranks, but Rank 0 has {len(ref)} {kind}, "
                f"while rank {other} has inconsistent {len(bad)} {kind}. (reported on rank {me})")
        for i, (a, b) in enumerate(zip(ref, bad)):
            if a != b:
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but {kind}[{i}] ({names[i]}) "
                    f"has sizes {list(b[0])} and dtype {b[1]} on rank {other}, which do not "
                    f"match sizes {list(a[0])} and dtype {a[1]} of the same {kind[:-1]} on "
                    f"rank 0. (reported on rank {me})")


def _broadcast_from_rank0(pg: ProcessGroup, tensors: list) -> None:
    """Overwrites every tensor with rank 0's values (one flat message per dtype)."""
    by_dtype: dict[Any, list] = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    for dtype in sorted(by_dtype, key=str):
        group = by_dtype[dtype]
        flat = np.concatenate([t._data.reshape(-1) for t in group])
        pg.comm.Bcast(flat, root=0)
        off = 0
        for t in group:
            n = t._data.size
            t._data[...] = flat[off:off + n].reshape(t._data.shape)
            t._vc[0] += 1
            off += n


def _tensors_in(output: Any) -> Iterator[Tensor]:
    if isinstance(output, Tensor):
        yield output
    elif isinstance(output, (list, tuple)):
        for item in output:
            yield from _tensors_in(item)
    elif isinstance(output, dict):
        for item in output.values():
            yield from _tensors_in(item)


def _reachable_leaves(output: Any) -> set[int]:
    """Ids of the leaf tensors whose gradient accumulators the outputs' graph reaches."""
    seen: set[int] = set()
    leaves: set[int] = set()
    stack = []
    for t in _tensors_in(output):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return leaves


class DistributedDataParallel(Module):
    """Data parallelism over the ranks of a process group (``torch.nn.parallel.DDP``).

    At construction the parameter shapes are compared across ranks (a clear RuntimeError on
    every rank when they differ) and rank 0's parameters and buffers are broadcast. During
    ``backward`` gradients are all-reduced in buckets of about ``bucket_cap_mb`` MiB by
    non-blocking MPI calls started from post-accumulate-grad hooks, overlapping the rest of the
    backward, and averaged over the ranks. Inside ``no_sync()`` gradients accumulate locally.

    Without ``find_unused_parameters`` every parameter that requires grad must receive a
    gradient in each synchronized backward.
    The wrapped forward may be called inside ``jitgrad.jit`` (or a jit-compiled loss used on
    its output): the reduction is driven by the hooks, which fire in compiled backwards too.

    Args:
        module: the module to replicate; every rank builds the same architecture.
        device_ids: must be None (CPU modules).
        output_device: must be None (CPU modules).
        dim: the batch dimension (kept for torch compatibility; inputs are not scattered).
        broadcast_buffers: broadcast rank 0's buffers at the start of every forward.
        init_sync: broadcast rank 0's parameters and buffers at construction (the shapes are
            compared in any case).
        process_group: the group (None: the default group).
        bucket_cap_mb: the bucket size in MiB (default 25; the first bucket is 1 MiB unless
            this is given).
        find_unused_parameters: after each forward, walk the autograd graph from the outputs
            and treat the parameters it does not reach as ready (contributing zeros), so that
            models whose forward skips parameters can train. A parameter no rank used keeps
            its ``.grad``. The walk runs in an eager forward only (a jit-replayed forward keeps
            the last eager or traced result).
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, init_sync: bool = True,
                 process_group: ProcessGroup | None = None,
                 bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False) -> None:
        super().__init__()
        pg = _resolve(process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None or output_device is not None:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                "{device(type='cpu')}.")
        self.module = module
        self.process_group = pg
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        all_named = list(module.named_parameters())
        buffers = list(module.named_buffers())
        _verify_same_model(pg, [p for _, p in all_named], [n for n, _ in all_named],
                           [b for _, b in buffers], [n for n, _ in buffers])
        if init_sync:
            _broadcast_from_rank0(pg, [p for _, p in all_named] + [b for _, b in buffers])
        cap = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * _MB)
        first = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self.find_unused_parameters = find_unused_parameters
        self.reducer = Reducer([p for _, p in named], [n for n, _ in named], pg,
                               self.bucket_bytes_cap, first)
        self.reducer.find_unused = bool(find_unused_parameters)
        self._hook_handles = [p.register_post_accumulate_grad_hook(self.reducer.mark_ready)
                              for _, p in named]

    @property
    def require_backward_grad_sync(self) -> bool:
        """Whether backwards all-reduce gradients (False inside ``no_sync()``)."""
        return self.reducer.sync_enabled

    @require_backward_grad_sync.setter
    def require_backward_grad_sync(self, value: bool) -> None:
        self.reducer.sync_enabled = bool(value)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        reducer = self.reducer
        if reducer.in_progress():
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`jitgrad.nn.parallel.DistributedDataParallel`, and by making sure all "
                "`forward` function outputs participate in calculating loss. Parameters which "
                "did not receive grad for rank "
                f"{self.process_group.rank()}: {', '.join(reducer.unready_names())}")
        reducer.reset()
        reducer.forward_sync = reducer.sync_enabled
        # Never a collective inside a jit trace: a rank that retraces alone would hang the rest.
        tracing = bool(registry.state.traces)
        if self.broadcast_buffers and self.process_group.size() > 1 and not tracing:
            buffers = [b for b in self.module.buffers()]
            if buffers:
                _broadcast_from_rank0(self.process_group, buffers)
        output = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and not tracing:
            reached = _reachable_leaves(output)
            reducer.unused = frozenset(id(p) for p in reducer.params if id(p) not in reached)
        return output

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Disables gradient all-reduce inside the block; gradients accumulate locally.

        The first synchronized backward after the block all-reduces the accumulated
        gradients. Run the forward inside the block too, as in torch.
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

from .data_parallel import DataParallel  # noqa: E402 - loss24

__all__ += ["DataParallel"]
