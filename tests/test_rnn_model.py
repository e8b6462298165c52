"""The recurrent encoder-decoder with attention (Seq2SeqRNN) and its decoding: gradients of a
decoder step, attention weights, padding, the decoding protocol, scheduled sampling, bad input."""
import numpy as np
import pytest

import minitorch
from minitorch.autograd import gradcheck
from minitorch.text.batching import make_batch
from minitorch.text.decoding import beam_search, greedy_decode, translate
from minitorch.text.rnn_decoding import RNNDecoderCache, decode_with_attention
from minitorch.text.rnn_model import Seq2SeqRNN

PAD, BOS, EOS = 0, 2, 3
SRC_VOCAB, TGT_VOCAB = 13, 11
VARIANTS = [("gru", "additive"), ("gru", "dot"), ("gru", "none"), ("lstm", "additive")]


def tiny_model(cell="gru", attention="additive", seed=0, dtype=None, hidden_size=5,
               **options):
    minitorch.manual_seed(seed)
    model = Seq2SeqRNN(SRC_VOCAB, TGT_VOCAB, embed_size=6, hidden_size=hidden_size, cell=cell,
                       attention=attention, attention_size=4, max_len=12, **options)
    with minitorch.no_grad():  # sharper logits than the default init, so argmax ties cannot happen
        model.output.weight.mul_(4.0)
    if dtype is not None:
        model.to(dtype)
    return model.eval()


def padded_batch():
    # Different lengths, so the source padding mask matters.
    return make_batch([([5, 6, 7, 8, EOS], [4, 5, 6]), ([9, EOS], [7]), ([4, 12, EOS], [8, 9])],
                      PAD, BOS, EOS)


def as_float64(model, batch):
    with minitorch.no_grad():
        return model.encode(batch.src, batch.src_key_padding_mask).double()


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("cell, attention", VARIANTS)
def test_decoder_step_gradcheck_float64(cell, attention):
    model = tiny_model(cell, attention, dtype=minitorch.float64, hidden_size=3)
    batch = make_batch([([5, 6, 7, EOS], [4]), ([9, EOS], [4])], PAD, BOS, EOS)  # one padded
    mask, tokens = batch.src_key_padding_mask, minitorch.tensor([4, 7])
    memory = as_float64(model, batch).requires_grad_()
    start = model.start_decoding(memory.detach(), mask)
    hidden = (start.state[0] if cell == "lstm" else start.state).detach().requires_grad_()
    cell_state = (start.state[1].detach().requires_grad_() if cell == "lstm" else None)

    def step(memory, hidden, *cell_state):
        fixed = model.start_decoding(memory, mask).fixed_context
        projected = None if model.attention is None else model.attention.project_keys(memory)
        state = (hidden, cell_state[0]) if cell_state else hidden
        cache = RNNDecoderCache(state, memory, mask, projected_keys=projected,
                                fixed_context=fixed)
        logits, _ = model.decoder_step(tokens, cache)
        new = cache.state if isinstance(cache.state, tuple) else (cache.state,)
        return (logits,) + new

    inputs = (memory, hidden) + ((cell_state,) if cell_state is not None else ())
    assert gradcheck(step, inputs, eps=1e-6, atol=1e-6)


def test_the_whole_model_trains_gradients_reach_every_parameter():
    model = tiny_model("lstm", "additive", dtype=minitorch.float64).train()
    batch = padded_batch()
    logits = model(batch.src, batch.tgt_in, batch.src_key_padding_mask)
    logits.sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, name
        if name != "tgt_embed.weight" and name != "src_embed.weight":
            assert np.abs(parameter.grad.numpy()).sum() > 0, name


# ----------------------------------------------------------------------------- attention


