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

Inside a layer too, no module imports itself back: ``test_no_import_cycle`` searches the whole
package's import graph for cycles (its docstring gives the rule) and prints each cycle's
modules with the import lines that close it.
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
              "jitgrad._config", "jitgrad._hooks", "jitgrad._version", "jitgrad.version",
              "jitgrad._size",
              "jitgrad._numba_load", "jitgrad._threads", "jitgrad._malloc", "jitgrad._blas_threads",
              "jitgrad._deterministic", "jitgrad._sym", "jitgrad._logging", "jitgrad._np_errors",
              "jitgrad.errors",
              "jitgrad.ops._shape", "jitgrad.ops._special", "jitgrad.ops.saved_names",
              "jitgrad.ops.op_fields", "jitgrad.ops.opdef", "jitgrad.ops.autocast_cast",
              "jitgrad.ops.dtype_rules",
              "jitgrad.ops.memory_formats"]),  # (NumPy layouts; the engine lays .grad out)
    ("registry", ["jitgrad.ops.registry", "jitgrad.ops.vjp_apply", "jitgrad.ops.op_observers",
                  "jitgrad._torch_function"]),  # (the __torch_function__ protocol's core)
    ("tensor", ["jitgrad.tensor", "jitgrad._views", "jitgrad._data", "jitgrad._tensor_str",
                "jitgrad._legacy", "jitgrad._meta", "jitgrad._type_info",
                "jitgrad._runtime_switches"]),
    # (the eager engine traces VJP rules into NumPy programs with what the jit is built on)
    ("trace", ["jitgrad._ir", "jitgrad._tracer", "jitgrad._interpret", "jitgrad._pycode"]),
    ("graph", ["jitgrad.autograd.node", "jitgrad.autograd.engine", "jitgrad.autograd.op_node",
               "jitgrad.autograd.saved_values", "jitgrad.autograd.grad_mode",
               "jitgrad.autograd.anomaly", "jitgrad.autograd.graph",
               "jitgrad.autograd.rule_programs", "jitgrad.autograd._decorator",
               "jitgrad._runtime_flags"]),
    ("ops", ["jitgrad.ops", "jitgrad.random", "jitgrad._generator", "jitgrad._torch_stream"]),
    # (autograd.function: custom Functions, built on the graph, with forward-mode AD rules)
    ("api", ["jitgrad.autograd", "jitgrad.nn", "jitgrad.optim",
             "jitgrad.linalg", "jitgrad.serialization", "jitgrad.cuda", "jitgrad.utils",
             "jitgrad.viz", "jitgrad.distributed", "jitgrad.testing", "jitgrad.special",
             "jitgrad.accelerator", "jitgrad.amp", "jitgrad.cpu", "jitgrad.multiprocessing",
             "jitgrad.special24", "jitgrad.profiler",
             "jitgrad.fft", "jitgrad._nn_aliases",  # (torch.conv2d ...: on nn, served lazily)
             "jitgrad._aten_nn", "jitgrad._aten_rnn",  # (torch.kl_div, lstm ...: the same)
             "jitgrad._lowrank", "jitgrad._lobpcg", "jitgrad._lobpcg_backward",
             "jitgrad.sparse", "jitgrad.types", "jitgrad.storage", "jitgrad.futures",
             "jitgrad.hub", "jitgrad.overrides", "jitgrad._C",
             "jitgrad._foreach_ops",  # (torch._foreach_*: ops over lists, with linalg's norm)
             "jitgrad.return_types"]),
    ("jit_ir", ["jitgrad.jit.passes", "jitgrad.jit.staging", "jitgrad.jit.custom_function",
                "jitgrad.jit.sweep", "jitgrad.jit.control_flow"]),
    ("backends", ["jitgrad.backends"]),
    # (torch.func transforms trace with the jit; _dynamo.reset clears torch.compile's caches)
    ("jit", ["jitgrad.jit", "jitgrad.func", "jitgrad._dynamo", "jitgrad.compiler"]),
    ("tools", ["jitgrad.cache"]),  # python -m jitgrad.cache: the kernel cache's command line
    ("package", [ROOT]),  # jitgrad/__init__.py: imports the layers below and wires their slots
    # (written against the public API, ``import jitgrad``; loaded on first use of the name)
    ("public_api_clients", ["jitgrad.distributions", "jitgrad.signal", "jitgrad.library",
                            "jitgrad.functional", "jitgrad.quasirandom", "jitgrad.fx",
                            # (flex attention falls back to jitgrad.func.vmap)
                            "jitgrad.nn.attention.flex_attention",
                            "jitgrad.nn.attention._flex_block_mask",
                            "jitgrad.nn.attention._flex_math"]),
]

