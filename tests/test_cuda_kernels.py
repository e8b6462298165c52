"""Tests of the project's CUDA kernels (csrc/cuda/*.cu) and of their loader
(minitorch/backends/cuda_kernels.py):

(a) every .cu file compiles to PTX for sm_80 (scripts/check_cuda.py), where nvcc is installed;
    the loader's table of entry points names kernels the files define, and the source it hands
    NVRTC includes nothing;
(b) on a GPU: each kernel against the numpy reference backend (numpy_backend) on random and
    odd shapes (1, 17, 1000 columns, 0 rows), float32 and float64: GEMM batched, broadcast and
    transposed, with alpha / beta; softmax with scale, bool and additive masks broadcast over
    the rows, the causal flag, fully masked rows; log-softmax; cross-entropy with ignore_index,
    label smoothing and every reduction; layer norm with and without weight and bias; NaN and
    inf rows; bad input raising the C backend's errors. Skipped where CuPy or a GPU is absent;
    And the device layer on the GPU: a Transformer's training against the CPU's, and
    ``examples/translate.py --device cuda``;
(c) without CuPy, the loader imports (and ``import minitorch`` never imports CuPy), and its
    functions raise RuntimeError;
(d) without a GPU, (b)'s tests on a numpy stand-in for CuPy whose kernels are the C kernels of
    the same names: the loader's launches (shapes, strides, flags, scalar types) are checked on
    every machine with the C extension.

Imports: numpy, pytest and minitorch's backends; CuPy only where installed.
"""
import importlib
import math
import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

from minitorch.backends import cuda_kernels as K
from minitorch.backends import numpy_backend as N

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the sources beside the tests (an installed package, as in the sdist check, has none beside it)
CUDA_DIR = os.path.join(ROOT, "csrc", "cuda")
DTYPES = (np.float32, np.float64)

try:
    cupy = importlib.import_module("cupy")
except ImportError:
    cupy = None
HAVE_GPU = cupy is not None and K.is_available()
requires_gpu = pytest.mark.skipif(not HAVE_GPU,
                                  reason="no CUDA GPU (CuPy not installed or no device)")


# ---------------------------------------------------------------------------------------------
# (a) compiling, without a GPU
# ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_cu_file_compiles_for_sm80():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_cuda.py"),
                             "--arch", "sm_80"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for filename in K.ENTRY_POINTS:
        assert f"csrc/cuda/{filename} sm_80: ok" in result.stdout, result.stdout


def test_check_cuda_skips_without_nvcc():
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))
    env.pop("NVCC", None)
    if shutil.which("nvcc", path=env["PATH"]) is not None:
        pytest.skip("nvcc sits beside python: no PATH without it")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_cuda.py")],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0
    assert result.stdout.strip() == "nvcc not found: skipped"


def test_every_entry_point_is_defined_in_its_file():
    """The kernels the loader asks for: mt_<name>_f32 written out, or mt_<name>_##SFX in a
    macro that is then expanded for f32 and f64."""
    for filename, names in K.ENTRY_POINTS.items():
        source = K.kernel_source(filename, CUDA_DIR)
        for name in names:
            spelled = f"mt_{name}_f32(" in source and f"mt_{name}_f64(" in source
            by_macro = f"mt_{name}_##SFX(" in source and ", f32)" in source and ", f64)" in source
            assert spelled or by_macro, f"{filename} defines no mt_{name}_f32 / _f64"
    on_disk = sorted(f for f in os.listdir(CUDA_DIR) if f.endswith(".cu"))
    assert on_disk == sorted(K.ENTRY_POINTS)


def test_launch_shapes_are_the_kernels_own():
    """The loader's block shapes are the ones the kernels' shared arrays and loops assume."""
    defines = {}
    for filename in K.ENTRY_POINTS:
        for line in K.kernel_source(filename, CUDA_DIR).splitlines():
            words = line.split()
            if len(words) >= 3 and words[0] == "#define" and words[2].isdigit():
                defines[words[1]] = int(words[2])
    assert K.ROW_THREADS == defines["MT_ROW_THREADS"]
    assert K.GEMM_TILE == defines["MT_GEMM_TILE"] and K.GEMM_THREADS == defines["MT_GEMM_THREADS"]
    assert (K.LN_COLS, K.LN_ROWS) == (defines["MT_LN_COLS"], defines["MT_LN_ROWS"])
    assert K.ROW_THREADS % 32 == 0 and K.ROW_THREADS <= 1024  # whole warps, at most 32


