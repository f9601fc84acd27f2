"""torch._foreach_* over lists of tensors: ``results`` keeps (as text) what
tests/test_foreach_ops.py compares with the same script on torch."""

import jitgrad as torch

results = []


def show(*values):
    results.append(" ".join(str(v) for v in values))


a = [torch.ones(2), torch.ones(3) * 2]
b = [torch.ones(2) * 3, torch.ones(3) * 4]
show(torch._foreach_add(a, b))
show(torch._foreach_add(a, b, alpha=2))
show(torch._foreach_add(a, 1.5))
show(torch._foreach_add(a, [1.0, 2.0]))
show(torch._foreach_add(a, torch.tensor(5.0)))
show(torch._foreach_mul(a, torch.tensor(5.0)))
show(torch._foreach_norm(a), torch._foreach_norm(a, 1), torch._foreach_norm(a, ord=float("inf")))
show(torch._foreach_max(a))
show(torch._foreach_addcmul(a, b, b, value=0.5), torch._foreach_addcmul(a, b, b, [0.5, 1.0]),
     torch._foreach_addcmul(a, b, b, torch.tensor([0.5, 1.0])))
show(torch._foreach_pow(a, 2), torch._foreach_pow(2.0, a), torch._foreach_pow(a, b))
show(torch._foreach_lerp(a, b, 0.5), torch._foreach_lerp(a, b, b),
     torch._foreach_lerp(a, b, [0.1, 0.2]))
show(torch._foreach_clamp_min(a, 1.5), torch._foreach_maximum(a, b))
show(torch._foreach_powsum(a, 2))
show(torch._foreach_mm([torch.ones(2, 2)], [torch.ones(2, 2)]))
r = torch._foreach_add_(a, 1.0)
show(r is a, a)
for call in [lambda: torch._foreach_add(a, [torch.ones(2)]),
             lambda: torch._foreach_add([torch.ones(2)], [torch.ones(3)]),
             lambda: torch._foreach_add([], []), lambda: torch._foreach_add(a, [1.0])]:
    try:
        call()
    except RuntimeError as e:
        show(type(e).__name__, e)
show(torch._foreach_copy_([torch.zeros(2)], [torch.ones(2)]))
show(torch._foreach_zero_([torch.ones(2)]))
show(torch._foreach_clone([torch.ones(2)]))
show(torch._foreach_div(a, b), torch._foreach_sub(a, b, alpha=0.5), torch._foreach_neg(a))
ema = [torch.zeros(3)]
torch._foreach_lerp_(ema, [torch.ones(3)], 0.1)
show(ema)
p = [torch.ones(3)]
torch._foreach_mul_(p, 0.9)
torch._foreach_add_(p, [torch.ones(3)], alpha=0.1)
show(p)
show(torch._foreach_sqrt(b), torch._foreach_exp([torch.zeros(2)]),
     torch._foreach_sign([torch.tensor([-2.0, 0, 3])]))
x = torch.ones(2, requires_grad=True)
y = torch._foreach_mul([x], 2.0)[0]
y.sum().backward()
show(x.grad)
show(torch._foreach_addcdiv_([torch.ones(2)], [torch.ones(2)], [torch.ones(2) * 4], value=2))
