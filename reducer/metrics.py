"""Reducer metrics, published to Redis (key names in `mars.store.keys`). The task's
`late_reducer` counter reaches `GET /tasks/{id}` (`stats.counters`); the rest is read by the
tests and by hand (`redis-cli HGETALL`), as no endpoint or dashboard shows it yet.

- Per unit, hash `mars:{<task>}:reducer_stats`, fields `<bucket>.<name>`: the cumulative
  counters of the unit's committed progress (`windows_emitted`, `results_emitted`,
  `late_records`, `late_contributions`; exact, they travel in the Kafka transaction) and gauges
  (`watermark`, `watermark_lag_ms`, `merge_rate` (data sets/s), `commit_latency_ms`, `owner`,
  `updated_ms`).
- The task's `mars:{<task>}:stats` field `late_reducer` = sum of the units' `late_records`,
  kept exact by a script that adds only the growth of each unit's absolute count.
- Per process, hash `mars:reducer:<member id>` with `owned_units` (JSON list), `merge_rate`,
  `updated_ms`; it expires when the process stops refreshing it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import redis

from mars.store import TaskKeys
from mars.store.keys import process_stats_key
from mars.store.scripts import lua_source
from mars.store.state import text_of

PROCESS_STATS_TTL_S = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitGauges:
    """Point-in-time measurements of one unit."""

    watermark: int | None
    watermark_lag_ms: int | None
    merge_rate: float
    commit_latency_ms: float | None
    owner: str
    updated_ms: int


class ReducerMetrics:
    """Writes the reducer's metrics to Redis (one instance per process, shared by owners)."""

    def __init__(self, client: redis.Redis[bytes]) -> None:
        self._redis = client
        self._advance_late = client.register_script(lua_source("advance_late"))

    def publish_unit(
        self,
        task_id: str,
        bucket: int,
        *,
        counters: Mapping[str, int],
        gauges: UnitGauges,
    ) -> None:
        prefix = f"{bucket}."
        fields = {prefix + k: str(v) for k, v in counters.items() if k != "late_records"}
        latency = gauges.commit_latency_ms
        for name, value in (
            ("watermark", gauges.watermark),
            ("watermark_lag_ms", gauges.watermark_lag_ms),
            ("merge_rate", round(gauges.merge_rate, 1)),
            ("commit_latency_ms", None if latency is None else round(latency, 1)),
            ("owner", gauges.owner),
            ("updated_ms", gauges.updated_ms),
        ):
            fields[prefix + name] = "" if value is None else str(value)
        key = TaskKeys(task_id).reducer_stats
        self._redis.hset(key, mapping=fields)  # type: ignore[arg-type]
        self._advance_late(
            keys=[key, TaskKeys(task_id).stats],
            args=[prefix + "late_records", str(counters.get("late_records", 0))],
        )

    def publish_process(
        self, member_id: str, *, owned_units: Iterable[str], merge_rate: float, now_ms: int
    ) -> None:
        key = process_stats_key(member_id)
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "owned_units": json.dumps(sorted(owned_units)),
                    "merge_rate": str(round(merge_rate, 1)),
                    "updated_ms": str(now_ms),
                },
            )
            pipe.expire(key, PROCESS_STATS_TTL_S)
            pipe.execute()

    def unit_stats(self, task_id: str) -> dict[str, str]:
        raw = self._redis.hgetall(TaskKeys(task_id).reducer_stats)
        return {text_of(k): text_of(v) for k, v in raw.items()}
