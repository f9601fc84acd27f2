"""``torch.fx`` for jitgrad: symbolic tracing of modules and functions into a ``Graph`` of
``Node``s, ``GraphModule`` (Python code generated from a graph), ``Interpreter`` and
``Transformer``.

torch records calls of its free functions through ``__torch_function__``; jitgrad's fx does not
use that protocol (``jitgrad.overrides``), so tracing patches jitgrad's public functions for
its duration (see ``jitgrad.fx._symbolic_trace``)."""

from . import passes
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "PH", "Proxy", "TraceError",
           "Tracer", "Transformer", "map_arg", "passes", "replace_pattern", "symbolic_trace",
           "wrap"]
