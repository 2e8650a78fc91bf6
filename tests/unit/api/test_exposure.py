"""The API refuses the development token on an address other hosts can reach (`mars api`
saying so as a process: tests/integration/api/test_exposure.py)."""

from __future__ import annotations

import pytest

from api.server import check_exposure
from mars.config import ConfigError, load_settings


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_the_development_token_is_fine_on_loopback(host: str) -> None:
    check_exposure(load_settings(api={"host": host}))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "mars-api.example"])
def test_the_development_token_is_refused_elsewhere(host: str) -> None:
    with pytest.raises(ConfigError, match="MARS_API__TOKEN"):
        check_exposure(load_settings(api={"host": host}))


def test_a_token_of_ones_own_may_listen_anywhere() -> None:
    check_exposure(load_settings(api={"host": "0.0.0.0", "token": "s3cret-token-x"}))
