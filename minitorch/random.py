"""The global random number generator: ``manual_seed`` makes every random op reproducible.

All of minitorch's randomness (``randn``, ``rand``, dropout masks, parameter init, sampling in
decoding) draws from one numpy ``Generator``, so one seed fixes a whole run.
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
