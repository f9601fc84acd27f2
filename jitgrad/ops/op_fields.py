"""The values an ``OpDef``'s fields take: op kinds, dtype categories, ``SAVE_ALL``, ``Public``
(where an op appears in the public API), ``no_derivative`` and ``ReduceTemplate`` (how a
compiled backend folds a reduction). Plain data, below the registry; ``ops.registry``
re-exports the constants."""

from __future__ import annotations

POINTWISE, REDUCE, MOVEMENT, OPAQUE = "pointwise", "reduce", "movement", "opaque"

# How a pointwise op's result dtype follows from its inputs (torch's categories):
SAME = "same"  # promoted dtype of the inputs (add, mul, maximum, ...)
FLOAT = "float"  # promoted dtype, integers and bool become the default float (exp, div, ...)
BOOL = "bool"  # computed in the promoted dtype, returns bool (eq, lt, ...)


# How a view was made when torch forbids changing it in place (``Tensor._view_creation``; None:
# it may be). ``OpDef.view`` is True or MULTI_OUTPUT_VIEW (split/unbind: torch's multi-output
# views); a view made under no_grad or inference_mode is NO_GRAD_VIEW or INFERENCE_VIEW, and a
# view of such a view inherits its kind (torch's CreationMeta).
NO_GRAD_VIEW, INFERENCE_VIEW, MULTI_OUTPUT_VIEW = "no_grad", "inference", "multi_output"


# ``OpDef.autocast``: how autocast casts an op's floating inputs (``ops.autocast_policy``)
AUTOCAST_LOWER = "lower"  # to the autocast's lower-precision dtype (mm, conv, ...)
AUTOCAST_FP32 = "fp32"  # to float32 (losses, reductions that lose precision, ...)


class _SaveAll:
    """``save=SAVE_ALL``: every input is saved (a backward that may read any of them)."""

    def __contains__(self, i: object) -> bool:
        return True

    def __iter__(self):
        return iter(())

    def __repr__(self) -> str:
        return "SAVE_ALL"


SAVE_ALL = _SaveAll()


class Public:
    """Where an op (or a plain function built on ops) appears in the public API.

    Args:
        names: the function names in ``jitgrad`` (``jitgrad.exp``), aliases included.
        method: the ``Tensor`` method names (``x.exp()``); True: the same as ``names``.
        inplace: the in-place ``Tensor`` method names (``x.exp_()``), run through
            ``ops.inplace.inplace`` with the out-of-place function; True: the first method
            name with ``_`` appended.
        functional: the ``jitgrad.nn.functional`` names.
        args: for an op's generated function, the names of its positional operands.
        params: for an op's generated function, its keyword parameters and their defaults
            (passed to the op as params).
        doc: the generated function's docstring.
    """

    __slots__ = ("names", "method", "inplace", "functional", "args", "params", "doc")

    def __init__(self, names=(), method=(), inplace=(), functional=(), *, args=("input",),
                 params=None, doc=None) -> None:
        self.names = _names(names)
        self.method = self.names if method is True else _names(method)
        self.inplace = (self.method[0] + "_",) if inplace is True else _names(inplace)
        self.functional = _names(functional)
        self.args = tuple(args)
        self.params = dict(params or {})
        self.doc = doc

    def __repr__(self) -> str:
        return (f"Public(names={self.names}, method={self.method}, inplace={self.inplace}, "
                f"functional={self.functional})")


class ReduceTemplate:
    """How a compiled backend folds a reduction op (the ``template`` of a REDUCE op).

    Args:
        identity: the accumulator's start: a number, or ``"-inf"``/``"inf"`` for the lowest or
            highest value of the accumulator's dtype (``-inf`` for floats, ``iinfo.min`` for
            integers, ``False`` for bool).
        combine: the new accumulator from the accumulator ``{acc}`` and an element ``{0}``.
        final: the result from the accumulator and the reduced count ``{n}``.
        widen: accumulate floats in float64 and integers in int64, as eager NumPy does
            (sum, mean, prod); False keeps the result's dtype (max, min).
        additive: ``combine`` is addition, so partial results of blocks (or threads) may be
            added together.
    """

    __slots__ = ("identity", "combine", "final", "widen", "additive")

    def __init__(self, identity: str, combine: str, final: str = "{acc}", *,
                 widen: bool = True, additive: bool = False) -> None:
        self.identity, self.combine, self.final = identity, combine, final
        self.widen, self.additive = widen, additive

    def __repr__(self) -> str:
        return (f"ReduceTemplate(identity={self.identity!r}, combine={self.combine!r}, "
                f"final={self.final!r}, widen={self.widen}, additive={self.additive})")


def _names(x) -> tuple:
    return () if x is False else (x,) if isinstance(x, str) else tuple(x)


def no_derivative(name: str):
    """A ``vjp``/``jvp`` for an op torch does not differentiate: it raises torch's "the
    derivative for '<name>' is not implemented." when a backward (or forward AD) reaches it."""
    def rule(*args, **params):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
    return rule
