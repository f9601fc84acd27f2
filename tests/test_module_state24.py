"""Module's state-dict hooks and extra state, compile / jit.script / jit.trace, legacy backward
hooks, share_memory, to_empty and set_submodule, against torch."""

import warnings

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _extra_state_model(m):
    class WithExtra(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = m.nn.Linear(2, 2)
            self.counter = 0

        def get_extra_state(self):
            return {"counter": self.counter}

        def set_extra_state(self, state):
            self.counter = state["counter"]

    return m.nn.Sequential(WithExtra(), m.nn.ReLU())


@pytest.mark.parametrize("m", [jg, torch], ids=["jitgrad", "torch"])
def test_extra_state_round_trips(m):
    model = _extra_state_model(m)
    model[0].counter = 7
    sd = model.state_dict()
    assert list(sd) == ["0._extra_state", "0.lin.weight", "0.lin.bias"]  # (own state first)
    assert sd._metadata["0"] == {"version": 1}
    again = _extra_state_model(m)
    assert str(again.load_state_dict(sd)) == "<All keys matched successfully>"
    assert again[0].counter == 7
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match='Missing key.s. in state_dict: "0._extra_state"'):
        again.load_state_dict(sd)


def _hooked(m, log):
    model = m.nn.Sequential(m.nn.Linear(2, 2))
    model.register_state_dict_pre_hook(lambda mod, prefix, keep_vars:
                                       log.append(("pre", prefix, keep_vars)))
    model[0].register_state_dict_post_hook(
        lambda mod, sd, prefix, meta: log.append(("post", prefix, sorted(sd), dict(meta))))
    model[0].register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, meta, strict, missing, unexpected, errors:
        log.append(("load pre", prefix, sorted(sd), strict)))

    def post(mod, keys):
        log.append(("load post", list(keys.missing_keys), list(keys.unexpected_keys)))
        keys.unexpected_keys.clear()  # in place, as torch's docs say

    model.register_load_state_dict_post_hook(post)
    return model


def _run_hooks(m):
    log = []
    model = _hooked(m, log)
    sd = model.state_dict(keep_vars=True)
    sd["extra"] = m.zeros(1)
    result = model.load_state_dict(sd)
    log.append(("result", list(result.unexpected_keys)))
    model.register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        model.state_dict()
    return log


def test_state_dict_hooks_run_as_torch_runs_them():
    assert _run_hooks(jg) == _run_hooks(torch)


@pytest.mark.parametrize("m", [jg, torch], ids=["jitgrad", "torch"])
def test_load_from_state_dict_override_with_torch_signature(m):
    class Migrating(m.nn.Linear):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            if local_metadata.get("version", 1) < 2 and prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)

    model = Migrating(2, 2)
    old = {"w": m.ones(2, 2), "bias": m.zeros(2)}
    model.load_state_dict(old)
    assert float(model.weight.sum()) == 4.0
    assert model.state_dict()._metadata[""] == {"version": 2}