def _setuptools_builds_this_project():
    """pyproject.toml's build-system asks for setuptools>=77 (pip brings it into an isolated
    build); a venv's own may be older and unable to read the project table."""
    import importlib.metadata
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 77


@pytest.mark.skipif(not _setuptools_builds_this_project(),
                    reason="setuptools>=77 not installed here (pip's isolated build has it)")
def test_the_built_package_carries_the_kernel_sources(tmp_path):
    """setup.py's build_py copies csrc/cuda into the package, so an installed wheel can
    compile the kernels at first use; kernel_source reads that copy where no source tree is."""
    result = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                             str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    copied = tmp_path / "minitorch" / "backends" / "cuda_src"
    for filename in list(K.ENTRY_POINTS) + ["common.cuh"]:
        assert (copied / filename).read_bytes() == open(os.path.join(CUDA_DIR, filename),
                                                        "rb").read()
    assert K.kernel_source("softmax.cu", str(copied)) == K.kernel_source("softmax.cu", CUDA_DIR)


def test_kernel_source_is_self_contained():
    """NVRTC has no C library headers, and CuPy's cache hashes only the text it is given."""
    for filename in K.ENTRY_POINTS:
        source = K.kernel_source(filename, CUDA_DIR)
        assert "#include" not in source
        assert "mt_block_sum" in source  # common.cuh was pasted in


# ---------------------------------------------------------------------------------------------
# (c) without CuPy
# ---------------------------------------------------------------------------------------------
def test_import_minitorch_does_not_import_cupy():
    code = ("import sys, minitorch, minitorch.backends.cuda_kernels; "
            "sys.exit('cupy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=120).returncode == 0


def test_functions_raise_runtime_error_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy now raises ImportError
    assert not K.is_available()
    x = np.zeros((2, 3))
    calls = [lambda: K.matmul(x, x.T), lambda: K.gemm(x, x, trans_b=True),
             lambda: K.softmax_forward(x), lambda: K.softmax_backward(x, x),
             lambda: K.log_softmax_forward(x),
             lambda: K.log_softmax_backward(x, x),
             lambda: K.cross_entropy_forward(x, np.zeros(2, np.int64)),
             lambda: K.cross_entropy_backward(x, np.zeros(2, np.int64), np.zeros((2, 2)),
                                                     1.0),
             lambda: K.layer_norm_forward(x, None, None),
             lambda: K.layer_norm_backward(x, x, None, x[:, 0], x[:, 0]),
             K.compile_all]
    for call in calls:
        with pytest.raises(RuntimeError, match="CuPy"):
            call()


# ---------------------------------------------------------------------------------------------
# (b) on a GPU, against the numpy reference
# ---------------------------------------------------------------------------------------------
def gpu(a):
    return None if a is None else cupy.asarray(a)


def tol(dtype, k=1):
    """float32 row kernels sum in double and round once (exp in float: a few ulp); the GEMM
    sums k products in the element type."""
    if dtype == np.float32:
        return dict(rtol=1e-5, atol=1e-6 * k)
    return dict(rtol=1e-11, atol=1e-13 * k)


def assert_matches(got, want, **tolerance):
    assert isinstance(got, cupy.ndarray), type(got)
    assert got.flags.c_contiguous
    got = cupy.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                               want.dtype, want.shape)
    np.testing.assert_allclose(got, want, **tolerance)  # NaNs must sit at the same places


