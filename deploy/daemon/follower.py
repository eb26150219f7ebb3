"""Follow a directory of logs by polling: which files are new, grown, renamed, copied, truncated
or deleted, and their new complete lines in bounded reads.

Why polling, not inotify: a poll sees the directory's state, not a stream of events that
overflows under load (IN_Q_OVERFLOW), misses writes over NFS/Lustre (where cluster logs live)
and must be re-synced after a restart anyway. One `os.scandir` + `stat` per file per interval
is cheap for thousands of files; the interval bounds the latency.

Per poll (`Follower.poll`): list regular files (symlinks and hidden files skipped), match them to
known files by (device, inode) and content anchors (`identity.py`), then read at most
`file_budget` bytes per file and `poll_budget` in all, in `chunk_bytes` `os.pread`s. A file gone
from the listing is drained to its end through the descriptor still open, before any live file
(nothing else can read those bytes), then retired. A file
is never read past what the processor can take: `poll` is a generator, and the daemon feeds it
into a bounded queue (`daemon.py`), so a full queue stops the reading.

Lines are cut by the tracker's line reader (`schedmate.agents.tracker.lines.LineCutter`: one
long-line rule for the tracker and the daemon). Logs as they come: each file's first bytes decide
how it is read (`schedmate.logfile.StreamDecoder`, the streaming `readable_log`): UTF-16/32 is
decoded and gzip/bz2/xz decompressed as it is read; a file that is not text (binary, zstd, zip,
lz4) is never read as lines, and its job's status says `unreadable: <why>`. A compressed file
whose decoded head is the head of a file already followed is a rotation of it (logrotate's
`compress`): it is not read again (`stats.copies`). Offsets committed for a decoded file are raw
bytes at a line end where the decoder holds nothing; a compressed file cannot be resumed
mid-stream, so after a restart in the middle of one it is read again from its start.
"""

from __future__ import annotations

import fnmatch
import os
import stat as stat_mod
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from schedmate.agents.tracker.lines import DEFAULT_MAX_LINE_BYTES, LineCutter
from schedmate.deploy.daemon.identity import MIN_HEAD_BYTES, Anchor, digest, job_id_from_name, pread_exact
from schedmate.deploy.daemon.model import Batch, Event, FileState
from schedmate.logfile import StreamDecoder

DEFAULT_IGNORE = (".*",)
_Entry = tuple[str, os.stat_result]  # a listed file: its path and stat
_SNIFF_BYTES = 4096  # a log's first 4 KB decide its encoding (a junk block further on does not)


@dataclass(frozen=True, slots=True)
class FollowConfig:
    chunk_bytes: int = 1 << 20
    file_budget: int = 8 << 20  # per file per poll: one fast writer cannot starve the others
    poll_budget: int = 64 << 20
    batch_bytes: int = 1 << 20  # one Batch holds at most about this much
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES  # the tracker's long-line rule (`LineCutter`)
    max_open_files: int = 256
    ghost_ttl_s: float = 3600.0
    ignore: tuple[str, ...] = DEFAULT_IGNORE


@dataclass(slots=True)
class _File:
    state: FileState
    cutter: LineCutter
    read_pos: int
    fd: int | None = None
    size: int = 0
    mtime_ns: int = 0
    last_read: float = 0.0
    draining: bool = False  # gone from the listing: read the rest through `fd`, then retire
    decoder: StreamDecoder | None = None  # from the file's first bytes (None until it has some)


@dataclass(slots=True)
class FollowStats:
    files: int = 0
    lag_bytes: int = 0
    polls: int = 0
    bytes_read: int = 0
    lines: int = 0
    rotations: int = 0
    truncations: int = 0
    deletions: int = 0
    copies: int = 0  # files recognised as copies of consumed content (read from its offset)
    shadows: int = 0  # copies seen while their original was live (read once it retired)
    lag_by_job: dict[str, int] = field(default_factory=dict)


