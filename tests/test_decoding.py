"""KV-cached decoding, greedy / sampling / beam search, and the Seq2SeqTransformer's protocol."""
import math

import numpy as np
import pytest

import minitorch
from minitorch.autograd import gradcheck
from minitorch.text import BPETokenizer
from minitorch.text.batching import make_batch
from minitorch.text.decoding import (_filter_logits, _top_k, beam_search, greedy_decode,
                                     sample_decode, translate)
from minitorch.text.model import Seq2SeqTransformer

PAD, BOS, EOS = 0, 2, 3


def tiny_model(norm_first=False, seed=0, dropout=0.1, max_len=12):
    minitorch.manual_seed(seed)
    model = Seq2SeqTransformer(13, 11, d_model=16, nhead=2, num_encoder_layers=2,
                               num_decoder_layers=2, dim_feedforward=32, dropout=dropout,
                               max_len=max_len, norm_first=norm_first)
    with minitorch.no_grad():  # sharper logits than Xavier's, so argmax ties cannot happen
        model.generator.weight.mul_(4.0)
    return model.eval()


def source_batch():
    # Different lengths, so the source padding mask matters.
    return make_batch([([5, 6, 7, 8, EOS], [4]), ([9, EOS], [4]), ([4, 12, EOS], [4])],
                      PAD, BOS, EOS)


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_and_uncached_greedy_give_the_same_tokens_and_logits(norm_first):
    model, batch = tiny_model(norm_first), source_batch()
    cached, cached_logits = greedy_decode(model, batch.src, batch.src_key_padding_mask,
                                          max_len=10, return_logits=True)
    full, full_logits = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=10,
                                      use_cache=False, return_logits=True)
    assert cached == full
    assert cached_logits.shape == full_logits.shape
    np.testing.assert_allclose(cached_logits, full_logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_each_cached_step_matches_the_full_decoder_on_a_forced_prefix(norm_first):
    model, batch = tiny_model(norm_first, seed=1), source_batch()
    prefix = minitorch.tensor([[BOS, 4, 7, 9, 10, 5], [BOS, 6, 6, 6, 8, 4], [BOS, 3, 0, 0, 5, 9]])
    with minitorch.no_grad():
        memory = model.encode(batch.src, batch.src_key_padding_mask)
        full = model.decode(prefix, memory, batch.src_key_padding_mask).numpy()
        cache = model.start_decoding(memory, batch.src_key_padding_mask)
        for t in range(prefix.shape[1]):
            step = model.decode_step(prefix[:, t], cache).numpy()
            np.testing.assert_allclose(step, full[:, t], atol=1e-5, rtol=0)
    assert cache.length == prefix.shape[1]
    self_attn, cross_attn = cache.decoder.layers[0]
    assert self_attn.keys.shape == (3, 2, prefix.shape[1], 8)  # grew one per step
    assert cross_attn.keys.shape == (3, 2, 5, 8)  # memory K/V computed once
    assert cache.memory is None  # and the memory no longer kept


def test_cached_decoding_ignores_training_mode_dropout():
    model, batch = tiny_model(dropout=0.5), source_batch()
    expected = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=6)
    with minitorch.no_grad():
        memory = model.encode(batch.src, batch.src_key_padding_mask)
        cache = model.start_decoding(memory, batch.src_key_padding_mask)
        first = model.decode_step(minitorch.tensor([BOS] * 3), cache).numpy()
    model.train()
    assert greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=6) == expected
    with minitorch.no_grad():
        cache = model.start_decoding(memory, batch.src_key_padding_mask)
        np.testing.assert_array_equal(model.decode_step(minitorch.tensor([BOS] * 3),
                                                        cache).numpy(), first)
    assert model.training and model.transformer.decoder.layers[0].dropout1.training


def test_batched_decoding_equals_one_sentence_at_a_time():
    model, batch = tiny_model(seed=2), source_batch()
    together = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=8)
    for row, ids in enumerate(([5, 6, 7, 8, EOS], [9, EOS], [4, 12, EOS])):
        alone = greedy_decode(model, minitorch.tensor([ids]), None, max_len=8)
        assert alone[0] == together[row]


