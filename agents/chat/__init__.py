"""Chat-style failure diagnosis: a multi-turn assistant over SchedMate's own tools.

`ChatAgent` answers one question at a time in a session kept in Redis (`RedisSessionStore`); the
tools (`ChatTools`) read a `ChatBackend` (the service core implements it), so the answer's facts,
line citations and the proposed recovery plan always come from SchedMate's agents, whatever the
model says.
"""

from schedmate.agents.chat.agent import ChatAgent, ChatAnswer, ChatConfig, Mode
from schedmate.agents.chat.facts import (
    ChatInputError,
    ChatUnavailable,
    Citation,
    DiagnosisFacts,
    EstimateFacts,
    JobFacts,
    LogLine,
    MetricFacts,
    MetricsFacts,
    SimilarCase,
)
from schedmate.agents.chat.history import MemorySessionStore, RedisSessionStore, SessionStore
from schedmate.agents.chat.tools import ChatBackend, ChatTools, read_window

__all__ = [
    "ChatAgent", "ChatAnswer", "ChatBackend", "ChatConfig", "ChatInputError", "ChatTools", "ChatUnavailable",
    "Citation", "DiagnosisFacts", "EstimateFacts", "JobFacts", "LogLine", "MemorySessionStore", "MetricFacts",
    "MetricsFacts", "Mode", "RedisSessionStore", "SessionStore", "SimilarCase", "read_window",
]
