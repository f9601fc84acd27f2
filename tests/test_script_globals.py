"""Names user scripts reach for at the top level: torch.Tensor(...) as a constructor,
torch.accelerator, set_float32_matmul_precision, torch.random.fork_rng, torch.vmap,
Module.get_parameter/get_buffer, against torch."""

import numpy as np
import pytest

import jitgrad


@pytest.mark.parametrize("args", [([1, 2],), ((2, 3),), (2, 3), (3,), (), ("size",),
                                  (np.arange(3),), ([[1.5, 2], [3, 4]],)])
def test_tensor_constructor_is_the_default_dtype_legacy_constructor(args):
    torch = pytest.importorskip("torch")
    ours = jitgrad.Tensor(*[jitgrad.Size([2, 1]) if isinstance(a, str) else a for a in args])
    theirs = torch.Tensor(*[torch.Size([2, 1]) if isinstance(a, str) else a for a in args])
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype is jitgrad.float32 and theirs.dtype is torch.float32
    if args and not all(isinstance(a, (int, str)) for a in args):
        assert ours.tolist() == theirs.tolist()


def test_tensor_constructor_follows_the_default_dtype_and_makes_parameters():
    jitgrad.set_default_dtype(jitgrad.float64)
    try:
        assert jitgrad.Tensor([1, 2]).dtype is jitgrad.float64
    finally:
        jitgrad.set_default_dtype(jitgrad.float32)
    p = jitgrad.nn.Parameter(jitgrad.Tensor(4, 3))
    assert p.shape == (4, 3) and p.requires_grad
    assert jitgrad.FloatTensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, as in torch
    assert jitgrad.FloatTensor(jitgrad.Size([2, 3])).shape == (2, 3)


def test_accelerator_agrees_with_cuda():
    acc = jitgrad.accelerator
    device = acc.current_accelerator().type if acc.is_available() else "cpu"
    assert device == ("cuda" if jitgrad.cuda.is_available() else "cpu")
    assert acc.device_count() == (jitgrad.cuda.device_count() if acc.is_available() else 0)
    acc.synchronize()


def test_get_device_module_matches_torch():
    torch = pytest.importorskip("torch")
    assert jitgrad.get_device_module() is (jitgrad.cuda if jitgrad.cuda.is_available()
                                           else jitgrad.cpu)
    for arg in ("cpu", "cpu:0", "cuda"):
        for lib in (jitgrad, torch):
            assert lib.get_device_module(arg).__name__ == f"{lib.__name__}.{arg.split(':')[0]}"
    assert jitgrad.get_device_module(jitgrad.device("cpu")) is jitgrad.cpu
    for arg in (3, "meta"):
        texts = []
        for lib in (jitgrad, torch):
            with pytest.raises(RuntimeError) as info:
                lib.get_device_module(arg)
            texts.append(str(info.value))
        assert texts[0] == texts[1]


def test_float32_matmul_precision_matches_torch():
    torch = pytest.importorskip("torch")
    try:
        for lib in (torch, jitgrad):
            assert lib.get_float32_matmul_precision() == "highest"
            lib.set_float32_matmul_precision("high")
            assert lib.get_float32_matmul_precision() == "high"
            with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
                lib.set_float32_matmul_precision("x")
            assert lib.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")
        jitgrad.set_float32_matmul_precision("highest")


def test_fork_rng_restores_the_default_generator():
    jitgrad.manual_seed(3)
    want = jitgrad.rand(3)
    jitgrad.manual_seed(3)
    with jitgrad.random.fork_rng():
        jitgrad.rand(5)
    assert jitgrad.equal(jitgrad.rand(3), want)
    jitgrad.manual_seed(3)
    with jitgrad.random.fork_rng(enabled=False):
        jitgrad.rand(5)
    assert not jitgrad.equal(jitgrad.rand(3), want)


def test_top_level_vmap_is_func_vmap():
    assert jitgrad.vmap is jitgrad.func.vmap
    assert jitgrad.vmap(jitgrad.sum)(jitgrad.ones(2, 3)).tolist() == [3.0, 3.0]


def test_get_parameter_and_get_buffer_match_torch():
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (torch, jitgrad):
        m = lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.BatchNorm1d(1))
        assert m.get_parameter("0.weight") is m[0].weight
        assert m.get_buffer("1.running_mean") is m[1].running_mean
        for target, fn in (("0.x", m.get_parameter), ("1.running_mean", m.get_parameter),
                           ("0.weight", m.get_buffer), ("1.x", m.get_buffer)):
            with pytest.raises(AttributeError) as e:
                fn(target)
            msgs.append(str(e.value))
    assert msgs[:4] == msgs[4:]


def test_in_place_samplers_keep_float64_precision():
    t = jitgrad.empty(1000, dtype=jitgrad.float64).uniform_()
    assert t.dtype is jitgrad.float64
    assert not np.array_equal(t.numpy(), t.numpy().astype(np.float32).astype(np.float64))
    t = jitgrad.empty(1000, dtype=jitgrad.float64).normal_()
    assert not np.array_equal(t.numpy(), t.numpy().astype(np.float32).astype(np.float64))


def test_torch_backends_switches_scripts_set():
    import jitgrad as torch

    assert torch.backends.cudnn.is_available() is False
    assert torch.backends.mps.is_available() is False and torch.backends.mps.is_built() is False
    assert torch.backends.cudnn.version() is None
    saved = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        assert torch.backends.cudnn.deterministic is True
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = saved
    assert torch.backends.cudnn.enabled is True
    with pytest.raises(AttributeError):
        torch.backends.no_such_backend  # noqa: B018
