"""Repository tools for the Metadata Extractor: a filtered file tree and a bounded file reader.

Both are bound to ONE job repository (`RepoSandbox`) and can never see anything outside it:

* a path is taken relative to the repository root; a `..` component is refused outright, an
  absolute path only if it lies inside the root; the path is then resolved (following symlinks)
  and must still be inside the root, so a symlink pointing outside is refused too;
* the file is opened without following a final symlink and re-checked by inode after opening
  (a swap between the check and the open is detected);
* only regular text files are read (NUL bytes in the first 8 kB = binary), at most
  `max_file_bytes` of them, and one call returns at most `max_read_chars` characters
  (`start_line` / `end_line` page through longer files).

`file_tree` hides what an extractor should not spend steps on: VCS folders, caches, virtualenvs,
data, checkpoints and run folders, binaries and large files; depth and entry count are capped.

Every text a tool returns is recorded in `RepoSandbox.observations` (path -> text shown), so the
agent's answer can be checked against what it actually read.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, create_model

from schedmate.errors import BadInput

__all__ = [
    "BINARY_SUFFIXES",
    "NOISE_DIRS",
    "SKIP_DIRS",
    "FileReadArgs",
    "FileTreeArgs",
    "RepoSandbox",
    "SandboxError",
    "make_repo_tools",
]

SKIP_DIRS = frozenset({  # never listed
    ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".env", "node_modules", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".idea", ".vscode", ".ipynb_checkpoints", ".tox", ".cache",
})
NOISE_DIRS = frozenset({  # data / checkpoints / run folders: listed only when they are a Python package
    "data", "datasets", "dataset_cache", "checkpoints", "ckpt", "ckpts", "outputs", "output", "wandb", "runs",
    "mlruns", "lightning_logs", "logs", "tensorboard", "tb_logs", "multirun", "results", "artifacts", "env",
})
BINARY_SUFFIXES = frozenset({
    ".pt", ".pth", ".bin", ".ckpt", ".safetensors", ".npz", ".npy", ".arrow", ".parquet", ".tar", ".gz", ".tgz",
    ".zip", ".bz2", ".xz", ".7z", ".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".nii",
    ".idx", ".pyc", ".pyo", ".so", ".o", ".a", ".dll", ".dylib", ".wandb", ".h5", ".hdf5", ".onnx", ".pkl",
    ".pickle", ".whl", ".egg", ".mp4", ".wav", ".mp3", ".flac", ".pdf", ".tfrecord", ".lmdb", ".mdb", ".db",
    ".sqlite", ".index", ".data-00000-of-00001", ".engine", ".trt", ".exe",
})
SNIFF_BYTES = 8192


class SandboxError(BadInput):
    """The path is outside the repository, not a readable text file, or otherwise refused."""


class FileTreeArgs(BaseModel):
    path: str = Field(".", description="folder to list, relative to the repository root ('.' = root)")
    max_depth: int = Field(4, description="how many folder levels to show (1-8)")


class FileReadArgs(BaseModel):
    # No numeric bounds in the schema: grammar-constrained small models ignore them; values are
    # clamped by the tool instead of failing validation.
    path: str = Field(description="file to read, relative to the repository root, e.g. configs/train.yaml")
    start_line: int = Field(1, description="first line to return (1-based)")
    end_line: int | None = Field(None, description="last line to return (inclusive); default: as many as fit")


@dataclass
class RepoSandbox:
    """One repository, the only place the tools may look. Thread-safe bookkeeping."""

    root: Path
    max_read_chars: int = 6000
    max_file_bytes: int = 1_000_000
    max_tree_entries: int = 200
    max_tree_chars: int = 6000
    large_file_bytes: int = 512_000
    skip_dirs: frozenset[str] = SKIP_DIRS
    noise_dirs: frozenset[str] = NOISE_DIRS
    observations: dict[str, list[str]] = field(default_factory=dict)
    calls: list[tuple[str, str, bool]] = field(default_factory=list)  # (tool, path, ok)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        root = Path(self.root)
        if not root.is_dir():
            raise SandboxError(f"repository root {root} is not a directory")
        self.root = root.resolve(strict=True)

    # ------------------------------------------------------------------ path checks

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real path of `path` inside the root; raises SandboxError for anything outside it."""
        text = os.fspath(path).strip()
        if "\x00" in text:
            raise SandboxError("path contains a NUL byte")
        if text in ("", "/"):
            text = "." if text == "" else text
        parts = PurePosixPath(text.replace("\\", "/")).parts
        if ".." in parts:
            raise SandboxError(f"'..' is not allowed in paths: {text!r}")
        candidate = Path(text)
        if candidate.is_absolute():
            try:
                candidate.relative_to(self.root)
            except ValueError:
                raise SandboxError(f"absolute path outside the repository: {text!r}") from None
        else:
            candidate = self.root / candidate
        try:
            real = candidate.resolve(strict=True)
        except FileNotFoundError:
            raise SandboxError(f"no such file or folder in the repository: {text!r}") from None
        except (OSError, RuntimeError) as exc:  # symlink loop, permission
            raise SandboxError(f"cannot resolve {text!r}: {exc}") from None
        if real != self.root and not real.is_relative_to(self.root):
            raise SandboxError(f"{text!r} resolves outside the repository (symlink?)")
        return real

    def rel(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    # ------------------------------------------------------------------ file_read

    def read(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        """Lines `start_line..end_line` of a text file, cut to `max_read_chars` (with a paging note)."""
        if start_line < 1 or (end_line is not None and end_line < start_line):
            raise SandboxError(f"bad line range {start_line}..{end_line}")
        real = self.resolve(path)
        rel = self.rel(real)
        data = self._read_bytes(real, rel)
        if b"\x00" in data[:SNIFF_BYTES]:
            raise SandboxError(f"{rel} is a binary file")
        lines = data.decode("utf-8", errors="replace").splitlines()
        total = len(lines)
        last = total if end_line is None else min(end_line, total)
        out: list[str] = []
        used = 0
        shown_to = start_line - 1
        for no in range(start_line, last + 1):
            line = lines[no - 1]
            piece = f"{line}\n"
            if used + len(piece) > self.max_read_chars and out:
                break
            out.append(piece[: self.max_read_chars])
            used += len(piece)
            shown_to = no
        body = "".join(out)
        if start_line > total:
            note = f"[{rel}: {total} lines; nothing at line {start_line}]"
        elif shown_to < total:
            note = f"[{rel}: lines {start_line}-{shown_to} of {total}; call again with start_line={shown_to + 1}]"
        else:
            note = f"[{rel}: lines {start_line}-{shown_to} of {total}]"
        self._observe("file_read", rel, body)
        return f"{note}\n{body}" if body else note

    def _read_bytes(self, real: Path, rel: str) -> bytes:
        before = os.stat(real)
        if not stat.S_ISREG(before.st_mode):
            raise SandboxError(f"{rel} is not a regular file")
        if before.st_size > self.max_file_bytes:
            raise SandboxError(f"{rel} is too large ({before.st_size} bytes > {self.max_file_bytes})")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(real, flags)
        except OSError as exc:
            raise SandboxError(f"cannot open {rel}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as fh:
            after = os.fstat(fh.fileno())
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(after.st_mode):
                raise SandboxError(f"{rel} changed while being opened")
            return fh.read(self.max_file_bytes + 1)[: self.max_file_bytes]

    # ------------------------------------------------------------------ file_tree

    def tree(self, path: str = ".", max_depth: int = 4) -> str:
        """An indented listing of text files under `path`, noise filtered, bounded."""
        real = self.resolve(path)
        rel = self.rel(real)
        if not real.is_dir():
            raise SandboxError(f"{rel} is not a folder (use file_read)")
        lines: list[str] = []
        skipped: dict[str, int] = {}
        truncated = False

        def skip(kind: str) -> None:
            skipped[kind] = skipped.get(kind, 0) + 1

        def walk(folder: Path, depth: int) -> None:
            nonlocal truncated
            try:
                entries = sorted(os.scandir(folder), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
            except OSError:
                return
            for entry in entries:
                if len(lines) >= self.max_tree_entries:
                    truncated = True
                    return
                pad = "  " * depth
                p = Path(entry.path)
                if entry.is_symlink():
                    try:
                        target = p.resolve(strict=True)
                    except (OSError, RuntimeError):
                        skip("broken links")
                        continue
                    if not target.is_relative_to(self.root):
                        skip("links outside the repository")
                        continue
                    if target.is_dir():
                        skip("linked folders")
                        continue
                if entry.is_dir(follow_symlinks=False):
                    noise = entry.name in self.noise_dirs and not (p / "__init__.py").is_file()
                    if noise or entry.name in self.skip_dirs or entry.name.endswith((".egg-info", ".dist-info")):
                        skip(f"{entry.name}/")
                        continue
                    lines.append(f"{pad}{entry.name}/")
                    if depth + 1 < max_depth:
                        walk(p, depth + 1)
                    continue
                if not entry.is_file():
                    continue
                suffix = p.suffix.lower()
                if suffix in BINARY_SUFFIXES or entry.name.endswith(".tar.gz"):
                    skip("binary files")
                    continue
                try:
                    size = entry.stat().st_size
                except OSError:
                    continue
                if size > self.large_file_bytes:
                    skip("large files")
                    continue
                if not suffix and _looks_binary(p):
                    skip("binary files")
                    continue
                lines.append(f"{pad}{entry.name} ({_human(size)})")

        walk(real, 0)
        head = f"[{rel}/] {len(lines)} entries"
        if skipped:
            head += "; hidden: " + ", ".join(f"{k} x{v}" if not k.endswith("/") else k for k, v in sorted(skipped.items()))
        text = head + "\n" + "\n".join(lines)
        if truncated or len(text) > self.max_tree_chars:
            text = text[: self.max_tree_chars].rsplit("\n", 1)[0] + "\n[... truncated: list a sub-folder for more]"
        self._observe("file_tree", rel, text)
        return text

    def list_files(self, limit: int = 150) -> list[str]:
        """Repository-relative paths of the text files `file_tree` would show (same filters)."""
        out: list[str] = []
        stack = [self.root]
        while stack and len(out) < limit:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            for entry in entries:
                p = Path(entry.path)
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    noise = entry.name in self.noise_dirs and not (p / "__init__.py").is_file()
                    if not (noise or entry.name in self.skip_dirs or entry.name.endswith((".egg-info", ".dist-info"))):
                        stack.append(p)
                    continue
                if not entry.is_file() or p.suffix.lower() in BINARY_SUFFIXES:
                    continue
                try:
                    if entry.stat().st_size > self.large_file_bytes:
                        continue
                except OSError:
                    continue
                if not p.suffix and _looks_binary(p):
                    continue
                out.append(self.rel(p))
        return sorted(out)[:limit]

    # ------------------------------------------------------------------ bookkeeping

    def _observe(self, tool: str, rel: str, text: str) -> None:
        with self._lock:
            self.observations.setdefault(rel, []).append(text)
            self.calls.append((tool, rel, True))

    def record_failure(self, tool: str, path: str) -> None:
        with self._lock:
            self.calls.append((tool, path, False))

    def observed_text(self) -> str:
        """Everything the tools have shown so far (for literal checks)."""
        with self._lock:
            return "\n".join(t for texts in self.observations.values() for t in texts)

    def files_read(self) -> list[str]:
        with self._lock:
            return [p for tool, p, ok in self.calls if tool == "file_read" and ok]


def _looks_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return b"\x00" in fh.read(1024)
    except OSError:
        return True


def _human(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} kB"
    return f"{size / 1024 / 1024:.1f} MB"


def make_repo_tools(sandbox: RepoSandbox, *, path_choices: bool = False) -> list[BaseTool]:
    """`file_tree` and `file_read` LangChain tools bound to `sandbox` (errors become observations).

    `path_choices=True` makes `file_read`'s `path` an enum of the repository's (filtered) text
    files: a grammar-constrained small model can then only name files that exist. The sandbox
    checks every path either way.
    """

    def file_tree(path: str = ".", max_depth: int = 4) -> str:
        try:
            return sandbox.tree(path, min(8, max(1, int(max_depth))))
        except SandboxError as exc:
            sandbox.record_failure("file_tree", path)
            return f"error: {exc}"

    def file_read(path: str, start_line: int = 1, end_line: int | None = None) -> str:
        start = max(1, int(start_line or 1))
        end = None if end_line is None or int(end_line) < start else int(end_line)
        try:
            return sandbox.read(path, start, end)
        except SandboxError as exc:
            sandbox.record_failure("file_read", path)
            return f"error: {exc}"

    read_schema: type[BaseModel] = FileReadArgs
    tree_schema: type[BaseModel] = FileTreeArgs
    if path_choices:
        files = sandbox.list_files()
        if 0 < len(files) <= 150:
            read_schema = create_model(
                "FileReadArgs",
                path=(Literal[tuple(files)], Field(description="file to read, relative to the repository root")),  # type: ignore[arg-type]  # a Literal built at run time
                start_line=(int, Field(1, description="first line to return (1-based)")),
                end_line=(int | None, Field(None, description="last line to return (inclusive)")),
            )
            dirs = sorted({"."} | {f.rsplit("/", 1)[0] for f in files if "/" in f})
            tree_schema = create_model(
                "FileTreeArgs",
                path=(Literal[tuple(dirs)], Field(".", description="folder to list ('.' = repository root)")),  # type: ignore[arg-type]  # a Literal built at run time
                max_depth=(int, Field(4, description="how many folder levels to show (1-8)")),
            )
    tree_tool = StructuredTool.from_function(
        file_tree, name="file_tree", args_schema=tree_schema,
        description=("List the job repository's files (filtered: no .git, data, checkpoints, binaries or large "
                     "files). Start here to find training scripts, configs and launch scripts."),
    )
    read_tool = StructuredTool.from_function(
        file_read, name="file_read", args_schema=read_schema,
        description=("Read a text file of the job repository (path relative to the repository root). Long files "
                     "are cut; use start_line to read further."),
    )
    return [tree_tool, read_tool]
