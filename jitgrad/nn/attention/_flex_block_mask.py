"""``BlockMask``: flex attention's block-sparse mask (torch.nn.attention.flex_attention's class).

The layout is torch's (BCSR-like): for each (batch, head, query block) row, ``kv_num_blocks``
counts the key/value blocks that take part and ``kv_indices`` lists them first; the optional
``full_kv_*`` pair lists the blocks where every element takes part (``mask_mod`` is not
evaluated there); ``q_*`` are the transposes (for a backward kernel). The block bookkeeping is
NumPy on int32 tensors (it carries no gradient).
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import jitgrad
from jitgrad import Tensor

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30

_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """Returns a noop mask_mod (every position takes part)."""
    return batch.new_ones(size=(), dtype=jitgrad.bool, device=batch.device)


def _sliced_mask_mod_error(batch: Tensor, head: Tensor, token_q: Tensor,
                           token_kv: Tensor) -> Tensor:
    """The mask_mod of a sliced BlockMask: raises torch's error (use the original's)."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod."
        "\n\nIncorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(sliced_mask.mask_mod, offset)  # WRONG!"
        "\n\nCorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(base_mask.mask_mod, offset)  # Use base_mask!")


def _np(t: Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _int32(a: np.ndarray, device: Any) -> Tensor:
    return jitgrad.from_numpy(np.ascontiguousarray(a, dtype=np.int32)).to(device)


def _ordered_to_dense_np(num_blocks: np.ndarray, indices: np.ndarray, num_cols: int) -> np.ndarray:
    """(..., R) counts and (..., R, C) indices -> the (..., R, num_cols) 0/1 block grid."""
    valid = np.arange(indices.shape[-1]) < num_blocks[..., None]
    cols = np.where(valid, indices, num_cols)  # (invalid entries go to a spare column)
    dense = np.zeros(indices.shape[:-1] + (num_cols + 1,), np.int32)
    np.put_along_axis(dense, cols.astype(np.int64), 1, axis=-1)
    return dense[..., :num_cols]


def _ordered_to_dense(num_blocks: Tensor, indices: Tensor, num_cols: int) -> Tensor:
    return _int32(_ordered_to_dense_np(_np(num_blocks), _np(indices), num_cols),
                  num_blocks.device)


def _dense_to_ordered_np(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 0/1 block grid -> (counts, indices): the taking-part columns first, in order (torch's
    stable descending argsort)."""
    dense = dense.astype(np.int32)
    return (dense.sum(-1).astype(np.int32),
            np.argsort(-dense, axis=-1, kind="stable").astype(np.int32))


def _dense_to_ordered(dense: Tensor) -> tuple[Tensor, Tensor]:
    counts, indices = _dense_to_ordered_np(_np(dense))
    return _int32(counts, dense.device), _int32(indices, dense.device)


def _transpose_ordered(num_blocks: Tensor, indices: Tensor) -> tuple[Tensor, Tensor]:
    dense = _ordered_to_dense_np(_np(num_blocks), _np(indices), indices.shape[-1])
    counts, idx = _dense_to_ordered_np(np.swapaxes(dense, -2, -1))
    return _int32(counts, num_blocks.device), _int32(idx, num_blocks.device)


def _adjust_num_blocks_and_indices(num_blocks: Tensor, indices: Tensor, new_num_rows: int,
                                   new_num_cols: int) -> tuple[Tensor, Tensor]:
    idx = _np(indices)[:, :, :new_num_rows, :new_num_cols]
    nb = np.minimum(_np(num_blocks)[:, :, :new_num_rows], new_num_cols)
    nb = (idx < nb[:, :, :, None]).sum(-1)
    return _int32(nb, num_blocks.device), _int32(idx, indices.device)


class BlockMask:
    """flex attention's block-sparse mask (torch's ``BlockMask``; see the module docstring).

    Args:
        seq_lengths: (query length, key/value length).
        kv_num_blocks: (B, H, Q_BLOCKS) int32: how many key/value blocks each row has.
        kv_indices: (B, H, Q_BLOCKS, KV_BLOCKS) int32: those blocks, first in each row.
        full_kv_num_blocks, full_kv_indices: the same for the blocks where every element takes
            part (or both ``None``).
        q_num_blocks, q_indices, full_q_num_blocks, full_q_indices: the transposes.
        BLOCK_SIZE: (query block size, key/value block size).
        mask_mod: the element mask within the partial blocks.
        dq_write_order, dq_write_order_full, dq_kv_order, dq_kv_order_spt: torch's metadata for
            a deterministic GPU backward, kept as given (jitgrad does not use it).
    """

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices",
                     "dq_write_order", "dq_write_order_full", "dq_kv_order"]
    _CONTEXT_ATTRS = ["seq_lengths", "BLOCK_SIZE", "mask_mod", "dq_kv_order_spt"]

    def __init__(self, seq_lengths: tuple[int, int], kv_num_blocks: Tensor, kv_indices: Tensor,
                 full_kv_num_blocks: Tensor | None, full_kv_indices: Tensor | None,
                 q_num_blocks: Tensor | None, q_indices: Tensor | None,
                 full_q_num_blocks: Tensor | None, full_q_indices: Tensor | None,
                 BLOCK_SIZE: tuple[int, int] = (_DEFAULT_SPARSE_BLOCK_SIZE,  # noqa: N803
                                                _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod: _mask_mod_signature = noop_mask, *,
                 dq_write_order: Tensor | None = None,
                 dq_write_order_full: Tensor | None = None,
                 dq_kv_order: Tensor | None = None,
                 dq_kv_order_spt: bool | None = None) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided "
                                 "or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError("full_q_num_blocks and full_q_indices must be both provided "
                                 "or omitted")
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.dq_write_order = dq_write_order
        self.dq_write_order_full = dq_write_order_full
        self.dq_kv_order = dq_kv_order
        self.dq_kv_order_spt = dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor,
                       full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None,
                       BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,  # noqa: N803
                       mask_mod: _mask_mod_signature | None = None,
                       seq_lengths: tuple[int, int] | None = None,
                       compute_q_blocks: bool = True, *,
                       dq_write_order: Tensor | None = None,
                       dq_write_order_full: Tensor | None = None,
                       dq_kv_order: Tensor | bool | None = None) -> BlockMask:
        """A BlockMask from its key/value block layout (the query-side layout is derived).

        Args:
            kv_num_blocks: (..., Q_BLOCKS) block counts per query-block row.
            kv_indices: (..., Q_BLOCKS, KV_BLOCKS) the blocks of each row.
            full_kv_num_blocks, full_kv_indices: the fully unmasked blocks (optional).
            BLOCK_SIZE: an int or (query, key/value) block sizes.
            mask_mod: the element mask of the partial blocks (default ``noop_mask``).
            seq_lengths: (query, key/value) lengths; default the blocks' extent.
            compute_q_blocks: derive the query-side (transposed) layout.
            dq_write_order, dq_write_order_full, dq_kv_order: torch's GPU-backward metadata.

        Returns:
            The BlockMask.
        """
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided "
                                 "or omitted")
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks,
                                                                       full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        mask_mod = mask_mod if mask_mod is not None else noop_mask
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        return cls(seq_lengths=seq_lengths, kv_num_blocks=kv_num_blocks, kv_indices=kv_indices,
                   full_kv_num_blocks=full_kv_num_blocks, full_kv_indices=full_kv_indices,
                   q_num_blocks=q_num_blocks, q_indices=q_indices,
                   full_q_num_blocks=full_q_num_blocks, full_q_indices=full_q_indices,
                   BLOCK_SIZE=BLOCK_SIZE, mask_mod=mask_mod, dq_write_order=dq_write_order,
                   dq_write_order_full=dq_write_order_full,
                   dq_kv_order=dq_kv_order if isinstance(dq_kv_order, Tensor) else None,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def as_tuple(self, flatten: bool = True) -> tuple[Any, ...]:
        """The attributes as a tuple (torch's order); ``flatten`` splits the (q, kv) pairs of
        ``seq_lengths`` and ``BLOCK_SIZE`` into two entries each."""
        if flatten:
            block_size: tuple = (self.BLOCK_SIZE[0], self.BLOCK_SIZE[1])
            seq_lengths: tuple = (self.seq_lengths[0], self.seq_lengths[1])
        else:
            block_size, seq_lengths = (self.BLOCK_SIZE,), (self.seq_lengths,)
        return (*seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, self.dq_write_order, self.dq_write_order_full,
                self.dq_kv_order, self.dq_kv_order_spt, *block_size, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        """(batch dims..., query length, key/value length)."""
        *batch_dims, _, _ = self.kv_indices.shape
        return tuple(batch_dims) + tuple(self.seq_lengths)

    def __str__(self) -> str:
        s = f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
        s += self.to_string().strip()
        return s + "\n)"

    def __getitem__(self, index: Any) -> BlockMask:
        """The mask of a (batch, head, query-block) index or slice; its ``mask_mod`` is reset
        (set it from the original's)."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Slicing BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        index = (index,) if not isinstance(index, tuple) else index
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes))
        full_nb = full_idx = None
        if self.full_kv_num_blocks is not None:
            full_nb, full_idx = self.full_kv_num_blocks[index], self.full_kv_indices[index]
        new = BlockMask.from_kv_blocks(self.kv_num_blocks[index], self.kv_indices[index],
                                       full_nb, full_idx, BLOCK_SIZE=self.BLOCK_SIZE,
                                       mask_mod=_sliced_mask_mod_error,
                                       seq_lengths=self.seq_lengths,
                                       compute_q_blocks=self.q_indices is not None)
        new.dq_kv_order_spt = self.dq_kv_order_spt
        return new

    def __repr__(self) -> str:
        def shape_or_none(x: Tensor | None) -> Any:
            return x.shape if x is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (f"BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
                f"    q_indices={shape_or_none(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n"
                f")")

    def _adjust(self, new_q_len: int, new_kv_len: int) -> BlockMask:
        """The mask cropped to (new_q_len, new_kv_len): its upper-left corner."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Adjusting BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]
        nb, idx = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices, rows,
                                                 cols)
        full_nb = full_idx = None
        if self.full_kv_num_blocks is not None:
            full_nb, full_idx = _adjust_num_blocks_and_indices(
                self.full_kv_num_blocks, self.full_kv_indices, rows, cols)
        new = self.from_kv_blocks(nb, idx, full_nb, full_idx, BLOCK_SIZE=self.BLOCK_SIZE,
                                  mask_mod=self.mask_mod, seq_lengths=(new_q_len, new_kv_len),
                                  compute_q_blocks=self.q_indices is not None)
        new.dq_kv_order_spt = self.dq_kv_order_spt
        return new

    def numel(self) -> int:
        """The number of elements of the mask (not counting sparsity)."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self) -> float:
        """The percentage of blocks that are sparse (not computed); negative when the lengths
        are not multiples of the block size (torch counts whole blocks)."""
        computed = int(_np(self.kv_num_blocks).sum())
        if self.full_kv_num_blocks is not None:
            computed += int(_np(self.full_kv_num_blocks).sum())
        computed_size = computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def to_dense(self) -> Tensor:
        """The (..., Q_BLOCKS, KV_BLOCKS) int32 0/1 grid of the blocks that take part."""
        dense = _ordered_to_dense_np(_np(self.kv_num_blocks), _np(self.kv_indices),
                                     self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense_np(_np(self.full_kv_num_blocks),
                                                 _np(self.full_kv_indices),
                                                 self.full_kv_indices.shape[-1])
        return _int32(dense, self.kv_num_blocks.device)

    def to_string(self, grid_size: int | tuple[int, int] = (20, 20), limit: int = 4) -> str:
        """A picture of the block grid per (batch, head): full cells ``██``, partly computed
        ``░░``, sparse ``  ``; ``grid_size=-1`` prints every block.

        Args:
            grid_size: the most (rows, columns) drawn; blocks are summarized to fit.
            limit: the most (batch, head) pictures.
        """
        dense = _np(self.to_dense())
        *batch_dims, num_rows, num_cols = dense.shape
        if isinstance(grid_size, int) and grid_size == -1:
            max_rows, max_cols = num_rows, num_cols
        elif isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        else:
            max_rows, max_cols = grid_size

        def cdiv(a: int, b: int) -> int:
            return (a + (b - 1)) // b

        def summarize(section: np.ndarray) -> str:
            frac = section.astype(np.float32).mean()
            return "█" if frac == 1 else " " if frac == 0 else "░"

        def create_block_vis(*batch_idx: int) -> str:
            vis = f"{batch_idx}\n"
            row_step = max(1, cdiv(num_rows, max_rows))
            col_step = max(1, cdiv(num_cols, max_cols))
            cur = dense[batch_idx]
            for r in range(0, num_rows, row_step):
                for c in range(0, num_cols, col_step):
                    vis += summarize(cur[r:r + row_step, c:c + col_step]) * 2
                vis += "\n"
            return vis

        total_vis = []
        for i, batch_idx in enumerate(itertools.product(*[range(n) for n in batch_dims])):
            if i == limit:
                total_vis.append("...")
                total_vis.append("To print out more, set BlockMask.to_string(limit=N)")
                total_vis.append("You can also index (BlockMask[batch, head]) to choose a "
                                 "specific batch or head")
                break
            total_vis.append(create_block_vis(*batch_idx))
        return "\n".join(total_vis)

    def to(self, device: Any) -> BlockMask:
        """A BlockMask with its tensors on ``device``."""
        moved = {a: (getattr(self, a).to(device) if getattr(self, a) is not None else None)
                 for a in self._TENSOR_ATTRS}
        return BlockMask(seq_lengths=self.seq_lengths, **moved, BLOCK_SIZE=self.BLOCK_SIZE,
                         mask_mod=self.mask_mod, dq_kv_order_spt=self.dq_kv_order_spt)

    def _element_mask(self, q_len: int, kv_len: int) -> tuple[Tensor, Tensor | None]:
        """The block layout at element level: (partial, full) bool tensors of shape
        (B, H, q_len, kv_len) (``full`` is None without full blocks)."""
        qb, kvb = self.BLOCK_SIZE

        def expand(nb: Tensor, idx: Tensor) -> Tensor:
            dense = _ordered_to_dense_np(_np(nb), _np(idx), idx.shape[-1]).astype(bool)
            while dense.ndim < 4:
                dense = dense[None]
            el = np.repeat(np.repeat(dense, qb, axis=-2), kvb, axis=-1)[..., :q_len, :kv_len]
            return jitgrad.from_numpy(np.ascontiguousarray(el)).to(self.kv_num_blocks.device)

        partial = expand(self.kv_num_blocks, self.kv_indices)
        full = None
        if self.full_kv_num_blocks is not None:
            full = expand(self.full_kv_num_blocks, self.full_kv_indices)
        return partial, full
