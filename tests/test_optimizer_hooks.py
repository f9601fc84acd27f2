"""Optimizer step / state_dict / load_state_dict hooks, against torch."""

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _setup(m):
    w = m.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = m.optim.SGD([w], lr=0.1, momentum=0.5)
    return w, opt


def _record(m, opt, log):
    import importlib

    optimizer_module = importlib.import_module(f"{m.__name__}.optim.optimizer")
    handles = [
        optimizer_module.register_optimizer_step_pre_hook(
            lambda o, a, k: log.append(("global pre", len(a), sorted(k)))),
        optimizer_module.register_optimizer_step_post_hook(
            lambda o, a, k: log.append(("global post",))),
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", o is opt))),
        opt.register_step_post_hook(lambda o, a, k: log.append(("post",))),
        opt.register_state_dict_pre_hook(lambda o: log.append(("sd pre",))),
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
        opt.register_state_dict_post_hook(lambda o, sd: log.append(("sd post first", sorted(sd)))
                                          , prepend=True),
        opt.register_load_state_dict_pre_hook(
            lambda o, sd: {**sd, "param_groups": [{**sd["param_groups"][0], "lr": 0.5}]}),
        opt.register_load_state_dict_post_hook(lambda o: log.append(("load post",))),
    ]
    return handles


def _run(m):
    w, opt = _setup(m)
    log = []
    handles = _record(m, opt, log)
    for _ in range(2):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    sd = opt.state_dict()
    log.append(("keys", sorted(sd)))
    opt.load_state_dict({k: v for k, v in sd.items() if k != "extra"})
    log.append(("lr", opt.param_groups[0]["lr"]))
    for h in handles:
        h.remove()
    opt.step()  # no hook runs any more
    return log, w.detach().numpy().tolist()


def test_hooks_run_as_torch_runs_them():
    ours, theirs = _run(jg), _run(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


@pytest.mark.parametrize("m", [jg, torch], ids=["jitgrad", "torch"])
def test_a_pre_hook_can_replace_the_arguments(m):
    w, opt = _setup(m)
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": closure}))
    assert float(opt.step()) == 14.0 and calls == [1]
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, "
                       r"new_kwargs\), but got 3."):
        opt.step()


def test_an_unpickled_optimizer_has_working_hooks():
    import pickle

    w, opt = _setup(jg)
    again = pickle.loads(pickle.dumps(opt))
    seen = []
    again.register_step_post_hook(lambda o, a, k: seen.append(1))
    again.step()
    assert seen == [1]
