"""``jitgrad.func``: torch.func's function transforms, composable with each other and ``jit``.

``vmap`` (batching rules, ``vmap.py``/``batching.py``), ``grad``, ``grad_and_value``,
``value_and_grad`` and ``vjp`` (``_grad.py``), ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` and
``linearize`` (``jacobians.py``), ``functional_call`` and ``stack_module_state``
(``functional_call.py``), ``functionalize`` and ``replace_all_batch_norm_modules_``
(``functionalize.py``), ``debug_unwrap``. See docs/func.md.
"""

from ._grad import grad, value_and_grad, vjp
from .functional_call import functional_call, stack_module_state
from .functionalize import functionalize, replace_all_batch_norm_modules_
from .jacobians import grad_and_value, hessian, jacfwd, jacrev, jvp, linearize
from .vmap import debug_unwrap, vmap

__all__ = ["vmap", "grad", "grad_and_value", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd",
           "hessian", "linearize", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap"]
