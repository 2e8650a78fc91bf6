"""Redis key names of one task.

Every key of task `T` starts with `mars:{T}:`. The braces are a Redis Cluster hash tag: all keys
of a task hash to one slot, so each Lua script (which touches several of them) runs on one node.
"""

from __future__ import annotations

from dataclasses import dataclass

_GLOB_SPECIALS = "\\*?[]"
# Pub/sub channel: `apply_batch` publishes the task id on it after every applied batch, so the
# task's reducer owners wake at once instead of polling (reducer/wakeups.py).
WRITTEN_CHANNEL = "mars:written"


@dataclass(frozen=True, slots=True)
class TaskKeys:
    """Key names for one task's SEQ protocol state."""

    task: str

    def __post_init__(self) -> None:
        # A brace would change the hash tag and scatter the task's keys over slots.
        if not self.task or "{" in self.task or "}" in self.task:
            raise ValueError(f"task id must be non-empty and free of braces: {self.task!r}")

    @property
    def prefix(self) -> str:
        return f"mars:{{{self.task}}}:"

    @property
    def sources(self) -> str:
        """Hash: source id -> packed `applied_offset:stream_time_ms:last_data_wall_ms`."""
        return self.prefix + "src"

    @property
    def key_clocks(self) -> str:
        """Hash: source id -> its key clocks (`watermark = 'key'`, Arrow IPC bytes)."""
        return self.prefix + "keyclocks"

    @property
    def live(self) -> str:
        """Hash: partition -> packed `caught_up:heartbeat_wall_ms`; `partitions` -> count."""
        return self.prefix + "live"

    @property
    def handover(self) -> str:
        """Hash: partition -> first offset the live mappers own (a backfill covers below it)."""
        return self.prefix + "handover"

    @property
    def backfill_holds(self) -> str:
        """Hash: backfill job id -> wall ms it registered; any field holds the watermark."""
        return self.prefix + "backfill:holds"

    @property
    def rewinds(self) -> str:
        """Hash: `last` -> the task's last rewind generation, `<g>` -> rewind g's record
        (`mars.store.rewinds`, docs/rewind.md)."""
        return self.prefix + "rewinds"

    @property
    def reducer_stats(self) -> str:
        """Hash: `<bucket>.<name>` -> a reducer unit's counters and gauges
        (reducer/reducer_metrics.py)."""
        return self.prefix + "reducer_stats"

    @property
    def layout(self) -> str:
        """Hash: the bucket-layout fence (`generation`, `from:<g>`, `buckets:<g>`, `last_window`;
        mars.tasks.bucket_layout, docs/protocol.md)."""
        return self.prefix + "layout"

    @property
    def stats(self) -> str:
        return self.prefix + "stats"

    @property
    def results(self) -> str:
        return self.prefix + "results"

    def bucket_prefix(self, bucket: int) -> str:
        return f"{self.prefix}b:{bucket}:"

    def seq(self, bucket: int) -> str:
        """Counter: number of the bucket's last data set (0 = none yet)."""
        return self.bucket_prefix(bucket) + "seq"

    def rseq(self, bucket: int) -> str:
        """First data set number the reducer has not released (1 = none released)."""
        return self.bucket_prefix(bucket) + "rseq"

    def merged(self, bucket: int) -> str:
        """Last data set number the bucket's owner has merged (a backpressure hint, monotone)."""
        return self.bucket_prefix(bucket) + "merged"

    def checkpoints(self, bucket: int) -> str:
        """Hash: checkpoint field `<number>:<token>` -> the encoded open windows of the reducer
        unit (this task, `bucket`)."""
        return f"{self.prefix}u:{bucket}:ck"

    def datasets(self, bucket: int) -> str:
        """Hash: data set number -> encoded partials. One key per bucket (not one per data
        set) so that every Lua script declares every key it touches (Redis Cluster)."""
        return self.bucket_prefix(bucket) + "d"

    @property
    def scan_pattern(self) -> str:
        """SCAN MATCH pattern for every key of the task (glob characters escaped)."""
        escaped = "".join("\\" + c if c in _GLOB_SPECIALS else c for c in self.task)
        return f"mars:{{{escaped}}}:*"


def process_stats_key(member_id: str) -> str:
    """Hash of one reducer process: `owned_units`, `merge_rate`, `updated_ms` (expires)."""
    return f"mars:reducer:{member_id}"
