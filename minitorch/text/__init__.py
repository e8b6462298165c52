"""minitorch.text: what a sequence-to-sequence model needs around the network.

- ``bpe.py``: the BPE tokenizer; ``corpus.py``: the generated English→Spanish corpus;
  ``trans_de_en.py``: sentence pairs from Debian's trans-de-en dictionary; ``bleu.py``: corpus BLEU
  (these four use only the standard library)
- ``batching.py``: length buckets, padding, masks, teacher-forcing shift
- ``model.py``: ``Seq2SeqTransformer``; ``decoding.py``: KV-cached greedy/sampled/beam decoding;
  ``training.py``: the loss, one training step, progress display
- ``rnn_model.py``: ``Seq2SeqRNN``, the recurrent encoder-decoder with attention;
  ``rnn_decoding.py``: its decoder cache, and decoding that returns the attention weights

May import: ``minitorch.nn``, ``minitorch.optim`` and below.
"""
from minitorch.text.batching import (Batch, bucket_indices, causal_mask, iterate_batches,
                                     make_batch, pad_sequences)
from minitorch.text.bleu import bleu
from minitorch.text.bpe import BPETokenizer, normalize
from minitorch.text.corpus import CorpusSplits, build_pair, generate_pairs, load_corpus
from minitorch.text.decoding import (DecoderCache, beam_search, greedy_decode, sample_decode,
                                     translate)
from minitorch.text.model import Seq2SeqTransformer
from minitorch.text.rnn_decoding import RNNDecoderCache, decode_with_attention
from minitorch.text.rnn_model import Seq2SeqRNN
from minitorch.text.trans_de_en import load_trans_de_en
from minitorch.text.training import Progress, evaluate_loss, seq2seq_loss, train_step

__all__ = ["BPETokenizer", "normalize", "bleu", "CorpusSplits", "build_pair", "generate_pairs",
           "load_corpus", "load_trans_de_en", "Batch", "make_batch", "causal_mask",
           "pad_sequences", "bucket_indices", "iterate_batches", "Seq2SeqTransformer",
           "DecoderCache", "greedy_decode", "sample_decode", "beam_search", "translate",
           "seq2seq_loss", "train_step", "evaluate_loss", "Progress", "Seq2SeqRNN",
           "RNNDecoderCache", "decode_with_attention"]
