"""Opening log files that users and other processes control, without hanging or crashing.

A log path is untrusted: it may name a FIFO (an `open()` blocks until a writer appears), a
device (`/dev/zero` never ends), a directory, or a file another process truncates, rotates or
rewrites while we read it. Readers therefore:

- check the path with `os.stat` *before* opening, and open with `O_NONBLOCK` so that a path
  swapped to a FIFO between the check and the open still cannot block; the open descriptor is
  checked again with `os.fstat` (regular files only);
- read through `os.pread` (`pread_exact`), never `mmap`: a mapped page of a file truncated
  underneath is a SIGBUS that kills the process, while a short `pread` is just fewer bytes.

`NotRegularFile` is a `ValueError` whose message names the path and what it is, so callers
that already turn `OSError`/`ValueError` into "cannot read log" give one clear line.
"""

from __future__ import annotations

import os
import stat

__all__ = ["NotRegularFile", "describe_mode", "open_regular", "pread_exact"]


class NotRegularFile(ValueError):
    """The path exists but is not a regular file (FIFO, socket, device, directory)."""


def describe_mode(mode: int) -> str:
    """What `mode` is, in words (`a FIFO (named pipe)`, `a directory`, ...)."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _check(path: str | os.PathLike[str], mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{os.fspath(path)} is {describe_mode(mode)}, not a regular log file")


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file `path` (caller closes it with `os.close`).

    Raises `NotRegularFile` for anything else and `OSError` when it cannot be opened; never
    blocks (a FIFO is refused before and, if swapped in, during the open)."""
    _check(path, os.stat(path).st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        _check(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def pread_exact(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes at `offset`; fewer only when the file ends (or shrank) before that."""
    out = os.pread(fd, size, offset)
    if len(out) == size or not out:
        return out
    parts = [out]
    got = len(out)
    while got < size:
        more = os.pread(fd, size - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)