# lse is float64 for both dtypes; the kernels sum exp in double (as the reference), up to the
# order of the sums
LSE_TOL = {np.float32: dict(rtol=1e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


@requires_gpu
def test_compile_all_builds_every_kernel():
    names = K.compile_all()
    assert len(names) == 2 * sum(len(n) for n in K.ENTRY_POINTS.values())
    assert "mt_gemm_f32" in names and "mt_layer_norm_param_grads_f64" in names


# ---- GEMM ----
MATMUL_SHAPES = [
    ((1, 1), (1, 1)),
    ((17, 33), (33, 129)),              # nothing a multiple of the 128 x 128 tile or of k's 8
    ((130, 257), (257, 65)),            # just over a tile in m, k
    ((300, 1000), (1000, 200)),
    ((3, 4, 17, 9), (9, 31)),           # one B for every batch: stride 0
    ((5, 9), (2, 3, 9, 6)),             # one A for every batch
    ((2, 1, 5, 7), (1, 3, 7, 4)),       # both broadcast: materialized
    ((6, 40, 64), (6, 64, 40)),
    ((0, 5), (5, 3)), ((4, 5), (5, 0)), ((2, 0, 3, 4), (4, 2)),  # empty results
    ((4, 0), (0, 3)),                   # k = 0: zeros
]


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES)
def test_matmul_matches_numpy(dtype, a_shape, b_shape):
    rng = np.random.default_rng(0)
    a, b = rand(rng, a_shape, dtype), rand(rng, b_shape, dtype)
    assert_matches(K.matmul(gpu(a), gpu(b)), N.matmul(a, b), **tol(dtype, a_shape[-1]))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_of_transposed_and_strided_views(dtype):
    rng = np.random.default_rng(1)
    w = rand(rng, (129, 70), dtype)                 # x @ w.T: w.T is a transposed matrix
    x = rand(rng, (37, 70), dtype)
    assert_matches(K.matmul(gpu(x), gpu(w).T), N.matmul(x, w.T), **tol(dtype, 70))
    assert_matches(K.matmul(gpu(x).T, gpu(x)), N.matmul(x.T, x), **tol(dtype, 37))
    q, k = rand(rng, (2, 3, 17, 8), dtype), rand(rng, (2, 3, 19, 8), dtype)  # q @ k^T, batched
    got = K.matmul(gpu(q), gpu(k).swapaxes(-1, -2))
    assert_matches(got, N.matmul(q, k.swapaxes(-1, -2)), **tol(dtype, 8))
    big = rand(rng, (4, 30, 22), dtype)             # strided slices: copied
    a, b = big[:, ::2], big[:1, 1::2].swapaxes(-1, -2)  # (4, 15, 22) @ (1, 22, 15)
    assert_matches(K.matmul(gpu(big)[:, ::2], gpu(big)[:1, 1::2].swapaxes(-1, -2)),
                   N.matmul(a, b), **tol(dtype, 22))


@requires_gpu
def test_matmul_with_more_batches_than_the_grid_holds():
    """grid z is capped at 65535: the blocks loop over the batches it leaves."""
    rng = np.random.default_rng(2)
    a, b = rand(rng, (70000, 2, 3), np.float32), rand(rng, (70000, 3, 2), np.float32)
    assert_matches(K.matmul(gpu(a), gpu(b)), N.matmul(a, b), **tol(np.float32, 3))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_transposes_alpha_beta(dtype, trans_a, trans_b):
    rng = np.random.default_rng(3)
    m, n, k = 67, 131, 45
    a = rand(rng, (k, m) if trans_a else (m, k), dtype)
    b = rand(rng, (n, k) if trans_b else (k, n), dtype)
    c = rand(rng, (m, n), dtype)
    want = N.gemm(a, b, trans_a, trans_b, alpha=0.5, beta=-2.0, out=c.copy())
    out = gpu(c)
    got = K.gemm(gpu(a), gpu(b), trans_a, trans_b, alpha=0.5, beta=-2.0, out=out)
    assert got is out
    assert_matches(got, want, **tol(dtype, k))
    assert_matches(K.gemm(gpu(a), gpu(b), trans_a, trans_b), N.gemm(a, b, trans_a, trans_b),
                   **tol(dtype, k))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_does_not_read_what_alpha_or_beta_zero_leave_out(dtype):
    rng = np.random.default_rng(4)
    a, b = rand(rng, (20, 9), dtype), rand(rng, (9, 11), dtype)
    out = gpu(np.full((20, 11), np.nan, dtype))      # beta == 0: C is not read
    assert_matches(K.gemm(gpu(a), gpu(b), beta=0.0, out=out), N.gemm(a, b), **tol(dtype, 9))
    c = rand(rng, (20, 11), dtype)
    a_nan = np.full_like(a, np.nan)                  # alpha == 0: A and B are not read
    want = (3.0 * c.astype(np.float64)).astype(dtype)
    got = K.gemm(gpu(a_nan), gpu(b), alpha=0.0, beta=3.0, out=gpu(c))
    assert_matches(got, want, **tol(dtype))


@requires_gpu
def test_gemm_rejects_what_the_c_backend_rejects():
    a = gpu(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="inner dims"):
        K.gemm(a, a)
    with pytest.raises(TypeError, match="same dtype"):
        K.matmul(a, gpu(np.zeros((4, 2))))
    with pytest.raises(TypeError, match="cupy.ndarray"):
        K.matmul(np.zeros((3, 4), np.float32), a.T)
    with pytest.raises(ValueError, match="overlap"):
        K.gemm(a, gpu(np.zeros((4, 4), np.float32)), out=a)


# ---- softmax and log-softmax ----
ROW_SHAPES = [(1, 1), (3, 17), (37, 1000), (2, 3, 5, 17), (0, 17), (5, 0), (1000,)]


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_softmax_forward_backward_match_numpy(dtype, shape, scale):
    rng = np.random.default_rng(5)
    x, dy = rand(rng, shape, dtype) * 3, rand(rng, shape, dtype)
    y = N.softmax_forward(x, scale)
    assert_matches(K.softmax_forward(gpu(x), scale), y, **tol(dtype))
    assert_matches(K.softmax_backward(gpu(y), gpu(dy), scale), N.softmax_backward(y, dy, scale),
                   **tol(dtype))


# (x shape, mask shape): masks broadcast over the rows as attention's do
MASKED = [
    ((2, 3, 5, 17), (2, 1, 1, 17)),     # key padding, one per batch
    ((2, 3, 5, 17), (5, 17)),           # attn_mask, shared by batches and heads
    ((2, 3, 5, 17), (2, 3, 5, 1)),      # one value per row: column stride 0
    ((4, 7, 1), (7, 1)),                # one column
    ((3, 1000), (3, 1000)),
    ((17,), (17,)),                     # 1-d x: no row dims
]


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape, mask_shape", MASKED)
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_softmax_masks_match_numpy(dtype, x_shape, mask_shape, kind):
    rng = np.random.default_rng(6)
    x = rand(rng, x_shape, dtype)
    if kind == "bool":
        mask = rng.random(mask_shape) < 0.3
    else:
        mask = np.where(rng.random(mask_shape) < 0.3, -np.inf, rand(rng, mask_shape, dtype))
        mask = mask.astype(dtype)
    want = N.softmax_forward(x, 0.5, mask)
    assert_matches(K.softmax_forward(gpu(x), 0.5, gpu(mask)), want, **tol(dtype))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5, 17), (4, 20, 7), (1, 1), (300, 300)])
