"""``torch.fx.passes.shape_prop``: run a ``GraphModule`` on example inputs and record each
node's tensor shape and dtype in ``node.meta['tensor_meta']``."""

from __future__ import annotations

from typing import Any, NamedTuple

import jitgrad

from ..interpreter import Interpreter
from ..node import Node, map_aggregate


class TensorMetadata(NamedTuple):
    """What ``ShapeProp`` records about a tensor value."""

    shape: jitgrad.Size
    dtype: jitgrad.dtype
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result: jitgrad.Tensor) -> TensorMetadata:
    memory_format = None
    for fmt in (jitgrad.contiguous_format, jitgrad.channels_last,
                jitgrad.channels_last_3d):
        try:
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
        except (RuntimeError, TypeError, ValueError):
            continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad,
                          tuple(result.stride()), memory_format, False, {})


class ShapeProp(Interpreter):
    """Runs the module's graph on example inputs (``propagate(*args)``) and stores, on each
    node whose value is a tensor (or holds tensors), ``meta['tensor_meta']`` (a
    ``TensorMetadata``, or the same structure of them) and ``meta['type']``."""

    def __init__(self, gm: Any, fake_mode: Any = None) -> None:
        super().__init__(gm)

    def run_node(self, n: Node) -> Any:
        """Runs ``n`` and records its value's metadata."""
        result = super().run_node(n)
        found_tensor = False

        def extract(obj: Any) -> Any:
            nonlocal found_tensor
            if isinstance(obj, jitgrad.Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Runs the graph on ``args``, recording metadata; returns the result."""
        return super().run(*args)
