"""opdb records of issue 15's nn ops (leaky_relu, elu, softplus, the binary cross
entropies, smooth L1 and Huber losses, embedding, constant padding, affine_grid), appended to
``opdb.OP_DB``; kept here so that opdb.py stays a readable size."""

from __future__ import annotations

import numpy as np


def _softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _elu_ref(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(x))


def _leaky_ref(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def _off_kinks(*intervals):
    """Values drawn from the given intervals (each kept 10% clear of the kinks, as vmap sweeps
    scale inputs by up to 1.1)."""
    def gen(rng, *shape):
        pick = rng.integers(0, len(intervals), shape)
        lo, hi = np.array(intervals).T
        return np.asarray(rng.uniform(lo[pick], hi[pick]))
    return gen


_PM_ONE = _off_kinks((-2.5, -1.2), (-0.8, 0.8), (1.2, 2.5))  # (kinks at +-1)
_PM_HALF = _off_kinks((-2.5, -0.6), (-0.4, 0.4), (0.6, 2.5))  # (kinks at +-0.5)
_ZERO_SIX = _off_kinks((-2.0, -0.3), (0.3, 5.0), (7.0, 9.0))  # (relu6)


def _hardtanh_ref(x, min_val=-1.0, max_val=1.0):
    return np.clip(x, min_val, max_val)


def _inplace_call(f, x, *args, **kwargs):
    return f(x * 1, *args, inplace=True, **kwargs)


def _threshold_ref(x, threshold, value):
    return np.where(x > threshold, x, value)


def _hardshrink_ref(x, lambd=0.5):
    return np.where(np.abs(x) > lambd, x, 0.0)


def _softshrink_ref(x, lambd=0.5):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0))


def _prelu_ref(x, weight):
    w = weight.reshape((-1,) + (1,) * (x.ndim - 2)) if weight.size > 1 else weight.reshape(())
    return np.where(x > 0, x, w * x)


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


def _bce_ref(x, t, weight=None, reduction="mean"):
    loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    return _reduce(loss * (1 if weight is None else weight), reduction)


def _bce_logits_ref(x, t, weight=None, reduction="mean", pos_weight=None):
    pw = 1 if pos_weight is None else pos_weight
    loss = (1 - t) * x + ((pw - 1) * t + 1) * np.log1p(np.exp(-x))
    return _reduce(loss * (1 if weight is None else weight), reduction)


def _smooth_l1_ref(x, t, reduction="mean", beta=1.0):
    d = np.abs(x - t)
    return _reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _huber_ref(x, t, reduction="mean", delta=1.0):
    d = np.abs(x - t)
    return _reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _embedding_ref(idx, weight, padding_idx=None, scale_grad_by_freq=False):
    return weight[idx]


def _pad_ref(x, pad, mode="constant", value=0.0):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    out = np.pad(x, pos, constant_values=value)
    crop = tuple(slice(max(-lo, 0), out.shape[d] - max(-hi, 0))
                 for d, (lo, hi) in enumerate(widths))
    return out[crop]


def _gather_pad_ref(x, pad, mode):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge"}[mode])


def _affine_grid_ref(theta, size, align_corners=False):
    spatial = list(size[2:])
    axes = []
    for n in spatial:
        steps = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(n)
        axes.append(steps if align_corners else steps * (n - 1) / n)
    grids = np.meshgrid(*axes, indexing="ij")
    base = np.stack(list(reversed(grids)) + [np.ones(spatial)], -1)
    return np.einsum("...j,nkj->n...k", base, theta)


