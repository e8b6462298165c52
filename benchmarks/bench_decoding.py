"""Greedy and beam-4 decoding of a small Seq2SeqTransformer, with and without the KV cache, and
the same model in PyTorch as the reference, all timed in one run.

Model: d_model 128, 4 heads, 2+2 layers, feed-forward 512, vocabulary 1000, random weights
(seeded), post-norm; 32 sources of 16-20 tokens (padded, with the padding mask); 32 tokens
decoded per source (``<eos>`` gets a -1e9 bias, so every run takes all 32 steps). "no cache"
reruns the decoder over the whole prefix each step. PyTorch rows (where it is installed): the
same weights in ``torch.nn``, behind the decoding protocol so that minitorch's search code
drives both and only the model's cost differs; "prefix" reruns ``nn.TransformerDecoder`` over
the prefix, "kv cache" is a plain cached step written with ``torch.nn.functional``.

Each checkout runs in a worker subprocess per thread count that keeps its model; the workers
take turns, one round each, --rounds times, and each case keeps its best round: on a shared
machine, runs one after the other compare two different machines. ``--threads 1 2`` times both
thread counts in the same rounds (one table each). ``--compare CHECKOUT`` adds a worker
importing minitorch from CHECKOUT (which must have the same public decoding API, its C
extension built) and prints the before/after ratios.

    python benchmarks/bench_decoding.py [--rounds 3] [--threads 1 [2]] [--compare /tmp/baseline]
        [--no-report]

The table also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report or
--compare (two checkouts of minitorch, not minitorch against a reference) is given.
"""
import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import time
import warnings

import numpy as np

import report

CONFIG = dict(d_model=128, nhead=4, layers=2, ff=512, vocab=1000, batch=32, src_len=(16, 20),
              steps=32, beam=4)
QUICK = dict(CONFIG, batch=4, src_len=(5, 8), steps=6, vocab=50)
BOS, EOS, PAD = 2, 3, 0
MINITORCH_CASES = ["greedy", "greedy, no cache", "beam 4", "beam 4, no cache"]
TORCH_CASES = ["torch greedy, prefix", "torch greedy, kv cache", "torch beam 4, prefix",
               "torch beam 4, kv cache"]
# The PyTorch case each minitorch case is held to: cached against cached, whole prefix against
# whole prefix.
REFERENCE = {"greedy": "torch greedy, kv cache", "greedy, no cache": "torch greedy, prefix",
             "beam 4": "torch beam 4, kv cache", "beam 4, no cache": "torch beam 4, prefix"}
COLUMNS = ["threads", "case", "ms", "tokens/s", "speed vs torch", "cache speed-up"]
LEGEND = ("speed vs torch = ms of the matching PyTorch case (kv cache for cached, prefix for no "
          "cache) ÷ minitorch ms; cache speed-up = no-cache ms ÷ cached ms (> 1: faster)")


def build(cfg):
    """(model, src, src_key_padding_mask): the seeded minitorch model and source batch."""
    import minitorch
    from minitorch.text.model import Seq2SeqTransformer
    minitorch.manual_seed(0)
    model = Seq2SeqTransformer(cfg["vocab"], cfg["vocab"], d_model=cfg["d_model"],
                               nhead=cfg["nhead"], num_encoder_layers=cfg["layers"],
                               num_decoder_layers=cfg["layers"], dim_feedforward=cfg["ff"],
                               dropout=0.0, max_len=64).eval()
    with minitorch.no_grad():
        model.generator.bias[EOS] = -1e9  # never ends: every run decodes cfg["steps"] tokens
    rng = np.random.default_rng(0)
    lengths = rng.integers(cfg["src_len"][0], cfg["src_len"][1] + 1, cfg["batch"])
    src = np.full((cfg["batch"], lengths.max()), PAD, dtype=np.int64)
    for row, length in enumerate(lengths):
        src[row, :length] = rng.integers(4, cfg["vocab"], length)
    return model, minitorch.tensor(src), minitorch.tensor(src == PAD)