class Follower:
    """Directory → `Batch`es. State comes from `restore` (the committed `FileState`s)."""

    def __init__(self, root: str | Path, config: FollowConfig | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.config = config or FollowConfig()
        self.clock = clock
        self._files: dict[str, _File] = {}
        self._ghosts: dict[str, FileState] = {}
        self.stats = FollowStats()
        self._rr = 0
        self._restored: set[str] = set()
        self._young: dict[str, int] = {}
        self._skipped: set[str] = set()  # compressed rotations of followed files (not read again)

    # -- state ------------------------------------------------------------------------------

    def restore(self, states: list[FileState]) -> None:
        """Adopt committed states. Each live one is re-verified on the next poll: same inode
        holding the same consumed prefix resumes; anything else becomes a ghost."""
        for st in states:
            if st.status == "ghost":
                self._ghosts[st.key] = st
            else:
                cutter = LineCutter(self.config.max_line_bytes, st.anchor.offset)
                self._files[st.key] = _File(st, cutter, st.anchor.offset)
        self._restored = set(self._files)

    def close(self) -> None:
        for f in self._files.values():
            self._close(f)

    # -- one poll ---------------------------------------------------------------------------

    def poll(self) -> Iterator[Batch]:
        """Batches for everything that changed since the last poll (bounded; see module doc)."""
        now = self.clock()
        self.stats.polls += 1
        listing = self._list()
        forget = tuple(k for k, g in self._ghosts.items() if now - (g.retired_at or now) > self.config.ghost_ttl_s)
        for k in forget:
            del self._ghosts[k]
        if forget:
            yield Batch(None, forget=forget, events=("forget",))
        restored, self._restored = self._restored, set()
        for key, f in list(self._files.items()):
            entry = listing.pop(key, None)
            yield from self._check_known(key, f, entry, now, verify=key in restored)
        self._skipped &= set(listing)
        for key, (path, st) in sorted(listing.items(), key=lambda kv: kv[1][0]):
            if key in self._skipped:
                continue
            if st.st_size < MIN_HEAD_BYTES and self._young.get(key, 0) < 2:
                # a file that just appeared may be a copy still empty: adopt it once its head can
                # be compared, or when it stays this small for a second poll
                self._young[key] = self._young.get(key, 0) + 1
                continue
            self._young.pop(key, None)
            yield from self._adopt(key, path, st, now)
        self._young = {k: v for k, v in self._young.items() if k in listing}
        yield from self._read_all(now)
        self._lag()

    def _list(self) -> dict[str, tuple[str, os.stat_result]]:
        out: dict[str, tuple[str, os.stat_result]] = {}
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return out
        for e in entries:
            if any(fnmatch.fnmatch(e.name, pat) for pat in self.config.ignore):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat_mod.S_ISREG(st.st_mode):
                out[f"{st.st_dev}:{st.st_ino}"] = (e.path, st)
        return out

    def _check_known(self, key: str, f: _File, entry: _Entry | None, now: float, *,
                     verify: bool) -> Iterator[Batch]:
        if f.state.status == "shadow":
            if entry is not None:
                f.size = entry[1].st_size
            yield from self._resolve_shadow(key, f, entry, now)
            return
        if entry is None:
            if not f.draining:
                f.draining = True
                if f.fd is None:  # closed (LRU) and gone: what was unread is lost
                    yield from self._retire(key, f, now, "deleted")
            return
        path, st = entry
        events: list[Event] = []
        if path != f.state.path:
            f.state = replace(f.state, path=path)
            events.append("renamed")
            self.stats.rotations += 1
        changed = (st.st_size, st.st_mtime_ns) != (f.size, f.mtime_ns)
        f.size, f.mtime_ns = st.st_size, st.st_mtime_ns
        if verify or changed or events:
            fd = self._fd(f)
            if fd is None:
                return
            a = f.state.anchor
            ok = a.offset == 0 or a.holds(fd, st.st_size)
            if not ok:  # truncated, or rewritten in place: retire the old prefix, start over
                ghost = self._ghost(f.state, now)
                self.stats.truncations += 1
                f.state = replace(f.state, anchor=Anchor.of(fd, 0, 0), generation=f.state.generation + 1)
                f.cutter.reset(0)
                f.read_pos = 0
                f.decoder = f.decoder.restarted() if f.decoder is not None else None
                yield Batch(f.state, events=(*events, "truncated"), retired=(ghost,))
                return
        if events:
            yield Batch(f.state, events=tuple(events))

    def _adopt(self, key: str, path: str, st: os.stat_result, now: float) -> Iterator[Batch]:
        """A (device, inode) not seen before: a copy of a retired prefix, a copy of a live file
        (shadow), or a new file read from its start."""
        fd = _open_regular(path)
        if fd is None:
            return
        size = os.fstat(fd).st_size
        job = job_id_from_name(path)
        if self._is_compressed_rotation(fd):
            os.close(fd)
            self.stats.copies += 1
            self._skipped.add(key)
            return
        for gkey, g in list(self._ghosts.items()):
            if g.anchor.is_prefix_of(fd, size):
                del self._ghosts[gkey]
                self.stats.copies += 1
                state = FileState(key, st.st_dev, st.st_ino, path, g.job_id, g.anchor.advance(fd, g.anchor.offset, size))
                self._files[key] = self._new(state, fd, st, now)
                yield Batch(state, events=("copy",), forget=(gkey,))
                return
        for _okey, other in self._files.items():
            if other.state.status == "active" and other.fd is not None and _is_copy(other, fd, size):
                state = FileState(key, st.st_dev, st.st_ino, path, other.state.job_id,
                                  Anchor.of(fd, 0, size), status="shadow", shadow_of=_ghost_key(other.state))  # fmt: skip
                self._files[key] = self._new(state, fd, st, now)
                self.stats.shadows += 1
                yield Batch(state, events=("shadow",))
                return
        state = FileState(key, st.st_dev, st.st_ino, path, job, Anchor.of(fd, 0, size))
        self._files[key] = self._new(state, fd, st, now)
        self._evict()
        yield Batch(state, events=("new",))

    def _is_compressed_rotation(self, fd: int) -> bool:
        """A compressed file whose decoded head is the head of a file already followed (live or
        retired): a rotation compressed by logrotate, whose lines were read while it was plain."""
        head = pread_exact(fd, _SNIFF_BYTES, 0)
        dec = StreamDecoder.sniff(head)
        if dec.compression is None or dec.unreadable:
            return False
        text = dec.feed(head)
        known = [g.anchor for g in self._ghosts.values()] + [f.state.anchor for f in self._files.values()]
        return any(a.head_len >= MIN_HEAD_BYTES and len(text) >= a.head_len and digest(text[: a.head_len]) == a.head
                   for a in known)  # fmt: skip

    def _resolve_shadow(self, key: str, f: _File, entry: _Entry | None, now: float) -> Iterator[Batch]:
        """A shadow becomes readable once its original retired: at the original's consumed
        offset when it holds that prefix (copytruncate), else from its start."""
        target = f.state.shadow_of or ""
        _, dev, ino, gen = (target.split(":") + ["", "", "", ""])[:4]
        original = self._files.get(f"{dev}:{ino}")
        if entry is not None and original is not None and str(original.state.generation) == gen:
            return  # the original is still live: its reader has these bytes
        if entry is None:
            self._close(f)
            del self._files[key]
            yield Batch(replace(f.state, status="ghost", retired_at=now), forget=(key,), events=("deleted",))
            return
        fd = self._fd(f)
        if fd is None:
            return
        f.size = os.fstat(fd).st_size  # fresh: the listing may predate the end of the copy
        start: int = 0
        forget: tuple[str, ...] = ()
        ghost = self._ghosts.get(target)
        if ghost is not None and ghost.anchor.is_prefix_of(fd, f.size):
            start, forget = ghost.anchor.offset, (target,)
            del self._ghosts[target]
        f.state = replace(f.state, status="active", shadow_of=None, anchor=f.state.anchor.advance(fd, start, f.size))
        f.cutter.reset(start)
        f.read_pos = start
        self.stats.copies += 1
        yield Batch(f.state, events=("copy",), forget=forget)

    # -- reading ----------------------------------------------------------------------------

    def _read_all(self, now: float) -> Iterator[Batch]:
        budget = self.config.poll_budget
        keys = [k for k, f in self._files.items() if f.state.status == "active"]
        if keys:
            self._rr = (self._rr + 1) % len(keys)
            keys = keys[self._rr :] + keys[: self._rr]
            # a file gone from the directory first: its unread bytes live only behind our descriptor,
            # so a crash (or an eviction) before they are read loses them; a live file can wait
            keys.sort(key=lambda k: not self._files[k].draining)
        for key in keys:
            f = self._files.get(key)
            if f is None or budget <= 0:
                continue
            if f.draining and f.fd is not None:
                f.size = os.fstat(f.fd).st_size
            if f.size > f.read_pos:
                got = 0
                for batch in self._read(f, min(self.config.file_budget, budget), now):
                    got += batch.nbytes
                    yield batch
                budget -= got
            if f.draining and f.read_pos >= f.size:
                yield from self._retire(key, f, now, "deleted")

    def _read(self, f: _File, budget: int, now: float) -> Iterator[Batch]:
        fd = self._fd(f)
        if fd is None:
            return
        dec = self._decoder(f, fd)
        if dec is None:
            return
        if dec.unreadable:  # never read as lines: said once, no lag counted
            f.read_pos = f.size
            yield Batch(f.state, events=("unreadable",), unreadable=f"unreadable: {dec.unreadable}")
            return
        cfg = self.config
        while budget > 0 and f.read_pos < f.size:
            lines, nbytes = [], 0
            while nbytes < cfg.batch_bytes and budget > 0 and f.read_pos < f.size:
                want = min(cfg.chunk_bytes, budget, f.size - f.read_pos)
                chunk = os.pread(fd, want, f.read_pos)
                if not chunk:
                    f.size = f.read_pos
                    break
                lines.extend(f.cutter.feed(dec.feed(chunk) if dec.transforms else chunk))
                f.read_pos += len(chunk)
                nbytes += len(chunk)
                budget -= len(chunk)
            if nbytes == 0:
                return
            f.last_read = now
            commit = self._clean_offset(f, dec) if dec.transforms else (f.cutter.start if lines else None)
            if commit is not None:
                f.state = replace(f.state, anchor=f.state.anchor.advance(fd, commit, max(f.size, f.read_pos)))
            self.stats.bytes_read += nbytes
            self.stats.lines += len(lines)
            yield Batch(f.state, lines, nbytes=nbytes)

    def _decoder(self, f: _File, fd: int) -> StreamDecoder | None:
        """How the file is read, decided once from its first bytes; a decoded file resumed at an
        offset restarts its codec there (a compressed one from its start: see the module doc)."""
        if f.decoder is None:
            head = pread_exact(fd, _SNIFF_BYTES, 0)
            if not head:
                return None
            f.decoder = StreamDecoder.sniff(head)
            if f.decoder.transforms and f.read_pos > 0:
                if f.decoder.compression is not None:
                    if f.read_pos < f.size:
                        f.read_pos = 0
                        f.cutter.reset(0)
                else:
                    f.decoder.feed(head[: _bom_len(head)])  # the codec reads its BOM, then goes on
        return f.decoder

    @staticmethod
    def _clean_offset(f: _File, dec: StreamDecoder) -> int | None:
        """The raw offset to commit for a decoded file: where no line and no codec bytes are
        pending (a restart resumes exactly there); None when this read did not end at one."""
        if f.cutter.pending_bytes or not dec.at_rest():
            return None
        return f.read_pos

    def _retire(self, key: str, f: _File, now: float, event: Event) -> Iterator[Batch]:
        self._close(f)
        del self._files[key]
        self.stats.deletions += 1
        ghost = self._ghost(f.state, now)
        yield Batch(None, events=(event,), forget=(key,), retired=(ghost,))

    # -- helpers ----------------------------------------------------------------------------

    def _ghost(self, state: FileState, now: float) -> FileState:
        ghost = replace(state, status="ghost", retired_at=now)
        ghost = replace(ghost, key=_ghost_key(ghost))
        if ghost.anchor.head_len >= MIN_HEAD_BYTES and ghost.anchor.offset > 0:
            self._ghosts[ghost.key] = ghost
        return ghost

    def _new(self, state: FileState, fd: int, st: os.stat_result, now: float) -> _File:
        f = _File(state, LineCutter(self.config.max_line_bytes, state.anchor.offset), state.anchor.offset, fd,
                  st.st_size, st.st_mtime_ns, now)  # fmt: skip
        return f

    def _fd(self, f: _File) -> int | None:
        """The file's descriptor, reopened by path (and checked to be the same inode) if closed."""
        if f.fd is not None:
            return f.fd
        fd = _open_regular(f.state.path)
        if fd is None:
            return None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (f.state.dev, f.state.ino):
            os.close(fd)
            return None
        f.fd = fd
        self._evict()
        return fd

    def _evict(self) -> None:
        open_files = [f for f in self._files.values() if f.fd is not None and not f.draining]
        excess = len(open_files) - self.config.max_open_files
        if excess > 0:
            for f in sorted(open_files, key=lambda f: f.last_read)[:excess]:
                self._close(f)

    def _close(self, f: _File) -> None:
        if f.fd is not None:
            os.close(f.fd)
            f.fd = None

    def _lag(self) -> None:
        by_job: dict[str, int] = {}
        for f in self._files.values():
            if f.state.status == "active":
                by_job[f.state.job_id] = by_job.get(f.state.job_id, 0) + max(0, f.size - f.read_pos)
        self.stats.files = len(self._files)
        self.stats.lag_by_job = by_job
        self.stats.lag_bytes = sum(by_job.values())


def _open_regular(path: str) -> int | None:
    """A read descriptor for a regular file, or None. O_NONBLOCK: a path swapped for a FIFO
    between the listing and the open must not block the daemon; symlinks are not followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _ghost_key(state: FileState) -> str:
    return f"ghost:{state.dev}:{state.ino}:{state.generation}"


def _is_copy(other: _File, fd: int, size: int) -> bool:
    """Whether the file at `fd` holds a prefix of `other`'s consumed content: a copy made while
    it was being read (head, and the bytes before the shorter of the two offsets, agree)."""
    a = other.state.anchor
    if a.head_len < MIN_HEAD_BYTES or not a.head_matches(fd, size) or other.fd is None:
        return False
    if size >= a.offset:
        return a.is_prefix_of(fd, size)
    if size == 0:
        return False
    n = min(256, size)
    return pread_exact(fd, n, size - n) == pread_exact(other.fd, n, size - n)


def _bom_len(head: bytes) -> int:
    """Bytes of a UTF-16/32 byte-order mark at the start of `head` (0 without one)."""
    for bom in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff", b"\xff\xfe", b"\xfe\xff"):
        if head.startswith(bom):
            return len(bom)
    return 0
