"""Values that several modules share, defined once: where the service listens, the token's
environment variable, and how long one LLM request may take on a busy 2-core CPU.

A plain module of constants (no imports beyond the standard library), so the Slurm hook, the
client and the CLI can read it without loading FastAPI, torch or the agents.
"""

from __future__ import annotations

__all__ = ["CHAT_LLM_TIMEOUT_S", "CLI_LLM_TIMEOUT_S", "LLM_TIMEOUT_S", "SERVICE_HOST", "SERVICE_PORT", "SERVICE_URL",
           "TOKEN_ENV"]

SERVICE_HOST = "127.0.0.1"
SERVICE_PORT = 8642
SERVICE_URL = f"http://{SERVICE_HOST}:{SERVICE_PORT}"
TOKEN_ENV = "SCHEDMATE_TOKEN"  # the service's bearer token (server: --token; clients and the Slurm hook)

# seconds one LLM request may take, no transport retries (the embedded model on a shared 2-core CPU):
LLM_TIMEOUT_S = 240.0  # the agent stack's default (`agents.stack.llm_config`): service, daemon, simulator
CLI_LLM_TIMEOUT_S = 300.0  # one-shot CLI commands and the case studies' --llm runs (longer prompts, no queue)
CHAT_LLM_TIMEOUT_S = 120.0  # the chat and the advisor evaluation's default: short answers, a person waiting
