"""Bearer-token check for the mutating endpoints.

No `Authorization: Bearer <token>` header -> 401 (with `WWW-Authenticate: Bearer`); a token that
is not `settings.api.token` -> 403. The comparison is constant-time.
"""

from __future__ import annotations

import hmac

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.errors import ApiError

_bearer = HTTPBearer(auto_error=False, description="settings.api.token (MARS_API__TOKEN)")


def require_token(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
) -> None:
    """FastAPI dependency: pass only requests carrying the configured token."""
    if credentials is None or not credentials.credentials:
        raise ApiError(
            401,
            "missing credentials: send 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    expected: str = request.app.state.services.settings.api.token
    if not hmac.compare_digest(credentials.credentials.encode(), expected.encode()):
        raise ApiError(403, "invalid token")
