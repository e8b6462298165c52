"""Safe file access for every loader and saver: open only regular files, read no more than a
file holds, and write atomically.

- :func:`open_regular_file` refuses a FIFO, a device, a directory or a socket with a
  ``ValueError`` before reading anything: reading ``/dev/zero`` would fill memory, and a FIFO
  without a writer would block for ever. The check is made with ``os.stat`` before opening (so a
  device is never opened) and again on the open descriptor (the path may have been swapped in
  between); the open itself is non-blocking, so even a swapped-in FIFO cannot hang it.
- :func:`read_regular_file` reads a whole file of at most ``max_bytes``, as its size announces.
- :func:`read_up_to` reads at most ``count`` bytes of a stream in pieces, so that a size read
  from a corrupted header allocates no more memory than the stream really holds.
- :func:`json_loads_strict` parses JSON refusing a key repeated in one object, which
  ``json.loads`` resolves silently (the last wins), so that a crafted file cannot show one
  value to a checker and another to the loader.
- :func:`atomic_write` writes through a temporary file in the target's folder, flushed,
  fsynced and renamed over the target, so a crash never leaves half a file under the real name.
  Like ``open(path, "w")``: a new file gets mode ``0o666`` less the umask (an existing one keeps
  its mode), a symlink is written through (the link stays, its target is replaced), and a
  directory, FIFO or device is refused (``ValueError``) instead of being replaced.
  The temporary is named ``.<target name>.<writer pid>-<8 hex digits>.tmp``; a save that is
  killed leaves it behind, and the next save of the same target removes it once it is
  *stale*: untouched for :data:`STALE_TEMPORARY_SECONDS` and its writer process gone (or that
  pid is now this process, as when a container restarts). The age condition protects a writer
  in another pid namespace or on another machine sharing the folder, whose pid means nothing
  here: a live writer keeps touching its file.

May import: the standard library only (``text/bpe.py`` uses it and stays free of numpy).
"""
import errno
import json
import os
import re
import secrets
import stat
import time

# A temporary untouched for this long whose writer is gone is a leftover of a killed save.
STALE_TEMPORARY_SECONDS = 600

# Pieces of a bounded read: big enough to be fast, small enough that a lying header announcing
# terabytes costs at most this much memory beyond what the stream holds.
_READ_PIECE = 1 << 24

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _require_regular(mode, path, caller, action="read"):
    if not stat.S_ISREG(mode):
        raise ValueError(f"{caller}: {path} is {_kind(mode)}, not a regular file: refusing to "
                         f"{action} it")


# ---------------------------------------------------------------------------------------- read
def open_regular_file(path, caller):
    """A binary file object reading ``path``; ``ValueError`` unless it is a regular file.

    Missing files and symlink loops raise the ``OSError`` of ``os.stat``.
    """
    _require_regular(os.stat(path).st_mode, path, caller)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        _require_regular(os.fstat(fd).st_mode, path, caller)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_up_to(stream, count):
    """At most ``count`` bytes of ``stream`` (fewer at its end), as a bytearray."""
    buffer = bytearray()
    while len(buffer) < count:
        piece = stream.read(min(count - len(buffer), _READ_PIECE))
        if not piece:
            break
        buffer += piece
    return buffer


def read_regular_file(path, caller, max_bytes):
    """The bytes of the regular file ``path``; ``ValueError`` if it holds more than
    ``max_bytes`` or changes size while being read."""
    with open_regular_file(path, caller) as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"{caller}: {path} is {size} bytes long, more than the limit of "
                             f"{max_bytes} bytes for this kind of file")
        data = read_up_to(stream, size + 1)  # one byte more tells a growing file
    if len(data) != size:
        raise ValueError(f"{caller}: {path} changed size while being read ({size} bytes "
                         f"announced, {len(data)} read)")
    return bytes(data)


def json_loads_strict(text):
    """``json.loads(text)``; ValueError naming a key that one object holds twice."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def _unique_keys(pairs):
    result = dict(pairs)
    if len(result) != len(pairs):
        seen = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"duplicate key {duplicate!r} in one JSON object")
    return result


# --------------------------------------------------------------------------------------- write
def atomic_write(path, write_to, caller):
    """Call ``write_to(binary stream)`` and make its bytes the content of ``path`` at once."""
    target, mode = _resolve_target(os.fsdecode(path), caller)
    folder, name = os.path.split(target)
    _remove_stale_temporaries(folder, name)
    fd, temp_path = _create_temporary(folder, name)
    try:
        with os.fdopen(fd, "wb") as stream:
            if mode is not None:
                os.chmod(temp_path, mode)  # an existing file keeps its mode, as open() keeps it
            write_to(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp_path, target)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _resolve_target(path, caller):
    """(the file a write to ``path`` lands in, its mode bits or None if it does not exist yet):
    symlinks are followed, and only a regular file may be replaced."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode  # a symlink loop raises ELOOP here
    except FileNotFoundError:
        return target, None
    _require_regular(mode, path, caller, action="replace")
    return target, stat.S_IMODE(mode)


def _temporary_pattern(name):
    return re.compile(r"\." + re.escape(name) + r"\.(\d{1,10})-[0-9a-f]{8}\.tmp")


def _create_temporary(folder, name):
    for _ in range(100):
        temp_path = os.path.join(folder, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            # O_CREAT with 0o666 lets the kernel apply the umask (and a default ACL), as open()
            fd = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(
                os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return fd, temp_path
    raise FileExistsError(errno.EEXIST, "no free temporary file name", folder)


def _remove_stale_temporaries(folder, name):
    """Best effort: a folder that cannot be listed or a file that cannot be removed is left."""
    pattern, now = _temporary_pattern(name), time.time()
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if (stat.S_ISREG(info.st_mode) and now - info.st_mtime >= STALE_TEMPORARY_SECONDS
                    and not _writer_alive(int(match.group(1)))):
                os.unlink(entry.path)
        except OSError:
            pass


def _writer_alive(pid):
    """Whether the process that named a temporary after itself may still be writing it."""
    if pid == os.getpid():
        return False  # this process is not writing it (the age check covers its other threads)
    if os.name != "posix":
        return True  # os.kill(pid, 0) would terminate the process on Windows: never guess
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # alive but not ours (EPERM), or not a pid this system can have: keep it
    return True


def _fsync_folder(folder):
    """Make the rename itself durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
