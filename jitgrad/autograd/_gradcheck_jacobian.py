"""Jacobians for ``gradcheck``: numerical (central differences in the inputs' own dtype),
analytical by backward passes with one-hot ``grad_outputs`` (or a random ``v``), and by
forward-mode AD. All are NumPy arrays laid out as torch's: (input numel, output numel).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


class GradcheckError(RuntimeError):
    """Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""

    __module__ = "jitgrad.autograd.gradcheck"


FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
"""

# ---------------------------------------------------------------- small helpers


def _is_tensor(x: Any) -> bool:
    from ..tensor import Tensor

    return isinstance(x, Tensor)


def _is_float_or_complex(x: Any) -> bool:
    return _is_tensor(x) and (x.dtype.is_floating_point or x.dtype.is_complex)


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x: Any) -> tuple:
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _to_tensor(a: np.ndarray) -> Any:
    from ..ops.creation import from_numpy

    return from_numpy(np.array(a, copy=True, order="C"))


def _grad(outputs, inputs, grad_outputs, **kw) -> tuple:
    from . import grad

    return grad(outputs, inputs, grad_outputs, **kw)


def _allclose(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    dt = np.result_type(a.dtype, b.dtype)
    return bool(np.allclose(a.astype(dt), b.astype(dt), rtol=rtol, atol=atol))


def _notallclose_msg(analytical, numerical, output_idx: int, input_idx: int, complex_indices,
                     test_imag: bool = False, is_forward_ad: bool = False) -> str:
    out_is_complex = (not is_forward_ad) and complex_indices and output_idx in complex_indices
    inp_is_complex = is_forward_ad and complex_indices and input_idx in complex_indices
    part = "imaginary" if test_imag else "real"
    element = "inputs" if is_forward_ad else "outputs"
    prefix = "" if not (out_is_complex or inp_is_complex) else \
        f"While considering the {part} part of complex {element} only, "
    mode = "computed with forward mode " if is_forward_ad else ""
    return (prefix + f"Jacobian {mode}mismatch for output {output_idx:d} with respect to input "
            f"{input_idx:d},\nnumerical:{_to_tensor(numerical)}\n"
            f"analytical:{_to_tensor(analytical)}\n")


def _check_inputs(tupled_inputs: tuple) -> None:
    from .. import dtypes

    found = False
    for idx, inp in enumerate(tupled_inputs):
        if not (_is_tensor(inp) and inp.requires_grad):
            continue
        if inp.dtype not in (dtypes.float64, dtypes.complex128):
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point "
                "or complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ", stacklevel=4)
        data = inp._data
        if data.size and not all(st > 0 or sz <= 1 for st, sz in zip(data.strides, data.shape)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                "inputs that are non-overlapping to be able to compute the numerical "
                "gradients correctly. You should call .contiguous on the input before passing "
                "it to gradcheck.")
        found = True
    if not found:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")


# ---------------------------------------------------------------- numerical side


def _eval_copies(func: Callable, inputs: tuple) -> list:
    # Float/complex outputs as NumPy copies (outputs may alias the perturbed input).
    return [np.array(o._data, copy=True) for o in _as_tuple(func(*inputs))
            if _is_float_or_complex(o)]


def _central_diff(func, inputs, data: np.ndarray, idx, delta, norm: float) -> list:
    orig = np.array(data[idx], copy=True)
    data[idx] = orig - delta
    outa = _eval_copies(func, inputs)
    data[idx] = orig + delta
    outb = _eval_copies(func, inputs)
    data[idx] = orig
    cols = []
    for a, b in zip(outa, outb):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise AssertionError(
                f"Expected `func` to return outputs with the same shape and dtype when inputs "
                f"are perturbed by {norm}, but got: shapes {a.shape} and {b.shape}, dtypes "
                f"{a.dtype} and {b.dtype}.")
        cols.append(((b - a) / (2 * norm)).reshape(-1))
    return cols


def _numerical_jacobian(func, inputs: tuple, func_out, eps: float,
                        is_forward_ad: bool = False) -> list[list[np.ndarray]]:
    """``[input][output]`` Jacobians of shape (input numel, output numel)."""
    outs = [o for o in _as_tuple(func_out) if _is_float_or_complex(o)]
    if not is_forward_ad and any(o.dtype.is_complex for o in outs):
        raise ValueError("Expected output to be non-complex. get_numerical_jacobian no longer "
                         "supports functions that return complex outputs.")
    result = []
    for x in inputs:
        if not (_is_tensor(x) and x.requires_grad):
            continue
        cplx = x.dtype.is_complex
        jac = [np.zeros((x.numel(), o.numel()), dtype=x.dtype.np if cplx else o.dtype.np)
               for o in outs]
        data = x._data
        for d_idx, idx in enumerate(np.ndindex(*data.shape)):
            cols = _central_diff(func, inputs, data, idx, eps, eps)
            if cplx:
                cols = [dx + 1j * dy for dx, dy in
                        zip(cols, _central_diff(func, inputs, data, idx, eps * 1j, eps))]
            for k, c in enumerate(cols):
                jac[k][d_idx] = c
        result.append(jac)
    return result


def _numerical_jvps(func, inputs: tuple, x, u, eps: float) -> list[np.ndarray]:
    """Finite-difference ``J u`` for one input (``u`` a pair for complex inputs)."""
    data = x._data
    whole = (Ellipsis,)
    if isinstance(u, tuple):
        dx = _central_diff(func, inputs, data, whole, eps * u[0].reshape(data.shape), eps)
        dy = _central_diff(func, inputs, data, whole, eps * 1j * u[1].reshape(data.shape), eps)
        return [a + 1j * b for a, b in zip(dx, dy)]
    return _central_diff(func, inputs, data, whole, eps * u.reshape(data.shape), eps)


# ---------------------------------------------------------------- analytical side


def _stack_rows(rows: list, inputs: list, width: int) -> tuple[list, bool, bool]:
    jacs, sizes_ok, types_ok = [], True, True
    for x, col_list in zip(inputs, rows):
        jac = np.zeros((x.numel(), width), dtype=x.dtype.np)
        for j, g in enumerate(col_list):
            if g is None:
                continue
            if tuple(g.shape) != tuple(x.shape):
                sizes_ok = False
            elif g.dtype is not x.dtype:
                types_ok = False
            if g._data.size != jac.shape[0]:
                raise GradcheckError("Analytical gradient has incorrect size")
            jac[:, j] = np.asarray(g._data).reshape(-1)  # (a sparse gradient: dense)
        jacs.append(jac)
    return jacs, sizes_ok, types_ok


def _analytical_jacobian(inputs: tuple, output, nondet_tol: float, check_grad_dtypes: bool,
                         v: np.ndarray | None = None) -> list[np.ndarray]:
    """Rows of J from one-hot backward passes (or ``v^T J`` when ``v`` is given), computed
    twice to check that backward is reentrant."""
    diff_inputs = [x for x in inputs if _is_tensor(x) and x.requires_grad]

    def vjp(go: np.ndarray) -> tuple:
        gs = _grad(output, diff_inputs, _to_tensor(go), retain_graph=True, allow_unused=True)
        return tuple(None if g is None else g.detach() for g in gs)

    def rows() -> list:
        shape, dt = tuple(output.shape), output.dtype.np
        if v is not None:
            return [[g] for g in vjp(v.reshape(shape).astype(dt))]
        out = [[] for _ in diff_inputs]
        for j in range(output.numel()):
            go = np.zeros(output.numel(), dtype=dt)
            go[j] = 1
            for i, g in enumerate(vjp(go.reshape(shape))):
                out[i].append(g)
        return out

    width = 1 if v is not None else output.numel()
    jac1, sizes_ok, types_ok = _stack_rows(rows(), diff_inputs, width)
    jac2, _, _ = _stack_rows(rows(), diff_inputs, width)
    reentrant = all(a.size == 0 or np.abs(a - b).max() <= nondet_tol for a, b in zip(jac1, jac2))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
            + FAILED_NONDET_MSG)
    return jac1


def _forward_ad():
    try:
        from . import forward_ad
    except ImportError as e:
        raise RuntimeError("gradcheck: check_forward_ad=True needs forward-mode AD "
                           "(jitgrad.autograd.forward_ad), which is unavailable") from e
    return forward_ad


def _forward_jacobian(func, inputs: tuple, outputs: tuple, check_grad_dtypes: bool,
                      all_u: list | None = None) -> list[list[np.ndarray]]:
    """``[input][output]`` Jacobians from forward-mode AD: one JVP per input element, or one
    per input with tangent ``u`` when ``all_u`` is given."""
    from ..ops.creation import zeros_like

    fw = _forward_ad()
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if any(inputs[i].dtype.is_complex for i in diff_idx):
        raise ValueError(
            "Expected inputs to be non-complex for _get_analytical_jacobian_forward_ad.")
    outs = [o for o in outputs if _is_float_or_complex(o)]

    def jvp(k: int, tangent: np.ndarray) -> list[np.ndarray]:
        with fw.dual_level():
            args = list(inputs)
            for i in diff_idx:
                t = _to_tensor(tangent) if i == k else zeros_like(inputs[i])
                args[i] = fw.make_dual(inputs[i].detach(), t)
            cols = []
            for o in _as_tuple(func(*args)):
                if not _is_float_or_complex(o):
                    continue
                val, res = fw.unpack_dual(o)
                if check_grad_dtypes and res is not None and \
                        val.dtype.is_complex != res.dtype.is_complex:
                    raise GradcheckError("Forward AD gradient has dtype mismatch.")
                cols.append(np.zeros(val.numel(), dtype=val.dtype.np) if res is None
                            else np.array(res._data, copy=True).reshape(-1))
            return cols

    result = []
    for n, k in enumerate(diff_idx):
        x = inputs[k]
        if all_u is not None:
            result.append(jvp(k, all_u[n].reshape(tuple(x.shape))))
            continue
        jac = [np.zeros((x.numel(), o.numel()), dtype=o.dtype.np) for o in outs]
        for row in range(x.numel()):
            e = np.zeros(x.numel(), dtype=x.dtype.np)
            e[row] = 1
            for j, c in enumerate(jvp(k, e.reshape(tuple(x.shape)))):
                jac[j][row] = c
        result.append(jac)
    return result
