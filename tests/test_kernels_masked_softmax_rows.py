"""Masked and causal softmax rows (csrc/tuned/softmax_rows.h: softmax_row_masked) against the
plain reference level. The tuned levels score a row in whole vectors up to the end of its live
columns' last vector, the columns past the causal limit as -inf; at AVX-512 the row's end and
the causal limit are lane masks. So: key counts on both sides of every vector length, every
causal limit from 1 to the row's length (queries 0 .. L-1, and more queries than keys), a key
padding mask as bool and as additive floats (stride 1 along the keys) and as one value per row
(stride 0), and what a masked column hides (+inf, NaN) not mattering. A bool padding mask
shared by a head's queries is exponentiated only up to its last live key, bit for bit as the
same mask given once per query. At AVX-512, rows of up to 512 bytes with a mask row of their
own are held in registers, four side by side (softmax_short_rows.h): rows all masked or NaN
anywhere among them, and a row's values not depending on the rows beside it. 1 and 2
threads, every tuned level.

Tolerances as test_kernels_softmax_short_rows.py's: the tuned exp is within 2 ulp and the sums
run in T lanes added in double.
"""
import numpy as np
import pytest

from test_kernels import C, needs_c, TUNED_ISAS, c_threads
from test_kernels_softmax_short_rows import reference_and_tuned, tight


def key_counts(dtype):
    """One element either side of 1, 2 and 4 vectors (of 16 float32 / 8 float64 and of half
    that), and a long row with a partial last vector."""
    v = 64 // np.dtype(dtype).itemsize
    return sorted({1, v // 2 - 1, v // 2 + 1, v - 1, v, v + 1, 2 * v - 1, 2 * v + 1,
                   4 * v + 3, 1000})


def padding(rng, batch, keys, as_float, dtype):
    """A key padding mask (batch, 1, 1, keys): each sequence's last keys excluded, at least one
    key live; as bool, or as an additive float mask (-inf there, small values elsewhere)."""
    lengths = rng.integers(1, keys + 1, batch)
    excluded = np.arange(keys)[None, :] >= lengths[:, None]
    if not as_float:
        return excluded.reshape(batch, 1, 1, keys)
    mask = (rng.standard_normal((batch, keys)) * 0.5).astype(dtype)
    mask[excluded] = -np.inf
    return mask.reshape(batch, 1, 1, keys)


def each_level_thread_dtype_and_mask_kind(test):
    """The test at every tuned level, on 1 and 2 threads, in both dtypes, with a bool and a
    float mask."""
    for mark in (pytest.mark.parametrize("mask_kind", ["bool", "float"]),
                 pytest.mark.parametrize("dtype", [np.float32, np.float64]),
                 pytest.mark.parametrize("threads", [1, 2]),
                 pytest.mark.parametrize("isa", TUNED_ISAS), needs_c):
        test = mark(test)
    return test


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float"])
def test_causal_rows_with_key_padding_match_the_reference_level(mask_kind, dtype, threads, isa):
    rng = np.random.default_rng(["none", "bool", "float"].index(mask_kind))
    for keys in key_counts(dtype):
        queries = min(keys, 40) + 3  # every causal limit up to 40, and queries past the keys
        x = (rng.standard_normal((3, 2, queries, keys)) * 4).astype(dtype)
        mask = None if mask_kind == "none" else padding(rng, 3, keys, mask_kind == "float", dtype)
        expected, got = reference_and_tuned(
            isa, threads, lambda: C.softmax_forward(x, scale=0.125, mask=mask, causal=True))
        np.testing.assert_allclose(got, expected, **tight(dtype), err_msg=f"keys {keys}")
        assert (got[..., np.triu(np.ones((queries, keys), bool), 1)] == 0).all()
        if mask_kind == "bool":
            assert (got[np.broadcast_to(mask, got.shape)] == 0).all()
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=8 * tight(dtype)["rtol"])


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_masked_columns_hide_inf_and_nan(causal, dtype, isa):
    """+inf and NaN under a bool mask's True entries, at every column of a vector and in the
    tail, leave the softmax of the other columns."""
    rng = np.random.default_rng(7 + causal)
    for keys in key_counts(dtype):
        x = rng.standard_normal((keys + 2, keys)).astype(dtype)
        mask = rng.random((keys + 2, keys)) < 0.4
        mask[:, 0] = False
        hidden = x.copy()
        hidden[mask] = np.where(rng.random(mask.sum()) < 0.5, np.inf, np.nan)
        with c_threads(1, "reference"):
            expected = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)
        with c_threads(1, isa):
            got = C.softmax_forward(hidden, scale=0.5, mask=mask, causal=causal)
        assert not np.isnan(got).any(), f"keys {keys}"
        np.testing.assert_allclose(got, expected, **tight(dtype), err_msg=f"keys {keys}")


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_mask_value_per_row(dtype, isa):
    """Masks broadcast along the keys (stride 0): a True row is all zeros, an additive value
    shifts the whole row and changes nothing; with the causal limit on top."""
    rng = np.random.default_rng(3)
    for keys in key_counts(dtype):
        x = rng.standard_normal((2, keys + 1, keys)).astype(dtype)
        row_excluded = rng.random((2, keys + 1, 1)) < 0.3
        row_shift = rng.standard_normal((2, keys + 1, 1)).astype(dtype)
        with c_threads(1, isa):
            excluded = C.softmax_forward(x, mask=row_excluded, causal=True)
            shifted = C.softmax_forward(x, mask=row_shift, causal=True)
            plain = C.softmax_forward(x, causal=True)
        assert (excluded[np.broadcast_to(row_excluded, x.shape)] == 0).all()
        kept = ~row_excluded[..., 0]
        np.testing.assert_allclose(excluded[kept], plain[kept], **tight(dtype))
        np.testing.assert_allclose(shifted, plain, **tight(dtype), err_msg=f"keys {keys}")


