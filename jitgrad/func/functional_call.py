"""``functional_call`` and ``stack_module_state`` (torch.func): implemented in
``nn.utils._functional_call`` (the layer below, as torch's are in ``nn.utils.stateless``)."""

from __future__ import annotations

from ..nn.utils._functional_call import functional_call, stack_module_state

__all__ = ["functional_call", "stack_module_state"]
