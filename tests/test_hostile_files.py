"""Hostile and corrupted files for every loader, and the safety of every saver.

Loaders: ``minitorch.load`` (path and file object), ``BPETokenizer.load``, ``load_trans_de_en``.
Each must answer a FIFO, ``/dev/zero``, a directory, a socket or a symlink loop with a clean
error, never a hang or a memory blow-up (those cases run in a child process with a memory limit,
each load in a thread with a timeout), and every corruption of a file's bytes with ValueError.
Savers (``minitorch.save``, ``BPETokenizer.save``): the umask decides a new file's mode, a
symlink is written through, a special file is never replaced, and a killed save's temporary is
removed by a later save once stale.
"""
import errno
import io
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minitorch
from minitorch import files, serialization
from minitorch.text.bpe import BPETokenizer
from minitorch.text.trans_de_en import load_trans_de_en

HOUR_AGO = time.time() - 3600


def small_checkpoint():
    return {"w": minitorch.tensor([[1.0, 2.0]], requires_grad=True),
            "i": minitorch.tensor([7, 8]), "m": minitorch.tensor([True]),
            "sub": {"epoch": 3, "names": ["a", "b"]}}


def small_tokenizer():
    return BPETokenizer.train(["low lower newest widest " * 3], vocab_size=60)


def layout(header, data=b""):
    """The bytes of a safetensors file with ``header`` (a dict, or bytes taken as they are)."""
    header_bytes = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(header_bytes)) + header_bytes + data


# ------------------------------------------------------------------ special files
SPECIAL_KINDS = ["fifo", "symlink_to_fifo", "dev_zero", "directory", "socket", "symlink_loop"]
LOADER_NAMES = ["minitorch.load", "BPETokenizer.load", "load_trans_de_en"]

CHILD = textwrap.dedent(r"""
    import json, os, resource, socket, sys, threading
    limit = 3 << 30  # reading /dev/zero must end in ValueError, not fill the machine's memory
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import minitorch
    from minitorch.text.bpe import BPETokenizer
    from minitorch.text.trans_de_en import load_trans_de_en

    folder = sys.argv[1]
    loaders = {"minitorch.load": minitorch.load, "BPETokenizer.load": BPETokenizer.load,
               "load_trans_de_en": load_trans_de_en}
    paths, fifos, keep = {}, [], []
    for kind in json.loads(sys.argv[2]):
        path = os.path.join(folder, kind)
        if kind == "fifo":
            os.mkfifo(path)
            fifos.append(path)
        elif kind == "symlink_to_fifo":
            os.mkfifo(path + ".target")
            fifos.append(path + ".target")
            os.symlink(path + ".target", path)
        elif kind == "dev_zero":
            path = "/dev/zero"
        elif kind == "directory":
            os.mkdir(path)
        elif kind == "socket":
            keep.append(socket.socket(socket.AF_UNIX))
            keep[-1].bind(path)
        elif kind == "symlink_loop":
            os.symlink(path, path)
        paths[kind] = path

    results = {}
    for name, loader in loaders.items():
        for kind, path in paths.items():
            outcome = {}

            def run():
                try:
                    loader(path)
                    outcome["result"] = ["returned", "", None]
                except BaseException as error:
                    outcome["result"] = [type(error).__name__, str(error),
                                         getattr(error, "errno", None)]

            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            thread.join(20)
            if thread.is_alive():
                outcome["result"] = ["hung", "", None]
                for fifo in fifos:  # give a blocked reader its end of file
                    try:
                        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                    except OSError:
                        pass
            results[name + ":" + kind] = outcome["result"]
    print(json.dumps(results))
    sys.stdout.flush()
    os._exit(0)
""")


@pytest.fixture(scope="module")
def special_file_outcomes(tmp_path_factory):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    folder = tmp_path_factory.mktemp("special")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(minitorch.__file__))] +
        os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    child = subprocess.run([sys.executable, "-c", CHILD, str(folder), json.dumps(SPECIAL_KINDS)],
                           capture_output=True, text=True, timeout=400, env=env)
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
@pytest.mark.parametrize("loader", LOADER_NAMES)
def test_special_files_raise_a_clean_error(special_file_outcomes, loader, kind):
    error, message, code = special_file_outcomes[f"{loader}:{kind}"]
    assert error != "hung", f"{loader} blocked on a {kind}"
    if kind == "symlink_loop":
        # the OS's error naming the path (load_trans_de_en says the file is not installed)
        assert error in ("OSError", "FileNotFoundError"), (error, message)
        if loader != "load_trans_de_en":
            assert code == errno.ELOOP, message
        return
    assert error == "ValueError", (error, message)
    word = {"fifo": "FIFO", "symlink_to_fifo": "FIFO", "dev_zero": "character device",
            "directory": "directory", "socket": "socket"}[kind]
    assert word in message and "not a regular file" in message, message


