"""free_port: listening ports from below the ephemeral range, from a worker's own slice when it
has one, never the same port twice in one process."""

from __future__ import annotations

import socket

import pytest

from devtools.local.process_handle import (
    FREE_PORTS,
    FREE_PORTS_ENV,
    ServiceError,
    free_port,
)


def test_ports_come_from_below_the_ephemeral_range_and_never_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(FREE_PORTS_ENV, raising=False)
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(FREE_PORTS[0] <= port <= FREE_PORTS[1] < 32768 for port in ports)


def test_a_slice_of_its_own_is_honoured_and_a_taken_port_is_not_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv(FREE_PORTS_ENV, f"{port}-{port}")
        with pytest.raises(ServiceError, match=f"no free port in {port}-{port}"):
            free_port()
    assert free_port() == port
