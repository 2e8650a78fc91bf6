"""The web dashboard in a real browser (Debian's Chromium driven by Playwright) against the
real local cluster: a running task's counts grow live, the current values of its open windows
show and its results table fills as windows close, the token guards the actions, a task
registered through the form appears, a bad query's SQL error is shown at its position, and
pause / resume / delete work from the page. A task whose event time runs ahead of the wall clock
(as the demo's x10 time does) shows its watermark lag and result latency as "ahead by ...",
never as a negative duration. `mars top --once` shows the same task and mappers
in the terminal.

The screenshot goes to the test's folder; with `MARS_UPDATE_SCREENSHOT=1` it also replaces
`docs/img/dashboard.png` (what the README shows).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from playwright.sync_api import Browser, Page, expect, sync_playwright

from devtools.local import ClusterState
from tests.integration.watched import WatchedPipeline, live_producer, make_topic

pytestmark = pytest.mark.integration

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SQL = "SELECT type, count(*) FROM {topic} GROUP BY type WINDOWING 5 s"
# The form's task: the statistics aggregates, whose list results the results table shows.
STATS_SQL = (
    "SELECT type, count(*), approx_percentile(bytes, [0.5, 0.99]) AS pcts, stddev(bytes), "
    "topk(sip, 3), first(bytes), count_if(bytes > 100) FROM {topic} GROUP BY type WINDOWING 5 s"
)
BAD_SQL = "SELECT type, count(*) FROM {topic}\nGROUP BY type WINDOWING 5 parsecs"
LIVE_S = 90  # longer than the test needs: the counts must be growing while it looks
AHEAD_S = 45 * 60  # the event time of the "ahead" task's records, past the wall clock
ACTION_TIMEOUT_MS = 15_000  # an action's answer, and the refresh after it, on a loaded machine


@pytest.fixture
def browser() -> Iterator[Browser]:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is missing: `make setup` installs it (apt chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


def _count(page: Page, task: str, column: str) -> int:
    text = page.locator(f'#tasks tr[data-task="{task}"] td.{column}').inner_text()
    return int(text.replace(",", "")) if text.strip("–") else 0


@pytest.mark.pipeline(mappers=1, reducers=1)
@pytest.mark.timeout(240)
def test_dashboard_shows_live_tasks_and_changes_them(
    pipeline: WatchedPipeline,
    browser: Browser,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=2)
    first, second = f"{unique_name}a", f"{unique_name}b"
    pipeline.register(SQL.format(topic=topic), task_id=first, options={"idle_timeout": "5 s"})
    producer = live_producer(
        cluster.kafka_bootstrap, topic, start_s=int(time.time()), rate=500, seconds=LIVE_S
    )
    request.addfinalizer(producer.stop)  # also when an assertion fails
    ahead_topic = make_topic(kafka_admin, f"{unique_name}_ahead", partitions=1)
    ahead = f"{unique_name}z"
    pipeline.register(SQL.format(topic=ahead_topic), task_id=ahead, options={"idle_timeout": "5 s"})
    ahead_producer = live_producer(
        cluster.kafka_bootstrap,
        ahead_topic,
        start_s=int(time.time()) + AHEAD_S,
        rate=100,
        seconds=LIVE_S,
    )
    request.addfinalizer(ahead_producer.stop)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{pipeline.api_url}/ui")

    # The running task with counts that grow, and its results as windows close.
    row = page.locator(f'#tasks tr[data-task="{first}"]')
    expect(row).to_be_visible(timeout=20_000)
    expect(row.locator(".badge")).to_have_text("RUNNING")
    page.wait_for_function(
        f"""() => {{
            const cell = document.querySelector('#tasks tr[data-task="{first}"] td.records-in');
            return cell && Number(cell.textContent.replace(/,/g, '')) > 0;
        }}""",
        timeout=30_000,
    )
    before = _count(page, first, "records-in")
    page.wait_for_timeout(3_000)
    assert _count(page, first, "records-in") > before
    row.click()
    expect(page.locator("#current tbody tr").first).to_be_visible(timeout=30_000)
    expect(page.locator("#current-age")).to_contain_text("Values as of")
    expect(page.locator("#results tbody tr").first).to_be_visible(timeout=30_000)
    expect(page.locator("#mappers tbody tr")).to_have_count(1)
    expect(page.locator("#reducers .badge.leader")).to_be_visible()

    # The task's plan (GET /tasks/{id}/explain, no token needed).
    row.locator('button[data-action="explain"]').click()
    expect(page.locator("#plan-panel")).to_be_visible()
    expect(page.locator("#plan")).to_contain_text('"close_rule"')
    expect(page.locator("#plan")).to_contain_text('"error_bound"')

    # Event time ahead of the wall clock: "ahead by ...", no negative duration in any row.
    ahead_row = page.locator(f'#tasks tr[data-task="{ahead}"]')
    for column in ("watermark-lag", "result-latency"):
        expect(ahead_row.locator(f"td.{column}")).to_have_text(
            re.compile(r"^ahead by 4\d\.\d min$"), timeout=30_000
        )
        for cell in page.locator(f"#tasks td.{column}").all():
            assert "-" not in cell.inner_text(), (column, cell.inner_text())

    # Without the token the API refuses; the page says so.
    row.locator('button[data-action="pause"]').click()
    expect(page.locator("#action-error")).to_contain_text("missing credentials")
    page.fill("#token", pipeline.token)
    page.dispatch_event("#token", "change")

    # A second task through the form.
    page.fill("#sql", STATS_SQL.format(topic=topic))
    page.fill("#task-id", second)
    page.fill("#options", '{"idle_timeout": "5 s"}')
    page.click("#register-form button[type=submit]")
    expect(page.locator("#register-ok")).to_contain_text(f"Registered {second}")
    expect(page.locator(f'#tasks tr[data-task="{second}"]')).to_be_visible()
    assert pipeline.get(f"/tasks/{second}")["status"] == "RUNNING"
    page.locator(f'#tasks tr[data-task="{second}"]').click()
    percentiles = page.locator("#results thead th").filter(has_text="pcts")
    expect(percentiles).to_have_count(1, timeout=60_000)
    expect(
        page.locator("#results tbody td").filter(has_text=re.compile(r"^\[\d"))
    ).not_to_have_count(0)
    # Replace its query from the form: a compatible change (one more aggregate) keeps the open
    # windows; an incompatible one (another window size) shows the 409 (the restart prompt is
    # dismissed, so nothing changes).
    page.fill("#sql", STATS_SQL.format(topic=topic).replace("count(*),", "count(*), max(bytes),"))
    page.click("#replace-sql")
    expect(page.locator("#register-ok")).to_contain_text(f"Replaced the query of {second}")
    assert pipeline.get(f"/tasks/{second}")["spec"]["revisions"][-1]["added"] == [6]
    page.fill("#sql", STATS_SQL.format(topic=topic).replace("5 s", "7 s"))
    page.click("#replace-sql")
    expect(page.locator("#sql-error")).to_contain_text("window size (ms): 5000 -> 7000")
    assert len(pipeline.get(f"/tasks/{second}")["spec"]["revisions"]) == 1
    row.click()  # back to the first task

    # A bad query: the error at its line and column, with a caret under it.
    page.fill("#sql", BAD_SQL.format(topic=topic))
    page.fill("#task-id", f"{unique_name}c")
    page.fill("#options", "")
    page.click("#register-form button[type=submit]")
    error = page.locator("#sql-error")
    expect(error).to_be_visible()
    expect(error.locator(".message")).to_contain_text("line 2, column 27")
    expect(error.locator(".message")).to_contain_text("parsecs")
    assert error.locator(".where").inner_text().splitlines()[-1] == " " * 26 + "^"

    # Pause, resume and delete from the page.
    second_row = page.locator(f'#tasks tr[data-task="{second}"]')
    # The action's answer can take seconds on a loaded machine (CI): wait for the action box to
    # clear (it names the error if the API refused) before the badge.
    for action, status in (("pause", "PAUSED"), ("resume", "RUNNING")):
        second_row.locator(f'button[data-action="{action}"]').click()
        expect(page.locator("#action-error")).to_be_hidden(timeout=ACTION_TIMEOUT_MS)
        expect(second_row.locator(".badge")).to_have_text(status, timeout=ACTION_TIMEOUT_MS)
    # Rewind it from its row (docs/rewind.md): the prompt takes the time, the answer shows.
    from_iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    page.once("dialog", lambda dialog: dialog.accept(from_iso))
    second_row.locator('button[data-action="rewind"]').click()
    expect(page.locator("#plan-of")).to_contain_text(f"rewind 1 of {second}")
    assert [r["generation"] for r in pipeline.get(f"/tasks/{second}")["spec"]["rewinds"]] == [1]
    page.on("dialog", lambda dialog: dialog.accept())
    second_row.locator('button[data-action="delete"]').click()
    expect(second_row).to_have_count(0)

    # The first task is still counting; the screenshot shows it with its results.
    page.fill("#sql", "")
    page.fill("#task-id", "")
    page.locator("#sql-error").evaluate("node => node.hidden = true")
    before = _count(page, first, "records-in")
    page.wait_for_timeout(2_500)
    assert _count(page, first, "records-in") > before
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    if os.environ.get("MARS_UPDATE_SCREENSHOT") == "1":
        shutil.copy(shot, PROJECT_ROOT / "docs" / "img" / "dashboard.png")
    # The same figures in the terminal.
    top = subprocess.run(
        [sys.executable, "-m", "cli.main", "top", "--once", "--api", pipeline.api_url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert top.returncode == 0, top.stderr
    assert first in top.stdout and "RUNNING" in top.stdout
    assert next(iter(pipeline.get("/cluster")["mappers"])) in top.stdout
