"""``embedding``: rows of a weight table picked by integer ids (``F.embedding``, the op under
``nn.Embedding``). The backward scatter-adds into the table, so a repeated id accumulates its
gradient, and the ``padding_idx`` row receives none.
"""
import numpy as np

from ..autograd.function import Function
from ..backends import tape as tapes
from ..dtype import int32, int64
from ..tensor import Tensor
from .elementwise import masked_fill
from .registry import op
from .shape import IndexAdd


class Embedding(Function):
    """Rows of ``weight`` picked by integer indices; the padding row receives no gradient."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.weight_shape, ctx.padding_idx = tuple(weight.shape), padding_idx
        ctx.save_for_backward(indices)  # so that ids changed after forward make backward raise
        table, ids = weight._data, indices._data
        if type(table) is not np.ndarray:  # (a GPU array)
            return Tensor._make(table[ids])
        if tapes.recording() is not None:  # a replay checks each batch's ids, as embedding() does
            tapes.replayed(_check_ids, ids, table.shape[0])
        rows = np.empty(ids.shape + table.shape[1:], table.dtype)
        # "clip": ids checked already; numpy's default ("raise") copies the rows twice
        tapes.record(np.take, table, ids, 0, rows, "clip")
        return Tensor._make(rows)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        if ctx.padding_idx is not None:
            pad = Tensor._make(tapes.computed(np.equal, indices._data, ctx.padding_idx)[..., None])
            grad = masked_fill(grad, pad, 0.0)
        # Scatter-add (repeated indices accumulate); its backward gathers, so this is
        # differentiable again.
        return (IndexAdd.apply(grad, ctx.weight_shape, indices._data, index_tensors=(indices,)),
                None, None)


def _check_indices(input, num_embeddings, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input: expected a minitorch Tensor, got {type(input).__name__}")
    if input.dtype is not int64 and input.dtype is not int32:
        raise TypeError(f"{name}: input must be an int64 (or int32) tensor of indices, got "
                        f"{input.dtype}")
    _check_ids(input._data, num_embeddings, name)


def _check_ids(idx, num_embeddings, name="embedding"):
    if idx.size and (idx.min() < 0 or idx.max() >= num_embeddings):
        bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
        raise IndexError(f"{name}: index {bad} is out of range for num_embeddings="
                         f"{num_embeddings} (valid indices are 0..{num_embeddings - 1})")


@op(function=False, method=False, functional=True)
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """``weight[input]``: (*) int64 indices → (*, embedding_dim).

    The ``padding_idx`` row receives no gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported by minitorch")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got "
                         f"shape {tuple(weight.shape)}")
    num = weight.shape[0]
    _check_indices(input, num, "embedding")
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding: padding_idx must be within num_embeddings={num}, got "
                             f"{padding_idx}")
        padding_idx = padding_idx % num
    return Embedding.apply(weight, input, padding_idx)
