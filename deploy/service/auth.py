"""Bearer-token check for the /v1 routes (constant-time compare; off only when no token is set,
which `ServiceConfig` allows on loopback binds alone)."""

from __future__ import annotations

import secrets

from fastapi import Request
from starlette.exceptions import HTTPException

__all__ = ["token_check"]


def token_check(token: str | None):
    """A FastAPI dependency that accepts `Authorization: Bearer <token>` (anything when None)."""

    async def check(request: Request) -> None:
        if token is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(given.strip().encode(), token.encode()):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    return check
