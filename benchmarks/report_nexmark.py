"""Section 12 of `docs/benchmarks.md`: Nexmark q5, q7 and q11 in Mars and Flink SQL, each run
checked against the DuckDB oracle (experiment 12), beside Flink's published Nexmark figures."""

from __future__ import annotations

from typing import Any

from benchmarks.report_format import fmt, med
from benchmarks.stats import median

NEXMARK_HEADING = "## 12. Nexmark q5, q7, q11: Mars and Flink SQL, checked against DuckDB"
# Flink's events/s per core in the Nexmark project's own runs (nexmark/nexmark README: 8
# TaskManagers of 1 slot, the generator inside the job, no Kafka) as RisingWave's 2023 Nexmark
# report restates them; Nexmark's q5 and q7 are heavier than the queries here (a join each).
PUBLISHED_PER_CORE = {"q5": "~22K", "q7": "~12-14K", "q11": "~39K"}
SYSTEMS = (("mars", "Mars"), ("flink", "Flink SQL"))


def nexmark_section(found: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    config = found.get("config", {})
    cores = found["cores"]
    lines += [
        "Run it alone: `mars bench --experiments nexmark [--nexmark-records N] [--runs N]` "
        "(`--quick`: 100,000 bids, one run); it needs the peers' virtualenv for Flink "
        "(`scripts/setup_peers.sh`), else Mars alone is measured and Flink noted as missing.",
        "",
        f"{fmt(found['records'])} Nexmark-style bids (`mars.gen.nexmark`, seed {found['seed']}), "
        f"JSON ({fmt(found['mean_bytes'], '.0f')} bytes mean), {found['partitions']} "
        f"partitions in time order, {fmt(found['span_s'])} s of event time with "
        f"{fmt(found['distinct_times'])} distinct milliseconds (bursts of up to "
        f"{config.get('max_burst', '?')} bids share one); half the bids go to "
        f"{config.get('hot_auctions', '?')} hot auctions and three quarters to "
        f"{config.get('hot_bidders', '?')} hot bidders (Nexmark's hot ratios 2 and 4), both "
        f"drawn anew every {config.get('hot_period_s', '?')} s; the other bids spread over "
        f"{fmt(config.get('auctions'))} auctions and {fmt(config.get('bidders'))} bidders; "
        "log-uniform prices. Preloaded once, with one sentinel bid per partition a day later "
        "that closes every data window; DuckDB computed every query's expected rows from the "
        f"same bids in {fmt(found['oracle_s'], '.1f')} s (`benchmarks/nexmark_oracle.py`: "
        "half-open windows, sessions of bids at most the gap apart, no late bid).",
        "",
        f"Mars: {found['mappers']} mappers + {found['reducers']} reducer, already up, the "
        f"clock from the task's registration; Flink SQL: PyFlink's MiniCluster, parallelism "
        f"{found['flink_parallelism']}, exactly-once Kafka sink, watermark `ts` with 0 "
        "out-of-orderness, the clock from the INSERT's submission. Both until the oracle's "
        "number of data rows is readable (read_committed); then every row is checked: "
        "**exact** means no row missing, wrong, extra or repeated (q5: the window's largest "
        "count and one of the auctions that have it). Records per CPU-second: the records "
        "over the CPU seconds of Mars's mappers, reducers and Redis server, or Flink's "
        f"Python process and JVM (the Kafka broker for neither); per core, wall: records/s "
        f"over the machine's {cores} cores.",
        "",
        "| query | system | check | rows | seconds | records/s | records/s per core (wall) "
        "| records per CPU-second | Flink's published events/s per core |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, query in found["queries"].items():
        for key, label in SYSTEMS:
            lines.append(_row(name, label, query[key], query["expected_rows"]))
    lines += [
        *_cpu_lines(found),
        "",
        "Flink's published figures are for Nexmark's own q5 and q7 (each a join of the window "
        "aggregate back to the bids or the counts: more work than the queries here) on 8 "
        "cores with the generator inside the job, not on a 2-core machine reading Kafka; they "
        "put the measured figures in scale, they are not a like-for-like ratio.",
        "",
        "The queries (`benchmarks/nexmark_queries.py`):",
        "",
    ]
    for name, query in found["queries"].items():
        lines += [
            f"- {name}, {query['title']}: Mars `{query['mars_sql']}`; Flink SQL "
            f"`{' '.join(query['flink_sql'].split())}`",
        ]
    problems = [
        f"{name} {label} run {index + 1}: {run['check']['first_problem']}"
        for name, query in found["queries"].items()
        for key, label in SYSTEMS
        for index, run in enumerate(query[key]["runs"])
        if not run["check"]["exact"]
    ]
    late = [
        f"{name} Mars run {index + 1}: {fmt(run.get('late'))} late, {fmt(run.get('bad'))} bad "
        "records (none expected: every partition is in time order)"
        for name, query in found["queries"].items()
        for index, run in enumerate(query["mars"]["runs"])
        if run.get("late") or run.get("bad")
    ]
    read = found["records"] + found["partitions"]  # the bids and a sentinel per partition
    unread = [
        f"{name} Mars run {index + 1}: {fmt(run['records_in'])} records in, {fmt(read)} "
        "in the topic"
        for name, query in found["queries"].items()
        for index, run in enumerate(query["mars"]["runs"])
        if run.get("records_in", read) != read
    ]
    notes = [*found.get("notes", []), *problems, *late, *unread]
    return [*lines, "", *[f"- {note}" for note in notes], *([""] if notes else [])]


def _row(name: str, label: str, system: dict[str, Any], expected: int) -> str:
    runs = system["runs"]
    if not runs:
        return f"| {name} | {label} | not run | | | | | | |"
    exact = sum(1 for run in runs if run["check"]["exact"])
    verdict = "**exact**" if exact == len(runs) else f"**NOT EXACT** ({exact}/{len(runs)})"
    rows = ", ".join(fmt(run["check"]["rows"]) for run in runs)
    return (
        f"| {name} | {label} | {verdict} | {rows} of {fmt(expected)} | "
        f"{med(system['seconds'], '.1f')} | {med(system['records_per_s'])} "
        f"| {med(system['records_per_s_per_core'])} | {med(system['records_per_cpu_s'])} "
        f"| {PUBLISHED_PER_CORE[name] if label != 'Mars' else ''} |"
    )


def _cpu_lines(found: dict[str, Any]) -> list[str]:
    """Where Mars's CPU seconds went, per query (medians over the runs)."""
    shares = []
    for name, query in found["queries"].items():
        runs = [run["cpu_by_role_s"] for run in query["mars"]["runs"] if "cpu_by_role_s" in run]
        if runs:
            roles = {role: median([run[role] for run in runs]) for role in runs[0]}
            shares.append(f"{name} " + ", ".join(f"{r} {fmt(v, '.1f')}" for r, v in roles.items()))
    if not shares:
        return []
    return ["", "Mars's CPU seconds by process (medians): " + "; ".join(shares) + "."]
