"""nn.utils.prune against torch: our own walk through the pruning API (unstructured, stacked
structured, removal, per-layer and global pruning, gradients through the mask, a custom method),
written in the way the pruning tutorial uses the API, not a copy of it."""

import importlib

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.utils.prune as prune


def _prune_walk(lib):
    """Run the same pruning steps with ``lib`` (jitgrad or torch); returns the observations."""
    nn, F = lib.nn, lib.nn.functional
    pr = importlib.import_module(lib.__name__ + ".nn.utils.prune")

    class Pyramid(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(2, 4, 3)       # 12x12 -> 10x10, pooled to 5x5
            self.mix = nn.Conv2d(4, 8, 2)        # 5x5 -> 4x4, pooled to 2x2
            self.proj = nn.Linear(8 * 2 * 2, 24)
            self.hidden = nn.Linear(24, 12)
            self.head = nn.Linear(12, 5)

        def forward(self, img):
            h = F.max_pool2d(F.relu(self.stem(img)), (2, 2))
            h = F.max_pool2d(F.relu(self.mix(h)), 2)
            h = h.view(-1, int(h.nelement() / h.shape[0]))
            return self.head(F.relu(self.hidden(F.relu(self.proj(h)))))

    def build(freq, shift):
        net = Pyramid()
        with lib.no_grad():  # distinct, tie-free magnitudes so L1 choices agree across libraries
            for j, w in enumerate(net.parameters()):
                ramp = lib.arange(w.numel(), dtype=lib.float32) * freq + shift * j
                w.copy_((lib.cos(ramp) * 0.3).view_as(w))
        return net

    seen = []
    net = build(0.61, 0.4)
    stem = net.stem
    seen.append([n for n, _ in stem.named_parameters()])
    pr.random_unstructured(stem, name="weight", amount=0.25)
    seen.append([n for n, _ in stem.named_parameters()])        # weight_orig replaces weight
    seen.append([n for n, _ in stem.named_buffers()])           # plus the weight_mask buffer
    seen.append(int((stem.weight_mask == 0).sum()))
    seen.append(len(stem._forward_pre_hooks))
    pr.l1_unstructured(stem, name="bias", amount=2)             # an int amount: two entries
    seen.append(stem.bias.tolist())
    pr.ln_structured(stem, name="weight", amount=0.5, n=2, dim=0)  # stacks on the random mask
    weight_hook = [h for h in stem._forward_pre_hooks.values() if h._tensor_name == "weight"][0]
    seen.append(type(weight_hook).__name__)
    seen.append([type(part).__name__ for part in weight_hook])
    seen.append(int((stem.weight.sum(dim=(1, 2, 3)) == 0).sum()))  # whole output channels gone
    pr.remove(stem, "weight")
    seen.append([n for n, _ in stem.named_parameters()])

    net = build(1.17, -0.3)
    for _, layer in net.named_modules():  # a different share per layer kind
        if isinstance(layer, lib.nn.Conv2d):
            pr.l1_unstructured(layer, name="weight", amount=0.3)
        elif isinstance(layer, lib.nn.Linear):
            pr.l1_unstructured(layer, name="weight", amount=0.55)
    seen.append(sorted(dict(net.named_buffers()).keys()))

    net = build(0.83, 0.9)
    layers = (net.stem, net.mix, net.proj, net.hidden, net.head)
    targets = tuple((layer, "weight") for layer in layers)
    pr.global_unstructured(targets, pruning_method=pr.L1Unstructured, amount=0.35)
    for layer, pname in targets:  # one threshold over all five: uneven shares per layer
        seen.append(float(lib.sum(getattr(layer, pname) == 0)))
    seen.append(pr.is_pruned(net))
    img = lib.sin(lib.arange(3 * 2 * 12 * 12, dtype=lib.float32) * 0.29).view(3, 2, 12, 12) * 0.1
    seen.append(net(img).tolist())
    net(img).sum().backward()
    seen.append(net.head.weight_orig.grad.abs().sum().item())
    seen.append(float((net.head.weight_orig.grad[net.head.weight_mask == 0] != 0).sum()))

    class EveryThirdFromOne(pr.BasePruningMethod):
        """Zeroes flat positions 1, 4, 7, ... on top of whatever is already pruned."""
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            keep = default_mask.clone()
            keep.view(-1)[1::3] = 0
            return keep

    net = build(0.5, 0.1)
    EveryThirdFromOne.apply(net.hidden, name="bias")
    seen.append(net.hidden.bias_mask.tolist())
    return seen


def test_pruning_walk_matches_torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.utils.prune")
    ours, theirs = _prune_walk(jitgrad), _prune_walk(torch)
    assert len(ours) == len(theirs) == 21
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if isinstance(a, (str, bool)) or (isinstance(a, list) and a and isinstance(a[0], str)):
            assert a == b, i
        else:
            np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                       rtol=1e-5, atol=1e-6, err_msg=str(i))


def test_pruned_weight_is_orig_times_mask_and_recomputed_each_forward():
    lin = jitgrad.nn.Linear(4, 3)
    prune.l1_unstructured(lin, "weight", amount=5)
    assert int((lin.weight_mask == 0).sum()) == 5
    with jitgrad.no_grad():
        lin.weight_orig.add_(1.0)
    lin(jitgrad.ones(1, 4))  # the pre-hook recomputes weight
    assert jitgrad.equal(lin.weight, lin.weight_orig * lin.weight_mask)
    prune.remove(lin, "weight")
    assert isinstance(lin.weight, jitgrad.nn.Parameter)
    assert not prune.is_pruned(lin) and "weight_mask" not in dict(lin.named_buffers())


def test_stacked_pruning_prunes_only_what_was_kept():
    lin = jitgrad.nn.Linear(10, 1)
    prune.random_unstructured(lin, "weight", amount=3)
    prune.random_unstructured(lin, "weight", amount=0.5)  # half of the 7 left: 4
    hook = next(iter(lin._forward_pre_hooks.values()))
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2
    assert int((lin.weight_mask == 0).sum()) == 7


@pytest.mark.parametrize("call", [
    lambda L, m: L.nn.utils.prune.l1_unstructured(m, "weight", amount=1.5),
    lambda L, m: L.nn.utils.prune.l1_unstructured(m, "weight", amount=100),
    lambda L, m: L.nn.utils.prune.l1_unstructured(m, "weight", amount="a"),
    lambda L, m: L.nn.utils.prune.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda L, m: L.nn.utils.prune.remove(m, "weight"),
])
def test_errors_match_torch(call):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.utils.prune")
    errors = []
    for lib in (torch, jitgrad):
        with pytest.raises((ValueError, TypeError)) as e:
            call(lib, lib.nn.Linear(3, 2))
        errors.append((type(e.value), str(e.value).split(" of module")[0]
                       .replace("torch.Size", "jitgrad.Size")))
    assert errors[0] == errors[1]
