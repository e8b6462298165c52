"""minitorch.models.bert: the word vocabulary, BERT's masked-token selection (exact counts,
labels, never [PAD]/[CLS], the 80/10/10 split over many draws), the model (PyTorch's state_dict
names, tied output matrix, padding that cannot reach [CLS], gradchecks in float64) and its
bad-input errors. The example's two phases are smoke-tested in test_bert_example.py and the
model is compared with the same one in PyTorch in test_bert_parity_torch.py.
"""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck
from minitorch.models.bert import (BERT, IGNORE_INDEX, WordVocabulary, mask_tokens,
                                   masked_lm_loss, pad_batch)

SENTENCES = ["I eat the bread", "do you eat bread?", "the boys are not reading a book",
             "will she drink the cold water tomorrow?", "we bought two red cars yesterday"]


@pytest.fixture
def vocab():
    return WordVocabulary.from_sentences(SENTENCES)


def tiny_model(vocab, dtype=mt.float64, seed=0, **options):
    mt.manual_seed(seed)
    options = {"d_model": 8, "nhead": 2, "num_layers": 2, "dim_feedforward": 12,
               "dropout": 0.0, "max_positions": 12, **options}
    return BERT(len(vocab), 3, pad_id=vocab.pad_id, **options).to(dtype)


# ----------------------------------------------------------------------------- vocabulary


def test_vocabulary_puts_cls_first_and_splits_question_marks(vocab):
    assert vocab.tokens[:3] == ["[PAD]", "[CLS]", "[MASK]"]
    assert (vocab.pad_id, vocab.cls_id, vocab.mask_id) == (0, 1, 2)
    ids = vocab.encode("do you eat bread?")
    assert ids[0] == vocab.cls_id
    assert vocab.decode(ids) == "[CLS] do you eat bread ?"
    assert WordVocabulary.tokenize("¿come pan?") == ["¿", "come", "pan", "?"]


def test_vocabulary_refuses_unknown_words_and_special_tokens(vocab):
    with pytest.raises(ValueError, match="unknown token 'pizza'"):
        vocab.encode("I eat the pizza")
    with pytest.raises(ValueError, match=r"unknown token '\[MASK\]'"):
        vocab.encode("I eat [MASK]")  # a special token is not text a sentence can hold
    with pytest.raises(ValueError, match="special token"):
        WordVocabulary(["bread", "[CLS]"])


def test_pad_batch_pads_right_and_marks_padding():
    ids, padding = pad_batch([[1, 5, 6], [1, 7]], pad_id=0)
    assert ids.numpy().tolist() == [[1, 5, 6], [1, 7, 0]]
    assert padding.numpy().tolist() == [[False, False, False], [False, False, True]]
    with pytest.raises(ValueError, match="no sequences"):
        pad_batch([], pad_id=0)


# ----------------------------------------------------------------------------- masking


def random_batch(rng, rows, vocab_size, cls_id=1, pad_id=0, first_word=3, max_words=20):
    """[CLS] + 0..max_words random words + padding, as pad_batch lays a batch out."""
    lengths = rng.integers(0, max_words + 1, size=rows)
    return pad_batch([[cls_id] + rng.integers(first_word, vocab_size, size=k).tolist()
                      for k in lengths], pad_id)[0].numpy()


def mask(ids, rng, vocab_size=40, **options):
    inputs, labels = mask_tokens(ids, mask_id=2, vocab_size=vocab_size, special_ids=(0, 1, 2),
                                 rng=rng, **options)
    return inputs.numpy(), labels.numpy()


def test_masking_selects_the_stated_count_per_row_and_labels_only_those():
    ids = random_batch(np.random.default_rng(0), 300, 40)
    inputs, labels = mask(ids, 1)
    selected = labels != IGNORE_INDEX
    for row in range(len(ids)):
        ordinary = int((ids[row] > 2).sum())
        expected = 0 if ordinary == 0 else max(1, math.floor(0.15 * ordinary + 0.5))
        assert selected[row].sum() == expected, (row, ordinary)
    np.testing.assert_array_equal(labels[selected], ids[selected])  # the original tokens
    assert (labels[~selected] == IGNORE_INDEX).all()
    np.testing.assert_array_equal(inputs[~selected], ids[~selected])  # nothing else changes
    assert not selected[ids == 0].any() and not selected[ids == 1].any()  # never [PAD]/[CLS]
    assert not selected[:, 0].any()


