"""Batching for seq2seq training: padding, masks, teacher-forcing shift and length buckets."""
import numpy as np
import pytest

from minitorch.text.batching import (bucket_indices, causal_mask, count_batches,
                                     iterate_batches, make_batch, pad_sequences)

PAD, BOS, EOS = 0, 2, 3


def test_make_batch_pads_shifts_and_masks_a_hand_made_batch():
    batch = make_batch([([5, 6, 7, EOS], [8, 9]), ([5, EOS], [8, 9, 10, 11])], PAD, BOS, EOS)
    assert batch.src.tolist() == [[5, 6, 7, EOS], [5, EOS, PAD, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 8, 9, PAD, PAD], [BOS, 8, 9, 10, 11]]
    assert batch.tgt_out.tolist() == [[8, 9, EOS, PAD, PAD], [8, 9, 10, 11, EOS]]
    assert batch.src_key_padding_mask.tolist() == [[False] * 4, [False, False, True, True]]
    assert batch.tgt_key_padding_mask.tolist() == [[False, False, False, True, True],
                                                   [False] * 5]
    assert batch.tgt_mask.shape == (5, 5)
    assert batch.n_tokens == 3 + 5  # y1..yn + <eos> per row, padding not counted
    assert batch.size == 2
    assert str(batch.src.dtype) .endswith("int64") and str(batch.tgt_mask.dtype).endswith("bool")


def test_shift_aligns_inputs_and_outputs_position_by_position():
    batch = make_batch([([4, EOS], [10, 11, 12])], PAD, BOS, EOS)
    tgt_in, tgt_out = batch.tgt_in.tolist()[0], batch.tgt_out.tolist()[0]
    assert tgt_in[1:] == tgt_out[:-1]  # the decoder predicts, at t, what it reads at t + 1
    assert tgt_in[0] == BOS and tgt_out[-1] == EOS


def test_padding_mask_comes_from_lengths_not_from_the_pad_value():
    # A target whose real token has the pad's id still counts as a real position.
    batch = make_batch([([4], [PAD, 7])], PAD, BOS, EOS)
    assert batch.tgt_key_padding_mask.tolist() == [[False, False, False]]
    assert batch.n_tokens == 3


def test_empty_target_gives_bos_in_and_eos_out():
    batch = make_batch([([4, EOS], [])], PAD, BOS, EOS)
    assert batch.tgt_in.tolist() == [[BOS]] and batch.tgt_out.tolist() == [[EOS]]


def test_causal_mask_forbids_exactly_the_future():
    mask = causal_mask(4).numpy()
    for i in range(4):
        for j in range(4):
            assert mask[i, j] == (j > i)
    assert causal_mask(0).shape == (0, 0)
    with pytest.raises(ValueError, match="size"):
        causal_mask(-1)


def test_pad_sequences_and_its_errors():
    out = pad_sequences([[1, 2], [3]], pad_id=9, length=4)
    assert out.tolist() == [[1, 2, 9, 9], [3, 9, 9, 9]] and out.dtype == np.int64
    with pytest.raises(ValueError, match="length=1"):
        pad_sequences([[1, 2]], pad_id=0, length=1)


def test_make_batch_rejects_an_empty_list():
    with pytest.raises(ValueError, match="pairs is empty"):
        make_batch([], PAD, BOS, EOS)


def test_buckets_cover_every_example_once_with_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=500).tolist()
    batches = bucket_indices(lengths, batch_size=32, seed=1)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(500))
    assert all(1 <= len(b) <= 32 for b in batches)
    # Sorted-then-cut buckets: the spread of lengths inside a batch is small.
    spreads = [max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches]
    assert np.mean(spreads) <= 2


def test_buckets_are_reproducible_per_seed_and_epoch_and_differ_across_epochs():
    lengths = [5] * 64 + [7] * 64
    first = bucket_indices(lengths, 16, seed=3, epoch=0)
    assert first == bucket_indices(lengths, 16, seed=3, epoch=0)
    assert first != bucket_indices(lengths, 16, seed=3, epoch=1)
    assert first != bucket_indices(lengths, 16, seed=4, epoch=0)


def test_max_tokens_bounds_the_padded_size_of_a_batch():
    lengths = list(range(1, 41))
    batches = bucket_indices(lengths, batch_size=100, max_tokens=60, shuffle=False)
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 60 or len(b) == 1


def test_bucket_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match="batch_size"):
        bucket_indices([1, 2], batch_size=0)
    with pytest.raises(ValueError, match="max_tokens"):
        bucket_indices([1, 2], batch_size=2, max_tokens=0)


def test_iterate_batches_yields_every_pair_once_and_counts_batches():
    pairs = [([4] * (i % 7 + 1) + [EOS], [5] * (i % 5)) for i in range(50)]
    batches = list(iterate_batches(pairs, 8, PAD, BOS, EOS, seed=0))
    assert len(batches) == count_batches(pairs, 8)
    assert sum(b.size for b in batches) == 50
    assert sum(b.n_tokens for b in batches) == sum(len(t) + 1 for _, t in pairs)
    for b in batches:  # masks agree with the padded tensors
        assert (b.src_key_padding_mask.numpy() == (b.src.numpy() == PAD)).all()
        assert (b.tgt_key_padding_mask.numpy() == (b.tgt_out.numpy() == PAD)).all()
