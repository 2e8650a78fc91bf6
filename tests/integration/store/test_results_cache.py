"""The capped list of a task's newest result rows (`GET /tasks/{id}/results`)."""

from __future__ import annotations

import json

from mars.clients import connect_redis
from mars.config import Settings
from mars.store.results_cache import ResultsCache


def test_a_push_longer_than_the_cap_keeps_its_newest_rows_newest_first(
    settings: Settings, unique_name: str
) -> None:
    client = connect_redis(settings.redis)
    try:
        cache = ResultsCache(client)

        def rows(numbers: range) -> list[bytes]:
            return [json.dumps({"n": n}).encode() for n in numbers]

        cache.push_encoded(unique_name, rows(range(3)), keep=4)
        cache.push_encoded(unique_name, rows(range(3, 9)), keep=4)
        assert cache.latest(unique_name, 10) == [{"n": n} for n in (8, 7, 6, 5)]
        cache.push_encoded(unique_name, [b'{"n": 9}'], keep=4)
        assert cache.latest(unique_name, 10) == [{"n": n} for n in (9, 8, 7, 6)]
    finally:
        client.close()
