"""``ZeroRedundancyOptimizer``: optimizer state sharded over the ranks (ZeRO stage 1).

torch.distributed.optim.ZeroRedundancyOptimizer's API and behaviour, over jitgrad's MPI process
group. Every rank holds all the parameters, but the parameters are partitioned over the ranks
(torch's sorted-greedy assignment, so each rank owns the parameters torch's would) and each rank
builds the wrapped optimizer over its own shard only, so it keeps only that shard's state.
``step()`` steps the local optimizer and then broadcasts every parameter from the rank that owns
it, so all replicas end the step with the same parameters. With
``parameters_as_bucket_view=True`` the trainable parameters a rank owns are views into one flat
bucket per device, and the step broadcasts one bucket per rank instead of one tensor per
parameter.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

from ...autograd.grad_mode import no_grad
from ...nn.module import _typename
from ...ops.creation import empty, zeros
from ...optim.optimizer import Optimizer
from ...tensor import Tensor
from ..collectives import broadcast
from ..process_group import GroupMember, ProcessGroup, _resolve, get_rank, get_world_size

__all__ = ["ZeroRedundancyOptimizer"]

logger = logging.getLogger(__name__)


def _partition(param_groups: list[dict[str, Any]], world_size: int) -> list[list[dict]]:
    """torch's partition: for each rank, a copy of every param group holding that rank's share.

    Group by group, the parameters are sorted by size (largest first, a stable sort) and each
    goes to the rank with the fewest elements so far (the lowest rank on a tie); the running
    sizes carry over from one group to the next.
    """
    per_rank: list[list[dict]] = [[] for _ in range(world_size)]
    sizes = [0] * world_size
    for group in param_groups:
        shares: list[list[Tensor]] = [[] for _ in range(world_size)]
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
            rank = sizes.index(min(sizes))
            shares[rank].append(p)
            sizes[rank] += p.numel()
        for rank, share in enumerate(shares):
            rank_group = copy.copy(group)
            rank_group["params"] = share
            per_rank[rank].append(rank_group)
    return per_rank


def _copy_to_device(value: Any, device: Any) -> Any:
    """New lists, tuples and dicts around ``value``'s tensors moved to ``device`` (a tensor
    already there stays the same object, as with torch's ``_recursive_copy_to_device``)."""
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        values = [_copy_to_device(v, device) for v in value]
        return values if isinstance(value, list) else tuple(values)
    if isinstance(value, Mapping):
        return {k: _copy_to_device(v, device) for k, v in value.items()}
    return value


