"""``Lowered``: what ``JitFunction.lower`` returns, the forward and backward IR of one
specialization and the kernels its backend made of them, with a roofline report."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ir import Graph


class Lowered:
    """What ``JitFunction.lower`` returns: the forward and backward IR and the kernels."""

    def __init__(self, fwd: Graph, bwd: Graph | None, backend: Any,
                 arrays: list | None = None) -> None:
        self.forward_graph, self.backward_graph = fwd, bwd
        self._backend, self._arrays = backend, arrays
        names = fwd.names()
        self.forward_ir = fwd.format(names=names)
        self.backward_ir = bwd.format(names=names) \
            if bwd is not None else None
        self.kernels = {"forward": backend.render(fwd)}
        if bwd is not None:
            self.kernels["backward"] = backend.render(bwd)

    def roofline(self) -> str:
        """Runs the compiled forward (and backward, with a cotangent of ones) on the arguments
        ``lower`` was given, and reports each kernel's time, bytes moved and share of the
        measured copy bandwidth. Only backends that fuse (``numba``) have kernels to report."""
        measure = getattr(self._backend, "roofline", None)
        if measure is None:
            return "(this backend compiles no kernels)"
        fwd, bwd = self.forward_graph, self.backward_graph
        parts = ["# forward", measure(fwd, self._arrays)]
        if bwd is not None:
            outs = self._backend.compile(fwd)(list(self._arrays))
            n_res = fwd.n_saved
            residuals = outs[len(outs) - n_res:] if n_res else []
            tangents = [np.ones(v.shape, v.dtype.np) for v in bwd.invars[n_res:]]
            parts += ["# backward", measure(bwd, list(residuals) + tangents)]
        return "\n".join(parts)

    def __str__(self) -> str:
        parts = ["# forward IR", self.forward_ir, "# backward IR",
                 self.backward_ir if self.backward_ir is not None
                 else "(none: no input requires grad, or grad mode is off)"]
        for name, src in self.kernels.items():
            parts += [f"# kernel {name}", src]
        return "\n".join(parts)

    __repr__ = __str__
