import numpy as np
import pytest

import jitgrad


@pytest.fixture(autouse=True)
def _fresh_state():
    jitgrad.manual_seed(0)
    np.random.seed(0)
    yield
    jitgrad.set_default_dtype(jitgrad.float32)
