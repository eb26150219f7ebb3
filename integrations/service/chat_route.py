"""Routes of the chat diagnosis (API and the local web page) served by `schedmate serve`."""

from __future__ import annotations

from fastapi import APIRouter

from schedmate.integrations.service.config import ServiceConfig
from schedmate.integrations.service.core import ServiceCore


def router(core: ServiceCore, config: ServiceConfig) -> APIRouter:
    """The chat routes over `core` (they share its models, Redis and limits)."""
    return APIRouter()
