"""``jitgrad.functional``: the functions torch keeps in ``torch.functional`` (each is also
``jitgrad.<name>``), so ``import torch.functional as F`` with ``F.einsum`` or ``F.meshgrid``
runs. As in torch, ``F`` here is ``jitgrad.nn.functional``; torch's ``pca_lowrank`` and
``svd_lowrank`` are not in jitgrad.
"""

import jitgrad
import jitgrad.nn.functional as F  # noqa: F401 - (torch.functional.F, as torch's module has it)

atleast_1d = jitgrad.atleast_1d
atleast_2d = jitgrad.atleast_2d
atleast_3d = jitgrad.atleast_3d
broadcast_shapes = jitgrad.broadcast_shapes
broadcast_tensors = jitgrad.broadcast_tensors
cartesian_prod = jitgrad.cartesian_prod
block_diag = jitgrad.block_diag
cdist = jitgrad.cdist
chain_matmul = jitgrad.chain_matmul
einsum = jitgrad.einsum
istft = jitgrad.istft
lu = jitgrad.lu
norm = jitgrad.norm
meshgrid = jitgrad.meshgrid
split = jitgrad.split
stft = jitgrad.stft
tensordot = jitgrad.tensordot
unique = jitgrad.unique
unique_consecutive = jitgrad.unique_consecutive
unravel_index = jitgrad.unravel_index

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu",
           "norm", "meshgrid", "split", "stft", "tensordot", "unique", "unique_consecutive",
           "unravel_index"]