def test_softmax_causal_matches_numpy(dtype, shape):
    rng = np.random.default_rng(7)
    x = rand(rng, shape, dtype)
    assert_matches(K.softmax_forward(gpu(x), 1.0, None, True),
                   N.softmax_forward(x, 1.0, None, True), **tol(dtype))
    pad = rng.random(shape[-1]) < 0.5                # causal and a key padding mask together
    pad[0] = True                                    # row 0 then has nothing left: zeros
    y = K.softmax_forward(gpu(x), 1.0, gpu(pad), True)
    want = N.softmax_forward(x, 1.0, pad, True)
    assert_matches(y, want, **tol(dtype))
    assert not np.isnan(cupy.asnumpy(y)).any()


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_non_finite_rows(dtype):
    inf, nan = np.inf, np.nan
    x = np.array([[1.0, nan, 2.0], [1.0, inf, 2.0], [-inf, -inf, -inf], [-inf, 0.0, -inf],
                  [1e4, -1e4, 1e4]], dtype)
    for got, want in [(K.softmax_forward(gpu(x)), N.softmax_forward(x)),
                      (K.log_softmax_forward(gpu(x)), N.log_softmax_forward(x))]:
        assert_matches(got, want, **tol(dtype))
    mask = np.ones((5, 3), bool)                     # every entry excluded: zeros, not NaN
    assert_matches(K.softmax_forward(gpu(x), 1.0, gpu(mask)), np.zeros((5, 3), dtype))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_log_softmax_forward_backward_match_numpy(dtype, shape):
    rng = np.random.default_rng(8)
    x, dy = rand(rng, shape, dtype) * 5, rand(rng, shape, dtype)
    y = N.log_softmax_forward(x)
    assert_matches(K.log_softmax_forward(gpu(x)), y, **tol(dtype))
    assert_matches(K.log_softmax_backward(gpu(y), gpu(dy)), N.log_softmax_backward(y, dy),
                   **tol(dtype))


