"""The package imports one way: every module belongs to a layer, and a module imports only from
its own layer or the layers below it (module-level and function-level imports alike).

The layers, bottom-up: base (dtypes, device, config, errors), the dispatch registry, tensor
data, tracing (the IR, the tracer, a graph run on arrays: shared by the eager engine's rule
programs and the jit), the autograd graph, the ops, the APIs built on them
(``autograd.functional``, ``gradcheck``, ``nn``, ``optim``, ``func``, ...), the jit's passes,
the backends, the jit's driver, and on top the package's ``__init__``, which assembles them (it
also plugs the backends' CUDA runtime into ``device``). ``KNOWN_UPWARD`` lists the upward
imports that remain (none today); the test fails on a new one (a new cycle between layers) and
on an entry that is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
import functools
import os

import jitgrad

PKG_DIR = os.path.dirname(jitgrad.__file__)
ROOT = "jitgrad"  # (as a prefix in LAYERS, the package's __init__ names only itself)

# (layer, module prefixes), bottom-up; the longest matching prefix decides
LAYERS = [
    ("base", ["jitgrad.dtypes", "jitgrad.device", "jitgrad._cuda_array", "jitgrad._dlpack",
              "jitgrad._config", "jitgrad._hooks", "jitgrad._version",
              "jitgrad.errors",
              "jitgrad.ops._shape", "jitgrad.ops._special", "jitgrad.ops.saved_names",
              "jitgrad.ops.op_fields"]),
    ("registry", ["jitgrad.ops.registry"]),
    ("tensor", ["jitgrad.tensor", "jitgrad._data", "jitgrad._tensor_str", "jitgrad._legacy"]),
    # (the eager engine traces VJP rules into NumPy programs with what the jit is built on)
    ("trace", ["jitgrad._ir", "jitgrad._tracer", "jitgrad._interpret", "jitgrad._pycode"]),
    ("graph", ["jitgrad.autograd.node", "jitgrad.autograd.engine", "jitgrad.autograd.op_node",
               "jitgrad.autograd.saved_values", "jitgrad.autograd.grad_mode",
               "jitgrad.autograd.anomaly", "jitgrad.autograd.graph",
               "jitgrad.autograd.rule_programs", "jitgrad.autograd._decorator"]),
    ("ops", ["jitgrad.ops", "jitgrad.random", "jitgrad._generator"]),
    # (autograd.function: custom Functions, built on the graph, with forward-mode AD rules)
    ("api", ["jitgrad.autograd", "jitgrad.nn", "jitgrad.optim",
             "jitgrad.linalg", "jitgrad.serialization", "jitgrad.cuda", "jitgrad.utils",
             "jitgrad.viz", "jitgrad.distributed"]),
    ("jit_ir", ["jitgrad.jit.passes", "jitgrad.jit.trace", "jitgrad.jit.custom_function",
                "jitgrad.jit.sweep"]),
    ("backends", ["jitgrad.backends"]),
    ("jit", ["jitgrad.jit", "jitgrad.func"]),  # (torch.func transforms trace with the jit)
    ("tools", ["jitgrad.cache"]),  # python -m jitgrad.cache: the kernel cache's command line
    ("package", [ROOT]),  # jitgrad/__init__.py: imports the layers below and wires their slots
]

# Upward imports that remain (importer -> imported). Each would be a cycle between layers held
# together by a function-level import or a late-bound slot; remove an entry when it is fixed.
KNOWN_UPWARD: set = set()


def _modules() -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(PKG_DIR):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(PKG_DIR))[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, set]:
    """Module -> the jitgrad modules it imports anywhere in its body (function-level too)."""
    mods = _modules()
    edges = {}
    for mod, path in mods.items():
        parts = mod.split(".")
        package = parts if path.endswith("__init__.py") else parts[:-1]
        found = set()
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("jitgrad"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    full = ".".join(base + ([node.module] if node.module else []))
                else:
                    full = node.module or ""
                if not full.startswith("jitgrad"):
                    continue
                for a in node.names:
                    sub = f"{full}.{a.name}"
                    found.add(sub if sub in mods else full)
        edges[mod] = {m for m in found if m in mods and m != mod}
    return edges


def layer_of(mod: str) -> int:
    best, level = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or p != ROOT and mod.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    assert level is not None, f"{mod} is in no layer: add it to LAYERS"
    return level


def upward_imports() -> set:
    graph = import_graph()
    return {(a, b) for a, targets in graph.items() for b in targets
            if layer_of(b) > layer_of(a)}


def test_every_module_has_a_layer():
    for mod in import_graph():
        layer_of(mod)


def test_no_new_upward_import():
    new = sorted(upward_imports() - KNOWN_UPWARD)
    assert not new, ("imports from a lower layer into a higher one (a cycle between layers): "
                     f"{new}; move what both need down a layer")


def test_known_upward_imports_are_still_there():
    gone = sorted(KNOWN_UPWARD - upward_imports())
    assert not gone, f"fixed: remove these from KNOWN_UPWARD: {gone}"


def test_the_fixed_cycles_stay_fixed():
    graph = import_graph()
    # ops import no jit module; the interpreter backend no autograd API
    for mod, targets in graph.items():
        if mod.startswith("jitgrad.ops"):
            assert not any(t.startswith("jitgrad.jit") for t in targets), (mod, targets)
    assert not any(t.startswith("jitgrad.autograd") for t in graph["jitgrad.backends.interpreter"])
    assert "jitgrad.jit.errors" not in graph
    # tensor data reaches the graph and the factories through slots set from above; the base
    # layer's device reaches the CUDA runtime through jitgrad.cuda's plug-in
    for mod in ("jitgrad.tensor", "jitgrad._legacy", "jitgrad._tensor_str", "jitgrad._data"):
        assert not any(t.startswith(("jitgrad.autograd", "jitgrad.ops.creation"))
                       for t in graph[mod]), (mod, graph[mod])
    assert not any(t.startswith("jitgrad.backends") for t in graph["jitgrad.device"])
    assert not any(t.startswith("jitgrad.backends") for t in graph["jitgrad.cuda"])
    # the eager engine's rule programs trace with the core tracer, not the jit's
    assert not any(t.startswith(("jitgrad.jit", "jitgrad.backends"))
                   for t in graph["jitgrad.autograd.rule_programs"])
    # the ops' public surface imports no op module (the op modules import it)
    assert not any(t.startswith("jitgrad.ops.") and t != "jitgrad.ops.registry"
                   for t in graph["jitgrad.ops.surface"]), graph["jitgrad.ops.surface"]


def test_the_slots_are_filled_by_importing_jitgrad():
    from jitgrad.autograd.node import AccumulateGrad
    from jitgrad.device import RUNTIME_LOADERS
    from jitgrad.ops import registry
    from jitgrad.tensor import Tensor, _make, graph

    assert graph.AccumulateGrad is AccumulateGrad
    assert graph.backward is jitgrad.autograd.backward
    assert registry.make is _make and registry.Tensor is Tensor
    assert callable(RUNTIME_LOADERS["cuda"])


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    # rule_programs imports the node module (for its FREED message) inside a function
    assert "jitgrad.autograd.node" in graph["jitgrad.autograd.rule_programs"]
