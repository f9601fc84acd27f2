import atexit
import os
import shutil
import tempfile

# The test session never writes jitgrad's kernel cache into the user's cache directory: one
# temporary directory per process (each xdist worker has its own), removed at exit.
_CACHE = tempfile.mkdtemp(prefix="jitgrad-test-cache-")
os.environ["JITGRAD_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)
os.environ["JITGRAD_VERIFY"] = "1"  # every pass's result is checked with Graph.verify()
# No helper process compiles kernels (backends/compile_pool): the xdist workers keep every core
# busy already, and a test knows which process compiled what. test_compile_pool starts its own.
os.environ["JITGRAD_COMPILE_WORKERS"] = "0"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jitgrad  # noqa: E402


# Under pytest-xdist every worker process would run Numba's parallel loops (and NumPy's
# OpenBLAS) on every core: two workers on two cores run four threads, and a parallel region
# waits until each of its threads is scheduled (the transformer example took 40-60 s with one
# thread per worker, 63-78 s with two). So a worker runs them on one thread; the tests of
# parallel execution itself ask for every thread with the ``all_threads`` fixture.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    jitgrad.set_num_threads(1)


@pytest.fixture
def all_threads():
    """Runs the test's parallel loops and matrix products on all of Numba's threads."""
    import numba

    before = jitgrad.get_num_threads()
    jitgrad.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    yield
    jitgrad.set_num_threads(before)


@pytest.fixture(autouse=True)
def _fresh_state():
    jitgrad.manual_seed(0)
    np.random.seed(0)
    yield
    jitgrad.set_default_dtype(jitgrad.float32)