def test_missing_files_raise_file_not_found(tmp_path):
    for loader in (minitorch.load, BPETokenizer.load, load_trans_de_en):
        with pytest.raises(FileNotFoundError):
            loader(str(tmp_path / "absent"))


# ------------------------------------------------------------------ minitorch.load: bytes
def load_both_ways(path):
    """Load ``path`` as a path and as a file object: both must agree to raise ValueError."""
    with pytest.raises(ValueError) as by_path:
        minitorch.load(path)
    with pytest.raises(ValueError):
        minitorch.load(io.BytesIO(path.read_bytes()))
    return str(by_path.value)


def test_truncation_at_every_offset_of_both_ways(tmp_path):
    path = tmp_path / "ckpt"
    minitorch.save(small_checkpoint(), path)
    raw = path.read_bytes()
    cut = tmp_path / "cut"
    for length in range(len(raw)):
        cut.write_bytes(raw[:length])
        load_both_ways(cut)


def test_every_bit_flip_in_the_length_prefix_raises(tmp_path):
    path = tmp_path / "ckpt"
    minitorch.save(small_checkpoint(), path)
    raw = bytearray(path.read_bytes())
    flipped = tmp_path / "flipped"
    for bit in range(64):
        bad = bytearray(raw)
        bad[bit // 8] ^= 1 << (bit % 8)
        flipped.write_bytes(bytes(bad))
        message = load_both_ways(flipped)
        assert "header length" in message or "JSON" in message or "data section" in message \
            or "ends at byte" in message, message


def test_bit_flips_in_the_header_raise_value_error_or_load(tmp_path):
    # A flip may leave valid JSON saying something else ("epoch": 3 -> 7): then it loads; it
    # must never raise anything but ValueError.
    path = tmp_path / "ckpt"
    minitorch.save(small_checkpoint(), path)
    raw = path.read_bytes()
    header_length = struct.unpack("<Q", raw[:8])[0]
    flipped, outcomes = tmp_path / "flipped", {"error": 0, "loaded": 0}
    for position in range(8, 8 + header_length):
        for bit in (0, 3, 5, 7):
            bad = bytearray(raw)
            bad[position] ^= 1 << bit
            flipped.write_bytes(bytes(bad))
            try:
                minitorch.load(flipped)
                outcomes["loaded"] += 1
            except ValueError:
                outcomes["error"] += 1
    assert outcomes["error"] > 10 * outcomes["loaded"], outcomes


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


def structure(root):
    return {"__metadata__": {serialization.STRUCTURE_KEY: json.dumps(
        {"version": 1, "root": root})}}


def nested_lists(depth):
    node = 1
    for _ in range(depth):
        node = {"list": [node]}
    return node


# (name, the file's bytes, what the error says)
HOSTILE_FILES = [
    ("huge header length", struct.pack("<Q", 2 ** 64 - 1), "exceeds the limit"),
    ("header length just over the limit",
     struct.pack("<Q", serialization.MAX_HEADER_BYTES + 1) + b"{}", "exceeds the limit"),
    ("header length past the end", struct.pack("<Q", 1000) + b"{}", "goes past the end"),
    ("header length 7 bytes", b"\x01" * 7, "too short"),
]

# (name, header, data section, what the error says)
HEADER_CASES = [
    ("negative offset", {"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}},
     bytes(8), "data_offsets must be"),
    ("float offset", {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8]}},
     bytes(8), "data_offsets must be"),
    ("bool offsets", {"w": {"dtype": "F32", "shape": [2], "data_offsets": [False, True]}},
     bytes(8), "data_offsets must be"),
    ("overlapping tensors", {"w": F32_2, "v": {"dtype": "F32", "shape": [1],
                                               "data_offsets": [4, 8]}},
     bytes(8), "overlaps"),
    ("dtype/shape mismatch", {"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}},
     bytes(8), "needs 16"),
    ("unknown dtype", {"w": {"dtype": "U64", "shape": [1], "data_offsets": [0, 8]}},
     bytes(8), "not supported"),
    ("dtype not a string", {"w": {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]}},
     bytes(8), "not supported"),
    ("terabyte tensor in a tiny file",
     {"w": {"dtype": "F32", "shape": [2 ** 40], "data_offsets": [0, 2 ** 42]}}, bytes(8),
     "truncated"),
    ("astronomic offsets",
     {"w": {"dtype": "BOOL", "shape": [10 ** 30], "data_offsets": [0, 10 ** 30]}}, b"",
     "truncated"),
    ("more dimensions than numpy holds",
     {"w": {"dtype": "F32", "shape": [1] * 100, "data_offsets": [0, 4]}}, bytes(4),
     "numpy cannot hold"),
    ("duplicate tensor name",
     b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
     b'"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', bytes(8), "duplicate key 'w'"),
    ("duplicate key in an entry",
     b'{"w":{"dtype":"F32","dtype":"F64","shape":[2],"data_offsets":[0,8]}}', bytes(8),
     "duplicate key 'dtype'"),
    ("duplicate metadata key",
     b'{"__metadata__":{"a":"1","a":"2"}}', b"", "duplicate key 'a'"),
    ("duplicate key in the structure JSON",
     {"__metadata__": {serialization.STRUCTURE_KEY:
                       '{"version":1,"root":1,"root":{"tensor":"x"}}'}}, b"",
     "duplicate key 'root'"),
    ("duplicate key in a structure dict",
     {"w": F32_2, **structure({"dict": [["a", 1], ["a", {"tensor": "w"}]]})}, bytes(8),
     "key 'a' twice"),
    ("non-UTF-8 header", b'{"w\xff":1}', b"", "not valid UTF-8 JSON"),
    ("UTF-16 header", '{"a": 1}'.encode("utf-16"), b"", "not valid UTF-8 JSON"),
    ("deeply nested header JSON", b"[" * 100000 + b"]" * 100000, b"", "not valid UTF-8 JSON"),
    ("deeply nested structure JSON",
     {"__metadata__": {serialization.STRUCTURE_KEY: "[" * 100000 + "]" * 100000}}, b"",
     "not valid JSON"),
    ("structure nested past MAX_NESTING", structure(nested_lists(serialization.MAX_NESTING + 1)),
     b"", "nested more than"),
    ("int64 tensor marked requires_grad",
     {"i": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]},
      **structure({"tensor": "i", "requires_grad": True})}, bytes(8),
     "only floating-point tensors can require gradients"),
    ("bool tensor marked requires_grad",
     {"m": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]},
      **structure({"list": [{"tensor": "m", "requires_grad": True}]})}, b"\x01",
     "only floating-point"),
    ("requires_grad not a bool", {"w": F32_2, **structure({"tensor": "w",
                                                           "requires_grad": "yes"})},
     bytes(8), "must be true or false"),
    ("structure not an object",
     {"__metadata__": {serialization.STRUCTURE_KEY: "[1]"}}, b"", "has no 'root'"),
    ("metadata not strings", {"__metadata__": {"a": ["b"]}}, b"", "strings to strings"),
    ("tensor name not a string in the structure", {"w": F32_2, **structure({"tensor": 3})},
     bytes(8), "refers to tensor 3"),
    ("header is a string", b'"hello"', b"", "must be a JSON object"),
    ("empty header", b"", b"", "not valid UTF-8 JSON"),
]
HOSTILE_FILES += [(name, layout(header, data), message)
                  for name, header, data, message in HEADER_CASES]