@each_level_thread_dtype_and_mask_kind
def test_a_shared_padding_masks_excluded_tail_is_skipped_exactly(mask_kind, dtype, threads, isa):
    """A bool key padding mask shared by a head's queries, (batch, 1, 1, keys): the tuned
    levels exponentiate each row only up to the mask's last live key (softmax_rows.h:
    mask_row_live). That must change nothing: the rows equal, bit for bit, those of the same
    mask given once per query (which is not skipped), with +inf and NaN under the padding, for
    no padding, a partial and a whole vector of it, all but one key, all keys, and a hole
    before live keys; causal or not, over one and two sum blocks (1024 columns), in rows short
    enough for registers and longer. A float mask's -inf is not skipped: inf or NaN under it
    makes the row NaN, as x * scale + mask does (PyTorch's too)."""
    rng = np.random.default_rng(31 + (mask_kind == "float"))
    v = 64 // np.dtype(dtype).itemsize
    for keys in (2 * v + 3, 8 * v, 300, 1030, 2100):
        lengths = [keys, keys - v // 2, keys - v, 1, 0, keys - 2]
        live = np.arange(keys)[None, :] < np.array(lengths)[:, None]
        live[-1, keys // 2] = False  # a hole before live keys: the tail starts at the end
        batch, queries = len(lengths), 9
        x = rng.standard_normal((batch, 2, queries, keys)).astype(dtype)
        hidden = np.broadcast_to(~live[:, None, None, :], x.shape)
        x[hidden] = np.where(rng.random(hidden.sum()) < 0.5, np.inf, np.nan)
        if mask_kind == "bool":
            mask = ~live
        else:
            mask = np.where(live, rng.standard_normal(live.shape) * 0.5, -np.inf).astype(dtype)
        mask = mask.reshape(batch, 1, 1, keys)
        per_query = np.ascontiguousarray(np.broadcast_to(mask, (batch, 1, queries, keys)))
        for causal in (False, True):
            with c_threads(threads, isa):
                shared = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)
                unshared = C.softmax_forward(x, scale=0.5, mask=per_query, causal=causal)
            np.testing.assert_array_equal(shared, unshared, err_msg=f"keys {keys}")
            if mask_kind == "bool":
                assert (shared[hidden] == 0).all() and not np.isnan(shared).any()
            elif not causal:  # (the causal limit hides some of the padding)
                assert np.isnan(shared[1:]).all()  # inf or NaN under -inf


def short_widths(dtype):
    """Key counts of the rows the AVX-512 level holds in registers with their mask (up to 512
    bytes: 1, 2, 4 and 8 vectors), and the first past them."""
    v = 64 // np.dtype(dtype).itemsize
    return [3, v, 2 * v + 1, 8 * v, 8 * v + 1]


@each_level_thread_dtype_and_mask_kind
def test_fully_masked_and_nan_rows_anywhere_among_short_rows(mask_kind, dtype, threads, isa):
    """Short masked rows go 16 at a time, four side by side (softmax_short_masked_rows): a row
    whose every key is masked gives zeros, a NaN among its live keys gives NaN, wherever it lies
    among them (first, inside a group of four, last of 16, in the partial last batch), and the
    rows around it keep the reference level's values."""
    rng = np.random.default_rng(21 + (mask_kind == "float"))
    rows = 16 * 2 + 5
    for keys in short_widths(dtype):
        for place in (0, 1, 3, 4, 15, 16, 17, rows - 1):
            x = (rng.standard_normal((rows, keys)) * 3).astype(dtype)
            excluded = rng.random((rows, keys)) < 0.3
            excluded[:, 0] = False
            excluded[place] = True
            nan_row = (place + 1) % rows
            x[nan_row, 0] = np.nan
            if mask_kind == "bool":
                mask = excluded
            else:
                mask = (rng.standard_normal((rows, keys)) * 0.5).astype(dtype)
                mask[excluded] = -np.inf
            expected, got = reference_and_tuned(
                isa, threads, lambda: C.softmax_forward(x, scale=0.5, mask=mask))
            np.testing.assert_allclose(got, expected, equal_nan=True, **tight(dtype),
                                       err_msg=f"keys {keys}, place {place}")
            assert (got[place] == 0).all() and np.isnan(got[nan_row]).all()
            others = np.ones(rows, bool)
            others[[place, nan_row]] = False
            assert not np.isnan(got[others]).any()


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_a_masked_row_does_not_depend_on_its_neighbours(mask_kind, dtype, isa):
    """Each of 37 causal rows with a key padding mask equals, bit for bit, the same row
    computed alone: decoding one query at a time gives what the whole sequence gives."""
    rng = np.random.default_rng(23)
    for keys in short_widths(dtype):
        x = rng.standard_normal((1, 1, 37, keys)).astype(dtype)
        mask = padding(rng, 1, keys, mask_kind == "float", dtype)
        with c_threads(1, isa):
            together = C.softmax_forward(x, scale=0.25, mask=mask)
            for q in range(37):
                alone = C.softmax_forward(x[:, :, q:q + 1], scale=0.25, mask=mask)
                np.testing.assert_array_equal(alone[0, 0, 0], together[0, 0, q],
                                              err_msg=f"keys {keys}, query {q}")
