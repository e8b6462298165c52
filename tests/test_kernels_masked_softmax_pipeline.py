"""The AVX-512 masked softmax's pipeline (csrc/tuned/softmax_masked_step.h, driven by
softmax_rows.h: softmax_masked_rows_pipelined), in which one loop exponentiates a row, scores the
next and divides the one before, each up to its own width.

It takes the masked rows of arrays up to MT_MASKED_PIPELINE_BYTES (16 MiB of x and y); larger
ones keep the three passes a row (softmax_row_masked). Their values must be the same bit for
bit, so each case here runs one array just over that size (three passes) and then its heads one
at a time (the pipeline), on the same level and thread count: rows of every mask kind (causal
only, key padding as bool and as floats, one additive mask row per query, one value per row),
rows over one and two sum blocks (MT_SUM_BLOCK, 1024 columns), and fully masked and NaN rows
at the first, second and last rows of a head and side by side, where the pipeline takes a row
out and back in. The reference level checks the values themselves, at every tuned level.
"""
import numpy as np
import pytest

from test_kernels import C, needs_c, TUNED_ISAS, c_threads
from test_kernels_softmax_short_rows import tight

pytestmark = needs_c

# csrc/tuned/softmax_rows.h: MT_MASKED_PIPELINE_BYTES
PIPELINE_BYTES = 16 << 20
AVX512 = [isa for isa in TUNED_ISAS if isa.startswith("avx512")]


def heads_past_the_pipeline(queries, keys, dtype):
    """Enough heads of queries x keys that x and y together pass PIPELINE_BYTES."""
    head_bytes = 2 * queries * keys * np.dtype(dtype).itemsize
    return PIPELINE_BYTES // head_bytes + 1


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


@pytest.mark.skipif(not AVX512, reason="the pipeline is the AVX-512 level's; this CPU has none")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keys", [256, 1030, 2100])
@pytest.mark.parametrize("kind", ["causal", "padding bool", "padding float", "per query float",
                                  "one value per row"])
def test_pipelined_rows_equal_the_three_pass_rows_bit_for_bit(kind, keys, dtype, threads):
    rng = np.random.default_rng([keys, len(kind)])
    queries = 256 if keys == 256 else 64
    heads = heads_past_the_pipeline(queries, keys, dtype)
    x, mask, causal = case(rng, kind, queries, keys, heads, dtype)
    with c_threads(threads, AVX512[-1]):
        three_passes = C.softmax_forward(x, scale=0.5, mask=mask, causal=causal)
        for h in range(heads):
            head_mask = mask if mask is None or mask.shape[1] == 1 else mask[:, h:h + 1]
            pipelined = C.softmax_forward(x[:, h:h + 1], scale=0.5, mask=head_mask,
                                          causal=causal)
            np.testing.assert_array_equal(pipelined[0, 0], three_passes[0, h],
                                          err_msg=f"head {h}")
    rows = three_passes[0]
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
