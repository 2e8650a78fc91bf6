"""Experiment 15: key watermarks against the partition watermark on devices with skewed clocks.

The workload and what is measured: `benchmarks.key_watermark_sim` (the real pre-aggregation and
reducer window state, in process, tick by tick). Three configurations of the same task
(`SELECT device, count(*), sum(v) ... GROUP BY device WINDOWING 10 s`):

- partition watermark, GRACE 1 s: what a task gets by default;
- partition watermark, GRACE as long as the largest skew: what it takes the partition
  watermark to accept the lagging devices' records;
- `watermark = 'key'`, GRACE 1 s, `key_lag` above the largest skew;
- the same with `key_groups = 8` (the seed's memory trade-off: 8 clocks, not one per device;
  each device in its key group's partition).

The seed's claim [FlinkOpt], checked on the figures: key watermarks give fewer late records,
lower result latency and less state than a subtask (here: partition) watermark (checked for
the clock per key). Key-clock state in bytes, mapper and reducer, for every configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from benchmarks.experiment import Base, Context, Section
from benchmarks.key_watermark_sim import COST_BATCH, Mode, ModeFigures, devices, run_mode
from benchmarks.report_format import bullets, fmt

HEADING = "## 15. Key watermarks: devices with skewed clocks"
KEY_GROUPS = 8


@dataclass(frozen=True, slots=True)
class KeyWatermarkSettings:
    devices: int = 60
    partitions: int = 4
    seconds: int = 300
    max_skew_s: int = 240
    seed: int = 4
    QUICK: ClassVar[dict[str, object]] = {"devices": 24, "seconds": 120}


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyWatermarkResult:
    devices: int = 0
    partitions: int = 0
    seconds: int = 0
    max_skew_s: int = 0
    records: int = 0
    modes: list[ModeFigures] = field(default_factory=list)
    claims: dict[str, bool] = field(default_factory=dict)


def modes(max_skew_s: int) -> tuple[Mode, ...]:
    return (
        Mode(name="partition, GRACE 1 s", grace_s=1),
        Mode(name=f"partition, GRACE {max_skew_s + 5} s", grace_s=max_skew_s + 5),
        Mode(name="key, GRACE 1 s", grace_s=1, key_lag_s=max_skew_s + 60),
        Mode(
            name=f"key, GRACE 1 s, key_groups = {KEY_GROUPS}",
            grace_s=1,
            key_lag_s=max_skew_s + 60,
            key_groups=KEY_GROUPS,
        ),
    )


def key_watermark_experiment(ctx: Context, settings: KeyWatermarkSettings) -> KeyWatermarkResult:
    arrivals = devices(
        count=settings.devices,
        partitions=settings.partitions,
        seconds=settings.seconds,
        max_skew_s=settings.max_skew_s,
        seed=settings.seed,
    )
    found: list[ModeFigures] = []
    for mode in modes(settings.max_skew_s):
        figures = run_mode(arrivals, partitions=settings.partitions, mode=mode)
        figures.latencies_s = []  # summed up in the figures; the results file stays small
        ctx.log(
            f"  {mode.name}: {figures.late:,} late, p50 {figures.latency_p50_s} s, "
            f"p99 {figures.latency_p99_s} s, {figures.open_groups_mean:.1f} open groups"
        )
        found.append(figures)
    return KeyWatermarkResult(
        devices=settings.devices,
        partitions=settings.partitions,
        seconds=settings.seconds,
        max_skew_s=settings.max_skew_s,
        records=len(arrivals),
        modes=found,
        claims=claims(found),
    )


def claims(found: list[ModeFigures]) -> dict[str, bool]:
    """The seed's claims, key watermarks (a clock per key) against each partition
    configuration."""
    partition = [m for m in found if not m.mode.startswith("key")]
    key = next(m for m in found if m.mode.startswith("key"))
    checked: dict[str, bool] = {}
    for other in partition:
        checked[f"fewer late records than {other.mode}"] = key.late < other.late
        checked[f"lower p50 latency than {other.mode}"] = key.latency_p50_s < other.latency_p50_s
        checked[f"lower p99 latency than {other.mode}"] = key.latency_p99_s < other.latency_p99_s
        checked[f"less state (mean open groups) than {other.mode}"] = (
            key.open_groups_mean < other.open_groups_mean
        )
    return checked


def key_watermark_section(found: KeyWatermarkResult) -> str:
    head = (
        "| configuration | late records | groups emitted | latency p50 / p99 (s) "
        "| open groups mean / max | key clocks held (max) "
        "| key-clock bytes mapper / reducer (max) | late at the reducer "
        "| pre-aggregation records/s | reducer s per 1M records |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = [
        f"| {m.mode} | {fmt(m.late)} ({fmt(100 * m.late / max(found.records, 1), '.0f')} %) "
        f"| {fmt(m.groups_emitted)} | {fmt(m.latency_p50_s, '.1f')} / "
        f"{fmt(m.latency_p99_s, '.1f')} | {fmt(m.open_groups_mean, '.1f')} / "
        f"{m.open_groups_max} | {m.key_clocks_max} "
        f"| {fmt(m.mapper_clock_bytes_max)} / {fmt(m.reducer_clock_bytes_max)} "
        f"| {fmt(m.reducer_late)} | {fmt(m.mapper_records_per_s)} "
        f"| {fmt(m.reducer_s_per_million, '.1f')} |"
        for m in found.modes
    ]
    verdicts = bullets(
        f"{'holds' if held else 'does not hold'}: key watermarks give {claim}"
        for claim, held in found.claims.items()
    )
    return "\n\n".join(
        [
            f"{found.devices} devices over {found.partitions} partitions (keyed by device), "
            f"{found.seconds} s of arrivals, {fmt(found.records)} records; clocks behind by "
            f"up to {found.max_skew_s} s, every third device uploading every 30 s. The real "
            "pre-aggregation and reducer window state, in process "
            "(`benchmarks/key_watermark_sim.py`): latency is simulated arrival time from a "
            "group's last accepted record to its close; pre-aggregation records/s is wall "
            f"time on this machine in batches of {COST_BATCH:,} records.",
            "\n".join([head, *rows]),
            "The seed's claim:\n\n" + verdicts,
        ]
    )


class KeyWatermarks(Base[KeyWatermarkSettings, KeyWatermarkResult]):
    """Experiment 15 (the module's docstring)."""

    name = "key_watermarks"
    title = "experiment 15, key watermarks against the partition watermark"
    sections = (Section(15, HEADING),)
    settings_type = KeyWatermarkSettings
    result_type = KeyWatermarkResult

    def run(self, ctx: Context, settings: KeyWatermarkSettings) -> KeyWatermarkResult:
        return key_watermark_experiment(ctx, settings)

    def report(
        self, result: KeyWatermarkResult | None, images: Mapping[str, str]
    ) -> tuple[str, ...]:
        return (key_watermark_section(result),) if result else self.not_run()
