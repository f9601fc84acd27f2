"""``jitgrad.nn.functional``: activations, losses, layer_norm, linear, dropout, convolution,
pooling and attention.

Each function follows ``torch.nn.functional`` (names, defaults, error texts, the math of the
reductions). Where torch records one node the function calls that op (``NllLossBackward0``,
``NativeLayerNormBackward0``, ``AddmmBackward0`` ...); the rest is composed of jitgrad ops, so
every function is differentiable to any order and traceable by ``jit``.

This module is the namespace only: it re-exports the functions of ``_functional_core``
(activations, linear, layer_norm, dropout, embedding, pad), ``_functional_loss`` (the losses),
``functional_conv`` and ``functional_attention``, and installs the ops declared with a
``nn.functional`` name. Those modules import each other downwards and never this one.
"""

from __future__ import annotations

from ._functional_core import (dropout, elu, elu_, embedding, gelu, layer_norm, leaky_relu,
                               leaky_relu_, linear, log_softmax, normalize, one_hot, pad, relu,
                               sigmoid, silu, softmax, tanh)
from ._functional_loss import (binary_cross_entropy, binary_cross_entropy_with_logits,
                               cross_entropy, huber_loss, l1_loss, mse_loss, nll_loss,
                               smooth_l1_loss)
from .functional_attention import (_canonical_mask, _mha_shape_check, _none_or_dtype,  # noqa: F401
                                   multi_head_attention_forward, scaled_dot_product_attention)
from .functional_conv import *  # noqa: F401, F403 - conv, pooling, batch_norm
from .functional_conv import __all__ as _conv_all
from .functional_spatial import group_norm, interpolate
from ._functional_grid import affine_grid, grid_sample
from ._functional_act import (celu, glu, hardshrink, hardsigmoid, hardswish, hardtanh,
                              logsigmoid, mish, prelu, relu6, selu, softmin, softshrink, softsign,
                              tanhshrink, threshold)
from ._functional_loss2 import (cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss,
                                kl_div, margin_ranking_loss, multilabel_soft_margin_loss,
                                poisson_nll_loss, soft_margin_loss, triplet_margin_loss)

__all__ = ["relu", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "layer_norm", "linear", "dropout", "leaky_relu", "elu",
           "leaky_relu_", "elu_",
           "embedding", "pad", "one_hot", "normalize", "l1_loss", "smooth_l1_loss",
           "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]
__all__ += _conv_all
__all__ += ["affine_grid", "grid_sample"]
__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward", "group_norm",
            "interpolate", "kl_div", "margin_ranking_loss", "hinge_embedding_loss",
            "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss",
            "gaussian_nll_loss", "multilabel_soft_margin_loss", "relu6", "hardtanh",
            "hardsigmoid", "hardswish", "selu", "celu", "mish", "softsign", "softmin",
            "threshold", "tanhshrink", "softshrink", "hardshrink", "logsigmoid", "glu", "prelu"]

from ._functional_extra import *  # noqa: E402, F401, F403 - shuffles, fold, dropouts, norms ...
from ._functional_extra import __all__ as _extra_all  # noqa: E402

__all__ += _extra_all
from ._functional_ctc import ctc_loss  # noqa: E402, F401 - loss24
from ._functional_loss3 import *  # noqa: E402, F401, F403 - multi_margin_loss, ... (loss24)
from ._functional_loss3 import __all__ as _loss3_all  # noqa: E402

__all__ += _loss3_all + ["ctc_loss"]
from ._functional_act3 import *  # noqa: E402, F401, F403 - rrelu, relu_, pdist, upsample ...
from ._functional_act3 import __all__ as _act3_all  # noqa: E402

__all__ += _act3_all
from ._functional_lce import linear_cross_entropy  # noqa: E402, F401 - loss24

__all__ += ["linear_cross_entropy"]

from ._functional_pool import *  # noqa: E402, F401, F403 - 1-d/3-d pooling, unpooling, lp_pool
from ._functional_pool import __all__ as _pool_all  # noqa: E402

__all__ += _pool_all
from ._functional_conv3t import conv_tbc, conv_transpose3d  # noqa: E402

__all__ += ["conv_transpose3d", "conv_tbc"]
from .fractional import *  # noqa: E402, F401, F403 - fractional_max_pool2d/3d (+ _with_indices)
from .fractional import __all__ as _fractional_all  # noqa: E402

__all__ += _fractional_all


def _install_declared() -> None:
    from ..ops.surface import install_namespace

    before = set(globals())
    install_namespace(globals(), "functional")  # the ops declared with a functional name
    __all__.extend(sorted(set(globals()) - before - set(__all__)))


_install_declared()