def test_cache_reorder_moves_hypotheses_between_rows():
    model, batch = tiny_model(seed=3), source_batch()
    with minitorch.no_grad():
        memory = model.encode(batch.src, batch.src_key_padding_mask)
        cache = model.start_decoding(memory, batch.src_key_padding_mask)
        first = model.decode_step(minitorch.tensor([BOS, BOS, BOS]), cache).numpy()
        cache.reorder([2, 2, 0])
        tokens = minitorch.tensor([5, 6, 5])
        moved = model.decode_step(tokens, cache).numpy()
        reference = model.start_decoding(memory, batch.src_key_padding_mask)
        model.decode_step(minitorch.tensor([BOS, BOS, BOS]), reference)
        again = model.decode_step(minitorch.tensor([5, 6, 5]), reference).numpy()
    assert first.shape == (3, 11)
    np.testing.assert_allclose(moved[0], again[2], atol=1e-6)  # row 0 now holds sentence 2
    np.testing.assert_allclose(moved[2], again[0], atol=1e-6)


def test_beam_size_one_is_greedy():
    model, batch = tiny_model(seed=4), source_batch()
    greedy = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=9)
    assert beam_search(model, batch.src, batch.src_key_padding_mask, beam_size=1,
                       max_len=9) == greedy
    assert beam_search(model, batch.src, batch.src_key_padding_mask, beam_size=1, max_len=9,
                       use_cache=False) == greedy


def test_wider_beams_decode_with_and_without_cache_alike():
    model, batch = tiny_model(seed=5), source_batch()
    args = (model, batch.src, batch.src_key_padding_mask)
    assert beam_search(*args, beam_size=3, max_len=7) == beam_search(*args, beam_size=3,
                                                                      max_len=7, use_cache=False)


def test_sampling_is_reproducible_with_a_seed_and_top_k_1_is_greedy():
    model, batch = tiny_model(seed=6), source_batch()
    args = (model, batch.src, batch.src_key_padding_mask)
    first = sample_decode(*args, max_len=8, seed=123)
    assert first == sample_decode(*args, max_len=8, seed=123)
    draws = {str(sample_decode(*args, max_len=8, seed=s)) for s in range(6)}
    assert len(draws) > 1  # the seed matters
    minitorch.manual_seed(7)
    global_a = sample_decode(*args, max_len=8)
    minitorch.manual_seed(7)
    assert sample_decode(*args, max_len=8) == global_a  # seed=None: manual_seed fixes it
    greedy = greedy_decode(*args, max_len=8)
    assert sample_decode(*args, max_len=8, top_k=1, seed=1) == greedy
    assert sample_decode(*args, max_len=8, top_p=1e-9, seed=2) == greedy
    assert sample_decode(*args, max_len=8, temperature=1e-4, seed=3) == greedy


