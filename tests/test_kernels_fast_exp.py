"""The vector exp of csrc/tuned/fast_exp.c at each tuned ISA level, read off through softmax:
softmax([0, x_1, ..., x_k]) with every x_j so negative that the row sums to exactly 1 in T gives
y_j = the kernel's exp(x_j) itself (test_kernels.py's test_vectorized_exp_is_accurate_to_a_few_ulp
holds every level to 3 ulp). Here each level is held to its own stated bound (fast_exp.h /
fast_exp.c) on a dense sweep, widths that take the vector loop, the masked (AVX-512) or scalar
tail, and the row pipeline (many rows): float32 within 2 ulp at AVX-512 (the table exp; 1.73
measured) and 2.5 at the other levels (the degree-5 polynomial; 2.2 measured), float64 within 1
ulp of libm's exp at every level (plus libm's own error: 2 in all).
"""
import numpy as np
import pytest

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

needs_c = pytest.mark.skipif(C is None, reason="C extension not built")
TUNED_ISAS = [] if C is None else list(C.ISA_LEVELS[1:C.ISA_LEVELS.index(C.best_isa()) + 1])
# ulp bound per level and dtype; float64's includes one ulp for libm's own error
BOUND = {("avx512", np.float32): 2.0, ("avx2", np.float32): 2.5, ("portable", np.float32): 2.5,
         ("avx512", np.float64): 2.0, ("avx2", np.float64): 2.0, ("portable", np.float64): 2.0}


def exp_through_softmax(x, isa):
    rows = np.concatenate([np.zeros((len(x), 1), x.dtype), x], axis=1)
    with C.isa(isa):
        return C.softmax_forward(rows)[:, 1:]


def ulp_error(got, x):
    exact = np.exp(x.astype(np.float64))
    ulp = np.spacing(exact.astype(x.dtype)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / ulp


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype,lowest,highest", [(np.float32, -87.0, -25.0),
                                                  (np.float64, -700.0, -45.0)])
@pytest.mark.parametrize("width", [15, 16, 66, 1000])
def test_exp_within_the_levels_bound(dtype, lowest, highest, width, isa):
    x = np.linspace(lowest, highest, width * (2**18 // width)).astype(dtype).reshape(-1, width)
    bound = BOUND[isa, dtype]
    error = ulp_error(exp_through_softmax(x, isa), x)
    assert error.max() <= bound, f"max error {error.max():.2f} ulp at {isa}"


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype,periods", [(np.float32, (-40, -36)), (np.float64, (-70, -66))])
def test_exp_over_every_table_entry_and_reduced_argument(dtype, periods, isa):
    """x = k ln2 / 32 + d for every k in a few periods and small d of both signs: every entry of
    the 2^(j/32) / 2^(j/16) tables and both ends of the reduced argument's range (periods: low
    enough that 64 exps add less than half an ulp to 1)."""
    k = np.arange(32 * periods[0], 32 * periods[1])
    d = np.linspace(-0.011, 0.011, 17)
    x = (k[:, None] * (np.log(2) / 32) + d[None, :]).ravel().astype(dtype)
    x = x[: len(x) // 64 * 64].reshape(-1, 64)
    bound = BOUND[isa, dtype]
    error = ulp_error(exp_through_softmax(x, isa), x)
    assert error.max() <= bound, f"max error {error.max():.2f} ulp at {isa}"


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype,zero,subnormal", [
    (np.float32, [-np.inf, -1e30, -200.0, -110.0, -109.0], [-100.0, -95.0, -88.0]),
    (np.float64, [-np.inf, -1e300, -800.0, -750.0, -746.0], [-740.0, -720.0, -709.0])])
@pytest.mark.parametrize("width", [16, 40, 1000])
def test_exp_underflows_to_zero_and_to_subnormals(dtype, zero, subnormal, width, isa):
    """Arguments whose exp is below the smallest subnormal (-inf, as a mask leaves them, among
    them) give +0 exactly; those whose exp is subnormal give it within a few of its ulps
    (2^-149 / 2^-1074: the relative bound does not hold there) at AVX-512, whose scalef rounds
    to subnormals, or 0 at the levels that flush them (fast_exp.c), in the vector loop and
    tail."""
    values = np.array(zero + subnormal, dtype)
    x = np.resize(values, (4, width)).astype(dtype)
    got = exp_through_softmax(x, isa)
    is_zero = np.isin(x, np.array(zero, dtype))
    np.testing.assert_array_equal(got[is_zero], 0)
    assert not np.signbit(got[is_zero]).any()
    tiny = np.finfo(dtype).smallest_subnormal
    exact = np.exp(x[~is_zero].astype(np.float64))
    close = np.abs(got[~is_zero] - exact) <= 4 * tiny + 2e-7 * exact
    if isa != "avx512":
        close |= got[~is_zero] == 0
    assert close.all(), f"{got[~is_zero][~close]} for {exact[~close]}"
