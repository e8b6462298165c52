"""``minitorch.nn``: modules, layers, the Transformer, and ``functional``, as ``torch.nn``.

- ``module.py``/``parameter.py``/``containers.py``: Module, Parameter, Sequential, ModuleList,
  ModuleDict
- layers: ``linear.py`` (Linear, Identity), ``activation.py``, ``dropout.py``,
  ``normalization.py`` (LayerNorm), ``sparse.py`` (Embedding)
- ``attention.py`` (MultiheadAttention, KVCache), ``transformer.py`` (encoder/decoder layers,
  stacks, Transformer, TransformerDecoderCache), ``positional.py`` (sinusoidal and learned
  positions)
- ``init.py`` (initialisers), ``functional.py`` (the stateless ops: ``import
  minitorch.nn.functional as F``)

May import: ``minitorch.ops``, ``minitorch.autograd``, ``minitorch.tensor``, ``minitorch.creation``.
"""
from . import functional, init
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .attention import KVCache, MultiheadAttention
from .containers import ModuleDict, ModuleList, Sequential
from .dropout import Dropout
from .linear import Identity, Linear
from .module import Module
from .normalization import LayerNorm
from .parameter import Parameter
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .sparse import Embedding
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderCache,
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)

try:  # nn.utils (clip_grad_norm_, ...) is written separately and may not exist yet
    from . import utils  # noqa: F401  (exported as nn.utils)
except ImportError:
    pass

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "Linear",
           "Identity", "Embedding", "Dropout", "LayerNorm", "ReLU", "GELU", "Tanh", "Sigmoid",
           "Softmax", "LogSoftmax", "MultiheadAttention", "KVCache", "TransformerEncoderLayer",
           "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder",
           "TransformerDecoderCache", "Transformer",
           "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "functional", "init"]
