"""Batches of sequences of different lengths, as ``torch.nn.utils.rnn``.

``pad_sequence``: each sequence (L_i, *) is padded with ``padding_value`` to the longest length
L and the results are stacked: (L, B, *) or, with ``batch_first``, (B, L, *). Built from
``pad`` and ``stack``, so the gradient flows back to each sequence's own elements.

``PackedSequence``: the same batch without the padding, for the recurrent layers. Its ``data``
holds the rows time-major: step t's ``batch_sizes[t]`` rows, one for each sequence still
running at t, the sequences sorted longest first (``sorted_indices`` is that order, None
when the caller sorted them; ``unsorted_indices`` its inverse). ``pack_padded_sequence`` /
``pack_sequence`` build one, ``pad_packed_sequence`` / ``unpack_sequence`` undo it; each is
one gather (``index_select``), so gradients flow through. ``unpad_sequence`` splits a padded
batch back into its sequences.
May import: numpy, ``minitorch.tensor``, ``minitorch.ops``, ``minitorch.device_arrays``.
"""
from collections import namedtuple

import numpy as np

from ... import ops
from ...device_arrays import array_module, on_device_of, to_host
from ...dtype import float16, float32, float64
from ...tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence", "PackedSequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence", "invert_permutation"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pad a list of (L_i, *) tensors to the longest L and stack them: (L, B, *), or (B, L, *)
    with ``batch_first``. ``padding_side="left"`` puts the padding before each sequence.
    The result has the first sequence's dtype, as in PyTorch.
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"pad_sequence: expected padding_side to be one of left or right, "
                           f"but got {padding_side!r}")
    if isinstance(sequences, Tensor):  # a tensor is a sequence of its rows, as in PyTorch
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    for i, seq in enumerate(sequences):
        if not isinstance(seq, Tensor):
            raise TypeError(f"pad_sequence: sequences[{i}] must be a minitorch Tensor, got "
                            f"{type(seq).__name__}")
        if seq.ndim == 0:
            raise RuntimeError(f"pad_sequence: sequences[{i}] is 0-d; each sequence needs a "
                               "length dim (L, *)")
        if tuple(seq.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise RuntimeError(f"pad_sequence: every sequence must have the same trailing dims "
                               f"{tuple(sequences[0].shape[1:])} as sequences[0], but "
                               f"sequences[{i}] has shape {tuple(seq.shape)}")
    dtype = sequences[0].dtype
    longest = max(seq.shape[0] for seq in sequences)
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        amounts = [0, 0] * (seq.ndim - 1) + ([0, missing] if padding_side == "right"
                                             else [missing, 0])
        padded.append(ops.pad(seq.to(dtype), amounts, value=padding_value))
    return ops.stack(padded, dim=0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences ``padded[:lengths[i], i]`` ((B, L, *) with ``batch_first``)."""
    lengths = _lengths_array(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != padded_sequences.shape[batch_dim]:
        raise ValueError(f"unpad_sequence: got {len(lengths)} lengths for a batch of "
                         f"{padded_sequences.shape[batch_dim]} sequences")
    return [(padded_sequences[i] if batch_first else padded_sequences[:, i])[:int(n)]
            for i, n in enumerate(lengths)]


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """(data, batch_sizes, sorted_indices, unsorted_indices), as PyTorch's: ``data`` (N, *)
    the rows time-major, ``batch_sizes`` (T,) int64 the rows of each step (non-increasing),
    ``sorted_indices`` the batch order of ``data`` (None: as given) and ``unsorted_indices``
    its inverse (computed when not given). Made by ``pack_padded_sequence`` and
    ``pack_sequence``, rather than by hand."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), as PyTorch accepts
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise ValueError("PackedSequence: without batch_sizes, data must be a pair "
                                 "(data, batch_sizes)")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data`` converted with ``Tensor.to``, the indices moved with it (``batch_sizes``
        stays on the CPU, as PyTorch's)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (None if t is None else t.to(data.device)
                                            for t in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(self.data.cuda(device).device)

    def double(self):
        return self.to(float64)

    def float(self):
        return self.to(float32)

    def half(self):
        return self.to(float16)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a permutation tensor (None for None): out[permutation[i]] = i."""
    if permutation is None:
        return None
    order = permutation._data.reshape(-1)
    inverse = np.empty_like(order)
    inverse[order] = array_module(order).arange(order.size, dtype=order.dtype)
    return Tensor._make(inverse)


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or lengths.ndim != 1:
            raise TypeError(f"lengths must be a 1-D integer tensor or a list of ints, got a "
                            f"{lengths.ndim}-D {lengths.dtype} tensor")
        return to_host(lengths._data).astype(np.int64)  # lengths live on the host, as PyTorch's
    values = list(lengths)
    if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in values):
        raise TypeError(f"lengths must be a 1-D integer tensor or a list of ints, got {values}")
    return np.asarray(values, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with ``batch_first``) of sequences of
    ``lengths``: their rows time-major without the padding. With ``enforce_sorted`` the
    lengths must be non-increasing; otherwise the batch is sorted here (stably, longest first)
    and the PackedSequence keeps the order. A length outside [1, T] is a RuntimeError (PyTorch
    reads past the input for one above T)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence: input must be a Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence: input must have at least 2 dims (T, B, *), "
                         f"got shape {tuple(input.shape)}")
    lengths = _lengths_array(lengths)
    batch_dim = 0 if batch_first else 1
    steps, batch = input.shape[1 - batch_dim], input.shape[batch_dim]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={batch})")
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lengths.size and lengths.max() > steps:
        raise RuntimeError(f"pack_padded_sequence: a length ({lengths.max()}) exceeds the "
                           f"input's sequence length {steps} (input shape "
                           f"{tuple(input.shape)}, batch_first={batch_first})")
    sorted_indices = None
    if enforce_sorted:
        if np.any(lengths[1:] > lengths[:-1]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = np.arange(batch)
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = Tensor._make(on_device_of(order.astype(np.int64), input._data))
        lengths = lengths[order]
    if batch == 0:
        raise RuntimeError("pack_padded_sequence: the batch is empty")
    batch_sizes = np.array([(lengths > t).sum() for t in range(int(lengths[0]))], np.int64)
    # row (t, b) of the time-major padded input, for each packed row: one gather
    rows = np.concatenate([t * batch + order[:n] for t, n in enumerate(batch_sizes)])
    time_major = input.transpose(0, 1) if batch_first else input
    flat = time_major.reshape(steps * batch, *input.shape[2:])
    data = flat.index_select(0, Tensor._make(on_device_of(rows.astype(np.int64), input._data)))
    return PackedSequence(data, Tensor._make(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: (padded (T, B, *) or (B, T, *), lengths (B,) int64), the
    batch in its original order. ``total_length`` pads to that many steps (ValueError if
    shorter than the longest sequence)."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: sequence must be a PackedSequence, got "
                        f"{type(sequence).__name__}")
    data = sequence.data
    batch_sizes = sequence.batch_sizes._data.astype(np.int64)
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    batch = int(batch_sizes[0])
    # for each padded position (t, b) time-major: its packed row, or the padding row N
    source = np.full((steps, batch), data.shape[0], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)])
    for t, n in enumerate(batch_sizes):
        source[t, :n] = offsets[t] + np.arange(n)
    padding = Tensor._make(np.full_like(data._data, padding_value, shape=(1, *data.shape[1:])))
    source = Tensor._make(on_device_of(source.reshape(-1), data._data))
    padded = ops.cat([data, padding], 0).index_select(0, source)
    padded = padded.reshape(steps, batch, *data.shape[1:])
    lengths = np.array([(batch_sizes > b).sum() for b in range(batch)], dtype=np.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[to_host(sequence.unsorted_indices._data)]
    return padded, Tensor._make(lengths.astype(np.int64))


def pack_sequence(sequences, enforce_sorted=True):
    """``pack_padded_sequence(pad_sequence(sequences), lengths)`` of a list of (L_i, *)
    tensors (longest first with ``enforce_sorted``)."""
    lengths = [seq.shape[0] for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