def cases(cfg, names):
    """{name: function returning the decoded token lists} for the cases in ``names``."""
    from minitorch.text.decoding import beam_search, greedy_decode
    model, src, mask = build(cfg)
    torch_model = TorchModel(model) if set(names) & set(TORCH_CASES) else None
    special = dict(max_len=cfg["steps"], bos_id=BOS, eos_id=EOS, pad_id=PAD)

    def greedy(m, use_cache):
        return lambda: greedy_decode(m, src, mask, use_cache=use_cache, **special)

    def beam(m, use_cache):
        return lambda: beam_search(m, src, mask, beam_size=cfg["beam"], use_cache=use_cache,
                                   **special)
    table = {"greedy": greedy(model, True), "greedy, no cache": greedy(model, False),
             "beam 4": beam(model, True), "beam 4, no cache": beam(model, False)}
    if torch_model is not None:
        table.update({"torch greedy, prefix": greedy(torch_model, False),
                      "torch greedy, kv cache": greedy(torch_model, True),
                      "torch beam 4, prefix": beam(torch_model, False),
                      "torch beam 4, kv cache": beam(torch_model, True)})
    return {name: table[name] for name in names}


class TorchModel:
    """The minitorch model's weights in ``torch.nn``, behind the decoding protocol (minitorch
    tensors in and out, converted without copies where numpy allows), on ``device`` ("cpu",
    or "cuda" for bench_cuda.py: minitorch tensors in and out on the GPU too). Build it from
    the minitorch model while that is on the CPU."""

    def __init__(self, model, device="cpu"):
        import torch
        self.torch, self.max_len, self.device = torch, model.max_len, device
        d, layer = model.d_model, model.transformer.decoder.layers[0]
        self.net = torch.nn.ModuleDict(dict(
            src_embed=torch.nn.Embedding(model.src_vocab, d),
            tgt_embed=torch.nn.Embedding(model.tgt_vocab, d),
            transformer=torch.nn.Transformer(
                d, layer.self_attn.num_heads, len(model.transformer.encoder.layers),
                len(model.transformer.decoder.layers), layer.linear1.out_features, dropout=0.0,
                batch_first=True),
            generator=torch.nn.Linear(d, model.tgt_vocab))).eval()
        self.net.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                                  for k, v in model.state_dict().items()})
        self.net.to(device)
        self.pe = torch.from_numpy(model.positions.pe.numpy().copy()).to(device)
        self.scale = math.sqrt(d)

    def _t(self, x):
        return None if x is None else self.torch.from_numpy(x.cpu().numpy()).to(self.device)

    def _mt(self, x):
        import minitorch
        return minitorch.tensor(x.cpu().numpy(), device=self.device)

    def _embed(self, table, ids, start=0):
        return table(ids) * self.scale + self.pe[start:start + ids.shape[1]]

    def encode(self, src, src_key_padding_mask=None):
        with self.torch.no_grad():
            x = self._embed(self.net.src_embed, self._t(src))
            return self._mt(self.net.transformer.encoder(
                x, src_key_padding_mask=self._t(src_key_padding_mask)))

    def decode(self, tgt_in, memory, memory_key_padding_mask=None):
        torch = self.torch
        with torch.no_grad():
            t = tgt_in.shape[1]
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=self.device), 1)
            hidden = self.net.transformer.decoder(
                self._embed(self.net.tgt_embed, self._t(tgt_in)), self._t(memory),
                tgt_mask=causal, tgt_is_causal=True,
                memory_key_padding_mask=self._t(memory_key_padding_mask))
            return self._mt(self.net.generator(hidden)[:, -1:])  # the searches read the last

    def start_decoding(self, memory, memory_key_padding_mask=None):
        return TorchCache(self._t(memory), self._t(memory_key_padding_mask),
                          len(self.net.transformer.decoder.layers), self.device)

    def decode_step(self, tokens, cache):
        """One post-norm decoder step per layer, with the new position's K/V appended."""
        torch, F = self.torch, self.torch.nn.functional
        with torch.no_grad():
            x = self._embed(self.net.tgt_embed, self._t(tokens).reshape(-1, 1), cache.length)
            for i, layer in enumerate(self.net.transformer.decoder.layers):
                x = layer.norm1(x + self._attend(layer.self_attn, x, cache, i, True))
                x = layer.norm2(x + self._attend(layer.multihead_attn, x, cache, i, False))
                x = layer.norm3(x + layer.linear2(F.relu(layer.linear1(x))))
            cache.length += 1
            return self._mt(self.net.generator(self.net.transformer.decoder.norm(x))[:, 0])

    def _attend(self, attn, x, cache, i, self_attention):
        torch, F = self.torch, self.torch.nn.functional
        e, h = attn.embed_dim, attn.num_heads
        w, b = attn.in_proj_weight, attn.in_proj_bias

        def heads(t):
            return t.reshape(t.shape[0], -1, h, e // h).transpose(1, 2)
        q = heads(F.linear(x, w[:e], b[:e]))
        mask = None
        if self_attention:
            k, v = F.linear(x, w[e:], b[e:]).chunk(2, dim=-1)
            k, v = heads(k), heads(v)
            if cache.self_kv[i] is not None:
                k = torch.cat([cache.self_kv[i][0], k], 2)
                v = torch.cat([cache.self_kv[i][1], v], 2)
            cache.self_kv[i] = (k, v)
        else:
            if cache.cross_kv[i] is None:
                k, v = F.linear(cache.memory, w[e:], b[e:]).chunk(2, dim=-1)
                cache.cross_kv[i] = (heads(k).contiguous(), heads(v).contiguous())
            k, v = cache.cross_kv[i]
            if cache.mask is not None:
                mask = ~cache.mask[:, None, None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return attn.out_proj(out.transpose(1, 2).reshape(x.shape[0], -1, e))


class TorchCache:
    def __init__(self, memory, mask, layers, device="cpu"):
        self.memory, self.mask, self.length, self.device = memory, mask, 0, device
        self.self_kv, self.cross_kv = [None] * layers, [None] * layers

    def reorder(self, index):
        import torch
        index = torch.as_tensor(np.asarray(index, dtype=np.int64), device=self.device)
        self.memory = self.memory.index_select(0, index)
        self.mask = None if self.mask is None else self.mask.index_select(0, index)
        for kv in (self.self_kv, self.cross_kv):
            for i, pair in enumerate(kv):
                if pair is not None:
                    kv[i] = tuple(t.index_select(0, index) for t in pair)


# ----------------------------------------------------------------------------- processes

def worker(names, threads, quick):
    """Build once; then per line read on stdin, time every case once; print one JSON line."""
    import minitorch
    minitorch.set_num_threads(threads)
    if any(name.startswith("torch") for name in names):
        import torch
        torch.set_num_threads(threads)
        warnings.filterwarnings("ignore", message=".*nested tensors is in prototype")
    cfg = QUICK if quick else CONFIG
    table = cases(cfg, names)
    for run in table.values():  # warm-up: first-call allocations, imports
        run()
    print(json.dumps({"minitorch": str(pathlib.Path(minitorch.__file__).parent)}), flush=True)
    for _ in sys.stdin:
        times = {}
        for name, run in table.items():
            start = time.perf_counter()
            run()
            times[name] = time.perf_counter() - start
        print(json.dumps(times), flush=True)


def start_worker(checkout, names, threads, args):
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = [sys.executable, __file__, "--worker", json.dumps(names), "--threads",
               str(threads)] + (["--quick"] if args.quick else [])
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    return process, _read(process, checkout)["minitorch"]


def _read(process, checkout):
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"bench_decoding: the worker for {checkout} stopped (its error above)")
    return json.loads(line)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1],
                   help="thread counts to time, each in workers of its own (default: 1)")
    p.add_argument("--compare", metavar="CHECKOUT", help="another minitorch checkout to time")
    p.add_argument("--no-uncached", action="store_true", help="skip the no-cache cases")
    p.add_argument("--quick", action="store_true", help="a tiny configuration (a smoke test)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    report.add_no_report_flag(p)
    args = p.parse_args()
    if args.worker:
        return worker(json.loads(args.worker), args.threads[0], args.quick)
    if any(t < 1 for t in args.threads) or len(set(args.threads)) != len(args.threads):
        p.error(f"--threads must be distinct positive counts, got {args.threads}")

    names = [n for n in MINITORCH_CASES if not (args.no_uncached and "no cache" in n)]
    try:
        import torch  # noqa: F401
        torch_names = [n for n in TORCH_CASES if not (args.no_uncached and "prefix" in n)]
    except ImportError:
        torch_names = []
    here = pathlib.Path(__file__).resolve().parents[1]
    checkouts = {"this": (here, names + torch_names)}
    if args.compare:
        checkouts["compare"] = (pathlib.Path(args.compare).resolve(), names)
    workers = {(label, threads): start_worker(path, case_names, threads, args)
               for threads in args.threads for label, (path, case_names) in checkouts.items()}
    best = {key: {} for key in workers}
    for _ in range(args.rounds):
        for (label, threads), (process, _) in workers.items():
            process.stdin.write("go\n")
            process.stdin.flush()
            for name, seconds in _read(process, checkouts[label][0]).items():
                best[label, threads][name] = min(seconds, best[label, threads].get(name, math.inf))
    for process, _ in workers.values():
        process.stdin.close()
        process.wait()

    cfg = QUICK if args.quick else CONFIG
    config = (f"decoding {cfg['steps']} tokens for {cfg['batch']} sources: d_model "
              f"{cfg['d_model']}, {cfg['nhead']} heads, {cfg['layers']}+{cfg['layers']} layers, "
              f"ff {cfg['ff']}, vocab {cfg['vocab']}, beam {cfg['beam']}; best of {args.rounds} "
              f"rounds")
    tokens = cfg["batch"] * cfg["steps"]
    rows = []
    for threads in args.threads:
        print(config + f"; {threads} thread(s)")
        for label in checkouts:
            print(f"  {label}: minitorch from {workers[label, threads][1]}")
        print_table(best["this", threads], best.get(("compare", threads)), names + torch_names,
                    tokens)
        rows += table_rows(best["this", threads], tokens, threads)
    if not args.compare and not args.no_report:
        path = report.write_table("bench_decoding.py", COLUMNS, rows, threads=args.threads,
                                  notes=[config, LEGEND])
        print(f"table written to {path}")


def print_table(this, compare, names, tokens):
    """One thread count's cases, and the ratios of the cached ones (``compare``: the other
    checkout's {case: best seconds}, or None)."""
    header = f"{'case':24s} {'this ms':>9s} {'tokens/s':>9s}"
    if compare:
        header += f" {'compare ms':>11s} {'compare/this':>13s}"
    print(header)
    for name in names:
        t = this[name]
        line = f"{name:24s} {t * 1e3:9.1f} {tokens / t:9.0f}"
        if compare and name in compare:
            line += f" {compare[name] * 1e3:11.1f} {compare[name] / t:12.2f}x"
        print(line)
    for kind in ("greedy", "beam 4"):
        notes = []
        if f"{kind}, no cache" in this:
            notes.append(f"KV cache speed-up {this[f'{kind}, no cache'] / this[kind]:.2f}x")
        for ref in ("kv cache", "prefix"):
            if f"torch {kind}, {ref}" in this:
                speed = this[f"torch {kind}, {ref}"] / this[kind]
                notes.append(f"speed vs PyTorch {ref} {speed:.2f}x")
        if compare:
            notes.append(f"compare / this {compare[kind] / this[kind]:.2f}x")
        print(f"{kind} (cached): " + "; ".join(notes))


def table_rows(best, tokens, threads=1):
    """The report's rows (COLUMNS) from {case: best seconds} at ``threads`` threads; ratios
    left empty when a case is missing."""
    rows = []
    for name, seconds in best.items():
        reference, uncached = best.get(REFERENCE.get(name)), best.get(f"{name}, no cache")
        rows.append([str(threads), name, f"{seconds * 1e3:.1f}", f"{tokens / seconds:.0f}",
                     f"{reference / seconds:.2f}x" if reference else None,
                     f"{uncached / seconds:.2f}x" if uncached else None])
    return rows


if __name__ == "__main__":
    main()
