"""minitorch.text: pure-Python text tools for sequence-to-sequence models.

BPE tokenizer, generated English→Spanish corpus, trans-de-en sentence loader, corpus BLEU.
These modules import only the standard library (never the tensor core).

The seq2seq modules (batching and masks, the Seq2SeqTransformer, KV-cached decoding, the training
loop helpers) do use the tensor core and ``minitorch.nn``; their names are imported lazily on
first use, so ``import minitorch.text`` for the tokenizer stays light.
"""
from minitorch.text.bpe import BPETokenizer, normalize
from minitorch.text.bleu import bleu
from minitorch.text.corpus import CorpusSplits, build_pair, generate_pairs, load_corpus
from minitorch.text.trans_de_en import load_trans_de_en

__all__ = [
    "BPETokenizer",
    "normalize",
    "bleu",
    "CorpusSplits",
    "build_pair",
    "generate_pairs",
    "load_corpus",
    "load_trans_de_en",
]

# Lazily imported seq2seq names: name -> submodule of minitorch.text that defines it.
_LAZY = {
    "Batch": "batching", "make_batch": "batching", "causal_mask": "batching",
    "pad_sequences": "batching", "bucket_indices": "batching", "iterate_batches": "batching",
    "Seq2SeqTransformer": "model",
    "DecoderCache": "decoding", "greedy_decode": "decoding", "sample_decode": "decoding",
    "beam_search": "decoding", "translate": "decoding",
    "seq2seq_loss": "training", "train_step": "training", "evaluate_loss": "training",
    "Progress": "training",
}
__all__ += list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f"minitorch.text.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'minitorch.text' has no attribute {name!r}")