@pytest.mark.parametrize("cell, attention", [v for v in VARIANTS if v[1] != "none"])
def test_attention_weights_sum_to_one_and_are_zero_on_padding(cell, attention):
    model, batch = tiny_model(cell, attention), padded_batch()
    logits, weights = model(batch.src, batch.tgt_in, batch.src_key_padding_mask,
                            need_weights=True)
    weights, padding = weights.detach().numpy(), batch.src_key_padding_mask.numpy()
    assert weights.shape == (3, batch.tgt_in.shape[1], batch.src.shape[1])
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-6)
    assert (weights[np.broadcast_to(padding[:, None, :], weights.shape)] == 0).all()
    assert (weights[np.broadcast_to(~padding[:, None, :], weights.shape)] > 0).all()
    # decoding records the same weights, step by step
    tokens, recorded = decode_with_attention(model, batch.src, batch.src_key_padding_mask,
                                             max_len=6, bos_id=BOS, eos_id=EOS, pad_id=PAD)
    lengths = (~padding).sum(axis=1)
    for row, rows_weights, n in zip(tokens, recorded, lengths):
        assert rows_weights.shape == (min(len(row) + 1, 6), n)
        np.testing.assert_allclose(rows_weights.sum(axis=-1), 1.0, atol=1e-6)


def model_that_stops_some_rows(batch, max_len):
    """A tiny model whose greedy output ends (<eos>) before ``max_len`` on some rows of
    ``batch`` and not on others: <eos>'s output bias raised until that happens."""
    for seed in range(4):
        for raise_eos in np.linspace(0.5, 3.0, 11):
            model = tiny_model(seed=seed)
            with minitorch.no_grad():
                model.output.bias[EOS] += float(raise_eos)
            lengths = [len(row) for row in greedy_decode(model, batch.src,
                                                         batch.src_key_padding_mask,
                                                         max_len=max_len)]
            if max_len in lengths and min(lengths) < max_len:
                return model
    raise AssertionError("no tiny model stops some rows early")


def test_greedy_decode_records_the_attention_of_each_step():
    batch = padded_batch()
    model = model_that_stops_some_rows(batch, 6)
    tokens, weights = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=6,
                                    record_attention=True)
    _, forced = decode_with_attention(model, batch.src, batch.src_key_padding_mask, max_len=6)
    assert weights.shape[:2] == (3, 1)  # (N, one "head", steps, S), the Transformer's layout
    for n, row in enumerate(tokens):
        steps = min(len(row) + 1, 6)  # the step that chose <eos>, unless max_len came first
        assert forced[n].shape[0] == steps
        np.testing.assert_allclose(weights[n, 0, :steps, :forced[n].shape[1]], forced[n],
                                   atol=1e-6)


def test_without_attention_the_decoder_reads_only_the_last_encoder_states():
    batch = padded_batch()
    mask = batch.src_key_padding_mask
    for attention, changes in (("none", False), ("additive", True)):
        model = tiny_model("gru", attention, dtype=minitorch.float64)
        memory = as_float64(model, batch)
        # h_T: the forward half at the last real token, the backward half at the first
        other = memory.numpy().copy()
        other[0, 1:4] += 1.0  # the first sentence's middle positions
        with minitorch.no_grad():
            before = model.decode(batch.tgt_in, memory, mask).numpy()
            after = model.decode(batch.tgt_in, minitorch.tensor(other), mask).numpy()
        assert (np.abs(before - after).max() > 1e-3) == changes, attention


# ----------------------------------------------------------------------------- padding