@pytest.mark.parametrize("content, message", [case[1:] for case in HOSTILE_FILES],
                         ids=[case[0] for case in HOSTILE_FILES])
def test_hostile_files_raise_value_error(tmp_path, content, message):
    path = tmp_path / "bad"
    path.write_bytes(content)
    assert message in load_both_ways(path)


def test_a_file_that_grows_after_its_header_is_rejected(tmp_path):
    path = tmp_path / "ckpt"
    minitorch.save({"w": minitorch.ones(3)}, path)
    with open(path, "ab") as stream:
        stream.write(bytes(1000))
    assert "trailing bytes" in load_both_ways(path)


# ------------------------------------------------------------------ BPETokenizer.load: bytes
def test_tokenizer_truncated_at_every_offset_raises(tmp_path):
    path = tmp_path / "bpe.json"
    small_tokenizer().save(str(path))
    raw = path.read_bytes()
    assert BPETokenizer.load(str(path)).vocab_size == small_tokenizer().vocab_size
    cut = tmp_path / "cut.json"
    for length in range(len(raw)):
        cut.write_bytes(raw[:length])
        with pytest.raises(ValueError):
            BPETokenizer.load(str(cut))


def test_tokenizer_bit_flips_raise_value_error_or_load(tmp_path):
    path = tmp_path / "bpe.json"
    small_tokenizer().save(str(path))
    raw = path.read_bytes()
    flipped, errors, trials = tmp_path / "flipped.json", 0, 0
    for position in range(0, len(raw), 3):
        for bit in (0, 6, 7):
            trials += 1
            bad = bytearray(raw)
            bad[position] ^= 1 << bit
            flipped.write_bytes(bytes(bad))
            try:
                BPETokenizer.load(str(flipped))
            except ValueError:
                errors += 1
    assert errors > trials // 2  # most flips break the file; none may raise anything else


