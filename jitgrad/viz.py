"""``jitgrad.viz``: draw the backward graph of a tensor as Graphviz DOT (in torchviz's style).

``make_dot(y)`` walks ``y.grad_fn`` and its ``next_functions`` and returns a ``DotGraph``: a
``str`` holding the DOT text, with ``render(path, format)`` to run Graphviz's ``dot`` program
when it is installed. Colours follow torchviz: the output tensor is green, leaf tensors
(behind their ``AccumulateGrad`` node) are light blue, saved tensors (``show_saved``) orange.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .tensor import Tensor

__all__ = ["DotGraph", "make_dot", "render"]

_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg", "gif", "ps", "eps", "dot", "json")


class DotGraph(str):
    """Graphviz DOT source (a ``str``) that can render itself with the ``dot`` program."""

    @property
    def source(self) -> str:
        """The DOT text (as ``graphviz.Digraph.source``)."""
        return str(self)

    def render(self, path: str | Path, format: str = "svg") -> Path:  # noqa: A002
        """Renders to ``path`` in ``format``; see :func:`render`."""
        return render(self, path, format)

    def _repr_svg_(self) -> str | None:
        if shutil.which("dot") is None:
            return None
        return _run_dot(str(self), "svg").decode()


def _run_dot(source: str, fmt: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "rendering needs the Graphviz 'dot' program, which was not found on PATH; install "
            "Graphviz (e.g. `apt-get install graphviz` or `conda install graphviz`), or use the "
            "DOT text itself (str(graph)) with any Graphviz viewer")
    proc = subprocess.run([exe, f"-T{fmt}"], input=source.encode(), capture_output=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed (exit {proc.returncode}): {proc.stderr.decode().strip()}")
    return proc.stdout


def render(graph: str, path: str | Path, format: str = "svg") -> Path:  # noqa: A002
    """Writes ``graph`` (DOT text) rendered by Graphviz's ``dot`` to ``path``.

    Args:
        graph: DOT source, e.g. the result of :func:`make_dot`.
        path: the output file; written as given.
        format: an output format of ``dot`` ("svg", "png", "pdf", ...).

    Returns:
        The output path.

    Raises:
        ValueError: for an unknown format.
        RuntimeError: when the ``dot`` program is not installed, or fails.
    """
    if format not in _FORMATS:
        raise ValueError(f"unknown format {format!r}; expected one of {', '.join(_FORMATS)}")
    data = str(graph).encode() if format == "dot" else _run_dot(str(graph), format)
    out = Path(path)
    out.write_bytes(data)
    return out


def _size(shape: Iterable[int]) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def _saved_size(v: Any) -> str:
    shape = v._meta.shape
    if shape is not None:
        return _size(shape)
    return "(freed)" if getattr(v, "_vc", True) is None else "(?)"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _saved_values(fn: Any) -> list[tuple[str, Any]]:
    """(name, SavedTensor) pairs a node holds: its saved inputs and saved result."""
    out = fn._saved_entries() if hasattr(fn, "_saved_entries") else []
    saved = getattr(fn, "_saved", None)
    if isinstance(saved, (list, tuple)):
        out.extend((f"saved{i}", v) for i, v in enumerate(saved) if hasattr(v, "_meta"))
    return out


def make_dot(var: Tensor | Iterable[Tensor], params: Mapping[str, Tensor] | None = None,
             show_attrs: bool = False, show_saved: bool = False) -> DotGraph:
    """The backward graph that produced ``var`` as Graphviz DOT text.

    One box per ``grad_fn`` node labelled with its ``name()`` and the shapes of the tensors it
    saved for backward; an edge from each of its ``next_functions`` to it; each leaf tensor
    that requires grad as a light-blue box (its name from ``params``, and its shape) feeding its
    ``AccumulateGrad`` node; the output tensor(s) as green boxes.

    Args:
        var: the output tensor, or a sequence of them.
        params: optional ``{name: tensor}`` (e.g. ``dict(model.named_parameters())``) to name
            the leaves.
        show_attrs: also print each node's non-tensor attributes (the op's parameters).
        show_saved: also draw each saved tensor as its own orange box (shape and dtype).

    Returns:
        A ``DotGraph`` (a ``str`` of DOT source with a ``render`` method).
    """
    if params is not None:
        if not all(isinstance(p, Tensor) for p in params.values()):
            raise TypeError("params must be a dict of {name: Tensor}")
        names = {id(v): k for k, v in params.items()}
    else:
        names = {}
    outputs = [var] if isinstance(var, Tensor) else list(var)
    lines = ["digraph {",
             '\tgraph [size="12,12"]',
             "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 "
             "shape=box style=filled]"]
    seen: set[int] = set()

    def node(key: int, label: str, color: str | None = None) -> None:
        extra = f" fillcolor={color}" if color else ""
        lines.append(f"\tn{key} [label={_quote(label)}{extra}]")

    def edge(a: int, b: int, style: str = "") -> None:
        lines.append(f"\tn{a} -> n{b}{style}")

    def var_label(t: Any, name: str | None = None) -> str:
        name = names.get(id(t), name) if name is None else name
        return (f"{name}\n {_size(t.shape)}" if name else _size(t.shape))

    def visit(fn: Any) -> None:
        stack = [fn]
        while stack:
            fn = stack.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            saved = _saved_values(fn)
            label = fn.name()
            if show_attrs and isinstance(getattr(fn, "params", None), dict):
                label += "".join(f"\n{k}: {v}" for k, v in fn.params.items())
            if saved and not show_saved:
                label += "".join(f"\n{n}: {_saved_size(v)}" for n, v in saved)
            node(id(fn), label)
            if show_saved:
                for n, v in saved:
                    node(id(v), f"{n}\n{_saved_size(v)} {v._meta.dtype}", "orange")
                    edge(id(v), id(fn), " [dir=none]")
            leaf = getattr(fn, "variable", None)
            if isinstance(leaf, Tensor):
                node(id(leaf), var_label(leaf), "lightblue")
                edge(id(leaf), id(fn))
            for nxt in getattr(fn, "next_functions", ()):
                if nxt is not None and nxt[0] is not None:
                    edge(id(nxt[0]), id(fn))
                    stack.append(nxt[0])

    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"make_dot expects Tensors, got {type(out).__name__}")
        label = var_label(out, names.get(id(out), "output" if len(outputs) == 1 else
                                        f"output {i}"))
        node(id(out), label, "darkolivegreen1")
        if out.grad_fn is not None:
            visit(out.grad_fn)
            edge(id(out.grad_fn), id(out))
    lines.append("}")
    return DotGraph("\n".join(lines) + "\n")
