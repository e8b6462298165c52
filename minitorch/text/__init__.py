"""minitorch.text: pure-Python text tools for sequence-to-sequence models.

BPE tokenizer, generated English→Spanish corpus, trans-de-en sentence loader, corpus BLEU.
These modules import only the standard library (never the tensor core).
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
