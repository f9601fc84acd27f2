"""``jitgrad.autograd.functional``: vjp, jvp, jacobian, hessian, hvp, vhp (torch's API).

Same signatures, return structures and errors as ``torch.autograd.functional``. Everything is
built on ``autograd.grad``: ``jvp`` and ``hvp`` use the double-backward trick as torch does,
``vectorize=True`` passes a whole basis at once through ``is_grads_batched``, and
``strategy="forward-mode"`` pushes basis tangents through the ops' JVP rules with
``forward_ad`` dual tensors (one basis vector per pass, where torch uses vmap).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ops import registry
from . import forward_ad as fwAD
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ---------------------------------------------------------------- helpers (torch's)


def _as_tuple_nocheck(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _as_tuple(inp: Any, arg_name: str | None = None, fn_name: str | None = None) -> Any:
    # (whether inp was a tuple, inp as a tuple of Tensors)
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)
    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, registry.Tensor):
            if is_inp_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(el)}.")
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the given {arg_name} has type {type(el)}.")
    return is_inp_tuple, inp


def _tuple_postprocess(res: Any, to_unpack: Any) -> Any:
    # Undoes _as_tuple: to_unpack is one flag, or two for a tuple of tuples.
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    # Always new Tensor objects, so inputs given as arguments differ from the same tensors
    # captured by the user function.
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs: tuple, create_graph: bool) -> tuple:
    if isinstance(inputs[0], registry.Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got "
                f"{el_v.size()}.")


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is thrice differentiable and that the hessian depends on the "
                "inputs.")
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The outputs "
            "must be computed in a differentiable manner from the input when running in strict "
            "mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None,
                   create_graph: bool = False, retain_graph: bool | None = None,
                   is_grads_batched: bool = False) -> tuple:
    # autograd.grad that skips outputs that are None or do not require grad.
    from . import grad as autograd_grad

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    return autograd_grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                         create_graph=create_graph, retain_graph=retain_graph,
                         is_grads_batched=is_grads_batched)


_STRICT_NONE = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    # None gradients become zeros, or raise in strict mode.
    from ..ops.creation import zeros_like

    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode when create_graph=True.")
        res.append(grads_i)
    return tuple(res)


def _prepare(func_name: str, inputs: Any, v: Any, create_graph: bool) -> tuple:
    # Tupled, preprocessed inputs and v, for the functions whose v matches the inputs.
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", func_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", func_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element.")
    return is_inputs_tuple, inputs, v


def _single_output(func_name: str, outputs: Any, strict: bool) -> tuple:
    is_outputs_tuple, outputs = _as_tuple(
        outputs, "outputs of the user-provided function", func_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], registry.Tensor):
        raise RuntimeError(f"The function given to {func_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {func_name} should contain a single "
            "element")
    return is_outputs_tuple, outputs


# ---------------------------------------------------------------- vjp / jvp


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """The dot product of ``v`` with the Jacobian of ``func`` at ``inputs``.

    Args:
        func: A function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: A Tensor or a tuple of Tensors, the point of evaluation.
        v: The vector (like the outputs); may be None only for a one-element output.
        create_graph: Make the result differentiable.
        strict: Raise when an output does not depend on an input instead of returning zeros.

    Returns:
        ``(func_output, vjp)``, each a Tensor or a tuple like ``func``'s output and ``inputs``.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """The Jacobian of ``func`` at ``inputs`` times the vector ``v``.

    Computed with the double-backward trick, as torch does.

    Args:
        func: A function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: A Tensor or a tuple of Tensors, the point of evaluation.
        v: The vector (like ``inputs``); may be None only for a one-element input.
        create_graph: Make the result differentiable.
        strict: Raise when an output does not depend on an input instead of returning zeros.

    Returns:
        ``(func_output, jvp)``, each a Tensor or a tuple like ``func``'s output.
    """
    from ..ops.creation import zeros_like

    with enable_grad():
        _, inputs, v = _prepare("jvp", inputs, v, create_graph)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # The backward is linear in grad_outputs: their value does not matter.
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


# ---------------------------------------------------------------- jacobian / hessian


def _standard_basis(tensors: tuple, numels: tuple) -> tuple:
    # The N x N identity (N = sum(numels)) split by columns: chunk i is N x numels[i].
    from ..ops.creation import eye

    total = sum(numels)
    chunks, start = [], 0
    for t, n in zip(tensors, numels):
        chunks.append(eye(total, dtype=t.dtype, device=t.device)[:, start:start + n].contiguous())
        start += n
    return tuple(chunks)


def _jacfwd(func: Callable, inputs: Any, strict: bool, vectorize: bool) -> Any:
    from ..ops.creation import zeros_like
    from ..ops.movement import stack

    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` "
            "are not supported together (yet). Please either set `strict=False` or "
            "`strategy=\"reverse-mode\"`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`.")
    input_numels = tuple(inp.numel() for inp in inputs)
    basis = _standard_basis(inputs, input_numels)
    is_outputs_tuple, primal_outs, columns = False, (), []
    # One forward pass per basis vector (torch vmaps these passes).
    for k in range(sum(input_numels)):
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(inp, b[k].view_as(inp)) for inp, b in zip(inputs, basis))
            is_outputs_tuple, dual_outputs = _as_tuple(func(*duals), "outputs")
            jv, primals = [], []
            for out in dual_outputs:
                primal, tangent = fwAD.unpack_dual(out)
                primals.append(primal)
                jv.append(tangent if tangent is not None else zeros_like(primal))
        primal_outs = tuple(primals)
        columns.append(jv)
    jacobian_output_input = []
    for i, out in enumerate(primal_outs):
        jac = stack([col[i] for col in columns])  # [sum(input_numels), *out.shape]
        row = []
        for part, inp in zip(jac.split(input_numels, dim=0), inputs):
            row.append(part.permute(*range(1, part.ndim), 0).reshape(
                tuple(out.shape) + tuple(inp.shape)))
        jacobian_output_input.append(tuple(row))
    return _tuple_postprocess(tuple(jacobian_output_input), (is_outputs_tuple, is_inputs_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    Args:
        func: A function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: A Tensor or a tuple of Tensors, the point of evaluation.
        create_graph: Make the result differentiable.
        strict: Raise when an output does not depend on an input instead of returning zeros.
        vectorize: Compute all the vector-Jacobian products in one batched call.
        strategy: ``"reverse-mode"`` or ``"forward-mode"`` (needs ``vectorize=True``).

    Returns:
        A Tensor of shape ``output.shape + input.shape`` for one input and one output; else a
        tuple (per output) of tuples (per input), as torch.
    """
    from ..ops.creation import zeros_like
    from ..ops.movement import stack

    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                "`strategy=\"forward-mode\"` are not supported together (yet). Please either set "
                "`create_graph=False` or `strategy=\"reverse-mode\"`.")
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                    "not supported together. Please either set `strict=False` or "
                    "`vectorize=False`.")
            jac = _jacrev_vectorized(outputs, inputs, create_graph)
            return _tuple_postprocess(_grad_postprocess(jac, create_graph),
                                      (is_outputs_tuple, is_inputs_tuple))
        jacobian_rows = []
        for i, out in enumerate(outputs):
            jac_i: tuple = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent of "
                                f"input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {el_idx}. This is not allowed in strict mode.")
                        jac_i_el.append(zeros_like(inp_el))
            jacobian_rows.append(tuple(
                stack(jac_i_el, dim=0).view(tuple(out.shape) + tuple(inputs[el_idx].shape))
                if jac_i_el else zeros_like(inputs[el_idx]).reshape(
                    tuple(out.shape) + tuple(inputs[el_idx].shape))
                for el_idx, jac_i_el in enumerate(jac_i)))
        jac = _grad_postprocess(tuple(jacobian_rows), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_vectorized(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    # One batched backward whose grad_outputs are the standard basis split across the outputs.
    from ..ops.creation import zeros

    output_numels = tuple(out.numel() for out in outputs)
    total = sum(output_numels)
    grad_outputs = _standard_basis(outputs, output_numels)
    flat_outputs = tuple(out.reshape(-1) for out in outputs)
    vj = list(_autograd_grad(flat_outputs, inputs, grad_outputs, create_graph=create_graph,
                             is_grads_batched=True))
    for k, el in enumerate(vj):
        if el is None:
            vj[k] = zeros((total,) + tuple(inputs[k].shape), dtype=inputs[k].dtype,
                          device=inputs[k].device)
    per_input = []
    for jac_input, inp in zip(vj, inputs):
        per_input.append([part.view(tuple(out.shape) + tuple(inp.shape)) for part, out in
                          zip(jac_input.split(output_numels, dim=0), outputs)])
    return tuple(zip(*per_input))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``.

    Args:
        func: A function of Tensors returning a Tensor with a single element.
        inputs: A Tensor or a tuple of Tensors, the point of evaluation.
        create_graph: Make the result differentiable.
        strict: Raise when the Hessian does not depend on an input instead of returning zeros.
        vectorize: Compute the outer Jacobian in one batched call.
        outer_jacobian_strategy: ``"reverse-mode"`` or ``"forward-mode"`` (forward-over-reverse,
            needs ``vectorize=True``).

    Returns:
        A Tensor of shape ``input.shape + input.shape`` for one input; else a tuple of tuples
        where entry ``[i][j]`` is the Hessian block of inputs ``i`` and ``j``.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Any) -> Any:
        out = func(*inp)
        _single_output("hessian", out, strict)
        return out.squeeze()

    def jac_func(*inp: Any) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


# ---------------------------------------------------------------- vhp / hvp


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """The dot product of ``v`` with the Hessian of the scalar function ``func`` at ``inputs``.

    Args:
        func: A function of Tensors returning a Tensor with a single element.
        inputs: A Tensor or a tuple of Tensors, the point of evaluation.
        v: The vector (like ``inputs``); may be None only for a one-element input.
        create_graph: Make the result differentiable.
        strict: Raise when the Hessian does not depend on an input instead of returning zeros.

    Returns:
        ``(func_output, vhp)``; ``vhp`` is a Tensor or a tuple like ``inputs``.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _prepare("vhp", inputs, v, create_graph)
        is_outputs_tuple, outputs = _single_output("vhp", func(*inputs), strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """The Hessian of the scalar function ``func`` at ``inputs`` times the vector ``v``.

    Computed with the double-backward trick, as torch does.

    Args:
        func: A function of Tensors returning a Tensor with a single element.
        inputs: A Tensor or a tuple of Tensors, the point of evaluation.
        v: The vector (like ``inputs``); may be None only for a one-element input.
        create_graph: Make the result differentiable.
        strict: Raise when the Hessian does not depend on an input instead of returning zeros.

    Returns:
        ``(func_output, hvp)``; ``hvp`` is a Tensor or a tuple like ``inputs``.
    """
    from ..ops.creation import zeros_like

    with enable_grad():
        is_inputs_tuple, inputs, v = _prepare("hvp", inputs, v, create_graph)
        is_outputs_tuple, outputs = _single_output("hvp", func(*inputs), strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))
