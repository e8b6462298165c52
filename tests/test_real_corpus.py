"""Smoke test of the real-corpus path: trans-de-en → BPE → length filter → training →
translation, and of the benchmark's PyTorch twin of the model.

Skipped where Debian's trans-de-en dictionary (/usr/share/trans/de-en) is not installed.
"""
import os
import pathlib
import sys

import numpy as np
import pytest

import minitorch
from minitorch import optim
from minitorch.text import BPETokenizer
from minitorch.text.batching import encode_pairs, iterate_batches
from minitorch.text.decoding import translate
from minitorch.text.model import Seq2SeqTransformer
from minitorch.text.trans_de_en import (DEFAULT_PATH, TRAINING_DEFAULTS, load_trans_de_en,
                                        split_pairs)
from minitorch.text.training import train_step

pytestmark = pytest.mark.skipif(not os.path.exists(DEFAULT_PATH),
                                reason=f"trans-de-en not installed: {DEFAULT_PATH} absent "
                                       f"(apt-get install trans-de-en)")

PAD, BOS, EOS = 0, 2, 3


@pytest.fixture(scope="module")
def small_slice():
    train, valid = split_pairs(load_trans_de_en(max_pairs=400), n_valid=100, seed=0)
    src_tok = BPETokenizer.train([s for s, _ in train], 300)
    tgt_tok = BPETokenizer.train([t for _, t in train], 300)
    return train, valid, src_tok, tgt_tok


def test_split_holds_out_sources_that_training_never_sees(small_slice):
    train, valid, _, _ = small_slice
    assert len(valid) == 100 and len(train) >= 250
    assert not {s for s, _ in train} & {s for s, _ in valid}
    assert split_pairs(load_trans_de_en(max_pairs=400), n_valid=100, seed=0) == (train, valid)
    with pytest.raises(ValueError, match="n_valid"):
        split_pairs(train, n_valid=-1)


def test_held_out_pairs_get_the_training_length_filter(small_slice):
    _, valid, src_tok, tgt_tok = small_slice
    max_len = 24  # short enough that some held-out sources do not fit
    too_long = [s for s, _ in valid if len(src_tok.encode(s, add_eos=True)) > max_len]
    assert too_long, "the slice should hold a source over max_len for this test to mean anything"
    ids, kept = encode_pairs(valid, src_tok, tgt_tok, max_len)
    assert len(ids) == len(kept) < len(valid)
    assert all(len(s) <= max_len and len(t) + 1 <= max_len for s, t in ids)
    model = Seq2SeqTransformer(src_tok.vocab_size, tgt_tok.vocab_size, d_model=16, nhead=2,
                               num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                               dropout=0.0, max_len=max_len)
    outputs = translate(model, [s for s, _ in kept], src_tok, tgt_tok, max_len=4)
    assert len(outputs) == len(kept)
    with pytest.raises(ValueError, match="max_len"):  # what the filter protects evaluation from
        translate(model, too_long[:1], src_tok, tgt_tok, max_len=4)


def test_training_on_a_slice_lowers_the_loss_and_translates_every_held_out_sentence(small_slice):
    train, valid, src_tok, tgt_tok = small_slice
    max_len = TRAINING_DEFAULTS["max_len"]
    train_ids, _ = encode_pairs(train, src_tok, tgt_tok, max_len)
    _, valid = encode_pairs(valid, src_tok, tgt_tok, max_len)
    minitorch.manual_seed(0)
    model = Seq2SeqTransformer(src_tok.vocab_size, tgt_tok.vocab_size, d_model=32, nhead=2,
                               num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64,
                               dropout=0.0, max_len=max_len)
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.TransformerLR(optimizer, 32, warmup_steps=10, factor=0.5)
    losses = []
    for epoch in range(4):
        for batch in iterate_batches(train_ids, 32, PAD, BOS, EOS, seed=0, epoch=epoch):
            losses.append(train_step(model, batch, optimizer, scheduler, pad_id=PAD))
    assert len(losses) >= 30
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0, losses
    outputs = translate(model, [s for s, _ in valid], src_tok, tgt_tok, max_len=8)
    assert len(outputs) == len(valid) and all(isinstance(o, str) for o in outputs)


def test_the_defaults_keep_every_short_enough_held_out_pair():
    cfg = TRAINING_DEFAULTS
    pairs = load_trans_de_en(max_words=cfg["max_words"])
    train, valid = split_pairs(pairs, cfg["n_valid"], seed=0)
    assert all(len(s.split()) <= cfg["max_words"] for s, _ in valid)
    src_tok = BPETokenizer.train([s for s, _ in train[:3000]], cfg["vocab_size"])
    tgt_tok = BPETokenizer.train([t for _, t in train[:3000]], cfg["vocab_size"])
    _, kept = encode_pairs(valid, src_tok, tgt_tok, cfg["max_len"])
    # max_len leaves room for the word limit even with a tokenizer trained on less text.
    assert kept == valid


def test_the_benchmark_trains_the_same_model_in_pytorch(small_slice):
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = pytest.importorskip("bench_real_corpus")
    train, valid, src_tok, tgt_tok = small_slice
    cfg = dict(TRAINING_DEFAULTS, d_model=32, heads=2, layers=1, ff=64, dropout=0.0)
    train_ids, _ = encode_pairs(train, src_tok, tgt_tok, cfg["max_len"])
    plan = bench.batch_plan(train_ids, cfg, 3, seed=0)
    mt_model = bench.build_minitorch(cfg, src_tok.vocab_size, tgt_tok.vocab_size)
    th_model = bench.torch_model_class(torch)(cfg, src_tok.vocab_size, tgt_tok.vocab_size)
    th_model.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                              for k, v in mt_model.state_dict().items()})
    assert bench.initial_logit_gap(torch, mt_model, th_model, plan[0]) < 1e-4
    mt_losses = bench.train_minitorch(mt_model, plan, cfg)
    th_losses = bench.train_torch(torch, th_model, plan, cfg)
    np.testing.assert_allclose(mt_losses, th_losses, rtol=1e-3)
    sources = sorted((s for s, _ in valid), key=len)[:3]  # untrained: outputs run to the limit
    assert (bench.translate_torch(torch, th_model, sources, src_tok, tgt_tok)
            == translate(mt_model, sources, src_tok, tgt_tok, batch_size=100))