@pytest.mark.parametrize("cell, attention", VARIANTS)
def test_a_sentence_alone_and_in_a_padded_batch_give_the_same_result(cell, attention):
    model = tiny_model(cell, attention, dtype=minitorch.float64)
    pairs = [([5, 6, EOS], [4, 5]), ([9, 10, 11, 12, 7, 8, EOS], [7, 8, 9, 10, 4])]
    batch = make_batch(pairs, PAD, BOS, EOS)
    assert batch.src_key_padding_mask.numpy()[0].any()  # the first row is padded
    with minitorch.no_grad():
        logits, weights = model(batch.src, batch.tgt_in, batch.src_key_padding_mask,
                                need_weights=True)
        memory = model.encode(batch.src, batch.src_key_padding_mask).numpy()
        for row, pair in enumerate(pairs):
            alone = make_batch([pair], PAD, BOS, EOS)
            logits_alone, weights_alone = model(alone.src, alone.tgt_in, need_weights=True)
            s, t = alone.src.shape[1], alone.tgt_in.shape[1]
            np.testing.assert_allclose(logits.numpy()[row, :t], logits_alone.numpy()[0],
                                       rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(memory[row, :s], model.encode(alone.src).numpy()[0],
                                       rtol=1e-10, atol=1e-12)
            assert (memory[row, s:] == 0).all()  # the encoder outputs nothing on padding
            if attention != "none":
                np.testing.assert_allclose(weights.numpy()[row, :t, :s],
                                           weights_alone.numpy()[0], rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("cell, attention", VARIANTS)
def test_beam_size_one_equals_greedy(cell, attention):
    model, batch = tiny_model(cell, attention, seed=1), padded_batch()
    greedy = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=8)
    beam = beam_search(model, batch.src, batch.src_key_padding_mask, beam_size=1, max_len=8)
    assert beam == greedy
    if attention != "none":
        tokens, weights = decode_with_attention(model, batch.src, batch.src_key_padding_mask,
                                                method="beam", beam_size=1, max_len=8)
        greedy_tokens, greedy_weights = decode_with_attention(
            model, batch.src, batch.src_key_padding_mask, max_len=8)
        assert tokens == greedy_tokens == greedy
        for a, b in zip(weights, greedy_weights):
            np.testing.assert_array_equal(a, b)


def test_step_by_step_decoding_matches_the_teacher_forced_pass():
    model, batch = tiny_model("lstm", "dot"), padded_batch()
    cached, cached_logits = greedy_decode(model, batch.src, batch.src_key_padding_mask,
                                          max_len=7, return_logits=True)
    full, full_logits = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=7,
                                      use_cache=False, return_logits=True)
    assert cached == full
    np.testing.assert_allclose(cached_logits, full_logits, atol=1e-5)


def test_beam_search_finds_at_least_the_greedy_score_and_stops_at_eos():
    model, batch = tiny_model(seed=2), padded_batch()
    for beam_size in (2, 4):
        tokens = beam_search(model, batch.src, batch.src_key_padding_mask,
                             beam_size=beam_size, max_len=8, length_penalty=0.0)
        greedy = greedy_decode(model, batch.src, batch.src_key_padding_mask, max_len=8)
        for beam_row, greedy_row, n in zip(tokens, greedy, range(3)):
            assert EOS not in beam_row
            assert _log_prob(model, batch, n, beam_row) >= _log_prob(model, batch, n,
                                                                      greedy_row) - 1e-5


def _log_prob(model, batch, row, tokens):
    """log p(tokens <eos> | source row), by one teacher-forced pass."""
    src = batch.src[row:row + 1]
    mask = batch.src_key_padding_mask[row:row + 1]
    keep = int((~mask.numpy()).sum())
    src, mask = src[:, :keep], None
    with minitorch.no_grad():
        logits = model(src, minitorch.tensor([[BOS] + tokens]), mask).numpy()[0]
    log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
                                keepdims=True)) - logits.max(-1, keepdims=True)
    targets = tokens + [EOS]
    return float(sum(log_probs[t, y] for t, y in enumerate(targets[:len(log_probs)])))


def test_translate_runs_on_the_rnn_model():
    from minitorch.text import BPETokenizer
    sentences = ["we eat bread", "they drink water", "we drink milk"]
    tokenizer = BPETokenizer.train(sentences, 40)
    minitorch.manual_seed(0)
    model = Seq2SeqRNN(tokenizer.vocab_size, tokenizer.vocab_size, 8, 8, max_len=16).eval()
    for method in ("greedy", "beam", "sample"):
        out = translate(model, sentences, tokenizer, tokenizer, method=method, seed=0)
        assert len(out) == 3 and all(isinstance(s, str) for s in out)


# ----------------------------------------------------------------------------- scheduled sampling