def tokenizer_payload():
    tokenizer = small_tokenizer()
    return {"format": "minitorch-bpe", "version": 1, "end_of_word": "</w>",
            "special_tokens": ["<pad>", "<unk>", "<bos>", "<eos>"],
            "vocab": tokenizer._id_to_token, "merges": [list(m) for m in tokenizer.merges]}


def dumps_with_duplicate(key, first_value):
    text = json.dumps(tokenizer_payload())
    return "{" + json.dumps(key) + ":" + json.dumps(first_value) + "," + text[1:]


HOSTILE_TOKENIZERS = [
    ("non-UTF-8", b'{"format": "minitorch-bpe\xff"}', "not valid UTF-8"),
    ("UTF-16", json.dumps(tokenizer_payload()).encode("utf-16"), "not valid UTF-8"),
    ("deep nesting", b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    ("deep nesting in a field",
     json.dumps({**tokenizer_payload(), "merges": 1}).replace("1}", "[" * 100000 + "]" * 100000
                                                             + "}").encode(),
     "nested too deeply"),
    ("duplicate vocab key", dumps_with_duplicate("vocab", ["<pad>"]).encode(),
     "duplicate key 'vocab'"),
    ("duplicate format key", dumps_with_duplicate("format", "minitorch-bpe").encode(),
     "duplicate key 'format'"),
    ("version true", json.dumps({**tokenizer_payload(), "version": True}).encode(), "version"),
    ("vocab of numbers", json.dumps({**tokenizer_payload(), "vocab": [1, 2]}).encode(),
     "vocab must be a list"),
    ("empty file", b"", "not valid JSON"),
    ("NUL bytes", bytes(100), "not valid JSON"),
]


@pytest.mark.parametrize("content, message", [case[1:] for case in HOSTILE_TOKENIZERS],
                         ids=[case[0] for case in HOSTILE_TOKENIZERS])
def test_hostile_tokenizer_files_raise_value_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        BPETokenizer.load(str(path))


def test_tokenizer_file_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    from minitorch.text import bpe
    path = tmp_path / "bpe.json"
    small_tokenizer().save(str(path))
    monkeypatch.setattr(bpe, "MAX_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match="more than the limit"):
        BPETokenizer.load(str(path))


def test_trans_de_en_non_utf8_raises_value_error(tmp_path):
    path = tmp_path / "de-en"
    path.write_bytes("Ich bin müde. :: I am tired.\n".encode("latin-1"))
    with pytest.raises(ValueError):  # UnicodeDecodeError is a ValueError
        load_trans_de_en(str(path))


# ------------------------------------------------------------------ savers
SAVERS = {
    "minitorch.save": (lambda path: minitorch.save(small_checkpoint(), path),
                       lambda path: minitorch.load(path)["sub"]["epoch"] == 3),
    "BPETokenizer.save": (lambda path: small_tokenizer().save(path),
                          lambda path: BPETokenizer.load(path).vocab_size > 4),
}


@pytest.fixture
def umask():
    """Set the process umask for one test, then put the old one back."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("saver", sorted(SAVERS))
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002, 0o000])
def test_new_files_get_the_mode_open_would_give(tmp_path, umask, saver, mask):
    save, check = SAVERS[saver]
    umask(mask)
    path = str(tmp_path / "out")
    save(path)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    assert check(path)


@pytest.mark.parametrize("saver", sorted(SAVERS))
def test_an_existing_file_keeps_its_mode(tmp_path, umask, saver):
    save, check = SAVERS[saver]
    umask(0o022)
    path = str(tmp_path / "out")
    save(path)
    os.chmod(path, 0o640)
    save(path)
    assert os.stat(path).st_mode & 0o777 == 0o640 and check(path)


@pytest.mark.parametrize("saver", sorted(SAVERS))
def test_saving_to_a_symlink_writes_through_it(tmp_path, saver):
    save, check = SAVERS[saver]
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "ckpt"
    target.write_bytes(b"old")
    link = tmp_path / "link"
    link.symlink_to(target)
    save(str(link))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert check(str(target)) and check(str(link))
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]
    assert os.listdir(tmp_path / "real") == ["ckpt"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "real" / "new")
    save(str(dangling))  # as open(path, "w"): the link's target is created
    assert dangling.is_symlink() and check(str(tmp_path / "real" / "new"))


@pytest.mark.parametrize("saver", sorted(SAVERS))
def test_special_targets_are_refused_not_replaced(tmp_path, saver):
    save, _ = SAVERS[saver]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    for target, word in ((fifo, "FIFO"), (tmp_path / "folder", "directory")):
        with pytest.raises(ValueError, match=f"{word}.*not a regular file"):
            save(str(target))
    assert (tmp_path / "fifo").is_fifo() and (tmp_path / "folder").is_dir()
    device = os.stat("/dev/null")
    with pytest.raises(ValueError, match="character device"):
        save("/dev/null")
    assert os.stat("/dev/null").st_ino == device.st_ino  # never replaced, even as root
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OSError) as error:
        save(str(loop))
    assert error.value.errno == errno.ELOOP and loop.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["fifo", "folder", "loop"]


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def temporary(folder, target, pid, mtime, hex_digits="0123abcd"):
    path = folder / f".{target}.{pid}-{hex_digits}.tmp"
    path.write_bytes(b"half a checkpoint")
    os.utime(path, (mtime, mtime))
    return path.name


@pytest.mark.parametrize("saver", sorted(SAVERS))
def test_stale_temporaries_of_the_target_are_removed(tmp_path, saver):
    save, check = SAVERS[saver]
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = dead_pid()
        stale = [temporary(tmp_path, "ckpt", gone, HOUR_AGO),
                 temporary(tmp_path, "ckpt", os.getpid(), HOUR_AGO, "deadbeef")]
        kept = [temporary(tmp_path, "ckpt", gone, time.time(), "00000001"),  # may be writing
                temporary(tmp_path, "ckpt", live.pid, HOUR_AGO, "00000002"),  # writer alive
                temporary(tmp_path, "other", gone, HOUR_AGO),                 # another target
                ".ckpt.backup.tmp", ".ckpt.123.tmp", "ckpt.1-0123abcd.tmp"]   # not ours
        for name in kept[3:]:
            (tmp_path / name).write_bytes(b"user data")
            os.utime(tmp_path / name, (HOUR_AGO, HOUR_AGO))
        save(str(tmp_path / "ckpt"))
    finally:
        live.kill()
        live.wait()
    assert check(str(tmp_path / "ckpt"))
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["ckpt"])
    assert not set(stale) & set(os.listdir(tmp_path))


def test_a_killed_save_leaves_a_temporary_that_a_later_save_removes(tmp_path):
    # The child kills itself with SIGKILL while writing the data: no cleanup code can run.
    script = textwrap.dedent("""
        import os, signal, sys
        import minitorch
        from minitorch import serialization
        def die(array):
            os.kill(os.getpid(), signal.SIGKILL)
        serialization._array_bytes = die
        minitorch.save({"w": minitorch.ones(1000)}, sys.argv[1])
    """)
    target = tmp_path / "ckpt"
    minitorch.save({"w": minitorch.zeros(2)}, target)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(minitorch.__file__))] +
        os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    child = subprocess.run([sys.executable, "-c", script, str(target)], env=env, timeout=120)
    assert child.returncode == -signal.SIGKILL
    leftovers = [name for name in os.listdir(tmp_path) if name != "ckpt"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.") and \
        leftovers[0].endswith(".tmp"), leftovers
    assert minitorch.load(target)["w"].tolist() == [0.0, 0.0]  # the old file is intact
    minitorch.save({"w": minitorch.ones(1)}, target)
    assert len(os.listdir(tmp_path)) == 2  # fresh: the writer might still be at work
    os.utime(tmp_path / leftovers[0], (HOUR_AGO, HOUR_AGO))
    minitorch.save({"w": minitorch.ones(1)}, target)
    assert os.listdir(tmp_path) == ["ckpt"]
    assert files.STALE_TEMPORARY_SECONDS <= 3600


def test_tokenizer_decode_refuses_ids_that_are_not_ints():
    tokenizer = small_tokenizer()
    ids = tokenizer.encode("low lower")
    assert tokenizer.decode([np.int64(i) for i in ids]) == "low lower"
    assert tokenizer.decode([minitorch.tensor(i) for i in ids]) == "low lower"
    for bad in (1.5, "a", True, None, np.float64(5.0), minitorch.tensor(5.0), [5]):
        with pytest.raises(TypeError, match=r"ids must be ints, got .* at position 1"):
            tokenizer.decode([ids[0], bad])
