"""``pad_sequence``: a batch from sequences of different lengths, as ``torch.nn.utils.rnn``.

Each sequence (L_i, *) is padded with ``padding_value`` to the longest length L and the results
are stacked: (L, B, *) or, with ``batch_first``, (B, L, *). Built from ``pad`` and ``stack``,
so the gradient flows back to each sequence's own elements.
May import: ``minitorch.tensor``, ``minitorch.ops``.
"""
from ... import ops
from ...tensor import Tensor

__all__ = ["pad_sequence"]


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
