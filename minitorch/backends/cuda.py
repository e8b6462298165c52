"""``minitorch.backends.cuda``: PyTorch's CUDA math flags (``matmul.allow_tf32``,
``matmul.allow_fp16_reduced_precision_reduction``, ...), settable so that programs which set
them run unchanged. minitorch has no CUDA backend: they change nothing, and ``is_built()`` is
False. Defaults are PyTorch's."""


class _MatmulFlags:
    """``backends.cuda.matmul``: attributes a program may set; minitorch's CPU GEMM ignores
    them (it never rounds float32 operands to TF32 or reduces in half precision)."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self):
        return (f"matmul(allow_tf32={self.allow_tf32}, allow_fp16_reduced_precision_reduction="
                f"{self.allow_fp16_reduced_precision_reduction}, "
                f"allow_bf16_reduced_precision_reduction="
                f"{self.allow_bf16_reduced_precision_reduction})")


matmul = _MatmulFlags()


def is_built():
    return False
