"""Run the API with uvicorn on `settings.api.host:port` (`mars api`)."""

from __future__ import annotations

import ipaddress

import uvicorn

from api.app import create_app
from mars.clients import check_access
from mars.config import DEV_TOKEN, ConfigError, Settings, setting_env_name


def check_exposure(settings: Settings) -> None:
    """Refuse the development token on an address other hosts can reach: anyone who read the
    README could change tasks."""
    if settings.api.token == DEV_TOKEN and not is_loopback(settings.api.host):
        raise ConfigError(
            f"the API would listen on {settings.api.host} with the development token; set a "
            f"token of your own in {setting_env_name(('api', 'token'))} (or [api] token in "
            "the config file), or listen on 127.0.0.1"
        )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost: reachable, as far as we know
        return False


def serve(settings: Settings, *, log_level: str = "info") -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop uvicorn gracefully). Refused credentials
    stop it first, with the setting's name (`check_access`)."""
    check_exposure(settings)
    check_access(settings)
    uvicorn.run(
        create_app(settings),
        host=settings.api.host,
        port=settings.api.port,
        log_level=log_level,
    )
