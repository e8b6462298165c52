"""The AVX-512 masked softmax's pipeline (csrc/tuned/softmax_masked_step.h, driven by
softmax_rows.h: softmax_masked_rows_pipelined), in which one loop exponentiates a row, scores the
next and divides the one before, each up to its own width.

A row's values must not depend on the rows beside it. So each row of a pipelined call is
computed again alone, with its causal limit folded into its mask (excluded columns are -inf
either way, whose exps add exact zeros), and must come out the same bit for bit: rows of every
mask kind (causal only, key padding as bool and as floats, one additive mask row per query,
one value per row), rows over one and two sum blocks (MT_SUM_BLOCK, 1024 columns), and fully
masked and NaN rows at the first, second and last rows of a head and side by side, where the
pipeline's previous and next rows change width. The reference level checks the values
themselves, at every tuned level.
"""
import numpy as np
import pytest

from test_kernels import C, needs_c, TUNED_ISAS, c_threads
from test_kernels_softmax_short_rows import tight

pytestmark = needs_c

AVX512 = [isa for isa in TUNED_ISAS if isa.startswith("avx512")]


def case(rng, kind, queries, keys, heads, dtype):
    """(x, mask, causal) for one mask kind, with special rows: all excluded, or NaN among the
    live keys, at the first, second and last queries of a head and at two side by side."""
    x = (rng.standard_normal((1, heads, queries, keys)) * 3).astype(dtype)
    excluded = np.zeros((1, heads, queries, keys), bool)
    special = [(0, 0), (1, 1), (2, queries - 1), (3, 5), (3, 6)]
    for head, query in special[::2]:
        excluded[0, head, query] = True
    for head, query in special[1::2]:
        x[0, head, query, 0] = np.nan
    if kind == "causal":
        x[excluded] = -np.inf  # an all -inf row: excluded by its values
        return x, None, True
    if kind == "padding bool":
        mask = excluded | (np.arange(keys) >= keys * 3 // 4)
        return x, mask, True
    if kind == "padding float":
        mask = (rng.standard_normal((1, heads, queries, keys)) * 0.5).astype(dtype)
        mask[excluded | (np.arange(keys) >= keys // 2)] = -np.inf
        return x, mask, True
    if kind == "per query float":
        mask = (rng.standard_normal((1, 1, queries, keys)) * 0.5).astype(dtype)
        mask[0, 0, :, ::3] = -np.inf
        x[excluded] = -np.inf
        return x, mask, False
    # one value per row (stride 0 along the keys): True excludes the row
    mask = excluded[..., :1].copy()
    return x, mask, True


def alone(x, mask, causal, head, query):
    """Row (head, query) computed by itself: a 1-row call whose mask holds its causal limit
    (bool: excluded; float: -inf), so the pipeline has no row before or after it."""
    keys = x.shape[-1]
    row = x[:, head:head + 1, query:query + 1]
    beyond = np.arange(keys) > query if causal else np.zeros(keys, bool)
    if mask is None:
        return C.softmax_forward(row, scale=0.5, mask=beyond.reshape(1, 1, 1, keys))
    row_mask = np.broadcast_to(mask, x.shape)[:, head:head + 1, query:query + 1]
    if row_mask.dtype == np.bool_:
        return C.softmax_forward(row, scale=0.5, mask=row_mask | beyond)
    return C.softmax_forward(row, scale=0.5, mask=np.where(beyond, -np.inf, row_mask))


@pytest.mark.skipif(not AVX512, reason="the pipeline is the AVX-512 level's; this CPU has none")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keys", [130, 256, 1030, 2100])
@pytest.mark.parametrize("kind", ["causal", "padding bool", "padding float", "per query float",
                                  "one value per row"])
def test_each_pipelined_row_equals_itself_computed_alone(kind, keys, dtype, threads):
    rng = np.random.default_rng([keys, len(kind)])
    queries, heads = 40, 5
    x, mask, causal = case(rng, kind, queries, keys, heads, dtype)
    with c_threads(threads, AVX512[-1]):
        rows = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)[0]
        for head in range(heads):
            for query in range(queries):
                np.testing.assert_array_equal(alone(x, mask, causal, head, query)[0, 0, 0],
                                              rows[head, query], err_msg=f"{head}, {query}")
    if kind != "per query float":
        for head, query in ((0, 0), (2, queries - 1), (3, 6)):
            assert (rows[head, query] == 0).all(), (head, query)
        for head, query in ((1, 1), (3, 5)):  # NaN, past the causal limit too
            assert np.isnan(rows[head, query]).all(), (head, query)


@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["causal", "padding bool", "padding float", "per query float",
                                  "one value per row"])
def test_masked_rows_match_the_reference_level(kind, dtype, threads, isa):
    """Every tuned level (the pipeline at AVX-512), with the rows above: a NaN in a causal row
    makes all of it NaN, past the causal limit too, as the reference level and PyTorch do (the
    tuned rows left zeros there before)."""
    rng = np.random.default_rng(len(kind))
    for keys in (130, 256, 1030):
        x, mask, causal = case(rng, kind, 40, keys, 5, dtype)
        with c_threads(threads, "reference"):
            expected = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)
        with c_threads(threads, isa):
            got = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)
        np.testing.assert_allclose(got, expected, equal_nan=True, **tight(dtype),
                                   err_msg=f"keys {keys}")
        assert np.array_equal(np.isnan(got), np.isnan(expected))


@pytest.mark.skipif(not AVX512, reason="the pipeline is the AVX-512 level's; this CPU has none")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keys", [1000, 999])
@pytest.mark.parametrize("kind", ["causal", "padding bool", "padding float", "per query float",
                                  "one value per row"])
def test_rows_of_a_streamed_output_equal_those_of_smaller_calls(kind, keys, dtype, threads):
    """From 16 MiB of output on (MT_STREAM_BYTES), the pipeline works its rows in a ring of
    three and streams each to y: as the next row's loop divides it where y's rows are whole
    64-byte lines (1000 float64 keys), else copied once done (1000 float32 keys, 999). The heads
    of such a call, computed in two calls under that size, must come out the same bit for bit,
    the special rows included."""
    rng = np.random.default_rng([keys, len(kind), 16])
    queries = 40
    stream_from = 16 << 20
    heads = stream_from // (queries * keys * np.dtype(dtype).itemsize) + 1
    x, mask, causal = case(rng, kind, queries, keys, heads, dtype)
    assert x.nbytes >= stream_from
    full_mask = None if mask is None else np.broadcast_to(mask, x.shape[:-1] + mask.shape[-1:])
    with c_threads(threads, AVX512[-1]):
        whole = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)
        half = heads // 2
        for h0, h1 in ((0, half), (half, heads)):
            part_mask = None if mask is None else np.ascontiguousarray(full_mask[:, h0:h1])
            part = C.softmax_forward(x[:, h0:h1], scale=0.5, mask=part_mask, causal=causal)
            np.testing.assert_array_equal(whole[:, h0:h1], part, err_msg=f"heads {h0}:{h1}")
        for head, query in ((0, 0), (1, 1), (3, 6), (heads - 1, queries - 1)):
            np.testing.assert_array_equal(alone(x, mask, causal, head, query)[0, 0, 0],
                                          whole[0, head, query], err_msg=f"{head}, {query}")
