"""Errors raised while tracing: reading a traced tensor's values, and unsupported patterns.

Inside ``@jitgrad.jit`` a tensor argument is a *tracer*: it has a shape and a dtype but no
data, because the function is run once per input signature to record its operations. Anything
that needs the numbers themselves (``if x.sum() > 0``, ``float(x)``, ``x.item()``, a boolean
mask whose result shape depends on the data) cannot be recorded; it raises
``ConcretizationError`` naming the user's file and line, like JAX's concretization error.
"""

from __future__ import annotations

import linecache
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class ConcretizationError(RuntimeError):
    """A traced function needed the value of a tensor, which is unknown while tracing."""


class JitTraceError(RuntimeError):
    """A traced function did something the tracer cannot record faithfully."""


class DisabledCallError(JitTraceError):
    """A trace reached a function marked ``torch.compiler.disable``: ``compile`` then runs the
    whole function eagerly, silently (even with ``fullgraph=True``, as torch runs it)."""


class OutOfMemoryError(RuntimeError):
    """Exception raised when device is out of memory"""  # (torch's text, as its __doc__)


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device"""


# (torch.OutOfMemoryError and torch.AcceleratorError name their module torch)
OutOfMemoryError.__module__ = AcceleratorError.__module__ = "jitgrad"


# The file name of the code the __torch_function__ protocol puts into public functions once it
# is live (jitgrad.overrides compiles it from a string): jitgrad's own frames, not the user's.
TRAMPOLINE_FILE = "<jitgrad.overrides trampoline>"


def _ours(filename: str) -> bool:
    return filename == TRAMPOLINE_FILE or os.path.abspath(filename).startswith(_PKG_DIR + os.sep)


def called_by_user(depth: int = 2) -> bool:
    """Whether the function ``depth - 1`` frames below the caller of this one was called from
    outside jitgrad (past jitgrad's argument wrappers, ``dtypes.WRAPPER_CODES``), not by
    jitgrad's own code."""
    from .dtypes import WRAPPER_CODES

    f = sys._getframe(depth)
    while f is not None and (f.f_code in WRAPPER_CODES or f.f_code.co_filename == TRAMPOLINE_FILE):
        f = f.f_back
    return f is not None and not _ours(f.f_code.co_filename)


def user_frame(depth: int = 2):
    """The first stack frame outside the jitgrad package (the user's code), or None."""
    f = sys._getframe(depth)
    while f is not None:
        if not _ours(f.f_code.co_filename):
            return f
        f = f.f_back
    return None


def user_stacklevel(depth: int = 2) -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called ``depth - 1`` frames below the
    caller of this function, name the user's line, however many jitgrad frames (a method, an
    ``out=`` wrapper, an in-place wrapper) lie between: as torch's C++ warnings do."""
    f, level = sys._getframe(depth), depth
    while f is not None and _ours(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


def user_location(depth: int = 2) -> tuple[str, str]:
    """(``"file.py:12"``, the source text of that line) for the user's current line."""
    f = user_frame(depth + 1)
    if f is None:
        return "<unknown>", ""
    filename, lineno = f.f_code.co_filename, f.f_lineno
    text = linecache.getline(filename, lineno).strip()
    return f"{os.path.basename(filename)}:{lineno}", text


def _where(depth: int) -> str:
    f = user_frame(depth + 1)
    if f is None:
        return "in the traced function"
    filename, lineno = f.f_code.co_filename, f.f_lineno
    text = linecache.getline(filename, lineno).strip()
    return f"at {filename}:{lineno}" + (f" (`{text}`)" if text else "")


_FIX = (
    "Inside @jitgrad.jit, tensor arguments are abstract tracers (shape and dtype, no values): "
    "the function is traced once per input signature and replayed for new values. Fixes: pass a "
    "value that control flow depends on as a non-tensor (static) argument, e.g. a Python number "
    "or bool, or mark a tensor argument static with jit(fn, static_argnums=...) (static "
    "arguments are part of the cache key, by value); or stage the control flow: "
    "jitgrad.cond(pred, true_fn, false_fn, operands) for an `if`, "
    "jitgrad.while_loop(cond_fn, body_fn, carried_inputs) for a `while`; or compute both "
    "branches and select with jitgrad.where(cond, a, b); or move the code out of the jitted "
    "function.")


def concretization_error(what: str, tracer=None) -> ConcretizationError:
    """The error for ``what`` (e.g. ``"bool()"``) reading the value of a traced tensor."""
    desc = ""
    if tracer is not None:
        from .dtypes import type_str

        desc = f" of type {type_str(tracer.shape, tracer.dtype)}"
    return ConcretizationError(
        f"{what} needs the value of a traced tensor{desc} {_where(2)}.\n{_FIX}")


def stale_read_error() -> ConcretizationError:
    """The error for reading (``item()``, ``tolist()``) a captured tensor that the trace wrote
    in place: its new value exists only when the compiled program runs."""
    return ConcretizationError(
        f"reading the value of a tensor that this trace wrote in place {_where(2)}: the write "
        "runs only when the compiled function runs, so the value is unknown while tracing (an "
        "optimizer's step counter read by step() is such a case). Read it outside the jitted "
        "function, or pass the tensor as an argument.")


def data_dependent_shape_error(what: str) -> ConcretizationError:
    """The error for an op whose output shape depends on data (boolean-mask indexing)."""
    return ConcretizationError(
        f"{what} gives a result whose shape depends on the tensor's values, which is unknown "
        f"while tracing, {_where(2)}.\nUse jitgrad.where(mask, x, 0) (or masked_fill) to keep "
        "the shape static, or move the code out of the jitted function.")


def trace_error(message: str) -> JitTraceError:
    """A ``JitTraceError`` whose text ends with the user's line."""
    return JitTraceError(f"{message} ({_where(2)})")
