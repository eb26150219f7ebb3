"""Conversation state per session id, in plain Redis (a list of messages and a hash of context).

Why not LangGraph's Redis checkpointer: `langgraph-checkpoint-redis` stores checkpoints with
RedisJSON and indexes them with RediSearch, and Debian's `redis-server` 7.0 (what SchedMate embeds)
has neither module. A conversation here needs far less than a checkpoint graph: the turns (for a
model that drives the tools) and the context a follow-up refers to ("it", "the lines around it":
the log, the job, the root-cause line). Both fit a Redis list and a hash, which any Redis serves;
messages are LangChain's own dict form (`messages_to_dict`), so any LangChain model can read them.
Keys expire after `ttl_s` of silence; the list is capped at `max_messages`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Protocol

import redis
from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from schedmate.agents.chat.facts import SESSION_ID, ChatInputError, ChatUnavailable

__all__ = ["MemorySessionStore", "RedisSessionStore", "Session", "SessionStore", "check_session_id"]

DEFAULT_PREFIX = "schedmate-chat"
DEFAULT_TTL_S = 7 * 24 * 3600
DEFAULT_MAX_MESSAGES = 200
CONTEXT_KEYS = ("log", "job_id", "root_line")


def check_session_id(session_id: str) -> str:
    """`session_id` if it is a safe key part (letters, digits, `._:-`, at most 128), else ChatInputError."""
    if not re.fullmatch(SESSION_ID, session_id or ""):
        raise ChatInputError(f"session id must be 1-128 of A-Z a-z 0-9 . _ : - (starting alphanumeric), not {session_id!r}")
    return session_id


@dataclass
class Session:
    """One conversation: its turns and what they were about."""

    session_id: str
    messages: list[BaseMessage] = field(default_factory=list)
    context: dict[str, str] = field(default_factory=dict)


class SessionStore(Protocol):
    def load(self, session_id: str) -> Session: ...

    def save_turn(self, session_id: str, messages: list[BaseMessage], context: dict[str, str]) -> None: ...


class RedisSessionStore:
    """Sessions in a real Redis (no modules needed). Connection errors become `ChatUnavailable`."""

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX, ttl_s: int = DEFAULT_TTL_S,
                 max_messages: int = DEFAULT_MAX_MESSAGES, timeout_s: float = 2.0) -> None:
        self.prefix, self.ttl_s, self.max_messages = prefix, ttl_s, max_messages
        self._client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, protocol=2)

    def _keys(self, session_id: str) -> tuple[str, str]:
        sid = check_session_id(session_id)
        return f"{self.prefix}:{sid}:messages", f"{self.prefix}:{sid}:context"

    def load(self, session_id: str) -> Session:
        messages_key, context_key = self._keys(session_id)
        try:
            raw, ctx = self._client.lrange(messages_key, 0, -1), self._client.hgetall(context_key)
        except redis.RedisError as exc:
            raise ChatUnavailable(f"Redis: {type(exc).__name__}: {exc}") from None
        messages = messages_from_dict([json.loads(r) for r in raw])
        context = {_text(k): _text(v) for k, v in ctx.items()}
        return Session(session_id, messages, context)

    def save_turn(self, session_id: str, messages: list[BaseMessage], context: dict[str, str]) -> None:
        messages_key, context_key = self._keys(session_id)
        try:
            pipe = self._client.pipeline(transaction=True)
            if messages:
                pipe.rpush(messages_key, *(json.dumps(m) for m in messages_to_dict(messages)))
                pipe.ltrim(messages_key, -self.max_messages, -1)
            if context:
                pipe.hset(context_key, mapping={k: v for k, v in context.items()})
            pipe.expire(messages_key, self.ttl_s)
            pipe.expire(context_key, self.ttl_s)
            pipe.execute()
        except redis.RedisError as exc:
            raise ChatUnavailable(f"Redis: {type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        self._client.close()


class MemorySessionStore:
    """Sessions in this process only (no Redis configured): lost when it exits, and said so."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def load(self, session_id: str) -> Session:
        check_session_id(session_id)
        s = self._sessions.get(session_id)
        return Session(session_id, list(s.messages), dict(s.context)) if s else Session(session_id)

    def save_turn(self, session_id: str, messages: list[BaseMessage], context: dict[str, str]) -> None:
        s = self._sessions.setdefault(check_session_id(session_id), Session(session_id))
        s.messages.extend(messages)
        s.context.update(context)


def _text(value: bytes | str) -> str:
    """A Redis reply as text (the client returns bytes: it is not asked to decode)."""
    return value.decode() if isinstance(value, bytes) else value
