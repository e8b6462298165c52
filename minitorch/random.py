"""The global random number generator: ``manual_seed`` makes every random op reproducible.

All of minitorch's randomness (``randn``, ``rand``, dropout masks, parameter init, sampling in
decoding) draws from one numpy ``Generator``, so one seed fixes a whole run. A
``minitorch.Generator`` is a separate stream, for the functions that take ``generator=`` (as
``torch.Generator``); the draws themselves are numpy's, so they differ from PyTorch's numbers.
May import: numpy, ``minitorch.device``.
"""
import numpy as np

from .device import CPU, check_device

_generator = np.random.default_rng()


def _check_seed(seed, caller):
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"{caller}: seed must be an int, got {type(seed).__name__}")
    return int(seed) & 0xFFFFFFFFFFFFFFFF


def manual_seed(seed):
    """Reseed the global generator; returns it."""
    global _generator
    _generator = np.random.default_rng(_check_seed(seed, "manual_seed"))
    return _generator


def seed():
    """Reseed from fresh OS entropy."""
    global _generator
    _generator = np.random.default_rng()


def generator():
    return _generator


def get_rng_state():
    return _generator.bit_generator.state


def set_rng_state(new_state):
    _generator.bit_generator.state = new_state


class Generator:
    """A random number generator of its own, as ``torch.Generator``: pass it as ``generator=``
    (``randint``, ``DataLoader``, ``RandomSampler``, ``random_split``) to draw from it rather
    than from the global generator, so that one stream (say, the shuffling) is reproducible on
    its own.

    ``manual_seed(seed)`` (returns the generator), ``seed()``, ``initial_seed()``,
    ``get_state()``/``set_state(state)``. As PyTorch's, a new Generator starts from the fixed
    seed 67280421310721, so it is reproducible even unseeded. Differs from PyTorch: the draws
    come from numpy's PCG64, so a seed gives other numbers than torch's Mersenne Twister, and the
    state is numpy's state dict rather than a ByteTensor.
    """

    DEFAULT_SEED = 67280421310721

    def __init__(self, device="cpu"):
        check_device(device, "Generator")
        self.device = CPU
        self.manual_seed(self.DEFAULT_SEED)

    def manual_seed(self, seed):
        self._initial_seed = _check_seed(seed, "Generator.manual_seed")
        self._rng = np.random.default_rng(self._initial_seed)
        return self

    def seed(self):
        """Reseed from fresh OS entropy; returns the new seed."""
        self.manual_seed(int(np.random.SeedSequence().generate_state(1, np.uint64)[0]))
        return self._initial_seed

    def initial_seed(self):
        return self._initial_seed

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, new_state):
        self._rng.bit_generator.state = new_state
        return self

    def __repr__(self):
        return f"<minitorch.Generator seed={self._initial_seed}>"


def numpy_generator(generator=None):
    """The numpy generator to draw from: the global one, or that of a ``Generator``."""
    if generator is None:
        return _generator
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a minitorch.Generator or None, got "
                        f"{type(generator).__name__}")
    return generator._rng
