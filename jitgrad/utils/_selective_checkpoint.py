"""Selective activation checkpointing (torch's SAC): a non-reentrant checkpoint whose
recomputation reuses the outputs of the ops a policy chose to save.

``create_selective_checkpoint_contexts(policy)`` gives ``checkpoint(context_fn=...)`` its two
contexts. Under the forward's, each op's computation (watched through ``ops.op_observers``)
asks the policy about the op (``aten.<name>.default``, a ``jitgrad.ops.aten`` key), and keeps
its output when the answer is a ``*_SAVE`` (or ``*_CPU_OFFLOAD``, kept as is: jitgrad's tensors
live on the host); under the recomputation's, the n-th call of each op hands back what its
n-th forward call kept, or computes again. Outputs are kept, not copied, as torch keeps them:
a cached output changed in place afterwards is read changed (torch checks its version and
refuses unless ``allow_cache_entry_mutation``; jitgrad's observers see arrays, which carry no
version).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtypes import from_numpy_dtype
from ..ops import registry
from ..ops.aten_namespace import ATEN, OpOverload, OpOverloadPacket, op_key
from ..ops.op_observers import observe_ops

__all__ = ["SAC_IGNORED_OPS", "CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """Whether an op's output is saved in the forward (``*_SAVE``) or recomputed
    (``*_RECOMPUTE``); ``MUST_*`` and ``PREFER_*`` differ only to a compiler."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVED = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
          CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)


class SelectiveCheckpointContext:
    """What the policy is told besides the op: ``is_recompute`` (always False: the policy is
    asked in the forward only) and ``op_output``."""

    def __init__(self, *, is_recompute: bool, op_output: Any = None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


# ops a policy is not asked about (torch's: their counts differ between the forward and the
# recomputation)
SAC_IGNORED_OPS = {ATEN.key("detach").default}

_RECOMPUTE = object()
_CONSUMED = object()
_MISMATCH = ("This can happen if the operations in the checkpointed region are "
             "nondeterministic or depend on global state that changed between forward and "
             "backward.")


def _as_tensors(values: tuple) -> tuple:
    """The arrays an op's impl got, as tensors (what the policy is handed, as torch's)."""
    out = []
    for v in values:
        if type(v) is np.ndarray:
            v = registry.make(v, from_numpy_dtype(v.dtype))
        out.append(v)
    return tuple(out)


class _Watching:
    """A context that installs an op observer for its extent (``wrap(op, impl) -> impl``)."""

    def __init__(self) -> None:
        self._remove: Callable | None = None
        self.counts: dict = defaultdict(int)

    def __enter__(self) -> _Watching:
        self.counts.clear()
        self._remove = observe_ops(self._wrap)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None

    def _wrap(self, op: Any, impl: Callable) -> Callable:
        raise NotImplementedError


class _Caching(_Watching):
    """The forward's context: asks the policy about each op, keeps what it says to save."""

    def __init__(self, policy_fn: Callable, storage: dict) -> None:
        super().__init__()
        self.policy_fn = policy_fn
        self.storage = storage

    def _wrap(self, op: Any, impl: Callable) -> Callable:
        if op_key(op) in SAC_IGNORED_OPS:
            return impl

        def run(*args: Any, **params: Any) -> Any:
            out = impl(*args, **params)
            key = op_key(op, args)
            index = self.counts[key]
            self.counts[key] += 1
            policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                    key, *_as_tensors(args), **params)
            if isinstance(policy, bool):  # (torch's older policies answer True to save)
                policy = CheckpointPolicy.MUST_SAVE if policy else \
                    CheckpointPolicy.PREFER_RECOMPUTE
            self.storage[key][index] = out if policy in _SAVED else _RECOMPUTE
            return out
        return run


class _Cached(_Watching):
    """The recomputation's context: the kept outputs instead of computing them again."""

    def __init__(self, storage: dict, allow_cache_entry_mutation: bool) -> None:
        super().__init__()
        self.storage = storage
        self.allow_cache_entry_mutation = allow_cache_entry_mutation

    def _wrap(self, op: Any, impl: Callable) -> Callable:
        if op_key(op) in SAC_IGNORED_OPS:
            return impl

        def run(*args: Any, **params: Any) -> Any:
            key = op_key(op, args)
            index = self.counts[key]
            self.counts[key] += 1
            kept = self.storage.get(key)
            if kept is None:
                raise RuntimeError(f"{key} encountered during backward but not found in "
                                   f"storage. {_MISMATCH}")
            entry = kept.get(index)
            if entry is None:
                raise RuntimeError(f"{key} invocation index {index} encountered during "
                                   f"backward but not found in storage. {_MISMATCH}")
            if entry is _CONSUMED:
                raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                                   "backward once on any region computed under selective "
                                   "activation checkpoint.")
            if entry is _RECOMPUTE:
                return impl(*args, **params)
            kept[index] = _CONSUMED
            return entry
        return run


def create_selective_checkpoint_contexts(policy_fn_or_list: Any,
                                         allow_cache_entry_mutation: bool = False
                                         ) -> tuple[Any, Any]:
    """The two contexts of a selective checkpoint (pass
    ``functools.partial(create_selective_checkpoint_contexts, policy)`` as ``checkpoint``'s
    ``context_fn``, with ``use_reentrant=False``).

    Args:
        policy_fn_or_list: ``policy(ctx, op, *args, **kwargs) -> CheckpointPolicy`` (or a bool:
            True saves), asked about each op of the forward (``op`` is an ``OpOverload`` such
            as ``jitgrad.ops.aten.mm.default``); or a list of ``OpOverload`` to save, the rest
            recomputed.
        allow_cache_entry_mutation: accepted as torch's (see the module's note: a kept output
            changed in place is read changed either way).

    Returns:
        The forward's context and the recomputation's.
    """
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                extra = ("Please update the OpOverloadPacket to a specific OpOverload.For "
                         "example, if you have `torch.ops.aten.mm`, change it to "
                         "`torch.ops.aten.mm.default`.") \
                    if isinstance(op, OpOverloadPacket) else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. {extra}")
        saved = list(policy_fn_or_list)

        def policy_fn(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
            return CheckpointPolicy.MUST_SAVE if op in saved else \
                CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict = defaultdict(dict)
    return _Caching(policy_fn, storage), _Cached(storage, allow_cache_entry_mutation)
