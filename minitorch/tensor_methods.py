"""Binds the ops to ``Tensor`` as methods and operators (``x.sum()``, ``a @ b``, ``x[0]``).

Kept apart from tensor.py so that file shows only what a tensor *is*; this one lists what it
can *do*, each method forwarding to the function of the same name in ``minitorch.ops``.
"""
from . import ops
from .tensor import Tensor


def _reflected(fn):
    return lambda self, other: fn(other, self)


_METHODS = {
    # arithmetic
    "__add__": ops.add, "__radd__": _reflected(ops.add),
    "__sub__": ops.sub, "__rsub__": _reflected(ops.sub),
    "__mul__": ops.mul, "__rmul__": _reflected(ops.mul),
    "__truediv__": ops.div, "__rtruediv__": _reflected(ops.div),
    "__pow__": ops.pow, "__rpow__": _reflected(ops.pow),
    "__matmul__": ops.matmul, "__rmatmul__": _reflected(ops.matmul),
    "__neg__": ops.neg, "__abs__": ops.abs,
    "__floordiv__": lambda a, b: ops.div(a, b, rounding_mode="floor"),
    "__getitem__": ops.getitem,
    # comparisons and logic (bool results, no graph)
    "__eq__": ops.eq, "__ne__": ops.ne, "__lt__": ops.lt, "__le__": ops.le, "__gt__": ops.gt,
    "__ge__": ops.ge, "__and__": ops.logical_and, "__or__": ops.logical_or,
    "__xor__": ops.logical_xor, "__invert__": ops.logical_not,
}
_SAME_NAME = """add sub mul div pow matmul neg abs exp log sqrt rsqrt sin cos tanh sigmoid relu
    erf sign clamp maximum minimum masked_fill eq ne lt le gt ge logical_and logical_or
    logical_not isnan isinf isfinite sum mean amax amin max min argmax argmin var std logsumexp
    all any reshape view permute transpose t expand flatten unflatten squeeze unsqueeze
    contiguous clone split chunk unbind narrow gather index_select flip repeat tril triu
    softmax log_softmax""".split()

for _name in _SAME_NAME:
    _METHODS[_name] = getattr(ops, _name)
_METHODS.update(
    clip=ops.clamp, multiply=ops.mul, subtract=ops.sub, divide=ops.div, negative=ops.neg,
    gelu=ops.gelu, absolute=ops.abs, expand_as=lambda a, b: ops.expand(a, *b.shape),
    view_as=lambda a, b: ops.view(a, *b.shape), reshape_as=lambda a, b: ops.reshape(a, *b.shape),
    swapaxes=ops.transpose, moveaxis=None, where=lambda self, cond, other: ops.where(cond, self,
                                                                                      other),
    square=lambda a: ops.mul(a, a),
)
del _METHODS["moveaxis"]

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
