"""Repository tools of the Metadata Extractor: filtered tree, bounded reads, and the sandbox.

The sandbox tests build real files and symlinks in tmp_path: every way out of the repository
(`..`, absolute paths, symlinked files and folders pointing outside) must be refused, while paths
that merely look odd but stay inside (absolute paths into the repo, internal symlinks) work.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schedmate.agents.advisor.tools import RepoSandbox, SandboxError, make_repo_tools


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "train.yaml").write_text("model: resnet50\nbatch_size: 64\n")
    (root / "train.py").write_text("".join(f"line {i}\n" for i in range(1, 501)))
    (root / "README.md").write_text("# project\n")
    for noise in (".git/objects/ab", "data/imagenet", "checkpoints", "__pycache__", "wandb/run-1/files"):
        (root / noise).mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "data" / "imagenet" / "labels.txt").write_text("cat\n")
    (root / "checkpoints" / "latest").write_text("ckpt.pth\n")
    (root / "wandb" / "run-1" / "files" / "config.yaml").write_text("lr: 1\n")
    (root / "weights.pth").write_bytes(b"PK\x03\x04" + bytes(100))
    (root / "blob").write_bytes(b"\x00\x01\x02binary")
    (root / "big.txt").write_text("x" * 600_000)
    (root / "__pycache__" / "train.cpython-310.pyc").write_bytes(b"\x00" * 10)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "token.txt").write_text("SECRET-TOKEN\n")
    return secret


# ----------------------------------------------------------------------------------------- file_tree


def test_tree_hides_noise_and_shows_code(repo: Path) -> None:
    text = RepoSandbox(repo).tree()
    for shown in ("configs/", "train.yaml", "train.py", "README.md"):
        assert shown in text
    for hidden in ("objects", "imagenet", "latest", "weights.pth", "blob", "big.txt", ".pyc", "run-1"):
        assert hidden not in text
    assert "hidden:" in text and ".git/" in text and "data/" in text and "checkpoints/" in text


def test_tree_lists_a_data_package_with_code(repo: Path) -> None:
    (repo / "data" / "__init__.py").write_text("")
    (repo / "data" / "loader.py").write_text("def load(): ...\n")
    text = RepoSandbox(repo).tree()
    assert "loader.py" in text


def test_tree_is_bounded(repo: Path) -> None:
    for i in range(300):
        (repo / "configs" / f"exp{i:03d}.yaml").write_text("a: 1\n")
    sandbox = RepoSandbox(repo, max_tree_entries=50, max_tree_chars=2000)
    text = sandbox.tree()
    assert len(text) <= 2100
    assert "truncated" in text


def test_tree_depth_limit(repo: Path) -> None:
    deep = repo / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "deep.py").write_text("x = 1\n")
    assert "deep.py" not in RepoSandbox(repo).tree(max_depth=2)
    assert "deep.py" in RepoSandbox(repo).tree(max_depth=4)


# ----------------------------------------------------------------------------------------- file_read


def test_read_line_range_and_paging(repo: Path) -> None:
    sandbox = RepoSandbox(repo, max_read_chars=200)
    text = sandbox.read("train.py", start_line=10, end_line=12)
    assert "line 10\nline 11\nline 12\n" in text and "line 13" not in text
    first = sandbox.read("train.py")
    assert len(first) < 300 and "call again with start_line=" in first
    nxt = int(first.split("start_line=")[1].split("]")[0])
    assert f"line {nxt}\n" in sandbox.read("train.py", start_line=nxt)
    assert "nothing at line 9999" in sandbox.read("train.py", start_line=9999)


def test_read_refuses_binaries_and_large_files(repo: Path) -> None:
    sandbox = RepoSandbox(repo, max_file_bytes=100_000)
    with pytest.raises(SandboxError, match="binary"):
        sandbox.read("blob")
    with pytest.raises(SandboxError, match="too large"):
        sandbox.read("big.txt")
    with pytest.raises(SandboxError, match="not a regular file"):
        sandbox.read("configs")
    with pytest.raises(SandboxError, match="no such file"):
        sandbox.read("nope.py")


def test_read_records_observations(repo: Path) -> None:
    sandbox = RepoSandbox(repo)
    sandbox.read("configs/train.yaml")
    assert "batch_size: 64" in sandbox.observed_text()
    assert sandbox.files_read() == ["configs/train.yaml"]


# ----------------------------------------------------------------------------------------- sandbox


@pytest.mark.parametrize("path", ["../secret/token.txt", "configs/../../secret/token.txt", "..", "configs/..",
                                  "..\\secret\\token.txt"])
def test_dotdot_is_rejected(repo: Path, outside: Path, path: str) -> None:
    with pytest.raises(SandboxError, match=r"'\.\.'"):
        RepoSandbox(repo).read(path)


def test_absolute_path_outside_is_rejected(repo: Path, outside: Path) -> None:
    sandbox = RepoSandbox(repo)
    with pytest.raises(SandboxError, match="outside"):
        sandbox.read(str(outside / "token.txt"))
    with pytest.raises(SandboxError, match="outside"):
        sandbox.read("/etc/passwd")
    with pytest.raises(SandboxError, match="outside"):
        sandbox.tree("/")


def test_absolute_path_inside_is_allowed(repo: Path) -> None:
    assert "batch_size: 64" in RepoSandbox(repo).read(str(repo / "configs" / "train.yaml"))


def test_symlinked_file_pointing_outside_is_rejected(repo: Path, outside: Path) -> None:
    os.symlink(outside / "token.txt", repo / "innocent.txt")
    sandbox = RepoSandbox(repo)
    with pytest.raises(SandboxError, match="outside"):
        sandbox.read("innocent.txt")
    assert "innocent.txt" not in sandbox.tree()


def test_symlinked_folder_pointing_outside_is_rejected(repo: Path, outside: Path) -> None:
    os.symlink(outside, repo / "configs" / "shared")
    sandbox = RepoSandbox(repo)
    with pytest.raises(SandboxError, match="outside"):
        sandbox.read("configs/shared/token.txt")
    with pytest.raises(SandboxError, match="outside"):
        sandbox.tree("configs/shared")
    assert "shared" not in sandbox.tree()
    assert "SECRET" not in sandbox.observed_text()


def test_symlink_loop_and_broken_link(repo: Path) -> None:
    os.symlink(repo / "loop_a", repo / "loop_b")
    os.symlink(repo / "loop_b", repo / "loop_a")
    os.symlink(repo / "missing.txt", repo / "dangling.txt")
    sandbox = RepoSandbox(repo)
    for path in ("loop_a", "dangling.txt"):
        with pytest.raises(SandboxError):
            sandbox.read(path)
    sandbox.tree()  # must not hang or raise


def test_internal_symlink_is_followed(repo: Path) -> None:
    os.symlink(repo / "configs" / "train.yaml", repo / "current.yaml")
    assert "resnet50" in RepoSandbox(repo).read("current.yaml")


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SandboxError):
        RepoSandbox(tmp_path / "missing")


# ----------------------------------------------------------------------------------------- LangChain tools


def test_tools_return_errors_as_observations(repo: Path, outside: Path) -> None:
    sandbox = RepoSandbox(repo)
    tree, read = make_repo_tools(sandbox)
    assert tree.name == "file_tree" and read.name == "file_read"
    assert read.invoke({"path": "../secret/token.txt"}).startswith("error:")
    assert read.invoke({"path": str(outside / "token.txt")}).startswith("error:")
    assert "SECRET" not in sandbox.observed_text()
    assert "resnet50" in read.invoke({"path": "configs/train.yaml", "start_line": 1, "end_line": 1})
    assert read.invoke({"path": "train.py", "start_line": -5, "end_line": 2}).count("line ") == 2  # clamped
    assert "train.py" in tree.invoke({"path": ".", "max_depth": 99})  # clamped, not a validation error
    assert ("file_read", "../secret/token.txt", False) in sandbox.calls


def test_path_choices_constrain_the_schema_to_repository_files(repo: Path) -> None:
    _, read = make_repo_tools(RepoSandbox(repo), path_choices=True)
    enum = read.args_schema.model_json_schema()["properties"]["path"]["enum"]  # type: ignore[union-attr]
    assert "configs/train.yaml" in enum and "train.py" in enum
    assert not any(p.startswith((".git", "data/", "checkpoints", "wandb")) or p.endswith(".pth") for p in enum)