def test_compile_in_place_and_jit_script_trace_keep_keys():
    jg.manual_seed(0)
    model = jg.nn.Sequential(jg.nn.Linear(3, 4), jg.nn.Tanh(), jg.nn.Linear(4, 1))
    x = jg.randn(5, 3)
    want = model(x)
    keys = list(model.state_dict())
    assert model.compile() is None
    # (the compiled float32 sums run in another order: an absolute bound for outputs near 0)
    np.testing.assert_allclose(model(x).detach().numpy(), want.detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    assert list(model.state_dict()) == keys
    model(x).sum().backward()
    assert model[0].weight.grad is not None
    scripted = jg.jit.script(jg.nn.Linear(3, 1))
    assert list(scripted.state_dict()) == ["weight", "bias"]
    traced = jg.jit.trace(lambda t: t.sin() * 2, jg.ones(3))
    np.testing.assert_allclose(traced(jg.zeros(3)).numpy(), [0.0, 0.0, 0.0])
    assert not jg.jit.is_scripting() and not jg.jit.is_tracing()
    seen = []

    @jg.jit
    def probe(t):
        seen.append(jg.jit.is_tracing())
        return t + 1

    probe(jg.ones(2))
    assert seen == [True]
    assert jg.jit.ignore(len) is len and jg.jit.annotate(list, [1]) == [1]


def _legacy(m):
    lin = m.nn.Linear(3, 2)
    with m.no_grad():
        lin.weight.copy_(m.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]))
        lin.bias.zero_()
    seen = []
    lin.register_backward_hook(lambda mod, gin, gout: seen.append(
        ([None if g is None else g.detach().numpy().tolist() for g in gin],
         [g.detach().numpy().tolist() for g in gout])))
    x = m.tensor([[1.0, 0.0, -1.0]], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lin(x).sum().backward()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full "
                       "backward hooks on a single Module"):
        lin.register_full_backward_hook(lambda *a: None)
    return seen, sorted(str(w.message)[:60] for w in caught
                        if issubclass(w.category, FutureWarning))


def test_legacy_backward_hook_as_torch():
    ours, theirs = _legacy(jg), _legacy(torch)
    assert ours[1] == theirs[1]
    assert len(ours[0]) == len(theirs[0]) == 1
    for a, b in zip(ours[0][0][1], theirs[0][0][1]):
        np.testing.assert_allclose(a, b)
    assert len(ours[0][0][0]) == len(theirs[0][0][0])


def test_share_memory_to_empty_and_set_submodule():
    model = jg.nn.Sequential(jg.nn.Linear(2, 2), jg.nn.BatchNorm1d(2))
    assert model.share_memory() is model
    assert all(t.is_shared() for t in model.parameters())
    assert all(t.is_shared() for t in model.buffers())
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert model.to_empty(device="cpu") is model
    assert [tuple(p.shape) for p in model.parameters()] == shapes
    assert all(isinstance(p, jg.nn.Parameter) for p in model.parameters())
    model.set_submodule("1", jg.nn.Identity())
    assert isinstance(model[1], jg.nn.Identity)
    with pytest.raises(AttributeError, match="has no attribute `missing`"):
        model.set_submodule("missing", jg.nn.Identity(), strict=True)
    tmodel = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with pytest.raises(AttributeError, match="has no attribute `missing`"):
        tmodel.set_submodule("missing", torch.nn.Identity(), strict=True)


def test_jit_freeze_checks_as_torch_and_returns_the_compiled_module():
    lin = jg.nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input. Please use "
                       "torch.jit.script or torch.jit.trace to script your 'nn.Module'."):
        jg.jit.freeze(lin)
    traced = jg.jit.trace(lin, jg.ones(1, 3))
    with pytest.raises(RuntimeError, match="Freezing is currently only implemented for modules "
                       "in eval mode. Please call .eval"):
        jg.jit.freeze(traced)
    frozen = jg.jit.freeze(traced.eval())
    x = jg.rand(4, 3)
    assert frozen is lin and jg.allclose(frozen(x), x @ lin.weight.T + lin.bias)


def test_onednn_fusion_flag():
    assert jg.jit.onednn_fusion_enabled() is False
    jg.jit.enable_onednn_fusion(True)
    try:
        assert jg.jit.onednn_fusion_enabled() is True
    finally:
        jg.jit.enable_onednn_fusion(False)


def test_jit_trace_takes_the_example_inputs_as_torch():
    calls = []

    def f(a, b=None):
        calls.append(b)
        return 2 * (a["k"] if isinstance(a, dict) else a)

    x = jg.ones(2)
    for example, second in ((x, False), ((x, x), True), ([x, x], True), ({"k": x}, False)):
        calls.clear()
        jg.jit.trace(f, example)
        assert len(calls) == 1 and (calls[0] is not None) == second
    assert jg.jit.trace(jg.nn.Linear(3, 1), [jg.ones(4, 3)])(jg.ones(4, 3)).shape == (4, 1)
