"""Second (and third) derivatives through custom ``autograd.Function``s, written for these
tests in the way the PyTorch "double backward with custom functions" tutorial is commonly
written (modelled on the API usage of that tutorial, not a copy of it):

- a backward made of differentiable ops (square, exp saving its output), checked with
  ``autograd.gradcheck`` / ``autograd.gradgradcheck`` in float64;
- intermediates returned as extra outputs so the second backward can reach them (sinh), and
  the wrong way (intermediates stashed on ``ctx``) caught by gradgradcheck;
- a backward that is itself a custom Function (cube), differentiated three times with
  ``autograd.grad(create_graph=True)``, and the ``grad_fn.name()`` of each result.
"""
import jitgrad as torch
from jitgrad.autograd import Function, grad, gradcheck, gradgradcheck

torch.manual_seed(0)


def both_checks(fn, inp):
    return [gradcheck(fn, inp), gradgradcheck(fn, inp)]


class ExpSavingOutput(Function):
    @staticmethod
    def forward(ctx, t):
        e = t.exp()
        ctx.save_for_backward(e)  # an output, so it goes through save_for_backward too
        return e

    @staticmethod
    def backward(ctx, upstream):
        (e,) = ctx.saved_tensors
        return upstream * e


class Sq(Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t**2

    @staticmethod
    def backward(ctx, upstream):
        (t,) = ctx.saved_tensors
        # plain tensor ops: autograd records them when create_graph=True
        return upstream * 2 * t


# float64 throughout: finite differences in float32 are too coarse for the checks
exp_checks = both_checks(ExpSavingOutput.apply,
                         torch.tensor(1.0, dtype=torch.double, requires_grad=True).clone())
square_checks = both_checks(Sq.apply, torch.rand(3, 3, dtype=torch.double, requires_grad=True))

scalar = torch.tensor(1.0, requires_grad=True).clone()
(d1,) = grad(Sq.apply(scalar), scalar, create_graph=True)
square_grad_fn = d1.grad_fn.name()
square_second = grad(d1, scalar)[0].item()


class SinhWithAux(Function):
    """sinh that also hands back e^t and e^-t, so that they are part of the graph."""

    @staticmethod
    def forward(ctx, t):
        pos, neg = t.exp(), (-t).exp()
        ctx.save_for_backward(pos, neg)
        return (pos - neg) / 2, pos, neg

    @staticmethod
    def backward(ctx, g_main, g_pos, g_neg):
        pos, neg = ctx.saved_tensors
        # the aux outputs' grads are zero on a first backward but not on a second one
        return g_main * (pos + neg) / 2 + g_pos * pos - g_neg * neg


def my_sinh(t):
    return SinhWithAux.apply(t)[0]


pts = torch.rand(3, 3, dtype=torch.double, requires_grad=True)
sinh_checks = both_checks(my_sinh, pts)
(first,) = grad(my_sinh(pts).sum(), pts, create_graph=True)
(second,) = grad(first.sum(), pts)
sinh_second_ok = torch.allclose(second, pts.detach().sinh())


class SinhLeaky(Function):
    """Keeps its intermediates as ctx attributes: the first derivative is right, but it is
    cut off from the input, so a second derivative cannot be taken."""

    @staticmethod
    def forward(ctx, t):
        ctx.pos, ctx.neg = t.exp(), (-t).exp()
        return (ctx.pos - ctx.neg) / 2

    @staticmethod
    def backward(ctx, upstream):
        return upstream * (ctx.pos + ctx.neg) / 2


pts = torch.rand(3, 3, dtype=torch.double, requires_grad=True)
(leaky_grad,) = grad(SinhLeaky.apply(pts).sum(), pts, create_graph=True)
sinh_bad_connected = leaky_grad.requires_grad
try:
    gradgradcheck(SinhLeaky.apply, pts, raise_exception=True)
    sinh_bad_gradgradcheck = "passed"
except RuntimeError as err:
    sinh_bad_gradgradcheck = type(err).__name__


class CubeBackward(Function):
    """d(t^3) = 3 t^2 * upstream, with its own hand-written backward."""

    @staticmethod
    def forward(ctx, upstream, t):
        ctx.save_for_backward(upstream, t)
        return 3 * t**2 * upstream

    @staticmethod
    def backward(ctx, g):
        upstream, t = ctx.saved_tensors
        wrt_upstream = 3 * t**2 * g
        wrt_t = 6 * t * upstream * g
        return wrt_upstream, wrt_t


class Cube(Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t**3

    @staticmethod
    def backward(ctx, upstream):
        (t,) = ctx.saved_tensors
        return CubeBackward.apply(upstream, t)


two = torch.tensor(2.0, dtype=torch.double, requires_grad=True)
cube_checks = both_checks(Cube.apply, two)
derivs = [Cube.apply(two)]
for keep in (True, True, False):
    derivs.append(grad(derivs[-1], two, create_graph=keep)[0])
cube_derivatives = [d.item() for d in derivs[1:]]  # 3 t^2, 6 t, 6 at t = 2
cube_grad_fns = [d.grad_fn.name() for d in derivs[1:3]]
print(cube_derivatives, cube_grad_fns)

# a mix of all of them on a fixed grid, recorded for the comparison with torch
grid = torch.linspace(-1, 1, 7, dtype=torch.double).requires_grad_()
mixed = my_sinh(grid) * Sq.apply(grid) + ExpSavingOutput.apply(grid) * Cube.apply(grid)
(gm1,) = grad(mixed.sum(), grid, create_graph=True)
(gm2,) = grad((gm1 * grid).sum(), grid)
fixed_results = {"out": mixed.tolist(), "g1": gm1.tolist(), "g2": gm2.tolist()}
