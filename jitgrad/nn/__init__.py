"""``jitgrad.nn``: Parameter, Module and layers with torch.nn's names and semantics."""

from . import attention, functional, init, parallel, utils
from .activation import ELU, LeakyReLU, LogSoftmax, Sigmoid, Softmax, Softplus
from .batchnorm import BatchNorm1d, BatchNorm2d
from .extras import CosineSimilarity, PairwiseDistance, RMSNorm
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .spatial import GroupNorm, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .activation2 import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh,
                          LogSigmoid, Mish, PReLU, ReLU6, Softmin, Softshrink, Softsign,
                          Tanhshrink, Threshold)
from .loss2 import (CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, KLDivLoss,
                    MarginRankingLoss, MultiLabelSoftMarginLoss, PoissonNLLLoss, SoftMarginLoss,
                    TripletMarginLoss)
from .layers import (GELU, Dropout, Flatten, Identity, LayerNorm, Linear, ReLU, Sequential, SiLU,
                     Tanh, Unflatten)
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss,
                   NLLLoss, SmoothL1Loss)
from .module import Module
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding, EmbeddingBag
from .padding import *  # noqa: F401, F403 - ZeroPad1d ... CircularPad3d
from .padding import __all__ as _padding_all
from .shuffle_fold import (Bilinear, ChannelShuffle, Fold, PixelShuffle, PixelUnshuffle,
                           Unfold)
from .dropout2 import AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .instance_norm import (AdaptiveAvgPool1d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                            InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LocalResponseNorm)
from .transformer import (MultiheadAttention, NonDynamicallyQuantizableLinear, Transformer,
                          TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = ["Parameter", "Module", "Identity", "Linear", "ReLU", "Tanh", "GELU", "SiLU", "Dropout",
           "LayerNorm", "Sequential", "functional", "init", "parallel", "Flatten", "Unflatten",
           "Sigmoid", "LeakyReLU", "ELU", "Softplus", "Softmax", "LogSoftmax", "ModuleList",
           "ModuleDict", "ParameterList", "ParameterDict", "MSELoss", "L1Loss", "SmoothL1Loss",
           "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "NLLLoss", "CrossEntropyLoss", "Embedding",
           "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d",
           "AdaptiveAvgPool2d", "BatchNorm1d", "GroupNorm", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "MultiLabelSoftMarginLoss", "ReLU6", "Hardtanh", "Hardsigmoid",
           "Hardswish", "SELU", "CELU", "Mish", "Softsign", "Softmin", "Threshold", "Tanhshrink",
           "Softshrink", "Hardshrink", "LogSigmoid", "GLU", "PReLU",
           "BatchNorm2d", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
           "GRUCell", "utils", "MultiheadAttention", "NonDynamicallyQuantizableLinear",
           "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer", "RMSNorm", "CosineSimilarity", "PairwiseDistance"]
__all__ += _padding_all
__all__ += ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Fold", "Unfold", "Bilinear",
            "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
            "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
            "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "EmbeddingBag", "Conv3d"]
from .loss3 import *  # noqa: E402, F401, F403 - CTCLoss, MultiMarginLoss, ... (loss24)
from .loss3 import __all__ as _loss3_all  # noqa: E402

__all__ += _loss3_all
from .activation3 import CrossMapLRN2d, RReLU, Softmax2d  # noqa: E402 - loss24

__all__ += ["CrossMapLRN2d", "RReLU", "Softmax2d"]
from .linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: E402

__all__ += ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]
from .data_parallel import DataParallel  # noqa: E402 - loss24
from .sync_batchnorm import SyncBatchNorm  # noqa: E402

__all__ += ["DataParallel", "SyncBatchNorm"]
from .pooling3 import *  # noqa: E402, F401, F403 - 1-d/3-d, unpool and power-average pooling
from .pooling3 import __all__ as _pool3_all  # noqa: E402
from .conv3t import BatchNorm3d, ConvTranspose3d  # noqa: E402
from .fractional import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402

__all__ += _pool3_all + ["BatchNorm3d", "ConvTranspose3d", "FractionalMaxPool2d",
                            "FractionalMaxPool3d"]
from .lazy import *  # noqa: E402, F401, F403 - Lazy* modules, Uninitialized*, Buffer
from .lazy import __all__ as _lazy_all  # noqa: E402

__all__ += _lazy_all


def __getattr__(name: str) -> object:
    if name == "modules":  # torch.nn.modules (loaded on first use)
        import importlib

        return importlib.import_module(f"{__name__}.modules")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
