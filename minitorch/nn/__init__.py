"""``minitorch.nn``: modules, layers, the Transformer, and ``functional``, as ``torch.nn``.

- ``module.py``/``parameter.py``/``containers.py``: Module (and its hooks, ``hooks.py``),
  Parameter, Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
- layers: ``linear.py`` (Linear, Identity), ``activation.py``, ``distance.py``
  (CosineSimilarity, PairwiseDistance), ``dropout.py``,
  ``normalization.py`` (LayerNorm, RMSNorm), ``sparse.py`` (Embedding), ``flatten.py``
  (Flatten, Unflatten)
- ``loss.py``: the loss modules (CrossEntropyLoss, NLLLoss, MSELoss, BCEWithLogitsLoss, ...)
- ``rnn_attention.py`` (AdditiveAttention, DotProductAttention: a recurrent decoder's attention
  over encoder states or an image's feature grid)
- ``attention.py`` (MultiheadAttention, KVCache), ``transformer.py`` (encoder/decoder layers,
  stacks, Transformer, TransformerDecoderCache), ``positional.py`` (sinusoidal and learned
  positions)
- ``rnn.py``: recurrent layers (RNN, LSTM, GRU) and cells (RNNCell, LSTMCell, GRUCell)
- ``conv.py`` (Conv1d, Conv2d), ``pooling.py`` (MaxPool2d, AvgPool2d, AdaptiveAvgPool2d),
  ``batchnorm.py`` (BatchNorm1d, BatchNorm2d)
- ``init.py`` (initialisers), ``functional.py`` (the stateless ops: ``import
  minitorch.nn.functional as F``)
- ``parallel/`` (DistributedDataParallel: gradients averaged across the ranks of an MPI job)

May import: ``minitorch.ops``, ``minitorch.autograd``, ``minitorch.tensor``, ``minitorch.creation``,
``minitorch.distributed`` (``parallel/`` only).
"""
from . import functional, init
from .activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish,
                         Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, ReLU, ReLU6, Sigmoid,
                         SiLU, Softmax, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink,
                         Threshold)
from .attention import KVCache, MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MSELoss, NLLLoss, SmoothL1Loss)
from .module import Module
from .normalization import LayerNorm, RMSNorm
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .rnn_attention import AdditiveAttention, DotProductAttention
from .sparse import Embedding
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderCache,
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from . import parallel, utils  # noqa: E402  (they build on the layers above)

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict", "Linear", "Identity", "Flatten", "Unflatten", "Embedding", "Dropout",
           "LayerNorm", "RMSNorm", "ReLU", "GELU", "SiLU", "Mish", "Softplus", "Tanh", "Sigmoid",
           "Softmax", "LogSoftmax", "CrossEntropyLoss", "NLLLoss", "KLDivLoss", "MSELoss",
           "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "MultiheadAttention", "KVCache", "AdditiveAttention", "DotProductAttention",
           "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "TransformerDecoderCache", "Transformer",
           "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "functional", "init",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d",
           "BatchNorm2d", "ReLU6", "Hardtanh", "LeakyReLU", "ELU", "CELU", "SELU", "Hardsigmoid",
           "Hardswish", "Softsign", "LogSigmoid", "Tanhshrink", "Softshrink", "Hardshrink",
           "Threshold", "GLU", "Softmin", "CosineSimilarity", "PairwiseDistance", "parallel",
           "utils"]
