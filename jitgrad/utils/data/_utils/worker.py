"""``torch.utils.data._utils.worker``: ``get_worker_info`` and ``WorkerInfo`` (the worker
code itself is ``jitgrad.utils.data._worker``)."""

from .._worker import (WorkerInfo, _IterableDatasetStopIteration, _ResumeIteration,
                       _worker_loop, get_worker_info)

__all__ = ["WorkerInfo", "_IterableDatasetStopIteration", "_ResumeIteration", "_worker_loop",
           "get_worker_info"]
