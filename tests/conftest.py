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

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jitgrad  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_state():
    jitgrad.manual_seed(0)
    np.random.seed(0)
    yield
    jitgrad.set_default_dtype(jitgrad.float32)
