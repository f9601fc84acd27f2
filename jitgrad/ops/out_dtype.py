"""torch's checks of an ``out=`` tensor's dtype, function by function.

Pointwise functions (``add``, ``sin``, ...) cast their result into ``out`` where the cast is
safe; ``out_arg.write_out`` does that and refuses the rest with "result type Float can't be
cast to the desired output type Long". Many other torch kernels are stricter, each in its own
words: the structured kernels' ``resize_out`` wants exactly the result's dtype ("Expected out
tensor to have dtype float, but got double instead", C++ type names), TensorIterator's
same-dtype ops say "Found dtype Double but expected Float", and some check by hand. ``RULES``
maps a function's ``out=`` name (``write_out``'s ``fname``) to its check. Reductions in
``DTYPE_FROM_OUT`` compute in ``out``'s dtype instead (torch's ``sum(x, 0, out=long_tensor)``
sums the truncated values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import dtypes
from .._type_info import can_cast

_CPP = dtypes.CPP_NAMES  # (the C++ names torch's TypeMeta prints, by dtype name)

# check(out dtype, result dtype, output index or None for a single result) -> the error, or None
Check = Callable[[dtypes.dtype, dtypes.dtype, "int | None"], "Exception | None"]


def _exact(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if o is r:
        return None
    return RuntimeError(f"Expected out tensor to have dtype {_CPP[r.name]}, but got "
                        f"{_CPP[o.name]} instead")


def _same(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if o is r:
        return None
    return RuntimeError(f"Found dtype {o._scalar_name} but expected {r._scalar_name}")


def _when_differs(text: str) -> Check:
    """A check refusing any other dtype with ``text`` (``{o}``, ``{r}``: torch's short names;
    ``{oc}``, ``{rc}``: the C++ ones)."""
    def check(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
        if o is r:
            return None
        return RuntimeError(text.format(o=o._scalar_name, r=r._scalar_name, oc=_CPP[o.name],
                                        rc=_CPP[r.name]))
    return check


def _when_not_castable(text: str) -> Check:
    def check(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
        if can_cast(r, o):
            return None
        return RuntimeError(text.format(o=o._scalar_name, r=r._scalar_name))
    return check


def _per_output(*checks: Check) -> Check:
    """Output ``i`` checked by ``checks[i]`` (values, indices, ...)."""
    def check(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
        return checks[min(i or 0, len(checks) - 1)](o, r, i)
    return check


def _max_min(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if i is not None:  # (values and indices over a dim)
        return _exact(o, r, i)
    if can_cast(r, o):  # (the whole tensor's, or the elementwise form with two tensors)
        return None
    return RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), "
                        "typeMetaToScalarType(out.dtype())) to be true, but got false. "
                        "(Could this error message be improved? If so, please report an "
                        "enhancement request to PyTorch.)")


def _heaviside(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if o is r:
        return None
    if o.is_complex:
        return RuntimeError("heaviside is not yet implemented for complex tensors.")
    return RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


def _searchsorted(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if o is r:
        return None
    flag = "True" if r is dtypes.int32 else "False"
    return RuntimeError("torch.searchsorted(): output tensor's dtype is wrong, it can only be "
                        "Int(int32) or Long(int64) depending on whether out_int32 flag is True, "
                        f"but we got output tensor's dtype {o._scalar_name} and out_int32 flag "
                        f"is {flag}")


def _nansum_input(args: tuple, out: Any) -> None:
    """nansum computes in ``out``'s dtype; its kernel for floating input is not built for
    integer and bool results (torch's ``dtype=`` argument, unlike ``out``, casts first)."""
    x, o = args[0] if args else None, getattr(out, "dtype", None)
    if getattr(getattr(x, "dtype", None), "is_floating_point", False) and isinstance(
            o, dtypes.dtype) and not o.is_floating_point:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{o._scalar_name}'")


def _diag(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if not can_cast(r, o):
        return RuntimeError(f"diag: result type {r._scalar_name} can't be cast to the desired "
                            f"out= type {o._scalar_name}")
    return _exact(o, r, i)


def _bool_result(fname: str) -> Check:
    def check(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
        if o in (dtypes.bool, dtypes.uint8):
            return None
        return RuntimeError(f"{fname} only supports bool tensor for result, got: "
                            f"{o._scalar_name}")
    return check


def _floating_result(fname: str) -> Check:
    def check(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
        if o.is_floating_point or o.is_complex:
            return None
        return RuntimeError(f"{fname}(): Expected floating point type for result tensor, but "
                            f"got: {o._scalar_name}")
    return check


def _type_name(dt: dtypes.dtype) -> str:
    """torch's name of a tensor type in its argument checks (``jitgrad.FloatTensor``; its
    deprecated type names stop short of bool and complex: ``CPUBoolType``)."""
    if dt is dtypes.bool or dt.is_complex:
        return f"CPU{dt._scalar_name}Type"
    return f"jitgrad.{dt._legacy}"


def _median(o: dtypes.dtype, r: dtypes.dtype, i: int | None) -> Exception | None:
    if o is r:
        return None
    if not i:
        return RuntimeError("Expected tensor for 'values' to have the same type as tensor for "
                            f"argument #2 'self'; but type {_type_name(o)} does not equal "
                            f"{_type_name(r)} (while checking arguments for median)")
    return RuntimeError("Expected tensor for argument #1 'indices' to have scalar type Long; "
                        f"but got {_type_name(o)} instead (while checking arguments for "
                        "median)")


_SAME_DTYPE = ("abs", "absolute", "neg", "negative", "sign", "sgn", "ceil", "floor", "round",
               "trunc", "fix", "frac", "clamp", "clip", "clamp_min", "clamp_max",
               "bitwise_not")
_RESIZE_OUT = (
    "addmm", "addmv", "aminmax", "argmax", "argmin", "baddbmm", "bmm", "cholesky", "cross",
    "gather", "index_add", "index_copy", "index_reduce", "inverse", "isin", "linalg_cross",
    "linalg_det", "linalg_eigh", "linalg_eigvalsh", "linalg_inv", "linalg_inv_ex",
    "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_qr", "linalg_slogdet", "linalg_solve",
    "linalg_solve_ex", "linalg_svd", "linalg_svdvals", "linalg_cholesky", "linalg_cholesky_ex",
    "linalg_vector_norm", "log_softmax", "matmul", "mm", "msort", "mv", "norm", "qr", "renorm",
    "scatter", "scatter_add", "scatter_reduce", "slogdet", "softmax", "sort", "svd",
    "take_along_dim", "topk", "tril", "triu")

RULES: dict[str, Check] = {
    **{name: _same for name in _SAME_DTYPE},
    **{name: _exact for name in _RESIZE_OUT},
    "amax": _when_differs("Expected the dtype for input and out to match, but got {r} for "
                          "input's dtype and {o} for out's dtype."),
    "amin": _when_differs("Expected the dtype for input and out to match, but got {r} for "
                          "input's dtype and {o} for out's dtype."),
    "max": _max_min, "min": _max_min,
    "all": _bool_result("all"), "any": _bool_result("any"),
    "dot": _when_differs("result dtype {o} does not match input dtype {r}"),
    "vdot": _when_differs("result dtype {o} does not match input dtype {r}"),
    "cummax": _when_differs("expected scalar_type {r} but found {o}"),
    "cummin": _when_differs("expected scalar_type {r} but found {o}"),
    "logcumsumexp": _when_differs("expected scalar_type {r} but found {o}"),
    "linalg_solve_triangular": _when_differs("expected scalar type {r} but found {o}"),
    "linalg_matrix_norm": _when_differs("linalg.matrix_norm expected out tensor dtype {r} but "
                                        "got: {o}"),
    "linalg_norm": _when_differs("linalg.norm expected out tensor dtype {r} but got: {o}"),
    "linalg_vecdot": _when_differs("linalg.vecdot: Expected out of dtype{r} but found {o}"),
    "linalg_multi_dot": _when_differs("multi_dot(): expected out tensor to have dtype {rc} but "
                                      "got {oc}"),
    "linalg_matrix_power": _when_not_castable(
        "matrix_power: Expected result to be safely castable from {r} dtype, but got result "
        "with dtype {o}"),
    "matrix_power": _when_not_castable(
        "matrix_power: Expected result to be safely castable from {r} dtype, but got result "
        "with dtype {o}"),
    "linalg_pinv": _when_not_castable(
        "linalg.pinv: Expected result to be safely castable from {r} dtype, but got result "
        "with dtype {o}"),
    "linalg_eigvals": _when_not_castable(
        "torch.linalg.eigvals: Expected eigenvalues to be safely castable from {r} dtype, but "
        "got eigenvalues with dtype {o}"),
    "index_select": _when_differs("index_select(): self and result must have the same scalar "
                                  "type"),
    "masked_select": _when_differs("masked_select(): self and result must have the same scalar "
                                   "type"),
    "take": _when_differs("take(): self and out expected to have the same dtype, but got "
                          "self.dtype = {r} and out.dtype = {o}"),
    "nonzero": _when_differs("nonzero: Expected out tensor to have scalar type Long but got "
                             "scalar type{o}"),
    "nan_to_num": _when_differs("nan_to_num: dtype of out: {o} should be same as input: {r}"),
    "tensordot": _when_differs("tensordot: Expected the output tensor to have dtype {r}, but "
                               "got an output tensor with dtype {o}"),
    "inner": _when_differs("tensordot: Expected the output tensor to have dtype {r}, but got "
                           "an output tensor with dtype {o}"),
    "where": _when_differs("Expected out type to be {r} but got {o}"),
    "histc": _when_differs("torch.histogram: input tensor and hist tensor should have the same "
                           "dtype, but got input {rc} and hist {oc}"),
    "quantile": _when_differs("quantile() out tensor must be same dtype as the input tensor"),
    "nanquantile": _when_differs("quantile() out tensor must be same dtype as the input tensor"),
    "signbit": lambda o, r, i: None if o is dtypes.bool else RuntimeError(
        "signbit does not support non-boolean outputs."),
    "heaviside": _heaviside,
    "float_power": _when_differs("the output given to float_power has dtype {o} but the "
                                 "operation's result requires dtype {r}"),
    "logsumexp": _floating_result("logsumexp"),
    "searchsorted": _searchsorted, "bucketize": _searchsorted,
    "kthvalue": _per_output(_when_differs("output values must be of same type as input"),
                            _when_differs("output indices must be of scalar type Long")),
    "mode": _per_output(_when_differs("expected scalar type '{r}' but got '{o}' for values "
                                      "output"),
                        _when_differs("expected scalar type '{r}' but got '{o}' for indices "
                                      "output")),
    "median": _median, "nanmedian": _median,
    "diag": _diag,
    "mvlgamma": _when_not_castable("mvlgamma: result type {r} can't be cast to the desired "
                                   "output type {r}"),
    "frexp": _per_output(_when_differs("torch.frexp() expects mantissa to have dtype {rc} but "
                                       "got {oc}"),
                         _when_differs("torch.frexp() expects exponent to have int dtype but "
                                       "got {oc}")),
    "multinomial": _when_differs("multinomial expects Long tensor out, got: {o}"),
    "polar": _when_differs("Expected object of scalar type {r} but got scalar type {o} for "
                           "argument 'out'"),
    "complex": _when_differs("Expected object of scalar type {r} but got scalar type {o} for "
                             "argument 'out'"),
    "fft_rfft": lambda o, r, i: None if o.is_complex else RuntimeError(
        f"rfft expects a complex output tensor, but got {o._scalar_name}"),
}

# reductions that compute in ``out``'s dtype (as if given ``dtype=out.dtype``)
DTYPE_FROM_OUT = frozenset({"sum", "prod", "cumsum", "cumprod", "nansum", "nanmean"})
# checks of the input against ``out`` before the call (where the result's dtype is ``out``'s)
BEFORE_CALL: dict[str, Callable[[tuple, Any], None]] = {
    "nansum": _nansum_input, "nanmean": _nansum_input}
# values and indices: torch checks the indices' dtype first
_INDICES_FIRST = frozenset({"median", "nanmedian"})


def check_out_dtypes(fname: str, outs: list, results: list, single: bool) -> None:
    """Raises torch's error when ``fname`` may not write ``results`` (tensors; ``single``: the
    function returns one, not a tuple) into ``outs`` (their dtypes compared; anything else is
    left to the caller)."""
    if fname == "matmul" and single and results[0].ndim == 0:  # (two vectors: torch's dot)
        fname = "dot"
    check = RULES.get(fname)
    if check is None:
        return
    order = range(len(results))
    for i in reversed(order) if fname in _INDICES_FIRST else order:
        o, r = outs[i], results[i]
        if isinstance(getattr(o, "dtype", None), dtypes.dtype) and hasattr(r, "dtype"):
            error = check(o.dtype, r.dtype, None if single else i)
            if error is not None:
                raise error
