"""``jitgrad.nn.utils``: gradient clipping (``clip_grad``) and parameter <-> vector conversion
(``convert_parameters``) as torch.nn.utils, ``rnn.pad_sequence``, ``prune``, ``fusion``,
``stateless``, ``skip_init`` (``init``), ``memory_format`` and the hook forms of
``weight_norm`` and ``spectral_norm``."""

from __future__ import annotations

from . import (clip_grad, convert_parameters, fusion, init, memory_format, parametrizations,
               parametrize, prune, rnn, stateless)
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,
                        clip_grads_with_norm_, get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .init import skip_init
from .memory_format import (convert_conv2d_weight_memory_format,
                            convert_conv3d_weight_memory_format)
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "parameters_to_vector", "vector_to_parameters", "rnn", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "parametrize",
           "parametrizations", "clip_grad_norm", "skip_init", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "stateless"]
