"""``jitgrad.utils.benchmark``: ``Timer``, ``Measurement`` and ``Compare`` as in
``torch.utils.benchmark`` (wall-clock timing of Python statements; no Callgrind, no C++), and
the input ``Fuzzer`` with ``op_fuzzers.binary`` / ``op_fuzzers.unary``."""

from .utils.common import *  # noqa: F403
from .utils.compare import *  # noqa: F403
from .utils.fuzzer import *  # noqa: F403
from .utils.timer import *  # noqa: F403
