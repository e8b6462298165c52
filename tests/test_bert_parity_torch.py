"""minitorch.models.bert.BERT against the same model written with torch.nn: PyTorch's
state_dict loaded one-to-one, then hidden states, masked-LM logits, class logits and every
parameter's gradient compared in float64 on a padded batch, on every kernel backend. Dropout is
0 so both are deterministic. Skipped as a whole when PyTorch is not installed.
"""
import numpy as np
import pytest

import minitorch as mt
from minitorch.models.bert import BERT, WordVocabulary, mask_tokens, masked_lm_loss, pad_batch

torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")

D_MODEL, NHEAD, LAYERS, FF, CLASSES, MAX_POSITIONS = 8, 2, 2, 12, 3, 12
SENTENCES = ["I eat the bread", "do you eat bread?", "the boys are not reading a book",
             "will she drink the cold water tomorrow?"]


class TorchMaskedLMHead(torch.nn.Module):
    def __init__(self, d_model, vocab_size):
        super().__init__()
        self.dense = torch.nn.Linear(d_model, d_model)
        self.norm = torch.nn.LayerNorm(d_model)
        self.bias = torch.nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden, embedding_weight):
        hidden = self.norm(torch.nn.functional.gelu(self.dense(hidden)))
        return torch.nn.functional.linear(hidden, embedding_weight, self.bias)


class TorchClassificationHead(torch.nn.Module):
    def __init__(self, d_model, num_classes):
        super().__init__()
        self.dense = torch.nn.Linear(d_model, d_model)
        self.dropout = torch.nn.Dropout(0.0)
        self.out_proj = torch.nn.Linear(d_model, num_classes)

    def forward(self, cls_state):
        return self.out_proj(self.dropout(torch.tanh(self.dense(cls_state))))


class TorchBERT(torch.nn.Module):
    """minitorch's BERT in torch.nn pieces, attribute for attribute."""

    def __init__(self, vocab_size, pad_id):
        super().__init__()
        self.token_embedding = torch.nn.Embedding(vocab_size, D_MODEL, padding_idx=pad_id)
        self.position_embedding = torch.nn.Embedding(MAX_POSITIONS, D_MODEL)
        self.dropout = torch.nn.Dropout(0.0)
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, 0.0, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, LAYERS, norm=torch.nn.LayerNorm(D_MODEL),
                                                   enable_nested_tensor=False)
        self.mlm_head = TorchMaskedLMHead(D_MODEL, vocab_size)
        self.classifier = TorchClassificationHead(D_MODEL, CLASSES)

    def forward(self, input_ids, src_key_padding_mask):
        positions = torch.arange(input_ids.shape[1])
        x = self.dropout(self.token_embedding(input_ids) + self.position_embedding(positions))
        return self.encoder(x, src_key_padding_mask=src_key_padding_mask)


def test_bert_matches_pytorch_in_float64(backend):
    vocab = WordVocabulary.from_sentences(SENTENCES)
    torch.manual_seed(0)
    reference = TorchBERT(len(vocab), vocab.pad_id).double()
    with torch.no_grad():  # random values everywhere: LayerNorm's ones and zeros hide errors
        for p in reference.parameters():
            p.copy_(torch.randn(p.shape, dtype=torch.float64) * 0.5)
    model = BERT(len(vocab), CLASSES, d_model=D_MODEL, nhead=NHEAD, num_layers=LAYERS,
                 dim_feedforward=FF, dropout=0.0, max_positions=MAX_POSITIONS,
                 pad_id=vocab.pad_id).to(mt.float64)
    state = {k: v.detach().numpy() for k, v in reference.state_dict().items()}
    assert sorted(state) == sorted(model.state_dict()), "state_dict keys differ from PyTorch's"
    model.load_state_dict(state)

    ids, padding = pad_batch([vocab.encode(s) for s in SENTENCES], vocab.pad_id)
    assert padding.numpy().any()
    masked, labels = mask_tokens(ids, mask_id=vocab.mask_id, vocab_size=len(vocab),
                                 special_ids=vocab.special_ids, rng=0)
    t_ids, t_masked = torch.tensor(ids.numpy()), torch.tensor(masked.numpy())
    t_padding, t_labels = torch.tensor(padding.numpy()), torch.tensor(labels.numpy())

    t_hidden = reference(t_ids, t_padding)
    t_class = reference.classifier(t_hidden[:, 0])
    t_logits = reference.mlm_head(reference(t_masked, t_padding), reference.token_embedding.weight)
    t_mlm = torch.nn.functional.cross_entropy(t_logits.reshape(-1, len(vocab)),
                                              t_labels.reshape(-1))
    hidden = model(ids, padding)
    class_logits = model.classify(ids, padding)
    logits = model.masked_lm_logits(masked, padding)
    mlm = masked_lm_loss(logits, labels)
    tol = dict(atol=1e-10, rtol=1e-9)
    real = ~padding.numpy()  # padded positions' states are never read
    np.testing.assert_allclose(hidden.detach().numpy()[real], t_hidden.detach().numpy()[real],
                               **tol)
    np.testing.assert_allclose(class_logits.detach().numpy(), t_class.detach().numpy(), **tol)
    np.testing.assert_allclose(logits.detach().numpy()[real], t_logits.detach().numpy()[real],
                               **tol)
    np.testing.assert_allclose(mlm.item(), t_mlm.item(), **tol)

    weights = np.random.default_rng(0).standard_normal(CLASSES)
    (t_mlm + (t_class * torch.tensor(weights)).sum()).backward()
    (mlm + (class_logits * mt.tensor(weights)).sum()).backward()
    t_grads = dict(reference.named_parameters())
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(parameter.grad.numpy(), t_grads[name].grad.numpy(),
                                   err_msg=name, **tol)
