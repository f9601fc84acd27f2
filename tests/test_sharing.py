"""Tensor.share_memory_ / Module sharing across forked processes, pin_memory, and
jitgrad.multiprocessing's spawn, against torch's behaviour."""

import multiprocessing
import os
import sys

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.multiprocessing as jmp

fork_only = pytest.mark.skipif(sys.platform == "win32" or "fork" not in
                               multiprocessing.get_all_start_methods(),
                               reason="needs the fork start method")


def _add_rank(rank, shared):
    shared[rank] += rank + 1  # in place, in the child


def _fail(rank):
    if rank == 1:
        raise ValueError("rank one failed on purpose")


def _exit(rank):
    sys.exit(3)


@fork_only
def test_forked_children_write_into_shared_tensors():
    t = jg.zeros(4)
    view = t[1:]
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and t[1:].is_shared()
    assert t.share_memory_() is t  # already shared: nothing moves
    jmp.spawn(_add_rank, args=(t,), nprocs=3, start_method="fork")
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3, 0])
    assert not view.is_shared()  # (a view taken before the move keeps the old memory)


@fork_only
def test_hogwild_workers_train_one_shared_model():
    jg.manual_seed(0)
    model = jg.nn.Linear(3, 1)
    assert model.weight.share_memory_().is_shared()
    model.bias.share_memory_()
    before = model.weight.detach().clone()
    x, y = jg.randn(32, 3), jg.randn(32, 1)

    def train(rank):
        opt = jg.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            jg.nn.functional.mse_loss(model(x), y).backward()
            opt.step()  # in place on the shared parameters

    jmp.spawn(train, nprocs=2, start_method="fork")
    assert not jg.equal(model.weight.detach(), before)  # the parent sees the workers' steps


@fork_only
def test_spawn_reports_what_a_process_raised_or_its_exit_code():
    with pytest.raises(jmp.ProcessRaisedException,
                       match="-- Process 1 terminated with the following error:") as info:
        jmp.spawn(_fail, nprocs=2, start_method="fork")
    assert "ValueError: rank one failed on purpose" in str(info.value)
    assert info.value.error_index == 1
    with pytest.raises(jmp.ProcessExitedException,
                       match="process 0 terminated with exit code 3") as info:
        jmp.spawn(_exit, nprocs=1, start_method="fork")
    assert info.value.exit_code == 3


def _touch(rank, directory):
    with open(os.path.join(directory, f"rank{rank}"), "w") as f:
        f.write(str(os.getpid()))


def test_spawn_with_the_spawn_method_and_join_false(tmp_path):
    context = jmp.spawn(_touch, args=(str(tmp_path),), nprocs=2, join=False)
    assert len(context.pids()) == 2
    while not context.join():
        pass
    written = {p.name: int(p.read_text()) for p in tmp_path.iterdir()}
    assert written == {"rank0": context.pids()[0], "rank1": context.pids()[1]}


def test_sharing_strategy_names_as_torch():
    torch = pytest.importorskip("torch")
    import torch.multiprocessing as tmp

    assert jmp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert jmp.get_sharing_strategy() == tmp.get_sharing_strategy()
    assert jmp.Process is multiprocessing.Process and jmp.Queue is not None
    assert torch is not None


def test_pin_memory_without_an_accelerator_raises_as_torch(monkeypatch):
    def unavailable(dev):
        raise RuntimeError("no usable GPU here")

    monkeypatch.setattr(sys.modules["jitgrad.device"], "check_device", unavailable)
    t = jg.zeros(3)
    assert not t.is_pinned()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is "
                       "available."):
        t.pin_memory()


def test_pin_memory_and_save_on_cpu_on_the_simulated_gpu():
    pytest.importorskip("numba.cuda")
    import subprocess

    code = ("import jitgrad as jg; p = jg.arange(4.).pin_memory(); "
            "assert p.is_pinned() and not jg.arange(4.).is_pinned(); "
            "assert p.cuda().cpu().tolist() == [0.0, 1.0, 2.0, 3.0]; "
            "x = jg.arange(3., device='cuda', requires_grad=True)\n"
            "with jg.autograd.graph.save_on_cpu(pin_memory=True):\n"
            "    y = (x * x).sum()\n"
            "y.backward(); assert x.grad.is_cuda and x.grad.cpu().tolist() == [0.0, 2.0, 4.0]\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert out.stdout.strip() == "ok", out.stderr


def test_save_on_cpu_keeps_gradients_as_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((3, 4))
    x, tx = jg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    with jg.autograd.graph.save_on_cpu(pin_memory=False):
        y = (x.sin() * x).sum()
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        ty = (tx.sin() * tx).sum()
    y.backward()
    ty.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert jg.utils.hooks.RemovableHandle is type(x.register_hook(lambda g: None))
