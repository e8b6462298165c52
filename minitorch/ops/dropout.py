"""Dropout's random factors: ``dropout_factors(shape, p, dtype)``, the array that ``F.dropout``
and the attention kernels multiply by, 0 for a dropped element and 1/(1-p) for a kept one.

Element j is kept where its 32 random bits are at least p·2^32. The bits are those of a
counter-based stream (the backend's ``dropout_keep``: splitmix64 from one seed, csrc/
dropout.c), so the C kernel makes them on every thread at once, and the numpy backend makes
the same ones. The seed is one 64-bit draw from the global generator, so ``manual_seed``
fixes every mask.
"""
import math

import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..random import generator


def dropout_factors(shape, p, dtype):
    """The factors for a tensor of ``shape`` and numpy ``dtype`` (on the host), for 0 < p < 1:
    1/(1-p) with probability 1 - p, else 0."""
    keep = _draw(shape, p, dtype)
    if tapes.recording() is not None:  # a captured step's replay draws a new mask, as eager
        tapes.repeat(_Redraw(keep, p))
    return keep


def _draw(shape, p, dtype):
    seed = int(generator().bit_generator.random_raw())
    threshold = min(round(p * 2.0 ** 32), 2 ** 32 - 1)
    count, scale = math.prod(shape), 1.0 / (1.0 - p)
    if np.dtype(dtype) in (np.float32, np.float64):
        keep = backends.current().dropout_keep(count, seed, threshold, scale, dtype)
    else:  # a half dtype: the factor rounded once, from float64
        keep = backends.current().dropout_keep(count, seed, threshold, scale,
                                               np.float64).astype(dtype)
    return keep.reshape(shape)


class _Redraw:
    """A captured step's dropout mask drawn again on each replay, from the next seed of the
    generator as eager mode would draw it: a host callback (backends/tape.py), whose Python
    state is the generator's."""

    def __init__(self, keep, p):
        self.keep, self.p = keep, p

    def __call__(self):
        self.keep[...] = _draw(self.keep.shape, self.p, self.keep.dtype)

    def arrays(self):
        return [self.keep]

    def save(self):
        return generator().bit_generator.state

    def restore(self, state):
        generator().bit_generator.state = state

    def adopt(self):
        pass
