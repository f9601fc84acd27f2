"""``torch.version``: what the package is, for scripts that print or compare it.

``cuda`` and ``hip`` are None as in a CPU build of torch: jitgrad is not built against a GPU
toolkit (its CUDA kernels are compiled at run time through numba-cuda, see ``jitgrad.cuda``).
"""

from ._version import __version__ as __version__

cuda: str | None = None
hip: str | None = None
debug: bool = False

__all__ = ["__version__", "cuda", "debug", "hip"]