@requires_gpu
def test_softmax_rejects_what_the_c_backend_rejects():
    x = gpu(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="does not broadcast"):
        K.softmax_forward(x, mask=gpu(np.zeros((3, 3), bool)))
    with pytest.raises(TypeError, match="mask must be bool or float32"):
        K.softmax_forward(x, mask=gpu(np.zeros((2, 3), np.int32)))
    with pytest.raises(ValueError, match="causal softmax needs"):
        K.softmax_forward(x[0], causal=True)
    with pytest.raises(TypeError, match="float32 or float64"):
        K.log_softmax_forward(gpu(np.zeros((2, 3), np.float16)))
    with pytest.raises(ValueError, match="dy must have shape"):
        K.softmax_backward(x, x[:1])


# ---- cross-entropy ----
@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 17), (64, 1000), (0, 5)])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_numpy(dtype, rows, cols, ignore_index, label_smoothing,
                                     reduction):
    rng = np.random.default_rng(9)
    logits = rand(rng, (rows, cols), dtype) * 4
    target = rng.integers(0, max(cols, 1), rows).astype(np.int64)
    target[rng.random(rows) < 0.3] = ignore_index
    args = (ignore_index, label_smoothing, reduction)
    loss, lse = N.cross_entropy_forward(logits, target, *args)
    got_loss, got_lse = K.cross_entropy_forward(gpu(logits), gpu(target), *args)
    assert_matches(got_loss, loss, **tol(dtype))
    assert_matches(got_lse, lse, **LSE_TOL[dtype])
    grad = rand(rng, (rows,), dtype) if reduction == "none" else np.asarray(1.5, dtype)
    want = N.cross_entropy_backward(logits, target, lse, grad, *args)
    assert_matches(K.cross_entropy_backward(gpu(logits), gpu(target), got_lse, gpu(grad), *args),
                   want, **tol(dtype))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_edge_rows(dtype):
    inf = np.inf
    logits = np.array([[1e4, -1e4, 0.0], [np.nan, 1.0, 2.0], [-inf, 0.0, 1.0], [3.0, 3.0, 3.0]],
                      dtype)
    target = np.array([1, 0, 2, -100], np.int64)
    for eps in (0.0, 0.2):
        loss, lse = N.cross_entropy_forward(logits, target, label_smoothing=eps,
                                            reduction="none")
        got_loss, got_lse = K.cross_entropy_forward(gpu(logits), gpu(target), label_smoothing=eps,
                                                    reduction="none")
        assert_matches(got_loss, loss, **tol(dtype))
        assert_matches(got_lse, lse, **LSE_TOL[dtype])
    every_row_ignored = np.full(4, -100, np.int64)   # "mean" over no rows: 0.0, not NaN
    got_loss, _ = K.cross_entropy_forward(gpu(logits), gpu(every_row_ignored))
    assert float(got_loss) == 0.0