def test_teacher_forcing_ratio_zero_feeds_the_models_own_predictions():
    model, batch = tiny_model(seed=3), padded_batch()
    tokens, greedy_logits = greedy_decode(model, batch.src, batch.src_key_padding_mask,
                                          max_len=6, return_logits=True)
    # Whatever tgt_in says after <bos>, ratio 0 reads the model's own argmax, as greedy does.
    noise = minitorch.tensor(np.full((3, 6), 10, dtype=np.int64))
    tgt_in = minitorch.cat([minitorch.full((3, 1), BOS, dtype=minitorch.int64), noise[:, 1:]],
                           dim=1)
    model.train()  # scheduled sampling acts in training only; dropout is 0 here
    with minitorch.no_grad():
        logits = model(batch.src, tgt_in, batch.src_key_padding_mask,
                       teacher_forcing_ratio=0.0)
        forced = model(batch.src, tgt_in, batch.src_key_padding_mask, teacher_forcing_ratio=1.0)
        model.eval()  # in eval mode the reference is always read
        evaluated = model(batch.src, tgt_in, batch.src_key_padding_mask,
                          teacher_forcing_ratio=0.0)
    for n, row in enumerate(tokens):
        steps = len(row) + 1 if len(row) < 6 else 6  # up to and including <eos>
        np.testing.assert_allclose(logits.numpy()[n, :steps],
                                   greedy_logits[n, :steps], atol=1e-5)
    assert not np.allclose(forced.numpy(), logits.numpy())
    np.testing.assert_array_equal(evaluated.numpy(), forced.numpy())


# ----------------------------------------------------------------------------- bad input


def test_bad_input_raises_clear_errors():
    model, batch = tiny_model(), padded_batch()
    src, mask = batch.src, batch.src_key_padding_mask
    with pytest.raises(ValueError, match=r"src must be \(N, L\) token ids"):
        model(src[0], batch.tgt_in)
    with pytest.raises(IndexError, match="token id 13, outside the vocabulary"):
        model(minitorch.tensor([[13, 3]]), batch.tgt_in[:1])
    with pytest.raises(ValueError, match="src_key_padding_mask must be bool of shape"):
        model(src, batch.tgt_in, mask[:, :2])
    with pytest.raises(ValueError, match="right padding"):
        model(src, batch.tgt_in, minitorch.tensor(mask.numpy()[:, ::-1].copy()))
    with pytest.raises(ValueError, match="all padding"):
        model(src, batch.tgt_in, minitorch.ones(*src.shape, dtype=minitorch.bool))
    with pytest.raises(ValueError, match=r"memory must be \(N, S, 10\)"):  # wrong input size
        model.decode(batch.tgt_in, minitorch.zeros(3, 5, 7), mask)
    with pytest.raises(ValueError, match="tgt_in has 2 rows, memory 3"):
        model.decode(batch.tgt_in[:2], model.encode(src, mask), mask)
    cache = model.start_decoding(model.encode(src, mask), mask)
    with pytest.raises(ValueError, match=r"tokens must be \(N,\) = \(3,\)"):
        model.decoder_step(minitorch.tensor([4, 5]), cache)
    cache.state = minitorch.zeros(3, 7)  # wrong hidden-state shape
    with pytest.raises(ValueError, match=r"decoder state must be \(N, hidden_size\) = \(3, 5\)"):
        model.decoder_step(minitorch.tensor([4, 5, 6]), cache)
    cache.state = (minitorch.zeros(3, 5), minitorch.zeros(3, 5))
    with pytest.raises(ValueError, match="GRU decoder's state is one tensor"):
        model.decode_step(minitorch.tensor([4, 5, 6]), cache)
    with pytest.raises(ValueError, match="teacher_forcing_ratio must be in"):
        model(src, batch.tgt_in, mask, teacher_forcing_ratio=1.5)
    for options, message in (({"cell": "rnn"}, "cell must be"),
                             ({"attention": "bahdanau"}, "attention must be one of"),
                             ({"hidden_size": 0}, "hidden_size must be a positive int"),
                             ({"dropout": 1.0}, "dropout must be in")):
        with pytest.raises(ValueError, match=message):
            Seq2SeqRNN(SRC_VOCAB, TGT_VOCAB, **options)
    with pytest.raises(ValueError, match="has no attention"):
        decode_with_attention(tiny_model("gru", "none"), src, mask)
    with pytest.raises(ValueError, match="method must be 'greedy' or 'beam'"):
        decode_with_attention(model, src, mask, method="sample")


def test_decoding_stops_at_max_len():
    model, batch = tiny_model(), padded_batch()
    cache = model.start_decoding(model.encode(batch.src, batch.src_key_padding_mask),
                                 batch.src_key_padding_mask)
    cache.length = model.max_len
    with pytest.raises(ValueError, match="more than max_len 12"):
        model.decode_step(minitorch.tensor([4, 5, 6]), cache)
