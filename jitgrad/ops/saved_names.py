"""torch's names for what a node saved: ``grad_fn._saved_<name>`` and ``_raw_saved_<name>``.

An op's ``saved_names`` field (``defop(..., saved_names={...})``) maps each torch name to where
the value lives in a jitgrad node:

* ``("input", i)``: the op's input ``i`` (a saved tensor, or a number argument);
* ``("output", k)``: output ``k`` (``_saved_result`` is output 0; ``_saved_indices`` of sort,
  topk and max(dim) is output 1, recomputed from the saved input as the VJP does);
* ``("param", name)``: a param of the op call (``_saved_dim``, ``_saved_keepdim``, ...);
* ``("sizes", i)`` / ``("numel", i)``: input ``i``'s shape as a tuple / element count;
* ``("const", value)``: a value torch saves that jitgrad's op fixes (``_saved_alpha`` of add,
  whose alpha jitgrad applies with a separate mul).

Ops without the field get the default: saved input 0 is ``self``, saved input 1 is ``other``,
and a saved output is ``result`` (which covers mul, div, exp, log, sin, tanh, sigmoid, ...).
"""

from __future__ import annotations

_RESULT = ("output", 0)


def saved_names(op) -> dict[str, tuple]:
    """torch's saved names for ``op`` (an ``OpDef``) and where each value lives."""
    if op.saved_names is not None:
        return op.saved_names
    out: dict[str, tuple] = {}
    for i in op.save:
        if i in (0, 1):
            out[("self", "other")[i]] = ("input", i)
    if op.save_output:
        out["result"] = _RESULT
    return out
