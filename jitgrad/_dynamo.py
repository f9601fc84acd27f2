"""``jitgrad._dynamo``: the part of ``torch._dynamo`` that user scripts call, ``reset()``.

torch's TorchDynamo captures graphs from bytecode; jitgrad's ``compile`` traces with ``jit``
(see ``jit/torch_compile.py``), so there is no ``explain`` or ``export`` here.
"""

from __future__ import annotations

from .jit.torch_compile import reset

__all__ = ["reset"]
