"""The global random number generator: ``manual_seed`` makes every random op reproducible.

All of minitorch's randomness (``randn``, ``rand``, dropout masks, parameter init, sampling in
decoding) draws from one numpy ``Generator``, so one seed fixes a whole run. A
``minitorch.Generator`` is a stream of its own, for the functions that take ``generator=``.
"""
import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed):
    """Reseed the global generator; returns it."""
    global _generator
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _generator = np.random.default_rng(int(seed) & 0xFFFFFFFFFFFFFFFF)
    return _generator


def seed():
    """Reseed from fresh OS entropy."""
    global _generator
    _generator = np.random.default_rng()


def generator():
    return _generator


def get_rng_state():
    return _generator.bit_generator.state


def set_rng_state(state):
    _generator.bit_generator.state = state


class Generator:
    """A random number generator of its own, as ``torch.Generator``: pass it as ``generator=``
    (``DataLoader``, ``RandomSampler``, ``random_split``) to draw from it rather than from the
    global generator, so that one stream (say, the shuffling) is reproducible on its own.

    ``manual_seed(seed)`` (returns the generator), ``seed()``, ``initial_seed()``,
    ``get_state()``/``set_state(state)``. As PyTorch's, a new Generator starts from the fixed
    seed 67280421310721, so it is reproducible even unseeded. Differs from PyTorch: the draws
    come from numpy's PCG64, so a seed gives other numbers than torch's Mersenne Twister, and the
    state is numpy's state dict rather than a ByteTensor.
    """

    DEFAULT_SEED = 67280421310721

    def __init__(self, device="cpu"):
        self.device = device
        self.manual_seed(self.DEFAULT_SEED)

    def manual_seed(self, seed):
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
        self._seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self._numpy = np.random.default_rng(self._seed)
        return self

    def seed(self):
        """Reseed from fresh OS entropy; returns the new seed."""
        self.manual_seed(int(np.random.SeedSequence().generate_state(1, np.uint64)[0]))
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self._numpy.bit_generator.state

    def set_state(self, new_state):
        self._numpy.bit_generator.state = new_state
        return self

    def __repr__(self):
        return f"<minitorch.Generator seed={self._seed}>"


def numpy_generator(generator=None):
    """The numpy ``Generator`` to draw from: ``generator``'s, or the global one if None."""
    if generator is None:
        return _generator
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a minitorch.Generator or None, got "
                        f"{type(generator).__name__}")
    return generator._numpy
