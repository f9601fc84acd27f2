"""``torch.cuda.memory_allocated`` / ``max_memory_allocated`` / ``reset_peak_memory_stats``
(llm.c's train_gpt2.py prints the peak), on numba's CUDA simulator as tests/test_cuda.py runs
it: the bytes of the live cuda tensors, each allocation rounded up to 512 bytes as torch's
caching allocator rounds it."""

from __future__ import annotations

import gc

import pytest
from test_cuda import CUDA  # (the simulator, turned on there before numba.cuda loads)

import jitgrad


def test_memory_stats_are_zero_without_cuda_tensors_as_torchs():
    torch = pytest.importorskip("torch")
    gc.collect()
    if jitgrad.cuda.memory_allocated() == 0:  # (no other test of this process holds one)
        assert jitgrad.cuda.memory_allocated() == torch.cuda.memory_allocated() == 0
    jitgrad.cuda.reset_peak_memory_stats()
    assert jitgrad.cuda.max_memory_allocated() == jitgrad.cuda.memory_allocated()


@pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")
def test_memory_allocated_counts_live_cuda_tensors_and_the_peak():
    gc.collect()
    jitgrad.cuda.reset_peak_memory_stats()
    base = jitgrad.cuda.memory_allocated()
    a = jitgrad.ones(1000, device="cuda")  # 4000 bytes -> 4096
    assert jitgrad.cuda.memory_allocated() == base + 4096
    b = jitgrad.zeros(3, device="cuda", dtype=jitgrad.float64)  # 24 bytes -> 512
    c = a.view(10, 100)  # a view allocates nothing
    assert jitgrad.cuda.memory_allocated() == base + 4096 + 512
    d = jitgrad.tensor([1.0, 2.0]).to("cuda")  # a copy from the host: 512
    assert jitgrad.cuda.memory_allocated() == base + 4096 + 1024
    del a, c
    gc.collect()
    assert jitgrad.cuda.memory_allocated() == base + 1024
    assert jitgrad.cuda.max_memory_allocated() == base + 4096 + 1024
    jitgrad.cuda.reset_peak_memory_stats()
    assert jitgrad.cuda.max_memory_allocated() == base + 1024
    del b, d
    gc.collect()
    assert jitgrad.cuda.memory_allocated() == base
