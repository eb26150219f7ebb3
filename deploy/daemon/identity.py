"""Which file is this? (device, inode) plus two content anchors, so renames, copies, truncation
and inode reuse are told apart without trusting paths.

- **head**: a hash of the first `head_len` bytes (up to `HEAD_BYTES`; it grows with a young file).
  Same inode with another head = the file was truncated and rewritten, or the inode was reused.
- **mark**: a hash of the `MARK_BYTES` bytes just before the consumed offset. A *new* inode whose
  head and mark both match a known file at that offset is a copy of it (`copytruncate`, a copy
  made while the daemon was down): reading it resumes at that offset instead of at 0, so nothing
  is read twice. Two unrelated logs agreeing on both is not a practical risk; agreeing on a head
  alone is (fixed launcher banners), which is why the head alone never proves a copy.

All reads are `os.pread` on a descriptor (no mmap, no shared file position).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import PurePath

from schedmate.logfile import pread_exact  # noqa: F401 -- re-exported for the follower

HEAD_BYTES = 1024
MARK_BYTES = 256
MIN_HEAD_BYTES = 32  # below this a head proves nothing (a copy is not looked for)

_ROTATION_SUFFIX = re.compile(r"(?:\.\d{1,3}|-\d{8}(?:\d{2,6})?)?(?:\.(?:gz|bz2|xz|zst|lz4))?$")
_LOG_EXT = re.compile(r"\.(?:log|out|err|txt|stdout|stderr)$", re.IGNORECASE)


def job_id_from_name(name: str) -> str:
    """`job-42.log.1` → `job-42`: the file name without rotation suffixes and log extension.
    `slurm-7.out` and `slurm-7.err` are one job (both feed its tracker)."""
    base = PurePath(name).name
    stem = _LOG_EXT.sub("", _ROTATION_SUFFIX.sub("", base, count=1))
    if not stem:
        return base
    return stem


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class Anchor:
    """Content anchors of a consumed prefix: `head` over [0, head_len), `mark` over the
    `MARK_BYTES` before `offset` (empty when offset is 0)."""

    head: str
    head_len: int
    mark: str
    offset: int

    @classmethod
    def of(cls, fd: int, offset: int, size: int) -> Anchor:
        head_len = min(size, HEAD_BYTES)
        return cls(digest(pread_exact(fd, head_len, 0)), head_len, _mark(fd, offset), offset)

    def advance(self, fd: int, offset: int, size: int) -> Anchor:
        """The anchor after consuming up to `offset` (the head grows while the file is young)."""
        head, head_len = self.head, self.head_len
        if head_len < HEAD_BYTES and size > head_len:
            head_len = min(size, HEAD_BYTES)
            head = digest(pread_exact(fd, head_len, 0))
        return replace(self, head=head, head_len=head_len, mark=_mark(fd, offset), offset=offset)

    def head_matches(self, fd: int, size: int) -> bool:
        """Whether the file still starts with the bytes this anchor saw."""
        if size < self.head_len:
            return False
        return digest(pread_exact(fd, self.head_len, 0)) == self.head

    def holds(self, fd: int, size: int) -> bool:
        """Whether the file still holds this anchor's consumed prefix (head and mark agree)."""
        if size < self.offset or not self.head_matches(fd, size):
            return False
        return _mark(fd, self.offset) == self.mark

    def is_prefix_of(self, fd: int, size: int) -> bool:
        """`holds`, for another inode: a copy. Needs a head long enough to prove anything."""
        return self.head_len >= MIN_HEAD_BYTES and self.holds(fd, size)


def _mark(fd: int, offset: int) -> str:
    if offset <= 0:
        return ""
    start = max(0, offset - MARK_BYTES)
    return digest(pread_exact(fd, offset - start, start))
