"""Section 12 of `docs/benchmarks.md`: Nexmark q5, q7 and q11 in Mars and Flink SQL, each run
checked against the DuckDB oracle (experiment 12), beside Flink's published Nexmark figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.experiment import render
from benchmarks.report_format import bullets, fmt, med
from benchmarks.stats import median

if TYPE_CHECKING:  # the experiment's module imports this one
    from benchmarks.exp_nexmark import NexmarkResult, SystemRuns

NEXMARK_HEADING = "## 12. Nexmark q5, q7, q11: Mars and Flink SQL, checked against DuckDB"
# Flink's events/s per core in the Nexmark project's own runs (nexmark/nexmark README: 8
# TaskManagers of 1 slot, the generator inside the job, no Kafka) as RisingWave's 2023 Nexmark
# report restates them; Nexmark's q5 and q7 are heavier than the queries here (a join each).
PUBLISHED_PER_CORE = {"q5": "~22K", "q7": "~12-14K", "q11": "~39K"}
SYSTEMS = (("mars", "Mars"), ("flink", "Flink SQL"))


def nexmark_section(found: NexmarkResult) -> str:
    config = found.config
    rows = [
        _row(name, label, getattr(query, key), query.expected_rows)
        for name, query in found.queries.items()
        for key, label in SYSTEMS
    ]
    queries = [
        f"{name}, {query.title}: Mars `{query.mars_sql}`; Flink SQL "
        f"`{' '.join(query.flink_sql.split())}`"
        for name, query in found.queries.items()
    ]
    return render(
        "nexmark",
        records=fmt(found.records),
        seed=found.seed,
        mean_bytes=fmt(found.mean_bytes, ".0f"),
        partitions=found.partitions,
        span_s=fmt(found.span_s),
        distinct_times=fmt(found.distinct_times),
        max_burst=config.get("max_burst", "?"),
        hot_auctions=config.get("hot_auctions", "?"),
        hot_bidders=config.get("hot_bidders", "?"),
        hot_period_s=config.get("hot_period_s", "?"),
        auctions=fmt(config.get("auctions")),
        bidders=fmt(config.get("bidders")),
        oracle_s=fmt(found.oracle_s, ".1f"),
        mappers=found.mappers,
        reducers=found.reducers,
        flink_parallelism=found.flink_parallelism,
        cores=found.cores,
        rows="\n".join(rows),
        cpu=_cpu_line(found),
        queries=bullets(queries),
        notes=bullets([*found.notes, *_problems(found)]),
    )


def _row(name: str, label: str, system: SystemRuns, expected: int) -> str:
    runs = system.runs
    if not runs:
        return f"| {name} | {label} | not run | | | | | | |"
    exact = sum(1 for run in runs if run.check["exact"])
    verdict = "**exact**" if exact == len(runs) else f"**NOT EXACT** ({exact}/{len(runs)})"
    rows = ", ".join(fmt(run.check["rows"]) for run in runs)
    return (
        f"| {name} | {label} | {verdict} | {rows} of {fmt(expected)} | "
        f"{med(system.seconds, '.1f')} | {med(system.records_per_s)} "
        f"| {med(system.records_per_s_per_core)} | {med(system.records_per_cpu_s)} "
        f"| {PUBLISHED_PER_CORE[name] if label != 'Mars' else ''} |"
    )


def _problems(found: NexmarkResult) -> list[str]:
    """A note per run that is not exact, saw late or bad records, or did not read every
    record of the topic."""
    problems = [
        f"{name} {label} run {index + 1}: {run.check['first_problem']}"
        for name, query in found.queries.items()
        for key, label in SYSTEMS
        for index, run in enumerate(getattr(query, key).runs)
        if not run.check["exact"]
    ]
    read = found.records + found.partitions  # the bids and a sentinel per partition
    for name, query in found.queries.items():
        for index, run in enumerate(query.mars.runs):
            if run.late or run.bad:
                problems.append(
                    f"{name} Mars run {index + 1}: {fmt(run.late)} late, {fmt(run.bad)} bad "
                    "records (none expected: every partition is in time order)"
                )
    for name, query in found.queries.items():
        for index, run in enumerate(query.mars.runs):
            if run.records_in is not None and run.records_in != read:
                problems.append(
                    f"{name} Mars run {index + 1}: {fmt(run.records_in)} records in, "
                    f"{fmt(read)} in the topic"
                )
    return problems


def _cpu_line(found: NexmarkResult) -> str:
    """Where Mars's CPU seconds went, per query (medians over the runs)."""
    shares = []
    for name, query in found.queries.items():
        runs = [run.cpu_by_role_s for run in query.mars.runs if run.cpu_by_role_s is not None]
        if runs:
            roles = {role: median([run[role] for run in runs]) for role in runs[0]}
            shares.append(f"{name} " + ", ".join(f"{r} {fmt(v, '.1f')}" for r, v in roles.items()))
    if not shares:
        return ""
    return "Mars's CPU seconds by process (medians): " + "; ".join(shares) + "."
