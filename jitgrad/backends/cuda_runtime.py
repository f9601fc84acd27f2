"""The eager CUDA runtime, put together: the top of the CUDA backend's eager side.

``cuda_eager`` dispatches an op on cuda tensors (``compute``) through its table ``_BY_NAME``;
this module collects the op modules' tables into it (``cuda_lines``, ``cuda_lines2``,
``cuda_nn``, ``cuda_linalg``, ``cuda_linalg2``, ``cuda_compact``, ``cuda_composite``,
``cuda_index``, ``cuda_special``, ``cuda_unique``, and the ``rng`` op's device draw from
``cuda_random``), then plugs the runtime into the layers below: the device array hooks
(``_cuda_array.HOOKS``) and the dispatcher's CUDA path (``registry.cuda_compute``,
``registry.cuda_live``). It only imports down: the op modules take their helpers from
``cuda_eager`` and the kernels from ``numba_cuda``, never from here.

``backends.load_cuda_runtime`` imports this module when the first cuda device is asked for;
loading it switches the dispatcher's CUDA check on.
"""

from __future__ import annotations

from .. import _cuda_array as ca
from ..ops import registry
from .cuda_compact import BY_NAME as _COMPACT
from .cuda_composite import BY_NAME as _COMPOSITE
from .cuda_eager import _BY_NAME, add_arrays, compute, copy_array, copy_into
from .cuda_index import BY_NAME as _INDEX
from .cuda_control_flow import BY_NAME as _CONTROL_FLOW
from .cuda_linalg import BY_NAME as _LINALG
from .cuda_linalg2 import BY_NAME as _LINALG2
from .cuda_lines import BY_NAME as _LINES
from .cuda_lines2 import BY_NAME as _LINES2
from .cuda_nn import BY_NAME as _NN
from .cuda_special import BY_NAME as _SPECIAL
from .cuda_unique import BY_NAME as _UNIQUE
from .cuda_random import draw as _draw


def _rng(op, args, params):
    # a draw the CUDA backend's program makes (traced without a device): on the device
    p = {k: v for k, v in params.items() if k != "device"}
    return _draw(**p), params["dtype"]


_BY_NAME["rng"] = _rng
_BY_NAME.update(_LINES)
_BY_NAME.update(_LINES2)
_BY_NAME.update(_NN)
_BY_NAME.update(_LINALG)
_BY_NAME.update(_LINALG2)
_BY_NAME.update(_COMPACT)
_BY_NAME.update(_COMPOSITE)
_BY_NAME.update(_INDEX)
_BY_NAME.update(_SPECIAL)
_BY_NAME.update(_UNIQUE)
_BY_NAME.update(_CONTROL_FLOW)
ca.HOOKS["copy"] = copy_array
ca.HOOKS["add"] = add_arrays
ca.HOOKS["copy_into"] = copy_into
ca.HOOKS["draw"] = _draw
registry.cuda_compute = compute
registry.cuda_live = True
