"""`mars top [--interval S] [--once]`: the REST API's live figures as a refreshing terminal view.

The same figures as the web dashboard (`GET /tasks/{id}` and `GET /cluster`), for a terminal
or an ssh session. Rendering is pure (`render_frame` builds rich renderables from the API's
JSON) so it is tested without a server; the loop only fetches, renders and sleeps. When the API
cannot be reached the view says so and keeps the last frame, and keeps trying: a restarting API
should not end the watch. `--once` prints one frame (or the error, exit 1) for scripts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from cli.task_commands import add_api_argument, api_url, format_error
from mars.clients.api_client import ApiCallError, MarsApiClient
from mars.config import load_settings

Json = dict[str, Any]

MISSING = "–"
REQUEST_TIMEOUT_S = 5.0  # a refresh must not hang for the client's default 30 s
STATUS_STYLES = {"RUNNING": "green", "PAUSED": "yellow", "FAILED": "bold red"}


def register(subparsers: Any) -> None:
    top = subparsers.add_parser("top", help="live view of tasks, reducers and mappers")
    top.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default 1.0)"
    )
    top.add_argument("--once", action="store_true", help="print one frame and exit")
    add_api_argument(top)
    top.set_defaults(handler=_top)


class LiveSource(Protocol):
    """What `mars top` reads (`MarsApiClient`, or a fake in tests)."""

    def list_tasks(self) -> list[Json]: ...
    def get_task(self, task_id: str) -> Json: ...
    def cluster(self) -> Json: ...


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One refresh: every task with its stats and live figures, and the cluster."""

    tasks: list[Json]
    cluster: Json


# -- formatting: the dashboard's conventions (api/ui/dashboard.js) ------------------------------


def number(value: float | None) -> str:
    return MISSING if value is None else f"{round(value):,}"


def duration(ms: float | None) -> str:
    """A lag or latency; a negative one (event time ahead of the wall clock, as in the demo's
    sped-up time) reads "ahead by ...", never as a negative duration."""
    if ms is None:
        return MISSING
    seconds = abs(ms) / 1000
    if seconds < 10:
        text = f"{seconds:.1f} s"
    elif seconds < 600:
        text = f"{round(seconds)} s"
    else:
        text = f"{seconds / 60:.1f} min"
    return f"ahead by {text}" if ms < 0 and text != "0.0 s" else text


def size(count: float | None) -> str:
    if count is None:
        return MISSING
    units = ("B", "KiB", "MiB", "GiB")
    index = 0
    while count >= 1024 and index < len(units) - 1:
        count /= 1024
        index += 1
    return f"{count:.{1 if index else 0}f} {units[index]}"


def rate(value: float | None) -> str:
    return MISSING if value is None else f"{number(value)}/s"


# -- rendering ----------------------------------------------------------------------------------


def late_total(stats: Json) -> int:
    """The mappers' late records plus the reducers' (`late_reducer`), as the dashboard counts."""
    counters = stats.get("counters") or {}
    return int(stats.get("late") or 0) + int(counters.get("late_reducer") or 0)


def tasks_table(tasks: Iterable[Json]) -> Table:
    table = Table(title="Tasks", title_justify="left", expand=True)
    table.add_column("task")
    table.add_column("status")
    for name in ("in/s", "records in", "accepted", "late", "bad", "wm lag", "backlog", "latency"):
        table.add_column(name, justify="right")
    reasons = []
    for task in sorted(tasks, key=lambda t: str(t.get("id"))):
        stats: Json | None = task.get("stats")
        live: Json = task.get("live") or {}
        status = str(task.get("status") or MISSING)
        if task.get("reason"):
            reasons.append(f"{task.get('id')}: {task['reason']}")
        table.add_row(
            str(task.get("id")),
            Text(status, style=STATUS_STYLES.get(status, "")),
            rate(live.get("input_rate")),
            number(stats.get("records_in") if stats else None),
            number(stats.get("accepted") if stats else None),
            number(late_total(stats) if stats else None),
            number(stats.get("bad") if stats else None),
            duration(live.get("watermark_lag_ms")),
            number(live.get("backlog_datasets")),
            duration(live.get("result_latency_ms")),
        )
    if reasons:
        table.caption = "\n".join(reasons)
        table.caption_justify = "left"
    return table


def reducers_table(cluster: Json) -> Table:
    table = Table(title="Reducers", title_justify="left", expand=True)
    table.add_column("member")
    table.add_column("units", justify="right")
    table.add_column("merges/s", justify="right")
    table.add_column("metrics")
    leader = cluster.get("leader")
    members: Json = cluster.get("members") or {}
    for member_id, member in sorted(members.items()):
        name = Text(member_id)
        if member_id == leader:
            name.append(" ★ leader", style="bold cyan")
        owned = member.get("owned_units")
        table.add_row(
            name,
            number(len(owned) if owned is not None else member.get("units")),
            number(member.get("merge_rate")),
            member.get("metrics") or MISSING,
        )
    return table


