"""Lifecycle of the local redis-server behind `schedmate redis start|stop|status`."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import redis

from schedmate.embeddings import redis_server
from schedmate.tests.conftest import has_aof, require_redis_server


def ping(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=1, retry=None)
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
    finally:
        client.close()


def config(url: str, name: str) -> str:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return str(client.config_get(name)[name])
    finally:
        client.close()


def test_start_status_stop(tmp_path: Path) -> None:
    require_redis_server()
    assert not redis_server.status(tmp_path).running

    info = redis_server.start(tmp_path)
    try:
        assert info.host == "127.0.0.1"
        assert ping(info.url)
        state = redis_server.status(tmp_path)
        assert state.running and state.info == info and state.url == info.url
        assert redis_server.start(tmp_path) == info  # idempotent: the running server is reused
    finally:
        assert redis_server.stop(tmp_path) is True

    assert not ping(info.url)
    assert not redis_server.status(tmp_path).running
    assert redis_server.stop(tmp_path) is False  # nothing left to stop


def test_server_is_loopback_only_durable_and_keeps_its_files_in_the_data_dir(tmp_path: Path) -> None:
    require_redis_server()
    with redis_server.running_server(tmp_path) as info:
        assert config(info.url, "bind") == "127.0.0.1"
        assert config(info.url, "protected-mode") == "yes"
        assert config(info.url, "appendonly") == "yes"
        assert config(info.url, "save") != ""
        assert Path(config(info.url, "dir")) == tmp_path.resolve()
    assert has_aof(tmp_path)
    assert (tmp_path / "dump.rdb").is_file()  # SHUTDOWN SAVE wrote a snapshot
    assert not (tmp_path / redis_server.STATE_FILE).exists()


def test_an_explicit_port_that_is_taken_fails_with_the_servers_reason(tmp_path: Path) -> None:
    require_redis_server()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(redis_server.RedisServerError, match=str(port)):
            redis_server.start(tmp_path, port=port)
    assert not redis_server.status(tmp_path).running


def test_a_stale_state_file_is_reported_not_running_and_replaced_on_start(tmp_path: Path) -> None:
    require_redis_server()
    (tmp_path / redis_server.STATE_FILE).write_text('{"pid": 999999999, "port": 1, "host": "127.0.0.1"}')
    assert "not running" in redis_server.status(tmp_path).detail
    with redis_server.running_server(tmp_path) as info:
        assert info.pid != 999999999 and ping(info.url)


def test_missing_redis_server_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(redis_server.RedisNotInstalled, match="apt-get install redis-server"):
        redis_server.start(tmp_path / "data")


def test_a_server_whose_record_was_lost_is_still_found_and_never_doubled(tmp_path: Path) -> None:
    """Losing server.json must not orphan the server: status sees it, start re-adopts it, stop stops it."""
    require_redis_server()
    first = redis_server.start(tmp_path)
    try:
        (tmp_path / redis_server.STATE_FILE).unlink()
        (tmp_path / redis_server.PID_FILE).unlink()  # even without the server's own pid file
        found = redis_server.status(tmp_path)
        assert found.running and found.info is not None and found.info.pid == first.pid
        assert "was missing" in found.detail
        again = redis_server.start(tmp_path)
        assert (again.pid, again.port) == (first.pid, first.port)  # no second server on the same data
        assert (tmp_path / redis_server.STATE_FILE).is_file()  # re-recorded
    finally:
        assert redis_server.stop(tmp_path)
    assert not ping(first.url) and not redis_server.status(tmp_path).running


def test_a_lost_record_of_a_server_is_stopped_by_stop(tmp_path: Path) -> None:
    require_redis_server()
    info = redis_server.start(tmp_path)
    (tmp_path / redis_server.STATE_FILE).unlink()
    assert redis_server.stop(tmp_path)
    assert not ping(info.url)
