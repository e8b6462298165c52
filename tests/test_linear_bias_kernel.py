"""The fused Linear's bias paths on the C backend equal the unfused forms.

``F.linear`` adds the bias into the GEMM's fresh output in place; from ``_C_BIAS_MIN`` output
elements on the C backend that add runs on the arith kernel (threaded). Both round one float
addition per element, so the output must be identical to numpy's ``out += bias`` and to the
unfused ``x @ w.T + b``: float32 and float64, 1 and 2 threads. The bias gradient there is the
C column sum (in float64, rounded once) where numpy sums in the dtype: equal to the unfused
gradient within 1e-5 (float32) / 1e-12 (float64) relative. A float64 gradcheck at a size
that takes both kernel paths.
"""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck
from minitorch.ops import linalg

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

needs_c = pytest.mark.skipif(C is None, reason="C extension not built")


def _tensors(dtype, rows, cols_in, cols_out, seed=0):
    rng = np.random.default_rng(seed)
    return [minitorch.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=True)
            for shape in ((rows, cols_in), (cols_out, cols_in), (cols_out,))]


@needs_c
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
def test_bias_on_the_kernel_equals_numpy_and_the_unfused_form(dtype, threads):
    rows, cols_out = 2 * 97, 129  # above _C_BIAS_MIN output elements, odd sizes
    assert rows * cols_out >= linalg._C_BIAS_MIN
    x, w, b = _tensors(dtype, rows, 33, cols_out)
    upstream = minitorch.tensor(np.random.default_rng(3).standard_normal((rows, cols_out)),
                                dtype=dtype)
    previous = C.get_num_threads()
    C.set_num_threads(threads)
    try:
        results = {}
        for backend in ("c", "numpy"):
            with minitorch.backends.using(backend):
                for name, fn in (("fused", lambda: F.linear(x, w, b)),
                                 ("unfused", lambda: (x @ w.mT) + b)):
                    for t in (x, w, b):
                        t.grad = None
                    out = fn()
                    # the GEMMs of both backends differ in the last bits: compare the bias add
                    # on one product
                    product = (x @ w.mT).detach().numpy()
                    out.backward(upstream)
                    results[backend, name] = (out.detach().numpy(), product,
                                              [t.grad.numpy() for t in (x, w, b)])
    finally:
        C.set_num_threads(previous)
    for backend in ("c", "numpy"):
        fused, product, fused_grads = results[backend, "fused"]
        unfused, _, unfused_grads = results[backend, "unfused"]
        assert fused.dtype == x.detach().numpy().dtype
        np.testing.assert_array_equal(fused, product + b.detach().numpy())
        np.testing.assert_array_equal(fused, unfused)
        for g_fused, g_unfused in zip(fused_grads, unfused_grads):
            np.testing.assert_allclose(g_fused, g_unfused, rtol=1e-5 if dtype == minitorch.float32
                                       else 1e-12, atol=1e-5)


@needs_c
def test_linear_gradchecks_on_the_kernel_path():
    x, w, b = _tensors(minitorch.float64, 128, 2, 128, seed=1)
    assert 128 * 128 >= linalg._C_BIAS_MIN
    # a weighted sum of the output: one backward for the analytical Jacobian, not 16384
    weights = minitorch.tensor(np.random.default_rng(2).standard_normal((128, 128)))
    with minitorch.backends.using("c"):
        assert gradcheck(lambda *t: (F.linear(*t) * weights).sum(), (x, w, b))


@needs_c
def test_bias_of_another_dtype_or_layout_takes_numpy():
    """A bias the kernel cannot take (another dtype, a strided view) is added by numpy."""
    out = np.zeros((128, 256), np.float32)
    linalg._add_bias_(out, np.arange(256, dtype=np.float64))
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(256, dtype=np.float32), out.shape))
    out = np.zeros((128, 256), np.float64)
    linalg._add_bias_(out, np.arange(512, dtype=np.float64)[::2])
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(0, 512, 2.0), out.shape))