def partitions_text(partitions: Iterable[Json]) -> Text:
    """`S[0] 1,234, S[1] 0 paused`: each assigned partition's lag; paused ones stand out."""
    text = Text()
    for index, partition in enumerate(partitions):
        if index:
            text.append(", ")
        lag = partition.get("lag")
        label = f"{partition.get('topic')}[{partition.get('partition')}] "
        label += "?" if lag is None else number(lag)
        if partition.get("paused"):
            text.append(label + " paused", style="bold yellow")
        else:
            text.append(label)
    return text if text.plain else Text("none", style="dim")


def mappers_table(cluster: Json) -> Table:
    table = Table(title="Mappers", title_justify="left", expand=True)
    table.add_column("member")
    table.add_column("partitions (lag)", ratio=1)
    table.add_column("metrics")
    mappers: Json = cluster.get("mappers") or {}
    for member_id, mapper in sorted(mappers.items()):
        table.add_row(
            member_id,
            partitions_text(mapper.get("partitions") or []),
            mapper.get("metrics") or MISSING,
        )
    return table


def summary_line(cluster: Json, source: str) -> Text:
    assignment = cluster.get("assignment") or {}
    measured = cluster.get("measured_ms")
    at = MISSING if measured is None else datetime.fromtimestamp(measured / 1000).strftime("%X")
    text = Text("mars top ", style="bold")
    text.append(source, style="dim")
    text.append(f"  leader {cluster.get('leader') or MISSING}")
    text.append(f"  generation {assignment.get('generation', MISSING)}")
    text.append(f"  Redis memory {size(cluster.get('redis_used_memory_bytes'))}")
    for role, advice in sorted((cluster.get("advice") or {}).items()):
        if advice.get("needed") != advice.get("current"):
            text.append(f"  {role}: {advice['needed']} needed", style="bold yellow")
    text.append(f"  at {at}", style="dim")
    return text


def render_frame(
    snapshot: Snapshot | None, *, source: str, error: str | None = None
) -> RenderableType:
    """The whole view; with `error`, the message on top of the last frame (if there is one)."""
    parts: list[RenderableType] = []
    if snapshot is not None:
        parts.append(summary_line(snapshot.cluster, source))
    else:
        parts.append(Text(f"mars top {source}", style="bold"))
    if error is not None:
        parts.append(Text(f"{error} (retrying)", style="bold red"))
    if snapshot is not None:
        parts += [
            tasks_table(snapshot.tasks),
            reducers_table(snapshot.cluster),
            mappers_table(snapshot.cluster),
        ]
    return Group(*parts)


# -- fetching and the loop ----------------------------------------------------------------------


def fetch_snapshot(client: LiveSource) -> Snapshot:
    """Every task in detail, then the cluster. A task deleted meanwhile keeps its list entry."""
    tasks = []
    for listed in client.list_tasks():
        try:
            tasks.append(client.get_task(str(listed["id"])))
        except ApiCallError as error:
            if error.status == 0:
                raise
            tasks.append(listed)
    return Snapshot(tasks=tasks, cluster=client.cluster())


def _top(args: argparse.Namespace) -> int:
    settings = load_settings()
    source = api_url(settings, args.api)
    console = Console()
    with MarsApiClient(
        base_url=source, token=settings.api.token, timeout_s=REQUEST_TIMEOUT_S
    ) as client:
        if args.once:
            return print_once(client, console, source)
        return _watch(client, console, source, max(0.1, args.interval))


def print_once(client: LiveSource, console: Console, source: str) -> int:
    try:
        snapshot = fetch_snapshot(client)
    except (ApiCallError, ValueError) as error:
        print(f"mars top: {_describe(error)}", file=sys.stderr)
        return 1
    console.print(render_frame(snapshot, source=source))
    return 0


def _watch(client: LiveSource, console: Console, source: str, interval_s: float) -> int:
    snapshot: Snapshot | None = None
    with Live(render_frame(None, source=source), console=console, auto_refresh=False) as live:
        try:
            while True:
                error = None
                try:
                    snapshot = fetch_snapshot(client)
                except (ApiCallError, ValueError) as failure:
                    error = _describe(failure)
                live.update(render_frame(snapshot, source=source, error=error), refresh=True)
                time.sleep(interval_s)
        except KeyboardInterrupt:
            return 0  # Ctrl-C is how one leaves a `top`


def _describe(error: Exception) -> str:
    if isinstance(error, ApiCallError):
        return format_error(error)
    return f"unexpected answer from the API: {error}"