def test_sampling_argument_errors_name_the_argument():
    model, batch = tiny_model(), source_batch()
    args = (model, batch.src, batch.src_key_padding_mask)
    with pytest.raises(ValueError, match="temperature"):
        sample_decode(*args, temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        sample_decode(*args, top_k=0)
    with pytest.raises(ValueError, match="top_p"):
        sample_decode(*args, top_p=1.5)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(*args, beam_size=0)


def test_top_k_is_the_stable_descending_sort_cut_to_k():
    rng = np.random.default_rng(0)
    for trial in range(200):  # small integers: many ties; -inf, inf and nan too
        n, width = rng.integers(1, 5), rng.integers(1, 30)
        scores = rng.integers(-3, 3, (n, width)).astype(float)
        for value, share in ((-np.inf, 0.3), (np.inf, 0.05 * (trial % 2)),
                             (np.nan, 0.05 * (trial % 3 == 0))):
            scores[rng.random((n, width)) < share] = value
        for k in range(1, width + 2):
            expected = np.argsort(-scores, axis=-1, kind="stable")[:, :k]
            np.testing.assert_array_equal(_top_k(scores, k), expected)


def test_filter_logits_keeps_the_top_k_and_the_top_p_nucleus():
    logits = np.log(np.array([[0.5, 0.2, 0.25, 0.05]]))
    kept = np.isfinite(_filter_logits(logits, 2, None))
    assert kept.tolist() == [[True, False, True, False]]
    kept = np.isfinite(_filter_logits(logits, None, 0.7))  # 0.5 + 0.25 reaches 0.7
    assert kept.tolist() == [[True, False, True, False]]
    kept = np.isfinite(_filter_logits(logits, None, 0.5))  # the top token alone reaches it
    assert kept.tolist() == [[True, False, False, False]]
    assert np.isfinite(_filter_logits(logits, None, 1.0)).all()


# ----------------------------------------------------------------------------- a table model

class BigramModel:
    """Follows the decoding protocol; next-token probabilities depend on the last token only."""

    max_len = 10

    def __init__(self, table):
        self.log_table = np.log(np.asarray(table, dtype=np.float64) + 1e-30)

    def encode(self, src, src_key_padding_mask=None):
        return minitorch.zeros(src.shape[0], 1, 1)

    def decode(self, tgt_in, memory, memory_key_padding_mask=None):
        return minitorch.tensor(self.log_table[tgt_in.numpy()])

    def start_decoding(self, memory, memory_key_padding_mask=None):
        class Cache:
            def reorder(self, index):
                pass
        return Cache()

    def decode_step(self, tokens, cache):
        return minitorch.tensor(self.log_table[tokens.numpy()])


A, B = 4, 5
TABLE = np.zeros((6, 6))
TABLE[BOS, [A, B]] = [0.55, 0.45]
TABLE[A, [EOS, A, B]] = [0.35, 0.33, 0.32]
TABLE[B, [EOS, A]] = [0.9, 0.1]
TABLE[[PAD, EOS], PAD] = 1.0
TABLE[1, EOS] = 1.0


def test_beam_search_finds_the_likelier_sentence_greedy_misses():
    model, src = BigramModel(TABLE), minitorch.tensor([[7], [7]])
    assert greedy_decode(model, src, max_len=5) == [[A], [A]]  # p = 0.55 · 0.35 = 0.19
    assert beam_search(model, src, beam_size=2, max_len=5, length_penalty=0.0) == [[B], [B]]
    assert beam_search(model, src, beam_size=1, max_len=5) == [[A], [A]]


def test_sampling_follows_the_model_distribution():
    model = BigramModel(TABLE)
    out = sample_decode(model, minitorch.zeros(4000, 1, dtype=minitorch.int64), max_len=1,
                        seed=0)
    share_a = np.mean([row[0] == A for row in out])
    assert abs(share_a - 0.55) < 0.03
    out = sample_decode(model, minitorch.zeros(200, 1, dtype=minitorch.int64), max_len=1,
                        seed=0, top_p=0.5)
    assert all(row == [A] for row in out)


# ----------------------------------------------------------------------------- bad input

def test_unknown_token_id_raises_index_error_naming_it():
    model = tiny_model()
    with pytest.raises(IndexError, match="13"):
        greedy_decode(model, minitorch.tensor([[4, 13, EOS]]), max_len=4)
    with pytest.raises(IndexError, match="-1"):
        model.encode(minitorch.tensor([[4, -1]]))


def test_too_long_inputs_raise_value_error_naming_both_lengths():
    model = tiny_model(max_len=6)
    with pytest.raises(ValueError, match=r"length 7.*max_len 6"):
        greedy_decode(model, minitorch.tensor([[4] * 7]))
    with pytest.raises(ValueError, match=r"max_len=9.*6"):
        greedy_decode(model, minitorch.tensor([[4, EOS]]), max_len=9)
    with pytest.raises(ValueError, match="src must be"):
        greedy_decode(model, minitorch.tensor([4, EOS]))
    memory = model.encode(minitorch.tensor([[4, EOS]]))
    cache = model.start_decoding(memory)
    for _ in range(6):
        model.decode_step(minitorch.tensor([4]), cache)
    with pytest.raises(ValueError, match="max_len 6"):
        model.decode_step(minitorch.tensor([4]), cache)


@pytest.fixture(scope="module")
def tokenizers():
    words = ["we are eating bread", "they eat the red apple", "I have two cars"] * 3
    tok = BPETokenizer.train(words, vocab_size=60)
    return tok, tok


def test_translate_handles_empty_and_too_long_sentences(tokenizers):
    src_tok, tgt_tok = tokenizers
    minitorch.manual_seed(0)
    model = Seq2SeqTransformer(src_tok.vocab_size, tgt_tok.vocab_size, d_model=16, nhead=2,
                               num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                               max_len=20).eval()
    # Documented: an empty sentence is the source [<eos>] and translates like any other.
    out = translate(model, ["", "we are eating bread", "zz§"], src_tok, tgt_tok, max_len=5)
    assert len(out) == 3 and all(isinstance(s, str) for s in out)
    singles = [translate(model, [s], src_tok, tgt_tok, max_len=5)[0]
               for s in ["", "we are eating bread", "zz§"]]
    assert singles == out  # batching (sorted, padded) does not change a translation
    for method in ("beam", "sample"):
        assert len(translate(model, ["we eat"], src_tok, tgt_tok, method=method, max_len=4,
                             seed=0)) == 1
    with pytest.raises(ValueError, match=r"tokens, longer than the model's max_len 20"):
        translate(model, [" ".join(["bread"] * 30)], src_tok, tgt_tok)
    with pytest.raises(ValueError, match="method"):
        translate(model, ["we"], src_tok, tgt_tok, method="best")


def test_recorded_cross_attention_is_a_distribution_over_real_source_tokens():
    model, batch = tiny_model(seed=8), source_batch()
    tokens, weights = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=5,
                                    record_attention=True)
    assert weights.shape == (3, 2, 5, 5)  # (N, heads, steps, S)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    padded = batch.src_key_padding_mask.numpy()
    assert np.all(weights[padded[:, None, None, :].repeat(2, 1).repeat(5, 2)] == 0)


