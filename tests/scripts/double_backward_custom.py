# ruff: noqa: B007, E402, F811, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Tutorial "Double Backward with Custom Functions": Square, Exp, Sinh (intermediate results
as outputs), the SinhBad counter-example, and Cube with a custom CubeBackward Function."""
import jitgrad as torch

torch.manual_seed(0)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        # Because we are saving one of the inputs use `save_for_backward`
        # Save non-tensors and non-inputs/non-outputs directly on ctx
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        # A function support double backward automatically if autograd
        # is able to record the computations performed in backward
        x, = ctx.saved_tensors
        return grad_out * 2 * x


# Use double precision because finite differencing method magnifies errors
x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
square_checks = [torch.autograd.gradcheck(Square.apply, x)]
# Use gradcheck to verify second-order derivatives
square_checks.append(torch.autograd.gradgradcheck(Square.apply, x))

x = torch.tensor(1., requires_grad=True).clone()
out = Square.apply(x)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
square_grad_fn = grad_x.grad_fn.name()
grad_grad_x, = torch.autograd.grad(grad_x, x)
square_second = grad_grad_x.item()  # d^2 x^2 / dx^2 = 2


class Exp(torch.autograd.Function):
    # Simple case where everything goes well
    @staticmethod
    def forward(ctx, x):
        # This time we save the output
        result = torch.exp(x)
        # Note that we should use `save_for_backward` here when
        # the tensor saved is an ouptut (or an input).
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return result * grad_out


x = torch.tensor(1., requires_grad=True, dtype=torch.double).clone()
# Validate our gradients using gradcheck
exp_checks = [torch.autograd.gradcheck(Exp.apply, x), torch.autograd.gradgradcheck(Exp.apply, x)]


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        # In order to be able to save the intermediate results, a trick is to
        # include them as our outputs, so that the backward graph is constructed
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        # We cannot skip accumulating these even though we won't use the outputs
        # directly. They will be used later in the second backward.
        grad_input += _grad_out_exp * expx
        grad_input -= _grad_out_negexp * expnegx
        return grad_input


def sinh(x):
    # Create a wrapper that only returns the first output
    return Sinh.apply(x)[0]


x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
sinh_checks = [torch.autograd.gradcheck(sinh, x), torch.autograd.gradgradcheck(sinh, x)]
out = sinh(x)
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
grad_grad_x, = torch.autograd.grad(grad_x.sum(), x)
sinh_second_ok = torch.allclose(grad_grad_x, torch.sinh(x.detach()))


class SinhBad(torch.autograd.Function):
    # This is an example of what NOT to do!
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.expx = expx
        ctx.expnegx = expnegx
        return (expx - expnegx) / 2

    @staticmethod
    def backward(ctx, grad_out):
        expx = ctx.expx
        expnegx = ctx.expnegx
        grad_input = grad_out * (expx + expnegx) / 2
        return grad_input


x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
out = SinhBad.apply(x)
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
# the saved intermediates are not tracked: the gradient is no function of x for autograd
sinh_bad_connected = grad_x.requires_grad
try:
    torch.autograd.gradgradcheck(SinhBad.apply, x, raise_exception=True)
    sinh_bad_gradgradcheck = "passed"
except RuntimeError as e:
    sinh_bad_gradgradcheck = type(e).__name__


def cube_forward(x):
    return x**3


def cube_backward(grad_out, x):
    return grad_out * 3 * x**2


def cube_backward_backward(grad_out, sav_grad_out, x):
    return grad_out * sav_grad_out * 6 * x


def cube_backward_backward_grad_out(grad_out, x):
    return grad_out * 3 * x**2


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        dx = cube_backward_backward(grad_out, sav_grad_out, x)
        dgrad_out = cube_backward_backward_grad_out(grad_out, x)
        return dgrad_out, dx


x = torch.tensor(2., requires_grad=True, dtype=torch.double)

cube_checks = [torch.autograd.gradcheck(Cube.apply, x), torch.autograd.gradgradcheck(Cube.apply, x)]
out = Cube.apply(x)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
grad_grad_x, = torch.autograd.grad(grad_x, x, create_graph=True)
grad_grad_grad_x, = torch.autograd.grad(grad_grad_x, x)
cube_derivatives = [grad_x.item(), grad_grad_x.item(), grad_grad_grad_x.item()]  # 12, 12, 6
cube_grad_fns = [grad_x.grad_fn.name(), grad_grad_x.grad_fn.name()]

# deterministic parts to compare with torch
fixed_x = torch.linspace(-1, 1, 7, dtype=torch.double).requires_grad_()
fixed_out = sinh(fixed_x) * Square.apply(fixed_x) + Exp.apply(fixed_x) * Cube.apply(fixed_x)
g1, = torch.autograd.grad(fixed_out.sum(), fixed_x, create_graph=True)
g2, = torch.autograd.grad((g1 * fixed_x).sum(), fixed_x)
fixed_results = {"out": fixed_out.tolist(), "g1": g1.tolist(), "g2": g2.tolist()}
