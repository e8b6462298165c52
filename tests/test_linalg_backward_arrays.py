"""MatMul's and Linear's backward without a graph (on the arrays) equal the Tensor-op backward.

With ``create_graph=False`` the two products (and the bias's column sum) of each backward run
directly on the arrays instead of through a Function per transpose, reshape, product and sum;
with ``create_graph=True`` the Tensor ops run, so that the gradient differentiates again. Both
compute the same operations in the same order, so the gradients must be identical: float32
and float64, on every backend built, for broadcast batches, transposed and non-contiguous
operands and gradients, a Linear over 3-d input with and without bias, below and above the
size where the bias goes through the C kernels.
"""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch.backends import available

BACKENDS = sorted(available)
DTYPES = [minitorch.float32, minitorch.float64]


def _leaf(rng, shape, dtype, transposed=False):
    if transposed:  # a transposed view of a contiguous array: the GEMM reads it by a flag
        data = rng.standard_normal(shape[:-2] + (shape[-1], shape[-2])).swapaxes(-1, -2)
    else:
        data = rng.standard_normal(shape)
    return minitorch.tensor(data, dtype=dtype).requires_grad_()


def _grads_both_ways(fn, leaves, upstream):
    """The leaves' gradients from backward() on arrays, then with create_graph (Tensor ops)."""
    results = []
    for create_graph in (False, True):
        for t in leaves:
            t.grad = None
        fn(*leaves).backward(upstream, create_graph=create_graph)
        results.append([None if t.grad is None else t.grad.detach().numpy().copy()
                        for t in leaves])
    return results


MATMUL_CASES = [((5, 7), (7, 3), False, False), ((4, 6, 5), (4, 5, 2), False, False),
                ((2, 3, 6, 5), (5, 4), False, False), ((6, 5), (3, 5, 4), False, False),
                ((1, 3, 6, 5), (2, 1, 5, 4), False, False), ((4, 6, 5), (4, 5, 2), True, True),
                ((2, 3, 33, 17), (2, 3, 17, 9), True, False),
                ((8, 32, 32), (8, 32, 32), False, True)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape_a,shape_b,trans_a,trans_b", MATMUL_CASES)
def test_matmul_backward_on_arrays_equals_tensor_ops(backend, dtype, shape_a, shape_b, trans_a,
                                                     trans_b):
    rng = np.random.default_rng(len(shape_a) * 10 + len(shape_b))
    a, b = _leaf(rng, shape_a, dtype, trans_a), _leaf(rng, shape_b, dtype, trans_b)
    out_shape = np.broadcast_shapes(shape_a[:-2], shape_b[:-2]) + (shape_a[-2], shape_b[-1])
    # a non-contiguous upstream gradient for batched outputs, as attention's transposes give
    upstream = minitorch.tensor(rng.standard_normal(out_shape[:-2] + out_shape[:-3:-1]),
                                dtype=dtype).mT
    with minitorch.backends.using(backend):
        plain, graph = _grads_both_ways(lambda x, y: x @ y, (a, b), upstream)
    for g_plain, g_graph, leaf in zip(plain, graph, (a, b)):
        assert g_plain.shape == tuple(leaf.shape) and g_plain.dtype == g_graph.dtype
        np.testing.assert_array_equal(g_plain, g_graph)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape,out_features,bias", [((4, 5, 7), 3, True), ((9, 7), 6, False),
                                                       ((4, 64, 33), 129, True),
                                                       ((1, 0, 5), 4, True)])
def test_linear_backward_on_arrays_equals_tensor_ops(backend, dtype, x_shape, out_features,
                                                     bias):
    rng = np.random.default_rng(out_features)
    x = _leaf(rng, x_shape, dtype)
    w = _leaf(rng, (out_features, x_shape[-1]), dtype)
    leaves = (x, w, _leaf(rng, (out_features,), dtype)) if bias else (x, w)
    upstream = minitorch.tensor(rng.standard_normal(x_shape[:-1] + (out_features,)), dtype=dtype)
    with minitorch.backends.using(backend):
        plain, graph = _grads_both_ways(F.linear, leaves, upstream)
    for g_plain, g_graph, leaf in zip(plain, graph, leaves):
        assert g_plain.shape == tuple(leaf.shape) and g_plain.dtype == g_graph.dtype
        np.testing.assert_array_equal(g_plain, g_graph)


def test_linear_with_only_the_weight_needing_grad():
    rng = np.random.default_rng(0)
    x = minitorch.tensor(rng.standard_normal((3, 4)))
    w, b = _leaf(rng, (2, 4), minitorch.float64), minitorch.tensor(rng.standard_normal(2))
    F.linear(x, w, b).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((3, 2)).T @ x.numpy())
    assert x.grad is None and b.grad is None