# ----------------------------------------------------------------------------- the model


def test_forward_logits_shape_and_padding_rows_of_embeddings():
    model, batch = tiny_model(), make_batch([([5, 6, EOS], [7, 8]), ([5, EOS], [7])],
                                            PAD, BOS, EOS)
    logits = model(batch.src, batch.tgt_in, batch.src_key_padding_mask,
                   batch.tgt_key_padding_mask)
    assert logits.shape == (2, 3, 11)
    assert np.all(model.src_embed.weight.detach().numpy()[PAD] == 0)


def test_model_argument_errors():
    with pytest.raises(ValueError, match="divisible"):
        Seq2SeqTransformer(10, 10, d_model=10, nhead=3)
    with pytest.raises(ValueError, match="src_vocab"):
        Seq2SeqTransformer(0, 10)


def test_gradcheck_of_the_decoder_through_memory_float64():
    minitorch.manual_seed(0)
    model = Seq2SeqTransformer(7, 6, d_model=8, nhead=2, num_encoder_layers=1,
                               num_decoder_layers=1, dim_feedforward=8, dropout=0.0,
                               max_len=8).double()
    tgt = minitorch.tensor([[BOS, 4, 5], [BOS, 5, PAD]])
    tgt_pad = minitorch.tensor([[False, False, False], [False, False, True]])
    memory_pad = minitorch.tensor([[False, False], [False, True]])
    # A non-contiguous memory (a transposed view) exercises strided inputs too.
    memory = minitorch.randn(2, 8, 2, dtype=minitorch.float64).transpose(1, 2)
    memory.requires_grad_(True)
    assert not memory.is_contiguous()

    def decode(mem):
        return model.decode(tgt, mem, memory_pad, tgt_pad)

    assert gradcheck(decode, (memory,), eps=1e-6, atol=1e-5)


def test_gradcheck_of_the_whole_model_through_the_source_embeddings_float64():
    minitorch.manual_seed(1)
    model = Seq2SeqTransformer(7, 6, d_model=4, nhead=2, num_encoder_layers=1,
                               num_decoder_layers=1, dim_feedforward=4, dropout=0.0,
                               max_len=8).double()
    batch = make_batch([([4, 5, EOS], [4]), ([6, EOS], [5, 4])], PAD, BOS, EOS)
    # Differentiate through encoder and decoder: input = the source embedding table.
    weight = model.src_embed.weight.detach().clone().requires_grad_(True)

    def through_encoder(w):
        memory = model.transformer.encoder(
            model.positions(minitorch.ops.index_select(w, 0, batch.src.reshape(-1)).reshape(
                2, 3, 4) * math.sqrt(4)), src_key_padding_mask=batch.src_key_padding_mask)
        return model.decode(batch.tgt_in, memory, batch.src_key_padding_mask,
                            batch.tgt_key_padding_mask)

    assert gradcheck(through_encoder, (weight,), eps=1e-6, atol=1e-5)