def test_masking_is_reproducible_by_seed():
    ids = random_batch(np.random.default_rng(0), 50, 40)
    first, again, other = mask(ids, 7), mask(ids, 7), mask(ids, 8)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[1], other[1])
    generator = np.random.default_rng(3)  # a Generator goes on drawing: the next call differs
    assert not np.array_equal(mask(ids, generator)[1], mask(ids, generator)[1])


def test_masking_splits_80_10_10_over_many_draws():
    vocab_size = 200  # a random word equals the original with probability 0.1 / 197
    ids = random_batch(np.random.default_rng(1), 4000, vocab_size, max_words=30)
    inputs, labels = mask(ids, 2, vocab_size=vocab_size)
    selected = labels != IGNORE_INDEX
    chosen, original = inputs[selected], ids[selected]
    n = chosen.size
    assert n > 8000
    masked = np.mean(chosen == 2)
    kept = np.mean(chosen == original)
    replaced = np.mean((chosen != 2) & (chosen != original))
    # 4 standard deviations of a proportion over n draws: ~0.013 for 0.8, ~0.01 for 0.1
    assert abs(masked - 0.8) < 4 * math.sqrt(0.16 / n)
    assert abs(kept - 0.1) < 4 * math.sqrt(0.09 / n) + 0.001
    assert abs(replaced - 0.1) < 4 * math.sqrt(0.09 / n)
    replacements = chosen[(chosen != 2) & (chosen != original)]
    assert replacements.min() >= 3 and replacements.max() < vocab_size  # words, no specials
    assert len(np.unique(replacements)) > 150  # drawn across the whole vocabulary
    assert 0.15 <= selected.sum() / (ids > 2).sum() < 0.2  # 15%, rounded up to 1 per row


def test_masking_leaves_rows_without_words_alone_and_checks_its_arguments():
    ids = np.array([[1, 0, 0], [1, 5, 0]])
    inputs, labels = mask(ids, 0)
    assert (labels[0] == IGNORE_INDEX).all() and (inputs[0] == ids[0]).all()
    assert (labels[1] != IGNORE_INDEX).sum() == 1  # 15% of one word rounds up to one
    with pytest.raises(ValueError, match="mask_prob"):
        mask(ids, 0, mask_prob=1.5)
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        mask(np.array([1, 5, 6]), 0)
    with pytest.raises(IndexError, match="outside"):
        mask(np.array([[1, 40]]), 0)
    with pytest.raises(ValueError, match="mask_id"):
        mask_tokens(ids, mask_id=2, vocab_size=40, special_ids=(0, 1), rng=0)


# ----------------------------------------------------------------------------- model


def batch(vocab, sentences=SENTENCES):
    return pad_batch([vocab.encode(s) for s in sentences], vocab.pad_id)


def test_shapes_and_pytorch_state_dict_names(vocab):
    model = tiny_model(vocab)
    ids, padding = batch(vocab)
    n, length = ids.shape
    assert tuple(model(ids, padding).shape) == (n, length, 8)
    assert tuple(model.masked_lm_logits(ids, padding).shape) == (n, length, len(vocab))
    assert tuple(model.classify(ids, padding).shape) == (n, 3)
    keys = list(model.state_dict())
    for key in ("token_embedding.weight", "position_embedding.weight",
                "encoder.layers.1.self_attn.in_proj_weight",
                "encoder.layers.1.self_attn.out_proj.bias", "encoder.layers.0.linear1.weight",
                "encoder.layers.0.norm2.bias", "encoder.norm.weight", "mlm_head.bias",
                "classifier.out_proj.weight"):
        assert key in keys
    assert all(layer.norm_first for layer in model.encoder.layers)


