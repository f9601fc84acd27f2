# ruff: noqa: B007, E402, F811, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Tutorial "Forward-mode Automatic Differentiation (Beta)": dual tensors, modules, custom
Functions with a ``jvp`` staticmethod, and the functional ``torch.func.jvp``."""
import jitgrad as torch
import jitgrad.autograd.forward_ad as fwAD

torch.manual_seed(0)

primal = torch.randn(10, 10)
tangent = torch.randn(10, 10)


def fn(x, y):
    return x ** 2 + y ** 2


# All forward AD computation must be performed in the context of
# a ``dual_level`` context. All dual tensors created in such a context
# will have their tangents destroyed upon exit. This is to ensure that
# if the output or intermediate results of this computation are reused
# in a future forward AD computation, their tangents (which are associated
# with this computation) won't be confused with tangents from the later
# computation.
with fwAD.dual_level():
    # To create a dual tensor we associate a tensor, which we call the
    # primal with another tensor of the same size, which we call the tangent.
    # If the layout of the tangent is different from that of the primal,
    # The values of the tangent are copied into a new tensor with the same
    # metadata as the primal. Otherwise, the tangent itself is used as-is.
    #
    # It is also important to note that the dual tensor created by
    # ``make_dual`` is a view of the primal.
    dual_input = fwAD.make_dual(primal, tangent)
    assert fwAD.unpack_dual(dual_input).tangent is tangent

    # To demonstrate the case where the copy of the tangent happens,
    # we pass in a tangent with a layout different from that of the primal
    dual_input_alt = fwAD.make_dual(primal, tangent.T)
    assert fwAD.unpack_dual(dual_input_alt).tangent is not tangent

    # Tensors that do not have an associated tangent are automatically
    # considered to have a zero-filled tangent of the same shape.
    plain_tensor = torch.randn(10, 10)
    dual_output = fn(dual_input, plain_tensor)

    # Unpacking the dual returns a ``namedtuple`` with ``primal`` and ``tangent``
    # as attributes
    jvp = fwAD.unpack_dual(dual_output).tangent

assert fwAD.unpack_dual(dual_output).tangent is None
basic_jvp_ok = torch.allclose(jvp, 2 * primal * tangent)
unpacked_fields = fwAD.unpack_dual(dual_output)._fields

# Usage with Modules
import jitgrad.nn as nn

model = nn.Linear(5, 5)
input = torch.randn(16, 5)

params = {name: p for name, p in model.named_parameters()}
tangents = {name: torch.rand_like(p) for name, p in params.items()}

with fwAD.dual_level():
    for name, p in params.items():
        delattr(model, name)
        setattr(model, name, fwAD.make_dual(p, tangents[name]))

    out = model(input)
    jvp = fwAD.unpack_dual(out).tangent

module_jvp = jvp
module_jvp_expected = input @ tangents["weight"].T + tangents["bias"]

# Using the functional Module API (beta)
from jitgrad.func import functional_call

# We need a fresh module because the functional call requires the
# the model to have parameters registered.
model = nn.Linear(5, 5)

dual_params = {}
with fwAD.dual_level():
    for name, p in params.items():
        # Using the same ``tangents`` from the above section
        dual_params[name] = fwAD.make_dual(p, tangents[name])
    out = functional_call(model, dual_params, input)
    jvp2 = fwAD.unpack_dual(out).tangent

# Check our results
assert torch.allclose(jvp, jvp2)

# Custom autograd Function
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        # Tensors stored in ``ctx`` can be used in the subsequent forward grad
        # computation.
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        # If the tensor stored in ``ctx`` will not also be used in the backward pass,
        # one can manually free it using ``del``
        del ctx.result
        return gO


fn = Fn.apply

primal = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
tangent = torch.randn(10, 10)

with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input)
    jvp = fwAD.unpack_dual(dual_output).tangent

custom_jvp_ok = torch.allclose(jvp, tangent * primal.exp())

# It is important to use ``autograd.gradcheck`` to verify that your
# custom autograd Function computes the gradients correctly. By default,
# ``gradcheck`` only checks the backward-mode (reverse-mode) AD gradients. Specify
# ``check_forward_ad=True`` to also check forward grads. If you did not
# implement the backward formula for your function, you can also tell ``gradcheck``
# to skip the tests that require backward-mode AD by specifying
# ``check_backward_ad=False``, ``check_undefined_grad=False``, and
# ``check_batched_grad=False``.
custom_gradcheck = torch.autograd.gradcheck(Fn.apply, (primal,), check_forward_ad=True,
                                            check_backward_ad=False, check_undefined_grad=False,
                                            check_batched_grad=False)

# Functional API (beta)
import jitgrad.func as ft

primal0 = torch.randn(10, 10)
tangent0 = torch.randn(10, 10)
primal1 = torch.randn(10, 10)
tangent1 = torch.randn(10, 10)


def fn(x, y):
    return x ** 2 + y ** 2


# Here is a basic example to compute the JVP of the above function.
# The ``jvp(func, primals, tangents)`` returns ``func(*primals)`` as well as the
# computed Jacobian-vector product (JVP). Each primal must be associated with a tangent of the
# same shape.
primal_out, tangent_out = ft.jvp(fn, (primal0, primal1), (tangent0, tangent1))
functional_jvp_ok = torch.allclose(tangent_out, 2 * primal0 * tangent0 + 2 * primal1 * tangent1)

# ``functorch.jvp`` requires every primal to be associated with a tangent.
# If we only want to associate certain inputs to `fn` with tangents,
# then we'll need to create a new function that captures inputs without tangents:
primal = torch.randn(10, 10)
tangent = torch.randn(10, 10)
y = torch.randn(10, 10)

import functools

new_fn = functools.partial(fn, y=y)
primal_out, tangent_out = ft.jvp(new_fn, (primal,), (tangent,))
partial_jvp_ok = torch.allclose(tangent_out, 2 * primal * tangent)

# Using the functional API with Modules
model = nn.Linear(5, 5)
input = torch.randn(16, 5)
tangents = {name: torch.rand_like(p) for name, p in model.named_parameters()}
params = {name: p.detach() for name, p in model.named_parameters()}


def func_params_only(params):
    return functional_call(model, params, input)


model_output, jvp_out = ft.jvp(func_params_only, (params,), (tangents,))
module_functional_ok = torch.allclose(jvp_out, input @ tangents["weight"].T + tangents["bias"],
                                      atol=1e-6)

# forward-over-reverse: the Hessian-vector product with dual tensors and autograd.grad
x = torch.randn(6, dtype=torch.double, requires_grad=True)
v = torch.randn(6, dtype=torch.double)
with fwAD.dual_level():
    dual_x = fwAD.make_dual(x, v)
    (g,) = torch.autograd.grad(dual_x.sin().sum(), dual_x, create_graph=True)
    hvp = fwAD.unpack_dual(g).tangent
fwd_over_rev_ok = torch.allclose(hvp, -x.detach().sin() * v)

# deterministic parts to compare with torch
fixed_w = torch.sin(torch.arange(20, dtype=torch.float64)).view(4, 5)
fixed_x = torch.cos(torch.arange(5, dtype=torch.float64))
fixed_t = torch.linspace(-1, 1, 5, dtype=torch.float64)
with fwAD.dual_level():
    d = fwAD.make_dual(fixed_x, fixed_t)
    y = torch.tanh(fixed_w @ d).log_softmax(0) * d.sum()
    fixed_primal, fixed_tangent = fwAD.unpack_dual(y)
fixed_results = {"primal": fixed_primal.tolist(), "tangent": fixed_tangent.tolist(),
                 "func_jvp": ft.jvp(lambda x: (fixed_w @ x).softmax(0), (fixed_x,),
                                    (fixed_t,))[1].tolist()}
