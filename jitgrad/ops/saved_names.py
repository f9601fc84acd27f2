"""torch's names for what a node saved: ``grad_fn._saved_<name>`` and ``_raw_saved_<name>``.

``SAVED_NAMES[op name]`` maps each torch name to where the value lives in a jitgrad node:

* ``("input", i)``: the op's input ``i`` (a saved tensor, or a number argument);
* ``("output", k)``: output ``k`` (``_saved_result`` is output 0; ``_saved_indices`` of sort,
  topk and max(dim) is output 1, recomputed from the saved input as the VJP does);
* ``("param", name)``: a param of the op call (``_saved_dim``, ``_saved_keepdim``, ...);
* ``("sizes", i)`` / ``("numel", i)``: input ``i``'s shape as a tuple / element count;
* ``("const", value)``: a value torch saves that jitgrad's op fixes (``_saved_alpha`` of add,
  whose alpha jitgrad applies with a separate mul).

Ops not listed get the default: saved input 0 is ``self``, saved input 1 is ``other``, and a
saved output is ``result`` (which covers mul, div, exp, log, sin, tanh, sigmoid, ...).
"""

from __future__ import annotations

_SELF = ("input", 0)
_RESULT = ("output", 0)
_SIZES = ("sizes", 0)

SAVED_NAMES: dict[str, dict[str, tuple]] = {
    "add": {"alpha": ("const", 1)},
    "sub": {"alpha": ("const", 1)},
    "pow_scalar": {"self": _SELF, "exponent": ("param", "exponent")},
    "pow": {"self": _SELF, "exponent": ("input", 1), "result": _RESULT},
    "rpow": {"self": ("param", "base"), "exponent": _SELF, "result": _RESULT},
    "sum": {"self_sym_sizes": _SIZES},
    "sum_dim": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                "self_sym_sizes": _SIZES},
    "mean": {"self_sym_sizes": _SIZES, "self_sym_numel": ("numel", 0)},
    "mean_dim": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                 "self_sym_sizes": _SIZES, "self_sym_numel": ("numel", 0)},
    "prod": {"self": _SELF, "result": _RESULT},
    "prod_dim": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"), "self": _SELF,
                 "result": _RESULT},
    "amax": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"), "self": _SELF,
             "result": _RESULT},
    "amin": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"), "self": _SELF,
             "result": _RESULT},
    "max_all": {"self": _SELF, "result": _RESULT},
    "min_all": {"self": _SELF, "result": _RESULT},
    "max_dim": {"dim": ("param", "dim"), "keepdim": ("param", "keepdim"),
                "indices": ("output", 1), "self_sym_sizes": _SIZES},
    "min_dim": {"dim": ("param", "dim"), "keepdim": ("param", "keepdim"),
                "indices": ("output", 1), "self_sym_sizes": _SIZES},
    "mm": {"self": _SELF, "mat2": ("input", 1), "self_sym_sizes": _SIZES,
           "mat2_sym_sizes": ("sizes", 1)},
    "bmm": {"self": _SELF, "mat2": ("input", 1)},
    "mv": {"self": _SELF, "vec": ("input", 1)},
    "dot": {"self": _SELF, "tensor": ("input", 1)},
    "addmm": {"mat1": ("input", 1), "mat2": ("input", 2), "alpha": ("const", 1),
              "beta": ("const", 1), "mat1_sym_sizes": ("sizes", 1),
              "mat2_sym_sizes": ("sizes", 2)},
    "clamp": {"self": _SELF, "min": ("param", "min"), "max": ("param", "max")},
    "softmax": {"dim": ("param", "dim"), "result": _RESULT},
    "log_softmax": {"dim": ("param", "dim"), "result": _RESULT},
    "logsumexp": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"), "self": _SELF,
                  "result": _RESULT},
    "var": {"dim": ("param", "dims"), "correction": ("param", "correction"),
            "keepdim": ("param", "keepdim"), "self": _SELF},
    "std": {"dim": ("param", "dims"), "correction": ("param", "correction"),
            "keepdim": ("param", "keepdim"), "self": _SELF, "result": _RESULT},
    "where": {"condition": _SELF},
    "permute": {"dims": ("param", "dims")},
    "transpose": {"dim0": ("param", "dim0"), "dim1": ("param", "dim1")},
    "view": {"self_sym_sizes": _SIZES},
    "expand": {"self_sym_sizes": _SIZES},
    "select": {"dim": ("param", "dim"), "index": ("param", "index"), "self_sym_sizes": _SIZES},
    "gather": {"dim": ("param", "dim"), "index": ("input", 1)},  # (jitgrad saves no self)
    "index_select": {"dim": ("param", "dim"), "index": ("input", 1), "self_sym_sizes": _SIZES},
    "scatter_add": {"dim": ("param", "dim"), "index": ("input", 1)},
    "index_add": {"dim": ("param", "dim"), "index": ("input", 1)},
    "gelu": {"approximate": ("param", "approximate"), "self": _SELF},
    # issue 15's ops
    "cumsum": {"dim": ("param", "dim")},
    "cumprod": {"dim": ("param", "dim"), "self": _SELF, "result": _RESULT},
    "sort": {"dim": ("param", "dim"), "indices": ("output", 1), "self_sym_sizes": _SIZES},
    "topk": {"dim": ("param", "dim"), "indices": ("output", 1), "self_sym_sizes": _SIZES},
    "linalg_vector_norm": {"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                           "ord": ("param", "ord"), "self": _SELF, "result": _RESULT},
    "tril": {"diagonal": ("param", "diagonal")},
    "triu": {"diagonal": ("param", "diagonal")},
    "masked_fill": {"mask": ("input", 1)},
    "masked_fill_tensor": {"mask": ("input", 1)},
    "masked_select": {"mask": ("input", 1), "self_sym_sizes": _SIZES},
    "masked_scatter": {"mask": ("input", 1), "source_sym_sizes": ("sizes", 2)},
    "scatter": {"dim": ("param", "dim"), "index": ("input", 1)},
    "scatter_value": {"dim": ("param", "dim"), "index": ("input", 1)},
    "round_decimals": {"decimals": ("param", "decimals")},
}


def saved_names(op) -> dict[str, tuple]:
    """torch's saved names for ``op`` (an ``OpDef``) and where each value lives."""
    table = SAVED_NAMES.get(op.name)
    if table is not None:
        return table
    out: dict[str, tuple] = {}
    for i in op.save:
        if i in (0, 1):
            out[("self", "other")[i]] = ("input", i)
    if op.save_output:
        out["result"] = _RESULT
    return out