def test_output_matrix_is_the_token_embedding(vocab):
    model = tiny_model(vocab)
    ids, padding = batch(vocab)
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes.count((len(vocab), 8)) == 1  # no second vocabulary-sized matrix
    hidden = model(ids, padding)
    head = model.mlm_head
    expected = (head.norm(mt.nn.functional.gelu(head.dense(hidden)))
                @ model.token_embedding.weight.T + head.bias)
    np.testing.assert_allclose(model.masked_lm_logits(ids, padding).detach().numpy(),
                               expected.detach().numpy(), atol=1e-12)
    # a word absent from the input still gets a gradient, through the output matrix only
    absent = vocab.ids["cars"]
    ids_without = pad_batch([vocab.encode("I eat the bread")], vocab.pad_id)[0]
    labels = mt.tensor([[IGNORE_INDEX, IGNORE_INDEX, absent, IGNORE_INDEX, IGNORE_INDEX]])
    masked_lm_loss(model.masked_lm_logits(ids_without), labels).backward()
    assert np.abs(model.token_embedding.weight.grad.numpy()[absent]).sum() > 0


def test_cls_state_ignores_what_padding_holds(vocab):
    model = tiny_model(vocab)
    model.eval()
    ids, padding = batch(vocab)
    garbage = ids.numpy().copy()
    pad = padding.numpy()
    garbage[pad] = np.random.default_rng(0).integers(3, len(vocab), size=int(pad.sum()))
    cls = model(ids, padding)[:, 0].detach().numpy()
    cls_garbage = model(mt.tensor(garbage), padding)[:, 0].detach().numpy()
    np.testing.assert_allclose(cls_garbage, cls, atol=1e-12)
    np.testing.assert_allclose(model.classify(mt.tensor(garbage), padding).detach().numpy(),
                               model.classify(ids, padding).detach().numpy(), atol=1e-12)
    for row, sentence in enumerate(SENTENCES):  # each row as if it were alone, unpadded
        alone = model(mt.tensor([vocab.encode(sentence)]))[0, 0].detach().numpy()
        np.testing.assert_allclose(cls[row], alone, atol=1e-12)
    assert pad.any() and not np.allclose(cls, cls[0])  # the check had padding to ignore
    # without a mask, the padding is where pad_id is
    np.testing.assert_array_equal(model(ids).detach().numpy(),
                                  model(ids, padding).detach().numpy())


def test_gradients_of_both_heads_pass_gradcheck(vocab):
    model = tiny_model(vocab, d_model=4, dim_feedforward=6, num_layers=1)
    with mt.no_grad():  # LayerNorm's ones/zeros and zero biases would hide errors
        rng = np.random.default_rng(0)
        for p in model.parameters():
            p._data[...] = rng.standard_normal(p.shape) * 0.5
    ids, padding = batch(vocab, SENTENCES[:2])
    labels = mask_tokens(ids, mask_id=vocab.mask_id, vocab_size=len(vocab),
                         special_ids=vocab.special_ids, rng=0)[1]
    params = tuple(model.parameters())
    assert gradcheck(lambda *_: model.classify(ids, padding), params, fast_mode=True)
    assert gradcheck(lambda *_: masked_lm_loss(model.masked_lm_logits(ids, padding), labels),
                     params, fast_mode=True)


def test_bad_input_raises_clear_errors(vocab):
    model = tiny_model(vocab, max_positions=6)
    with pytest.raises(ValueError, match="longer than max_positions 6"):
        model(mt.tensor([vocab.encode("the boys are not reading a book")]))
    with pytest.raises(IndexError, match=f"token id {len(vocab)}, outside"):
        model(mt.tensor([[1, len(vocab)]]))
    with pytest.raises(IndexError, match="token id -1"):
        model.classify(mt.tensor([[1, -1]]))
    with pytest.raises(ValueError, match="integer token ids"):
        model(mt.tensor([[1.0, 4.0]]))
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        model(mt.tensor([1, 4]))
    with pytest.raises(ValueError, match="src_key_padding_mask"):
        model(mt.tensor([[1, 4]]), mt.tensor([[False]]))
    with pytest.raises(ValueError, match="nhead"):
        BERT(10, d_model=6, nhead=4)
    with pytest.raises(ValueError, match="vocab_size"):
        BERT(0)