def _sync_param_groups(src: list[dict[str, Any]], dst: list[dict[str, Any]]) -> None:
    """Copies every setting but ``params`` from each group of ``src`` to that of ``dst``."""
    if len(src) != len(dst):
        raise AssertionError("Mismatch between number of source and destination parameter groups")
    for s, d in zip(src, dst):
        for key in s:
            if key != "params":
                d[key] = s[key]


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps an optimizer class and shards its state over the ranks of a process group.

    ``torch.distributed.optim.ZeroRedundancyOptimizer``: the parameters are partitioned over the
    ranks with torch's sorted-greedy algorithm (each parameter belongs to one rank, largest
    first, to the rank with the fewest elements so far); the local optimizer ``optim`` is
    ``optimizer_class`` over this rank's share of every param group, so it holds the state of
    about ``1 / world_size`` of the parameters. ``step()`` steps it and then broadcasts each
    parameter from its owner, so every rank ends with the same parameters. Use it like any
    optimizer after a ``DistributedDataParallel`` backward (which leaves the averaged gradients
    on every rank). Construct it, and call ``step``, ``add_param_group`` and
    ``consolidate_state_dict``, on every rank: they run collectives.

    Args:
        params: an iterable of tensors, or of dicts that define param groups.
        optimizer_class: the optimizer class of each rank's shard (``jitgrad.optim.AdamW``).
        process_group: the group to shard over (default: ``group.WORLD``, the default group).
        parameters_as_bucket_view: if True, the trainable parameters each rank owns become
            views (``param.data``) into one contiguous bucket per rank and device, and
            ``step()`` broadcasts the buckets; if False, each parameter is broadcast alone and
            ``param.data`` stays intact.
        overlap_with_ddp: ``True`` (the step run from DDP communication hooks) is not supported:
            raises NotImplementedError.
        **defaults: the hyper-parameters passed to ``optimizer_class`` (``lr=...``).

    Raises:
        ValueError: the default process group is not initialized, ``params`` is empty, or the
            parameters are not all of one dense type (torch's texts).
        TypeError: ``params`` is a tensor or not an iterable of tensors or dicts.
        NotImplementedError: ``overlap_with_ddp`` is True.
    """

    def __init__(self, params: Any, optimizer_class: type[Optimizer],
                 process_group: ProcessGroup | None = None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults: Any) -> None:
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        # Optimizer.__init__ calls add_param_group, which re-partitions only once initialized
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        self._partition_parameters_cache: list[list[dict]] = []
        self._param_to_rank_cache: dict[Tensor, int] = {}
        self._param_to_index_cache: dict[Tensor, int] = {}
        self._index_to_param_cache: list[Tensor] = []
        self._device_to_params_per_rank_cache: dict[Any, list[list[Tensor]]] = {}
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device
        self.process_group = process_group if process_group is not None else GroupMember.WORLD
        self.world_size: int = get_world_size(process_group)
        self.rank: int = get_rank(process_group)
        self.global_rank: int = self.rank  # (jitgrad has one group: the default one)
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported by jitgrad: it "
                "runs the step from DistributedDataParallel communication hooks "
                "(ddp_zero_hook), which jitgrad's DDP does not have; use overlap_with_ddp=False "
                "and call step() after backward()")
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._init_local_optimizer()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets: list[list[Tensor]] = []
        self._build_param_buckets()
        self._all_state_dicts: list[dict[str, Any]] = []
        self.initialized = True

    # ------------------------------------------------------------ checks and the partition
    def _verify_and_init_params(self, params: Any) -> list:
        if isinstance(params, Tensor):
            raise TypeError("`params` argument should be an iterable of Tensors, but got "
                            + _typename(params))
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but "
                            "got " + _typename(params)) from e
        if len(all_params) == 0:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        all_tensors = all(isinstance(p, Tensor) for p in all_params)
        all_dicts = all(isinstance(p, dict) for p in all_params)
        if not all_tensors and not all_dicts:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        if all_tensors:
            self._all_params: list[Tensor] = all_params
        else:
            self._all_params = []
            for group in all_params:
                if "params" not in group:
                    raise ValueError("Each parameter group passed-in via `params` must have a "
                                     "'params' key mapping to the parameters in the group")
                self._all_params.extend(group["params"])
        return all_params

    def _verify_same_dense_param_type(self) -> None:
        typename = _typename(self._all_params[0])
        if getattr(self._all_params[0], "is_sparse", False):
            raise ValueError("ZeroRedundancyOptimizer only supports using the same dense type "
                             f"for all parameters but got {typename}")
        for p in self._all_params[1:]:
            other = _typename(p)
            if other != typename:
                raise ValueError("ZeroRedundancyOptimizer only supports using the same dense "
                                 f"type for all parameters but got both {typename} and {other}")

    def _get_is_trainable_mask(self) -> list[bool]:
        return [bool(p.requires_grad) for p in self._all_params]

    def _clear_cache(self) -> None:
        self._partition_parameters_cache.clear()
        self._param_to_rank_cache.clear()
        self._param_to_index_cache.clear()
        self._index_to_param_cache.clear()
        self._device_to_params_per_rank_cache.clear()

    def _partition_parameters(self) -> list[list[dict]]:
        """For each rank, its param groups: a copy of each group holding that rank's share."""
        if not self._partition_parameters_cache:
            self._partition_parameters_cache = _partition(self.param_groups, self.world_size)
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self) -> dict[Tensor, int]:
        """Each parameter's owner rank."""
        if not self._param_to_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for group in groups:
                    for p in group["params"]:
                        self._param_to_rank_cache[p] = rank
        return self._param_to_rank_cache

    @property
    def _param_to_index(self) -> dict[Tensor, int]:
        """Each parameter's index in the global ``state_dict`` (over the groups in order)."""
        if not self._param_to_index_cache:
            self._param_to_index_cache = {p: i for i, p in enumerate(self._index_to_param)}
        return self._param_to_index_cache

    @property
    def _index_to_param(self) -> list[Tensor]:
        if not self._index_to_param_cache:
            self._index_to_param_cache = list(
                chain.from_iterable(g["params"] for g in self.param_groups))
        return self._index_to_param_cache

    @property
    def _device_to_params_per_rank(self) -> dict[Any, list[list[Tensor]]]:
        """Device -> for each rank, the parameters it owns that live on that device."""
        if not self._device_to_params_per_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for group in groups:
                    for p in group["params"]:
                        per_rank = self._device_to_params_per_rank_cache.setdefault(
                            p.device, [[] for _ in range(self.world_size)])
                        per_rank[rank].append(p)
        return self._device_to_params_per_rank_cache

    def _build_param_buckets(self) -> None:
        """With ``parameters_as_bucket_view``: ``self._buckets[i][r]`` is one flat tensor
        holding the trainable parameters that rank ``r`` owns on device ``i``, each parameter's
        ``.data`` a view into it (a frozen parameter gets its own copy back). A rank without
        such parameters gets a one-element dummy bucket, so every rank broadcasts the same
        number of buckets. Run at construction, by ``add_param_group`` and when parameters
        change trainability."""
        if not self.parameters_as_bucket_view:
            return
        self._buckets = []
        with no_grad():
            for device, params_per_rank in self._device_to_params_per_rank.items():
                buckets = []
                for params in params_per_rank:
                    trainable = []
                    for p in params:
                        if p.requires_grad:
                            trainable.append(p)
                        else:  # (it may have been a view into an earlier bucket)
                            p.data = p.data.detach().clone()
                    numel = sum(p.numel() for p in trainable)
                    if numel == 0:
                        buckets.append(zeros(1, device=device))
                        continue
                    bucket = empty(numel, dtype=trainable[0].dtype, device=device)
                    offset = 0
                    for p in trainable:
                        end = offset + p.numel()
                        bucket[offset:end].copy_(p.data.flatten())
                        p.data = bucket[offset:end].view_as(p.data)
                        offset = end
                    buckets.append(bucket)
                self._buckets.append(buckets)

    def _init_local_optimizer(self) -> None:
        # (a list of group dicts: a rank with no parameters still gets an optimizer)
        self.optim: Optimizer = self._optim_constructor(self._partition_parameters()[self.rank],
                                                        **self._optim_defaults)
        _sync_param_groups(self.optim.param_groups, self.param_groups)

    # ------------------------------------------------------------ the public methods
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a param group and re-partitions; this rank's share joins the local optimizer.

        The parameters already there keep their owners (the new group is partitioned after
        them). Call it on every rank.

        Args:
            param_group: ``{"params": [...], <hyper-parameter>: value, ...}``.
        """
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            groups = self._partition_parameters()[self.rank]
            if len(groups) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(groups[-1])
            self._build_param_buckets()

    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """Steps the local optimizer on this rank's shard, then broadcasts every parameter
        from its owner rank, so all ranks hold the same parameters. Call it on every rank.

        Args:
            closure: re-evaluates the model and returns the loss (passed to the local step).
            **kwargs: passed to the local optimizer's ``step``.

        Returns:
            The local optimizer's return value (the closure's loss, or None).
        """
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    def _local_step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        mask = self._get_is_trainable_mask()
        if mask != self._is_trainable_mask:
            logger.warning("ZeroRedundancyOptimizer detected that the trainable parameters "
                           "changed; rebuilding the parameter buckets if enabled")
            self._build_param_buckets()
            self._is_trainable_mask = mask
        # settings changed on param_groups (an LR scheduler) reach the local optimizer
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        if closure is None:
            loss = self.optim.step(**kwargs)
        else:
            loss = self.optim.step(closure=closure, **kwargs)
        _sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def _sync_params(self) -> None:
        """Every rank broadcasts its shard: its buckets, or each of its parameters (all
        broadcasts start at once, then the step waits for them)."""
        pg = _resolve(self.process_group)
        works = []
        with no_grad():
            if self.parameters_as_bucket_view:
                for buckets in self._buckets:
                    works.extend(broadcast(bucket, src=rank, group=pg, async_op=True)
                                 for rank, bucket in enumerate(buckets))
            else:
                for rank, groups in enumerate(self._partition_parameters()):
                    for group in groups:
                        works.extend(broadcast(p.data, src=rank, group=pg, async_op=True)
                                     for p in group["params"])
        for work in works:
            work.wait()

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gathers every rank's local optimizer state on rank ``to``, for ``state_dict()``.

        Call it on every rank. Only rank ``to`` keeps the states (the others forget any
        earlier consolidation).

        Args:
            to: the rank that receives the states (default 0).
        """
        if not 0 <= int(to) < self.world_size:
            raise ValueError(f"consolidate_state_dict: invalid target rank {to} for a group of "
                             f"{self.world_size} ranks")
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        pg = _resolve(self.process_group)
        local = self.optim.state_dict()
        gathered = pg.comm.gather(None if self.rank == to else local, root=int(to))
        self._all_state_dicts = []
        if self.rank == to:
            gathered[self.rank] = local
            self._all_state_dicts = [_copy_to_device(sd, "cpu") for sd in gathered]

    def state_dict(self) -> dict[str, Any]:
        """The global optimizer state as last consolidated on this rank (torch's layout: one
        index per parameter over all groups, as a plain optimizer over every parameter has).

        Raises:
            RuntimeError: ``consolidate_state_dict`` has not gathered the state on this rank.
        """
        if len(self._all_state_dicts) == 0:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. Please call "
                f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you "
                "meant to save the global state.")
        state_dict = super().state_dict()
        for rank, local in enumerate(self._all_state_dicts):
            local_groups = local["param_groups"]
            global_groups = self._partition_parameters()[rank]
            if len(local_groups) != len(global_groups):
                raise AssertionError("Mismatch between number of local and global parameter "
                                     "groups")
            for local_group, global_group in zip(local_groups, global_groups):
                indices, params = local_group["params"], global_group["params"]
                if len(indices) != len(params):
                    raise AssertionError("Mismatch between number of local and global "
                                         "parameters in parameter group")
                for index, p in zip(indices, params):
                    if index in local["state"]:
                        state_dict["state"][self._param_to_index[p]] = local["state"][index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a global ``state_dict()``: this rank's local optimizer takes the state of the
        parameters it owns; the settings of every group go to all ranks.

        As in torch, the entries of ``state_dict["state"]`` that this rank does not own are set
        to None in the dict passed in.

        Args:
            state_dict: a dict returned by ``state_dict()`` (on any rank).
        """
        for index, value in state_dict["state"].items():
            p = self._index_to_param[index]
            if self._param_to_rank[p] != self.rank:
                state_dict["state"][index] = None
            else:
                self.optim.state[p] = _copy_to_device(value, p.device)
        super().load_state_dict(state_dict)
        _sync_param_groups(state_dict["param_groups"], self.param_groups)
        _sync_param_groups(self.param_groups, self.optim.param_groups)
