"""The task watermark computed from a `Snapshot` (pure; the reducer keeps it monotone).

Watermark = min over the source topic's partitions of their stream time, leaving out idle
partitions. A partition is idle when the mapper owning it reports it caught up (freshly), has
confirmed that without a break for `idle_timeout_ms` (`caught_up_since_ms`), and no batch has
advanced its offset for `idle_timeout_ms`. When every partition is idle the watermark
advances with the wall clock from the newest stream time (idle close).

The wall-clock advance counts from the newest last batch of the idle partitions, or, for a
partition no mapper batch has moved (a history applied by a Spark backfill), from when its
mapper confirmed it caught up: either way the last windows close about `idle_timeout` after
the data stopped, whoever applied it.

Not idle and never written, or no mapper heartbeat at all (mapper down, data may wait in
Kafka): the partition holds the watermark back, so nothing closes on a guess.
"""

from __future__ import annotations

from collections.abc import Collection

from mars.store.state import LiveState, Snapshot, SourceState


def _is_idle(
    state: SourceState | None,
    live: LiveState | None,
    *,
    idle_timeout_ms: int,
    heartbeat_timeout_ms: int,
    now_ms: int,
) -> bool:
    if live is None or not live.caught_up:
        return False
    if now_ms - live.heartbeat_wall_ms > heartbeat_timeout_ms:
        return False
    # Confirmed caught up without a break for a whole idle_timeout: an outage (broker, Redis)
    # breaks the run, so it never makes a partition idle by itself.
    since = live.caught_up_since_ms
    if since is not None and now_ms - since < idle_timeout_ms:
        return False
    last_data = None if state is None else state.last_data_wall_ms
    return last_data is None or now_ms - last_data >= idle_timeout_ms


def watermark_of(
    snapshot: Snapshot,
    *,
    idle_timeout_ms: int,
    now_ms: int,
    heartbeat_timeout_ms: int | None = None,
) -> int | None:
    """The watermark in epoch ms, or None while it cannot be known (nothing may close).

    `heartbeat_timeout_ms` (default: `idle_timeout_ms`) is how old a caught-up report may be.
    """
    if snapshot.partition_count is None:
        return None
    hb_timeout = idle_timeout_ms if heartbeat_timeout_ms is None else heartbeat_timeout_ms
    active: list[int] = []
    idle: list[tuple[SourceState, LiveState | None]] = []
    for partition in range(snapshot.partition_count):
        state = snapshot.sources.get(partition)
        live = snapshot.live.get(partition)
        if _is_idle(
            state,
            live,
            idle_timeout_ms=idle_timeout_ms,
            heartbeat_timeout_ms=hb_timeout,
            now_ms=now_ms,
        ):
            if state is not None:
                idle.append((state, live))
            continue
        if state is None or state.stream_time_ms is None:
            return None
        active.append(state.stream_time_ms)
    if active:
        return min(active)
    stream_times = [s.stream_time_ms for s, _ in idle if s.stream_time_ms is not None]
    if not stream_times:
        return None
    quiet_since = max(
        (q for s, live in idle if (q := _quiet_since(s, live)) is not None), default=now_ms
    )
    return max(stream_times) + max(0, now_ms - quiet_since)


def _quiet_since(state: SourceState, live: LiveState | None) -> int | None:
    """Since when an idle partition has had no data: its last batch's wall time, or, when no
    mapper batch ever moved it (its history applied by a Spark backfill up to the hand-over),
    since its mapper has confirmed it caught up."""
    if state.last_data_wall_ms is not None:
        return state.last_data_wall_ms
    return None if live is None else live.caught_up_since_ms


def watermark_held_by_backfills(
    watermark: int | None, *, backfill_holds: Collection[str]
) -> int | None:
    """The watermark the reducer may close windows with: None while any backfill job holds it.

    A backfill (`mars spark preagg`) writes windows older than the live data's; it registers a
    hold (`mars:{T}:backfill:holds`, read by `SeqStore.snapshot_unit` before the snapshots) before
    live mapping starts and removes it once all its data sets are in Redis. The reducer must read
    the holds *before* its snapshot: a hold gone at that instant means every backfill data set
    has a number <= the snapshot's seq.
    """
    return None if backfill_holds else watermark
