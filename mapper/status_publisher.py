"""Keeps the mapper's ZooKeeper node `/mars/mappers/<member id>` holding its status
(`mars.registry.mapper_status`), rewritten at most every `PUBLISH_INTERVAL_MS`.

Writes are asynchronous: ZooKeeper being away never holds up the loop, and a node lost with an
expired session is created again.
"""

from __future__ import annotations

import logging
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.interfaces import IAsyncResult

from mars.registry.mapper_status import MapperStatus

log = logging.getLogger(__name__)

PUBLISH_INTERVAL_MS = 2_000


class ZkStatusPublisher:
    """Keeps `/mars/mappers/<member id>` holding the latest status."""

    def __init__(self, zk: KazooClient, path: str) -> None:
        self._zk = zk
        self._path = path
        self._last_ms: int | None = None

    def register(self, status: MapperStatus) -> None:
        """Create the node (at start; synchronous, so a duplicate id fails loudly)."""
        self._zk.create(self._path, status.to_bytes(), ephemeral=True, makepath=True)
        self._last_ms = status.updated_ms

    def publish(self, status: MapperStatus) -> None:
        """Write the status if the last write is `PUBLISH_INTERVAL_MS` old (never blocks)."""
        now = time.time_ns() // 1_000_000
        if self._last_ms is not None and now - self._last_ms < PUBLISH_INTERVAL_MS:
            return
        self._last_ms = now
        if not self._zk.connected:
            return
        data = status.to_bytes()
        try:
            self._zk.set_async(self._path, data).rawlink(
                lambda result: self._recreate_if_gone(result, data)
            )
        except KazooException as exc:
            log.debug("status not published: %s", exc)

    def _recreate_if_gone(self, result: IAsyncResult, data: bytes) -> None:
        try:
            result.get_nowait()
        except NoNodeError:  # the session expired with the old node: a new one
            self._zk.create_async(self._path, data, ephemeral=True, makepath=True).rawlink(
                _ignore_exists
            )
        except KazooException as exc:
            log.debug("status not published: %s", exc)


def _ignore_exists(result: IAsyncResult) -> None:
    try:
        result.get_nowait()
    except (NodeExistsError, KazooException) as exc:
        log.debug("status node not re-created: %s", exc)
