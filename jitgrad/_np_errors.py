"""NumPy's floating-point warnings ("divide by zero encountered in log") silenced where
jitgrad's ops call NumPy, as torch's kernels give inf and nan silently.

``quiet()`` sets NumPy's error state to "ignore" for the current thread and context (NumPy 2
keeps it in a context variable: ~0.1 us, against ~0.9 us for ``np.errstate``) and returns the
token that ``restore`` takes back. A user's ``warnings.simplefilter("error")`` or pytest's ``-W
error`` then still sees no warning from an op. NumPy 1.x has no such variable: there the
warnings filter of ``ops/registry`` alone quiets them, unless the user's filters come first.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

try:
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
except ImportError:  # (NumPy 1.x)
    def quiet() -> Any:
        return None

    def restore(token: Any) -> None:
        return None
else:
    quiet: Callable[[], Any] = partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    restore: Callable[[Any], None] = _extobj_contextvar.reset
