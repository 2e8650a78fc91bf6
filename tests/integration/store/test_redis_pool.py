"""More threads than connections: they wait for one instead of failing.

A reducer runs one owner thread per unit; with 50 tasks of 8 buckets that is 400 threads on one
client. redis-py's default pool raises `MaxConnectionsError` past 100 connections in use, which
kept units recovering for good (experiment 11 with 50 tasks). Each thread here holds its
connection in a BLPOP that times out, as a slow command would.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from mars.clients import connect_redis
from mars.clients.redis_connection import POOL_CONNECTIONS
from mars.config import Settings

THREADS = POOL_CONNECTIONS + 50  # some must wait; and past redis-py's default limit of 100


def test_threads_beyond_the_pool_wait(settings: Settings, unique_name: str) -> None:
    client = connect_redis(settings.redis)
    try:
        with ThreadPoolExecutor(max_workers=THREADS) as threads:
            replies = list(
                threads.map(lambda _: client.blpop([f"{unique_name}:nothing"], 0.3), range(THREADS))
            )
        assert replies == [None] * THREADS
        assert client.connection_pool.max_connections == POOL_CONNECTIONS
    finally:
        client.close()
