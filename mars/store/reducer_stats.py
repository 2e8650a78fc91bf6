"""The reducers' published figures in Redis, written by `reducer.reducer_metrics` and read by
the API (`GET /tasks/{id}`, `GET /cluster`, the dashboard, `mars top`), which see every reducer
at once.

- per unit, hash `mars:{<task>}:reducer_stats`, fields `<bucket>.<name>` (names in
  `reducer.reducer_metrics`);
- per process, hash `mars:reducer:<member id>` (`owned_units`, `merge_rate`, `cpu` (CPU seconds
  per second, `mars.cpu_meter`), `updated_ms`), with
  a time to live: it goes when the process stops refreshing it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from mars.clients.redis_connection import RedisClient
from mars.store.keys import TaskKeys, process_stats_key
from mars.store.scripts import lua_source
from mars.store.state import text_of

PROCESS_STATS_TTL_S = 30

Figure = str | int | float | None


def figure_int(figures: Mapping[str, str], name: str) -> int | None:
    """A unit figure as an integer (None: not published or unknown)."""
    text = figures.get(name)
    return int(float(text)) if text else None


def figure_float(figures: Mapping[str, str], name: str) -> float | None:
    text = figures.get(name)
    return float(text) if text else None


def chain_figure(fields: Iterable[str]) -> str | None:
    """A unit's `checkpoint` figure: the fields of its committed checkpoint chain (the full
    checkpoint, then its deltas), comma-separated; None when it has no checkpoint."""
    return ",".join(fields) or None


def chain_fields(figure: str | None) -> list[str]:
    """The checkpoint fields a `checkpoint` figure names, the full checkpoint first."""
    return [name for name in (figure or "").split(",") if name]


class ReducerStats:
    """Writes and reads the reducers' figures on the store's connection."""

    def __init__(self, client: RedisClient) -> None:
        self._redis = client
        self._publish_unit = client.register_script(lua_source("publish_unit"))

    def publish_unit(
        self, task: str, bucket: int, figures: Mapping[str, Figure], *, late_records: int
    ) -> None:
        """The unit's figures (None: unknown, stored empty), and its committed late records
        added to the task's `late_reducer` counter by their growth only (exact); one script."""
        prefix = f"{bucket}."
        fields = [
            part
            for name, value in figures.items()
            for part in (prefix + name, "" if value is None else str(value))
        ]
        keys = TaskKeys(task)
        self._publish_unit(
            keys=[keys.reducer_stats, keys.stats],
            args=[prefix + "late_records", str(late_records), *fields],
        )

    def units(self, task: str) -> dict[int, dict[str, str]]:
        """Bucket -> its latest figures (a unit that moved keeps its last ones until the new
        owner publishes; `updated_ms` tells)."""
        units: dict[int, dict[str, str]] = {}
        for raw_field, raw_value in self._redis.hgetall(TaskKeys(task).reducer_stats).items():
            bucket, _, name = text_of(raw_field).partition(".")
            if bucket.isdigit():
                units.setdefault(int(bucket), {})[name] = text_of(raw_value)
        return dict(sorted(units.items()))

    def publish_process(
        self,
        member_id: str,
        *,
        owned_units: Iterable[str],
        merge_rate: float,
        cpu: float | None,
        now_ms: int,
    ) -> None:
        key = process_stats_key(member_id)
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "owned_units": json.dumps(sorted(owned_units)),
                    "merge_rate": str(round(merge_rate, 1)),
                    "cpu": "" if cpu is None else str(cpu),
                    "updated_ms": str(now_ms),
                },
            )
            pipe.expire(key, PROCESS_STATS_TTL_S)
            pipe.execute()

    def process(self, member_id: str) -> dict[str, object]:
        """{"owned_units": [...], "merge_rate": float, "cpu": float | None, "updated_ms": int}
        ({}: not published)."""
        raw = {
            text_of(k): text_of(v)
            for k, v in self._redis.hgetall(process_stats_key(member_id)).items()
        }
        if not raw:
            return {}
        return {
            "owned_units": json.loads(raw.get("owned_units", "[]")),
            "merge_rate": float(raw.get("merge_rate", 0) or 0),
            "cpu": figure_float(raw, "cpu"),
            "updated_ms": int(raw.get("updated_ms", 0) or 0),
        }
