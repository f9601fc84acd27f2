"""torch.func transforms over closures that reach tensors requiring grad: ``results`` keeps
(as text) what tests/test_func_closures.py compares with the same script on torch."""

import jitgrad as torch

results = []


def show(*values):
    results.append(" ".join(str(v) for v in values))


grad = torch.func.grad
w = torch.tensor([1.0, 2.0], requires_grad=True)


def f(v):
    return (w * v.sin()).sum()


x = torch.tensor([0.3, 0.4])
show(torch.func.jacrev(f)(x).requires_grad, grad(f)(x).requires_grad,
      torch.func.jacfwd(f)(x).requires_grad, torch.func.hessian(f)(x).requires_grad,
      torch.func.vmap(grad(f))(torch.randn(3, 2)).requires_grad)
x = torch.tensor(3.0)
show(grad(lambda a: grad(lambda b: a * b ** 2)(x))(torch.tensor(2.0)))
w = torch.tensor(2.0, requires_grad=True)
inner = grad(lambda b: w * b ** 2)(x)
show(inner, inner.requires_grad)
inner.backward()
show(w.grad)
w.grad = None
g = torch.func.jacrev(lambda v: (w * v.sin()).sum())(torch.tensor([0.3, 0.4]))
g.sum().backward()
show(w.grad)
show(grad(lambda v: v.sin().sum())(x).requires_grad)
show(grad(grad(lambda v: v.sin().sum()))(x))
W = torch.tensor([[1.0, 0.5], [0.2, 2.0]], requires_grad=True)
h = torch.func.hessian(lambda v: ((W @ v).tanh() ** 2).sum())(torch.tensor([0.3, -0.2]))
h.trace().backward()
show(W.grad)
W.grad = None
_, t = torch.func.jvp(lambda v: (W @ v).sin(), (torch.tensor([0.3, -0.2]),),
                      (torch.tensor([1.0, 0.5]),))
t.sum().backward()
show(t.requires_grad, W.grad)
W.grad = None
g, aux = grad(lambda v: ((W @ v).sum(), (W * 2).sum()), has_aux=True)(torch.tensor([0.3, -0.2]))
show(g.requires_grad, aux.requires_grad)
torch.manual_seed(0)
lin = torch.nn.Linear(3, 2)
gx = grad(lambda v: lin(v).pow(2).sum())(torch.ones(3))
gx.sum().backward()
show(gx.requires_grad, lin.weight.grad)
out, fn = torch.func.vjp(lambda v: W @ v, torch.tensor([1.0, 2.0]))
show(out.requires_grad, fn(torch.ones(2))[0].requires_grad)
# under no_grad around a transform nothing is recorded at the outer level (inside, grad is on)
with torch.no_grad():
    show(grad(f)(x).requires_grad, torch.func.hessian(f)(x).requires_grad)
    show(grad(lambda v: v.sin().sum())(x.clone().requires_grad_()).requires_grad)
    show(grad(lambda a: grad(lambda b: a * b ** 2)(torch.tensor(3.0)))(torch.tensor(2.0)))
