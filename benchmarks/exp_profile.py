"""Where a mapper spends its time: one mapper over the whole topic S, sampled from outside by
py-spy, read as shares of its loop (`benchmarks.profile_reading`)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchmarks.experiment import Base, Context, NoSettings, Section, render
from benchmarks.harness import BenchCluster
from benchmarks.profile_reading import (
    CONSUME,
    NATIVE_CONSUME,
    hot_frame_lines,
    hot_frame_shares,
    top_functions,
)
from benchmarks.report_format import bullets
from benchmarks.workload import Dataset, paper_sql
from mars.config import MAPPER_BATCH_SIZE


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileResult:
    """What was read (`what`), py-spy's raw file, and its reading: a line per hot frame,
    frame -> share of the mapper loop, and the functions with the largest shares."""

    what: str = ""
    file: str = ""
    reading: list[str] = field(default_factory=list)
    shares: dict[str, float] = field(default_factory=dict)
    top: list[tuple[str, float]] = field(default_factory=list)

    def read_again(self) -> ProfileResult:
        """The reading of `file` again when it is still there (a report rewritten later)."""
        path = Path(self.file)
        return read_profile(path, what=self.what) if self.file and path.exists() else self


class Profile(Base[NoSettings, ProfileResult]):
    name = "profile"
    title = "one mapper sampled by py-spy"
    sections = (Section(99, "## Where a mapper spends its time, and what limits it"),)
    uses_dataset = True
    settings_type = NoSettings
    result_type = ProfileResult

    def decode(self, data: object) -> ProfileResult:
        return super().decode(data).read_again()

    def run(self, ctx: Context, settings: NoSettings) -> ProfileResult:
        path = ctx.config.run_dir / "mapper-profile.txt"
        return profile_mapper(ctx.bench, ctx.dataset(), path)

    def report(self, result: ProfileResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return ("Not profiled in this run.",)
        text = render(
            "profile",
            batch_size=f"{MAPPER_BATCH_SIZE:,}",
            what=result.what,
            reading=bullets(result.reading),
            limits=bullets(limits(result.shares)),
            top="\n".join(f"| `{name}` | {value:.0%} |" for name, value in result.top),
        )
        return (text,)


def profile_mapper(bench: BenchCluster, data: Dataset, path: Path) -> ProfileResult:
    """One mapper over the whole topic, sampled from outside by py-spy; its loop's shares."""
    py_spy = Path(sys.executable).parent / "py-spy"
    with bench.run() as run:
        (handle,) = run.start_mappers(1)
        argv = [str(py_spy), "record", "--pid", str(handle.pid), "--rate", "200"]
        spy = subprocess.Popen(
            [*argv, "--format", "raw", "--output", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        run.register(paper_sql(data.topic))
        run.wait_records_in(data.records, timeout_s=600)
        spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
        spy.wait(timeout=60)
    return read_profile(path, what=f"{data.records:,} records")


def read_profile(path: Path, *, what: str) -> ProfileResult:
    text = path.read_text() if path.exists() else ""
    found = ProfileResult(what=what, file=str(path))
    return replace(
        found,
        reading=hot_frame_lines(text),
        shares=hot_frame_shares(text),
        top=top_functions(text),
    )


def limits(shares: Mapping[str, float]) -> list[str]:
    """What the profile says limits a mapper; `shares` = frame -> share of the mapper loop."""

    def share(name: str) -> str:
        return f"{shares.get(name, 0.0):.0%}"

    return [
        f"Kafka consume is {share(NATIVE_CONSUME)} of the loop with the native consumer "
        "(librdkafka's batch reads of each partition's queue, each partition's offsets and "
        "joined values built in Rust; its waits for records count here too) and "
        f"{share(CONSUME)} with confluent-kafka's, whose `Message` per record the per-message "
        f"loop `group_by_partition` ({share('group_by_partition')}) takes apart; the "
        "consume+decode ceilings pay the same.",
        f"CSV decode is {share('CsvRecordDecoder.decode')}: Polars's CSV reader parses the "
        "whole batch in one call, after one Rust pass checks each line's width (the native "
        "consumer hands the records already joined; confluent-kafka's are joined first).",
        f"Data sets are {share('Preaggregator._datasets')}: the reference query has 8,000 "
        "(sip, type) groups per window, so a batch's data sets hold up to one partial group "
        "per group and window it touches: Polars groups, msgspec encodes each column once, "
        "and with mars_native Rust cuts the columns into entries, hashes, sorts and joins them.",
        f"Redis (the apply script) is {share('SeqStore.apply_batch')}: not the limit.",
    ]
