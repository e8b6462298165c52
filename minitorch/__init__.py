"""minitorch: an autograd-from-scratch deep-learning framework with C kernels.

The public API follows PyTorch's names and semantics::

    import minitorch
    x = minitorch.randn(3, requires_grad=True)
    y = (x.tanh() ** 3).sum()
    y.backward()
    x.grad

Layers, top to bottom: ``text`` (tokenizer, batching, decoding) → ``nn``/``optim`` →
``ops`` (differentiable ops) → ``autograd`` → ``tensor`` → ``backends`` (numpy | C kernels).
"""
from typing import TYPE_CHECKING

from . import autograd, backends, cuda, ops
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import inference_mode, is_inference_mode_enabled
from .backends import backend, get_num_threads, set_num_threads
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       linspace, multinomial, ones, ones_like, rand, rand_like, randint,
                       randint_like, randn, randn_like, randperm, tensor, zeros, zeros_like)
from .device import device
from .dtype import bool_ as bool  # noqa: A001  (minitorch.bool, as torch.bool)
from .dtype import (bfloat16, can_cast, dtype, finfo, float16, float32, float64,
                    get_default_dtype, iinfo, int8, int16, int32, int64, promote_types,
                    set_default_dtype, uint8)
from .interop import from_dlpack
from .random import Generator, get_rng_state, manual_seed, seed, set_rng_state
from .tensor import Size, Tensor
from .step_capture import CapturedStep, capture
from .tensor_types import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,
                           FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor)

# The ops PyTorch has as torch.<name> (add, matmul, softmax, ...), as declared in minitorch/ops.
globals().update(ops.registry.functions())
if TYPE_CHECKING:  # the same names, for type checkers (stub written by scripts/make_stubs.py)
    from ._functions import *  # noqa: F403

# PyTorch's other names of dtypes: torch.float, torch.double, torch.half, torch.long, torch.int,
# torch.short
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16


def numel(input):
    """The number of elements of ``input``, as ``torch.numel``."""
    return input.numel()

__version__ = "0.1.0"

# The layers above the core: they import minitorch's names defined above.
from . import nn, optim, viz  # noqa: E402
from . import utils  # noqa: E402  (minitorch.utils.data, as torch.utils.data)
from .serialization import load, save  # noqa: E402
