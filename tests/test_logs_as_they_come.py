"""Logs as they come (issue 27): compressed and UTF-16/32 logs are read, anything unreadable is
said plainly (`unreadable: encoding`), never "no failure found", and a capped line is said.

The same traceback is written plain, gzip/bz2/xz-compressed, in UTF-16 (with and without a BOM)
and UTF-32; every form must give the same root-cause line through the CLI and the service.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.logfile import detect_encoding, readable_log

runner = CliRunner()
TRACEBACK = ("iteration 10 | loss 2.31\n" * 20 + "Traceback (most recent call last):\n"
             '  File "train.py", line 41, in <module>\n    label = batch["label"]\nKeyError: \'label\'\n')

FORMS = {
    "plain.log": TRACEBACK.encode(),
    "utf16-bom.log": TRACEBACK.encode("utf-16"),
    "utf16le-nobom.log": TRACEBACK.encode("utf-16-le"),
    "utf16be-nobom.log": TRACEBACK.encode("utf-16-be"),
    "utf32.log": TRACEBACK.encode("utf-32"),
    "job.log.gz": gzip.compress(TRACEBACK.encode()),
    "job.log.bz2": bz2.compress(TRACEBACK.encode()),
    "job.log.xz": lzma.compress(TRACEBACK.encode()),
    "utf16.log.gz": gzip.compress(TRACEBACK.encode("utf-16")),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_form_reads_as_the_same_text(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    f.write_bytes(FORMS[name])
    with readable_log(f) as view:
        assert view.unreadable is None
        assert view.path.read_text(encoding="utf-8") == TRACEBACK
        assert view.converted == (name != "plain.log")
    assert not view.path.exists() or not view.converted  # the decoded copy is removed


def test_binary_data_is_unreadable_encoding(tmp_path: Path) -> None:
    f = tmp_path / "core.log"
    f.write_bytes(bytes(range(256)) * 64)
    with readable_log(f) as view:
        assert view.status_message().startswith("unreadable: encoding (binary data")


def test_unsupported_or_corrupt_compression_is_said(tmp_path: Path) -> None:
    zst = tmp_path / "job.log.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(100))
    with readable_log(zst) as view:
        assert view.status_message() == "unreadable: compression (zstd is not read; decompress the log first)"
    cut = tmp_path / "cut.log.gz"
    whole = gzip.compress((TRACEBACK * 2000).encode())
    cut.write_bytes(whole[: len(whole) // 2])
    with readable_log(cut) as view:  # a truncated rotation: what decompressed is read, and said
        assert view.unreadable is None and any("breaks off" in n for n in view.notes)


def test_latin1_accents_are_still_text() -> None:
    assert detect_encoding("Epoch 1: Genauigkeit 0.93 (Übung)\n".encode("latin-1") * 50) == "utf-8"


def test_a_capped_line_is_said(tmp_path: Path) -> None:
    f = tmp_path / "one-line.log"
    f.write_bytes(b"x" * 2_000_000)
    with readable_log(f) as view:
        assert view.notes == ["the log holds a line of 2,000,000 bytes: lines are read up to their first 8,000 "
                              "bytes (capped), so a failure past that point of the line is not seen"]


def test_decoded_copy_keeps_the_logs_end_within_the_cap(tmp_path: Path) -> None:
    f = tmp_path / "big.log.gz"
    f.write_bytes(gzip.compress(b"filler line\n" * 20000 + TRACEBACK.encode()))
    with readable_log(f, max_bytes=50_000) as view:
        text = view.path.read_text()
        assert len(text) <= 50_000 and text.endswith("KeyError: 'label'\n")
        assert any("its last 50,000 are read" in n for n in view.notes)


# ------------------------------------------------------------------------------------------ surfaces


@pytest.mark.parametrize("name", ["utf16-bom.log", "job.log.gz", "utf32.log"])
def test_cli_diagnose_finds_the_traceback_in_every_form(tmp_path: Path, name: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("SCHEDMATE_HOME", str(tmp_path / "home"))
    f = tmp_path / name
    f.write_bytes(FORMS[name])
    res = runner.invoke(app, ["diagnose", str(f), "--method", "rules", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["status"] == "failure_found" and got["line_text"] == "KeyError: 'label'" and got["log"] == str(f)
    assert any(n.startswith("log read") for n in got["notes"])


def test_cli_says_unreadable_never_no_failure_found(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SCHEDMATE_HOME", str(tmp_path / "home"))
    f = tmp_path / "core.log"
    f.write_bytes(bytes(range(256)) * 64)
    for cmd in (["diagnose", str(f), "--method", "rules"], ["track", str(f)]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2 and "unreadable: encoding" in res.output and "no failure" not in res.output


def test_cli_track_reads_a_gzipped_log(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SCHEDMATE_HOME", str(tmp_path / "home"))
    lines = "".join(f"iteration {i:>6}/ 1000 | elapsed time per iteration (ms): 500.0 | lm loss: 2.5E+00 |\n"
                    for i in range(1, 40))
    f = tmp_path / "train.log.gz"
    f.write_bytes(gzip.compress(lines.encode("utf-16")))
    res = runner.invoke(app, ["track", str(f), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["signal"] is True and got["step_time"]["value"] == pytest.approx(0.5)
    assert got["notes"] == ["log read gzip-decompressed and decoded from utf-16"]


def test_service_diagnose_reads_utf16_and_says_unreadable(classifier: Any, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from schedmate.deploy.service import ServiceConfig, create_app
    from schedmate.deploy.service.core import ServiceCore

    (tmp_path / "u16.log").write_bytes(FORMS["utf16-bom.log"])
    (tmp_path / "job.log.gz").write_bytes(FORMS["job.log.gz"])
    (tmp_path / "core.log").write_bytes(bytes(range(256)) * 64)
    config = ServiceConfig(allowed_roots=(tmp_path,))
    core = ServiceCore(config, classifier=classifier)
    core.load()
    with TestClient(create_app(config, core)) as c:
        for name in ("u16.log", "job.log.gz"):
            got = c.post("/v1/diagnose", json={"log": str(tmp_path / name)}).json()
            assert got["status"] == "failure_found" and got["root_cause"].startswith("KeyError"), got
            assert any(n.startswith("log read") for n in got["degraded"])
        got = c.post("/v1/diagnose", json={"log": str(tmp_path / "core.log")}).json()
        assert got["status"] == "unreadable" and got["message"].startswith("unreadable: encoding")
        assert got["fallback"] == "scheduler-default"


def test_service_track_reads_compressed_and_utf16_logs_and_says_unreadable(classifier: Any, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from schedmate.deploy.service import ServiceConfig, create_app
    from schedmate.deploy.service.core import ServiceCore

    lines = "".join(f"iteration {i:>6}/ 1000 | elapsed time per iteration (ms): 500.0 | lm loss: 2.5E+00 |\n"
                    for i in range(1, 40))
    (tmp_path / "train.log.gz").write_bytes(gzip.compress(lines.encode("utf-16")))
    (tmp_path / "win.log").write_bytes(lines.encode("utf-16-le"))
    (tmp_path / "core.log").write_bytes(bytes(range(256)) * 64)
    config = ServiceConfig(allowed_roots=(tmp_path,))
    core = ServiceCore(config, classifier=classifier)
    core.load()
    with TestClient(create_app(config, core)) as c:
        for name, how in (("train.log.gz", "gzip-decompressed and decoded from utf-16"),
                          ("win.log", "decoded from utf-16-le")):
            got = c.post("/v1/track", json={"log": str(tmp_path / name)}).json()
            assert got["signal"] is True and got["step_time"]["value"] == pytest.approx(0.5), got
            assert f"log read {how}" in got["notes"]
        got = c.post("/v1/track", json={"log": str(tmp_path / "core.log")}).json()
        assert got["signal"] is False and got["reason"].startswith("unreadable: encoding (binary data")
        assert got["fallback"] == "scheduler-default"