@requires_gpu
def test_cross_entropy_rejects_what_the_c_backend_rejects():
    logits = gpu(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match="target value 3 is out of range"):
        K.cross_entropy_forward(logits, gpu(np.array([0, 3], np.int64)))
    with pytest.raises(IndexError, match="target value -1"):
        K.cross_entropy_backward(logits, gpu(np.array([-1, 0], np.int64)),
                                 gpu(np.zeros((2, 2))), 1.0)
    with pytest.raises(TypeError, match="target must be int64"):
        K.cross_entropy_forward(logits, gpu(np.array([0, 1], np.int32)))
    with pytest.raises(ValueError, match="label_smoothing"):
        K.cross_entropy_forward(logits, gpu(np.array([0, 1], np.int64)), label_smoothing=1.5)
    with pytest.raises(ValueError, match="reduction"):
        K.cross_entropy_forward(logits, gpu(np.array([0, 1], np.int64)), reduction="avg")


# ---- layer norm ----
@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 17), (37, 1000), (2, 150, 24), (5000, 17),
                                   (0, 8)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_numpy(dtype, shape, affine):
    rng = np.random.default_rng(10)
    x, dy = rand(rng, shape, dtype) * 2 + 1, rand(rng, shape, dtype)
    weight = rand(rng, shape[-1:], dtype) if affine else None
    bias = rand(rng, shape[-1:], dtype) if affine else None
    y, mean, rstd = N.layer_norm_forward(x, weight, bias, 1e-5)
    got = K.layer_norm_forward(gpu(x), gpu(weight), gpu(bias), 1e-5)
    for g, w in zip(got, (y, mean, rstd)):
        assert_matches(g, w, **tol(dtype))
    want = N.layer_norm_backward(dy, x, weight, mean, rstd)
    got = K.layer_norm_backward(gpu(dy), gpu(x), gpu(weight), gpu(mean), gpu(rstd))
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:  # dweight, dbias sum over every row: the tolerance grows with the rows
            assert_matches(g, w, **tol(dtype, max(1, x.size // max(shape[-1], 1))))


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_non_finite_rows(dtype):
    x = np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 2.0], [3.0, 3.0, 3.0], [1e4, -1e4, 0.0]],
                 dtype)
    for got, want in zip(K.layer_norm_forward(gpu(x), None, None, 1e-5),
                         N.layer_norm_forward(x, None, None, 1e-5)):
        assert_matches(got, want, **tol(dtype))


@requires_gpu
def test_layer_norm_rejects_what_the_c_backend_rejects():
    x = gpu(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="weight must have shape"):
        K.layer_norm_forward(x, gpu(np.ones(2, np.float32)), None)
    with pytest.raises(TypeError, match="same dtype"):
        K.layer_norm_forward(x, gpu(np.ones(3)), None)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        K.layer_norm_forward(x, None, None, eps=-1.0)
    with pytest.raises(ValueError, match="mean must have shape"):
        K.layer_norm_backward(x, x, None, x, x[:, 0])


@requires_gpu
def test_a_transformer_trains_on_the_gpu_close_to_the_cpu():
    """The device layer on the real GPU (tests/test_device_placement.py runs it on a stand-in):
    three Adam steps of a small seq2seq Transformer, csrc/cuda's kernels against the CPU's."""
    import minitorch as mt
    import minitorch.nn.functional as F
    from minitorch.text.model import Seq2SeqTransformer

    def run(device):
        mt.manual_seed(0)
        model = Seq2SeqTransformer(30, 30, d_model=32, nhead=4, num_encoder_layers=2,
                                   num_decoder_layers=2, dim_feedforward=64, dropout=0.1)
        model.to(device, mt.float64)
        optimizer = mt.optim.Adam(model.parameters(), lr=1e-3)
        rng = np.random.default_rng(0)
        src = mt.tensor(rng.integers(4, 30, (4, 9)), device=device)
        tgt = mt.tensor(rng.integers(4, 30, (4, 8)), device=device)
        for _ in range(3):
            logits = model(src, tgt[:, :-1], src_key_padding_mask=src == 5)
            loss = F.cross_entropy(logits.reshape(-1, 30), tgt[:, 1:].reshape(-1),
                                   label_smoothing=0.1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return [p.detach().cpu().numpy() for p in model.parameters()]
    for ours, theirs in zip(run("cuda"), run("cpu")):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


@requires_gpu
def test_translate_example_trains_on_the_gpu(tmp_path):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "translate.py"), "--device", "cuda",
         "--n-train", "400", "--n-valid", "8", "--vocab-size", "150", "--d-model", "32",
         "--heads", "2", "--layers", "1", "--ff", "64", "--max-steps", "30", "--epochs", "1",
         "--quiet", "--no-plots", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "Final held-out BLEU" in result.stdout