def nn15_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import Const, OpInfo, Sample, _arr, _away, _many, _s, _unary

    def prob(rng, *shape):
        return rng.uniform(0.05, 0.9, shape)  # (vmap sweeps scale inputs by up to 1.1)

    def target(rng, *shape):
        return rng.uniform(0.0, 1.0, shape)

    def bce_samples(rng):
        return [Sample((prob(rng, 3, 4), target(rng, 3, 4)), {"reduction": r}, r)
                for r in ("mean", "sum", "none")] + [
            Sample((prob(rng, 3, 4), target(rng, 3, 4)),
                   {"weight": Const(rng.uniform(0.5, 2.0, (4,)))}, "weight")]

    def bce_logits_samples(rng):
        return [Sample((_away(rng, 3, 4), target(rng, 3, 4)), {"reduction": r}, r)
                for r in ("mean", "sum", "none")] + [
            Sample((_away(rng, 3, 4), target(rng, 3, 4)),
                   {"pos_weight": Const(rng.uniform(0.5, 2.0, (4,)))}, "pos_weight"),
            Sample((_away(rng, 3, 4), target(rng, 3, 4)),
                   {"weight": Const(rng.uniform(0.5, 2.0, (3, 1))),
                    "pos_weight": Const(rng.uniform(0.5, 2.0, (4,))), "reduction": "none"},
                   "both_none")]

    def regression_samples(param, value):
        def build(rng):
            # differences kept away from the switch point |d| == value
            def diff(rng, *shape):
                mag = np.where(rng.random(shape) < 0.5, rng.uniform(0.1, 0.8 * value, shape),
                               rng.uniform(1.2 * value, 3.0, shape))
                return mag * rng.choice([-1.0, 1.0], shape)
            out = []
            for r in ("mean", "sum", "none"):
                t = rng.uniform(-1, 1, (3, 4))
                out.append(Sample((t + diff(rng, 3, 4), t), {"reduction": r, param: value}, r))
            return out
        return build

    def embedding_samples(rng):
        idx = np.array([[0, 2, 4], [2, 2, 1]])
        return [Sample((idx, rng.uniform(-1, 1, (5, 3))), name="plain"),
                Sample((np.array(3), rng.uniform(-1, 1, (5, 3))), name="0d")]

    def embedding_modified_grad_samples(rng):
        # padding_idx and scale_grad_by_freq change the gradient on purpose (it is not the
        # derivative, so no gradcheck): values here, gradients vs torch in test_nn_modules2
        idx = np.array([[0, 2, 4], [2, 2, 1]])
        return [Sample((idx, rng.uniform(-1, 1, (5, 3))), {"padding_idx": 2}, "padding"),
                Sample((idx, rng.uniform(-1, 1, (5, 3))), {"scale_grad_by_freq": True},
                       "freq")]

    pad = _many(_s(_arr(3, 4), (1, 2), name="last"),
                _s(_arr(2, 3, 4), (1, 0, 2, 1), "constant", 0.5, name="two_dims"),
                _s(_arr(3, 4), (-1, 2, 1, -1), name="negative"),
                _s(_arr(2, 3, 4), (0, 0, 0, 0, 1, 1), name="first_dim"))
    pad_recs = [OpInfo("pad", "nn.functional.pad", pad, _pad_ref, gradgrad=False)]
    for mode in ("reflect", "replicate"):
        samples = _many(_s(_arr(2, 5), (2, 1), mode, name="1d_unbatched"),
                        _s(_arr(2, 3, 5), (1, 3), mode, name="1d"),
                        _s(_arr(2, 4, 5), (1, 2, 0, 3), mode, name="2d_unbatched"),
                        _s(_arr(1, 2, 4, 5), (2, 1, 1, 1), mode, name="2d"),
                        _s(_arr(2, 3, 4, 4), (1, 0, 2, 1, 1, 2), mode, name="3d_unbatched"))
        pad_recs.append(OpInfo(f"pad_{mode}", "nn.functional.pad", samples, _gather_pad_ref,
                               gradgrad=False))
    # the piecewise-linear activations (jitgrad/ops/nn_acts.py): their backward ops run in
    # the first-order backward; second derivatives are zeros (tests/test_activations2.py)
    acts = [
        OpInfo("hardtanh", "nn.functional.hardtanh",
               _many(_unary(_PM_ONE), _s(_arr(3, 4, gen=_PM_ONE), -1.0, 1.0, name="bounds")),
               _hardtanh_ref, gradgrad=False),
        OpInfo("relu6", "nn.functional.relu6", _unary(_ZERO_SIX),
               lambda x: np.clip(x, 0.0, 6.0), gradgrad=False),
        OpInfo("threshold", "nn.functional.threshold",
               _s(_arr(3, 4, gen=_PM_ONE), 1.0, -3.0, name="thr"), _threshold_ref,
               gradgrad=False),
        # (in place on a copy: the threshold_ op, torch's ThresholdBackward1)
        OpInfo("threshold_", "nn.functional.threshold",
               _s(_arr(3, 4, gen=_PM_ONE), 1.0, -3.0, name="thr"), _threshold_ref,
               call=_inplace_call, gradgrad=False),
        OpInfo("hardshrink", "nn.functional.hardshrink",
               _many(_unary(_PM_HALF), _s(_arr(3, 4, gen=_PM_ONE), 1.0, name="lambd")),
               _hardshrink_ref, gradgrad=False),
        OpInfo("softshrink", "nn.functional.softshrink",
               _many(_unary(_PM_HALF), _s(_arr(3, 4, gen=_PM_ONE), 1.0, name="lambd")),
               _softshrink_ref,
               gradgrad=False),
        # (torch does not differentiate hardsigmoid's gradient: neither does jitgrad)
        OpInfo("hardsigmoid", "nn.functional.hardsigmoid",
               _unary(_off_kinks((-5.0, -3.4), (-2.6, 2.6), (3.4, 5.0))),
               lambda x: np.clip(x + 3, 0, 6) / 6, gradgrad=False),
        OpInfo("hardswish", "nn.functional.hardswish",
               _unary(_off_kinks((-5.0, -3.4), (-2.6, 2.6), (3.4, 5.0))),
               lambda x: x * np.clip(x + 3, 0, 6) / 6),
        # (second derivatives of prelu mix the input and the weight: not all zeros)
        OpInfo("prelu", "nn.functional.prelu",
               _many(_s(_arr(3, 2, 4, gen=_away), _arr(2), name="channels"),
                     _s(_arr(3, 4, gen=_away), _arr(1), name="one")), _prelu_ref),
    ]
    return acts + [
        OpInfo("leaky_relu", "nn.functional.leaky_relu", _unary(_away), _leaky_ref,
               gradgrad=False),
        OpInfo("leaky_relu_slope", "nn.functional.leaky_relu",
               _s(_arr(3, 4, gen=_away), 0.2, name="slope"), _leaky_ref, gradgrad=False),
        OpInfo("elu", "nn.functional.elu", _many(_unary(_away),
                                                 _s(_arr(3, 4, gen=_away), 0.5, name="alpha")),
               _elu_ref),
        OpInfo("softplus_beta", "nn.functional.softplus",
               _many(_unary(), _s(_arr(3, 4), 2.0, 1.0, name="beta_threshold")),
               _softplus_ref),
        OpInfo("binary_cross_entropy", "nn.functional.binary_cross_entropy", bce_samples,
               _bce_ref),
        OpInfo("binary_cross_entropy_with_logits",
               "nn.functional.binary_cross_entropy_with_logits", bce_logits_samples,
               _bce_logits_ref),
        OpInfo("smooth_l1_loss", "nn.functional.smooth_l1_loss",
               regression_samples("beta", 0.5), _smooth_l1_ref, gradgrad=False),
        OpInfo("huber_loss", "nn.functional.huber_loss", regression_samples("delta", 0.5),
               _huber_ref, gradgrad=False),
        OpInfo("embedding", "nn.functional.embedding", embedding_samples, _embedding_ref,
               gradgrad=False),
        OpInfo("embedding_modified_grad", "nn.functional.embedding",
               embedding_modified_grad_samples, _embedding_ref, differentiable=False),
        # (the affine_grid_generator op: its node keeps no tensor, as torch's)
        OpInfo("affine_grid", "nn.functional.affine_grid",
               _many(_s(_arr(2, 2, 3), (2, 1, 3, 4), align_corners=False, name="2d"),
                     _s(_arr(1, 3, 4), (1, 2, 2, 3, 2), align_corners=True, name="3d")),
               _affine_grid_ref),
    ] + pad_recs