# Upward imports that remain (importer -> imported). Each would be a cycle between layers held
# together by a function-level import or a late-bound slot; remove an entry when it is fixed.
KNOWN_UPWARD: set = set()


def _modules(pkg_dir: str = PKG_DIR) -> dict[str, str]:
    """Dotted module name -> file, for every module of the package at ``pkg_dir`` (a package is
    named by its ``__init__``)."""
    out = {}
    for dirpath, _, files in os.walk(pkg_dir):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(pkg_dir))[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def _type_checking_only(tree: ast.AST) -> set:
    """The import nodes under ``if TYPE_CHECKING:`` (never run)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


def import_sites(pkg_dir: str = PKG_DIR) -> dict[str, dict[str, list]]:
    """Module -> {imported module of the same package -> [(line number, import statement)]}
    for every import anywhere in the module's body (function-level too), relative imports
    resolved; ``from P import name`` imports the submodule ``P.name`` when there is one, else
    ``P`` itself (its ``__init__``). Imports under ``if TYPE_CHECKING:`` are left out."""
    mods = _modules(pkg_dir)
    root = os.path.basename(pkg_dir)

    def ours(name: str) -> bool:
        return name == root or name.startswith(root + ".")

    sites: dict[str, dict[str, list]] = {}
    for mod, path in mods.items():
        parts = mod.split(".")
        package = parts if path.endswith("__init__.py") else parts[:-1]
        with open(path) as f:
            tree = ast.parse(f.read())
        skip = _type_checking_only(tree)
        found: dict[str, list] = {}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if ours(a.name)]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    full = ".".join(base + ([node.module] if node.module else []))
                else:
                    full = node.module or ""
                if ours(full):
                    targets = [f"{full}.{a.name}" if f"{full}.{a.name}" in mods else full
                               for a in node.names]
            line = (node.lineno, ast.unparse(node)) if targets else None
            for t in targets:
                if t in mods and t != mod and line not in found.setdefault(t, []):
                    found[t].append(line)
        sites[mod] = found
    return sites


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, set]:
    """Module -> the jitgrad modules it imports anywhere in its body (function-level too)."""
    return {mod: set(found) for mod, found in import_sites().items()}


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


# ---------------------------------------------------------------- no import cycle anywhere


def cycle_graph(sites: dict[str, dict[str, list]]) -> dict[str, set]:
    """The import graph the cycle test searches (the rule of ``test_no_import_cycle``): every
    import of ``import_sites``, less the imports of a package's ``__init__`` by a module inside
    that package (``from . import grad`` in ``autograd/_gradcheck_jacobian.py``)."""
    return {mod: {t for t in found if not mod.startswith(t + ".")}
            for mod, found in sites.items()}


def find_cycles(graph: dict[str, set]) -> list[list[str]]:
    """One cycle (a list of modules, each importing the next, the last the first) for every
    strongly connected component of ``graph`` with more than one module (Tarjan's algorithm,
    iterative), in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set = set()
    comps = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(comp)
    return sorted((_a_cycle_in(graph, comp) for comp in comps), key=lambda c: c[0])


def _a_cycle_in(graph: dict[str, set], comp: set) -> list[str]:
    """A shortest cycle through the first module of a strongly connected component."""
    first = min(comp)
    came_from = {first: None}
    queue = [first]
    for v in queue:
        for w in sorted(graph[v] & comp):
            if w == first:
                path = [v]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if w not in came_from:
                came_from[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {first} in {sorted(comp)}")


def describe_cycles(cycles: list[list[str]], sites: dict[str, dict[str, list]]) -> str:
    """Each cycle's modules and, for every step, the import lines that make it."""
    out = []
    for cycle in cycles:
        out.append("import cycle: " + " -> ".join(cycle + cycle[:1]))
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            for lineno, text in sites[a][b]:
                out.append(f"  {a} -> {b}: {a.replace('.', '/')}.py:{lineno}: {text}")
    return "\n".join(out)


def test_no_import_cycle():
    """No module of jitgrad imports itself back through other modules.

    The rule: the nodes are jitgrad's modules, a package being its ``__init__``. Every
    ``import``/``from ... import`` anywhere in a module (function-level too) is an edge, relative
    imports resolved; ``from P import name`` is an edge to the submodule ``P.name`` when there is
    one (so a package's ``__init__`` importing its submodules, which take their siblings with
    ``from . import x``, is no cycle: the edges go to ``x``, not to the ``__init__``), else to
    ``P``'s ``__init__``. Not edges: imports under ``if TYPE_CHECKING:`` (never run); the parent
    packages Python initializes on the way to a submodule (``from jitgrad.ops.registry import
    apply`` depends on ``registry`` only); and a module's import of a name from a package that
    contains it (``from . import grad`` in ``autograd/_gradcheck_jacobian.py``, ``grad`` being
    defined in ``autograd/__init__.py``): Python has begun the package's ``__init__`` before
    any module inside it runs, so such an import reads the package's front door (had it run at
    module level before the name existed, ``import jitgrad`` itself would fail). These are the
    circles farm-studio's ``look`` counts (it draws the last kind as an arrow back up).

    On failure the message names each cycle's modules and the import lines that close it.
    """
    sites = import_sites()
    cycles = find_cycles(cycle_graph(sites))
    assert not cycles, ("import cycles (move what the modules share down into a module that "
                        "imports none of them):\n" + describe_cycles(cycles, sites))


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set(), "e": {"f"}, "f": {"e", "a"},
             "g": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"], ["e", "f"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # a long cycle inside a component with a shortcut: the shortest one through its first module
    assert find_cycles({"a": {"b"}, "b": {"c", "a"}, "c": {"a"}}) == [["a", "b"]]


def test_the_cycle_test_fails_on_a_new_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import low, top\nfrom .sub import one\n")
    (pkg / "low.py").write_text("X = 1\n")
    (pkg / "top.py").write_text("from .low import X\n")
    (pkg / "sub" / "__init__.py").write_text("from . import one, two\nNAME = 1\n")
    # siblings through their package, the package's own name, a TYPE_CHECKING import: no cycle
    (pkg / "sub" / "one.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import two\n\n"
        "def f():\n    from . import NAME\n    return NAME\n\n"
        "if TYPE_CHECKING:\n    from .. import top\n")
    (pkg / "sub" / "two.py").write_text("import pkg.low\n")
    sites = import_sites(str(pkg))
    assert sites["pkg.sub.one"] == {"pkg.sub.two": [(2, "from . import two")],
                                    "pkg.sub": [(5, "from . import NAME")]}
    assert find_cycles(cycle_graph(sites)) == []
    # a function-level import back up closes a cycle: found, with both import lines
    (pkg / "low.py").write_text("X = 1\n\n\ndef g():\n    from .sub.two import Y\n")
    sites = import_sites(str(pkg))
    cycles = find_cycles(cycle_graph(sites))
    assert cycles == [["pkg.low", "pkg.sub.two"]]
    text = describe_cycles(cycles, sites)
    assert "pkg/low.py:5: from .sub.two import Y" in text
    assert "pkg/sub/two.py:1: import pkg.low" in text