# ---------------------------------------------------------------------------------------------
# (d) the loader's launches, without a GPU: the tests of (b) on a numpy stand-in for CuPy whose
#     kernels are the C kernels of the same names (csrc/minitorch.h: the arguments the .cu entry
#     points take), so that the shapes, strides, flags and scalar types the loader passes are
#     checked on every machine with the C extension. It checks the loader, not the CUDA code.
# ---------------------------------------------------------------------------------------------
try:
    from minitorch._C import ffi, lib
except ImportError:
    lib = None


class _StandInDevice:
    id = 0


class _StandInArray(np.ndarray):
    """A numpy array that says it lives on cuda:0."""
    device = _StandInDevice()


def _on_stand_in(a):
    return np.asarray(a).view(_StandInArray)


_C_ARRAY = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]",
            np.dtype(np.int64): "int64_t[]", np.dtype(np.bool_): "uint8_t[]"}


def _c_argument(a):
    """One kernel argument as cffi passes it to C; the loader must pass C-contiguous arrays,
    NULL as np.uint64(0) and every scalar as a sized numpy scalar."""
    if isinstance(a, np.ndarray):
        assert a.flags.c_contiguous, "a kernel was given a non-contiguous array"
        return ffi.from_buffer(_C_ARRAY[a.dtype], a)
    if isinstance(a, np.uint64):
        assert a == 0, "np.uint64 is only for NULL"
        return ffi.NULL
    assert isinstance(a, (np.int32, np.int64, np.float32, np.float64)), type(a)
    return a.item()


def _stand_in_kernel(name, code):
    assert f"{name}(" in code or f"{name[:-4]}_##SFX(" in code, f"no kernel {name}"

    def launch(grid, block, args):
        assert all(isinstance(g, int) and g >= 1 for g in grid), grid
        assert math.prod(block) <= 1024, block
        if name.startswith("mt_layer_norm_backward"):  # C's takes dweight, dbias after dx
            args = args[:6] + (np.uint64(0), np.uint64(0)) + args[6:]
        elif name.startswith("mt_layer_norm_param_partials"):
            dy, x, mean, rstd, partial_w, partial_b, rows, cols, per_chunk = args
            assert grid == (-(-int(cols) // 32), partial_w.shape[0]) and block == (32, 8)
            dy, x = dy.reshape(int(rows), int(cols)), x.reshape(int(rows), int(cols))
            xhat = (x - mean.reshape(-1, 1).astype(np.float64)) * rstd.reshape(-1, 1)
            for chunk in range(partial_w.shape[0]):
                these = slice(chunk * int(per_chunk), (chunk + 1) * int(per_chunk))
                partial_w[chunk] = (dy[these] * xhat[these]).sum(axis=0)
                partial_b[chunk] = dy[these].sum(axis=0, dtype=np.float64)
            return
        elif name.startswith("mt_layer_norm_param_grads"):
            partial_w, partial_b, chunks, cols, dweight, dbias = args
            dweight[...] = partial_w.sum(axis=0)
            dbias[...] = partial_b.sum(axis=0)
            return
        assert getattr(lib, name)(*[_c_argument(a) for a in args]) == 0, name
    return launch


def _cupy_stand_in():
    stand_in = types.ModuleType("cupy")
    stand_in.ndarray = _StandInArray
    stand_in.asarray = lambda a, dtype=None: _on_stand_in(np.array(a, dtype=dtype))
    stand_in.asnumpy = lambda a: np.array(a).view(np.ndarray)
    stand_in.ascontiguousarray = lambda a: _on_stand_in(np.ascontiguousarray(a))
    # outputs start as NaN, so that an element a kernel leaves unwritten shows
    stand_in.empty = lambda shape, dtype=float: _on_stand_in(np.full(shape, np.nan, dtype))
    stand_in.empty_like = lambda a: _on_stand_in(np.full(a.shape, np.nan, a.dtype))
    stand_in.zeros = lambda shape, dtype=float: _on_stand_in(np.zeros(shape, dtype))
    stand_in.full = lambda shape, value, dtype=float: _on_stand_in(np.full(shape, value, dtype))
    stand_in.broadcast_to = lambda a, shape: _on_stand_in(np.broadcast_to(a, shape))
    stand_in.count_nonzero = np.count_nonzero
    stand_in.may_share_memory = np.may_share_memory
    stand_in.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1), Device=_StandInDevice)
    stand_in.RawModule = lambda code, options: types.SimpleNamespace(
        get_function=lambda name: _stand_in_kernel(name, code))
    return stand_in


