"""``minitorch.models``: whole models written in minitorch, one family per file.

- ``gpt.py``: a decoder-only language model (GPT) with KV-cached ``generate``
- ``bert.py``: an encoder-only model (BERT-style) for masked-token pre-training and
  sentence classification
- ``vit.py``: a Vision Transformer (patch embedding, class token, learned positions)

Each file builds on ``minitorch.nn``'s blocks, so that a model's ``state_dict`` names its
parts as PyTorch names the same blocks.
May import: ``minitorch``, ``minitorch.nn``.
"""
from .bert import BERT
from .gpt import GPT, GPTConfig
from .vit import VisionTransformer, patchify, unpatchify

__all__ = ["GPT", "GPTConfig", "BERT", "VisionTransformer", "patchify", "unpatchify"]
