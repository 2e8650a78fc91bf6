"""The tasks experiment's pure parts: five task shapes over the reference CSV tuples, the N tasks
drawn from them round-robin, and when one task's results are all readable.

Every shape counts `count(*)` besides its own aggregates, so its result rows carry
`count_star`: over the data windows, the counts sum to the records times the windows a record
falls in (1 for tumbling windows, size / slide for hopping ones). A top-k task emits only k
rows per window, so it is complete when every data window holds its k rows (the reducer emits
a top-k window in one transaction: one unit owns all its buckets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchmarks.results_reader import WindowSeen
from benchmarks.workload import Dataset, csv_options
from mars.tasks.spec import TaskSpec
from mars.windows import WindowAssigner

COUNT_FIELD = "count_star"  # the column every shape's rows carry: count(*)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskShape:
    """One kind of statistic: `template` is its SQL with `{topic}` and `{options}` (the WITH
    clause of a task over these CSV tuples) left to fill in."""

    name: str
    what: str
    template: str

    def sql(self, topic: str) -> str:
        return self.template.format(topic=topic, options=csv_options(idle="10 s"))


SHAPES = (
    TaskShape(
        name="paper",
        what="count(*) per sip, type; 60 s tumbling (the reference query)",
        template="SELECT sip, type, timestamp, count(*) FROM {topic} "
        "GROUP BY sip, type, timestamp WINDOWING 60 s {options}",
    ),
    TaskShape(
        name="bytes",
        what="sum(bytes) per sip; 60 s tumbling",
        template="SELECT sip, timestamp, sum(bytes), count(*) FROM {topic} "
        "GROUP BY sip, timestamp WINDOWING 60 s {options}",
    ),
    TaskShape(
        name="distinct",
        what="count(DISTINCT sip) per dport; 60 s tumbling",
        template="SELECT dport, timestamp, count(DISTINCT sip), count(*) FROM {topic} "
        "GROUP BY dport, timestamp WINDOWING 60 s {options}",
    ),
    TaskShape(
        name="hopping",
        what="avg(duration), max(packets) per proto, direction; 120 s windows every 60 s",
        template="SELECT proto, direction, timestamp, avg(duration), max(packets), count(*) "
        "FROM {topic} GROUP BY proto, direction, timestamp WINDOWING 120 s SLIDE 60 s {options}",
    ),
    TaskShape(
        name="top_k",
        what="top 10 devices by sum(bytes); 60 s tumbling",
        template="SELECT device, timestamp, sum(bytes), count(*) FROM {topic} "
        "GROUP BY device, timestamp ORDER BY sum(bytes) DESC LIMIT 10 WINDOWING 60 s {options}",
    ),
)


# The statistics experiment: the reference query, then with a percentile and a spread added.
STATISTICS_SHAPES = (
    SHAPES[0],
    TaskShape(
        name="paper_stats",
        what="the reference query with approx_percentile(bytes, 0.99) and stddev(bytes) added",
        template="SELECT sip, type, timestamp, count(*), approx_percentile(bytes, 0.99), "
        "stddev(bytes) FROM {topic} GROUP BY sip, type, timestamp WINDOWING 60 s {options}",
    ),
)


def shapes_for(count: int) -> list[TaskShape]:
    """`count` shapes drawn round-robin from `SHAPES`."""
    return [SHAPES[index % len(SHAPES)] for index in range(count)]


def data_windows(spec: TaskSpec, data: Dataset) -> list[int]:
    """The starts (epoch ms) of every window of `spec` that holds data records: those that
    overlap [start, start + span) of the data (every second of it has records)."""
    windows = WindowAssigner.from_spec(spec.window)
    first = windows.first_start(data.start_s * 1000)
    return list(range(first, data.window_ends_s * 1000, windows.slide_ms))


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """When one task's results are all readable: windows starting before `end_ms` hold data
    only (the sentinels' windows start a day later); their `count_star` sums to `total`, or,
    for a top-k task, each of `windows` holds `rows` rows."""

    end_ms: int
    total: int | None = None
    windows: tuple[int, ...] = ()
    rows: int = 0

    @classmethod
    def of(cls, spec: TaskSpec, data: Dataset) -> Completion:
        end_ms = data.window_ends_s * 1000
        if spec.top_k is not None:
            windows = tuple(data_windows(spec, data))
            return cls(end_ms=end_ms, windows=windows, rows=spec.top_k.limit)
        copies = len(WindowAssigner.from_spec(spec.window).window_starts(end_ms))  # per record
        return cls(end_ms=end_ms, total=data.records * copies)

    def met(self, seen: Mapping[int, WindowSeen]) -> bool:
        if self.total is not None:
            counted = sum(w.count for start, w in seen.items() if start < self.end_ms)
            return counted >= self.total
        return all(start in seen and seen[start].rows >= self.rows for start in self.windows)