@pytest.fixture
def c_kernels_as_cupy(monkeypatch):
    if lib is None:
        pytest.skip("C extension not built")
    stand_in = _cupy_stand_in()
    # the sources beside these tests: an installed package (the sdist's test run) has none
    monkeypatch.setattr(K, "CUDA_DIR", CUDA_DIR)
    monkeypatch.setitem(sys.modules, "cupy", stand_in)
    monkeypatch.setitem(globals(), "cupy", stand_in)
    K._module.cache_clear()  # no stand-in module may outlive the test (nor a real one leak in)
    yield stand_in
    K._module.cache_clear()


def test_loader_launches_on_the_c_kernels(c_kernels_as_cupy):
    """(b)'s tests but those where the tuned C and numpy differ (a NaN row's max in lse, dx
    rounded in float at one column): the GPU kernels follow numpy there."""
    assert K.is_available()
    test_compile_all_builds_every_kernel()
    for dtype in DTYPES:
        for a_shape, b_shape in MATMUL_SHAPES:
            test_matmul_matches_numpy(dtype, a_shape, b_shape)
        test_matmul_of_transposed_and_strided_views(dtype)
        for trans_a in (False, True):
            for trans_b in (False, True):
                test_gemm_transposes_alpha_beta(dtype, trans_a, trans_b)
        test_gemm_does_not_read_what_alpha_or_beta_zero_leave_out(dtype)
        for shape in ROW_SHAPES:
            test_softmax_forward_backward_match_numpy(dtype, shape, 0.125)
            test_log_softmax_forward_backward_match_numpy(dtype, shape)
        for x_shape, mask_shape in MASKED:
            for kind in ("bool", "additive"):
                test_softmax_masks_match_numpy(dtype, x_shape, mask_shape, kind)
        for shape in [(2, 3, 5, 17), (4, 20, 7), (1, 1)]:
            test_softmax_causal_matches_numpy(dtype, shape)
        test_softmax_non_finite_rows(dtype)
        for rows, cols in [(7, 17), (64, 1000), (0, 5)]:
            for reduction in ("mean", "sum", "none"):
                test_cross_entropy_matches_numpy(dtype, rows, cols, 2, 0.1, reduction)
        for shape in [(5, 17), (37, 1000), (2, 150, 24), (5000, 17), (0, 8)]:
            for affine in (True, False):
                test_layer_norm_matches_numpy(dtype, shape, affine)
    test_gemm_rejects_what_the_c_backend_rejects()
    test_softmax_rejects_what_the_c_backend_rejects()
    test_cross_entropy_rejects_what_the_c_backend_rejects()
    test_layer_norm_rejects_what_the_c_backend_rejects()


def test_each_kernel_takes_the_arguments_the_ops_pass():
    """Ops call a kernel through backends.current() with the C backend's arguments, and a call
    on GPU arrays lands here: every kernel here has the C (and numpy) backend's signature."""
    import inspect

    from minitorch import backends
    names = [name for names in K.ENTRY_POINTS.values() for name in names
             if hasattr(N, name)] + ["matmul"]
    assert {"gemm", "softmax_forward", "cross_entropy_backward", "layer_norm_forward"} <= set(names)
    for name in names:
        ours = inspect.signature(getattr(K, name))
        assert ours == inspect.signature(getattr(N, name)), name
        if "c" in backends.available:
            assert ours == inspect.signature(getattr(backends.available["c"], name)), name
