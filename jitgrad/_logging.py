"""``jitgrad._logging.set_logs``: torch's switch for its compiler logs, on jitgrad's topics.

jitgrad logs what ``JITGRAD_LOG`` names (``recompiles``, ``cache``); ``set_logs`` turns the
same topics on from Python: ``recompiles`` (or ``recompiles_verbose``) prints why a jit or
compiled function traces again, as ``TORCH_LOGS=recompiles`` does. torch's other components
and artifacts are accepted (a script that sets them runs) and log nothing here.
"""

from __future__ import annotations

from typing import Any

from . import _config

__all__ = ["set_logs"]

# torch 2.13's keyword arguments of set_logs, in its order
_COMPONENTS = ("all", "dynamo", "aot", "autograd", "dynamic", "inductor", "distributed", "c10d",
               "ddp", "fsdp", "dtensor", "onnx")
_ARTIFACTS = ("bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
              "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards",
              "recompiles", "recompiles_verbose", "trace_source", "trace_call",
              "trace_bytecode", "output_code", "kernel_code", "schedule", "perf_hints",
              "pre_grad_graphs", "post_grad_graphs", "ir_pre_fusion", "ir_post_fusion",
              "onnx_diagnostics", "fusion", "overlap", "export", "modules", "cudagraphs",
              "sym_node", "compiled_autograd", "compiled_autograd_verbose",
              "cudagraph_static_inputs", "benchmarking", "autotuning", "incremental",
              "graph_region_expansion", "inductor_metrics", "hierarchical_compile",
              "compute_dependencies", "caching")
# (torch artifact -> jitgrad topic)
_TOPICS = {"recompiles": "recompiles", "recompiles_verbose": "recompiles"}


def set_logs(**kwargs: Any) -> None:
    """Sets which logs print, as ``torch._logging.set_logs``; a call replaces the previous
    settings (``set_logs()`` turns everything off again).

    Args:
        **kwargs: torch's components (``dynamo=logging.DEBUG``, ...) and artifacts
            (``recompiles=True``, ...). ``recompiles`` and ``recompiles_verbose`` turn on
            jitgrad's ``recompiles`` topic; the others are accepted and log nothing.

    Raises:
        TypeError: for a keyword torch's ``set_logs`` does not take.
    """
    for name in kwargs:
        if name not in _COMPONENTS and name not in _ARTIFACTS:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{name}'")
    _config.LOG_TOPICS.clear()
    _config.LOG_TOPICS.update(topic for name, topic in _TOPICS.items() if kwargs.get(name))
