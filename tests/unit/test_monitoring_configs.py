"""configs/prometheus.yml and the Grafana dashboard agree with the metrics the code serves.

KNOWN is written out by hand from api/cluster_collector.py, mapper/mapper_metrics.py,
reducer/reducer_metrics.py and mars/metrics_server.py: renaming a metric without updating the
dashboard fails here, instead of leaving an empty panel nobody notices.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import yaml

from mars.config import PROJECT_ROOT

PROMETHEUS_FILE = PROJECT_ROOT / "configs" / "prometheus.yml"
DASHBOARD_FILE = PROJECT_ROOT / "configs" / "grafana" / "mars-dashboard.json"

HISTOGRAMS = {
    "mars_mapper_batch_duration_seconds",
    "mars_reducer_commit_duration_seconds",
    "mars_reducer_result_latency_seconds",
    "mars_reducer_checkpoint_duration_seconds",
}
KNOWN = HISTOGRAMS | {
    # the API: the cluster as a whole
    "mars_task_records_in_total",
    "mars_task_records_accepted_total",
    "mars_task_records_late_total",
    "mars_task_records_late_at_reducer_total",
    "mars_task_records_bad_total",
    "mars_task_backlog_datasets",
    "mars_task_watermark_lag_seconds",
    "mars_redis_used_memory_bytes",
    "mars_assignment_generation",
    "mars_leader_info",
    "mars_reducers",
    "mars_mappers",
    "mars_task_info",
    # mappers
    "mars_mapper_records_in_total",
    "mars_mapper_records_accepted_total",
    "mars_mapper_records_late_total",
    "mars_mapper_records_bad_total",
    "mars_mapper_batches_total",
    "mars_mapper_datasets_written_total",
    "mars_mapper_rejected_writes_total",
    "mars_mapper_paused_seconds_total",
    "mars_mapper_backlog_datasets",
    "mars_mapper_consumer_lag_records",
    "mars_mapper_partition_paused",
    # reducers
    "mars_reducer_datasets_merged_total",
    "mars_reducer_windows_emitted_total",
    "mars_reducer_result_rows_total",
    "mars_reducer_late_contributions_total",
    "mars_reducer_late_records_total",
    "mars_reducer_watermark_seconds",
    "mars_reducer_watermark_lag_seconds",
    "mars_reducer_checkpoint_bytes",
    "mars_reducer_owned_units",
    # every process
    "mars_process_info",
}
METRIC_NAME = re.compile(r"mars_[a-z_]+")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def load_dashboard() -> dict[str, Any]:
    dashboard = json.loads(DASHBOARD_FILE.read_text(encoding="utf-8"))
    assert isinstance(dashboard, dict)
    return dashboard


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL the dashboard runs: panel targets and template variable queries."""
    found = [
        target["expr"]
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
        if "expr" in target
    ]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        found.append(query["query"] if isinstance(query, dict) else str(query or ""))
    return found


def metric_names(expression: str) -> set[str]:
    names = set()
    for name in METRIC_NAME.findall(expression):
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix) and name.removesuffix(suffix) in HISTOGRAMS:
                name = name.removesuffix(suffix)
        names.add(name)
    return names


def test_prometheus_discovers_targets_from_the_api() -> None:
    config = yaml.safe_load(PROMETHEUS_FILE.read_text(encoding="utf-8"))
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "mars"]
    (discovery,) = job["http_sd_configs"]
    url = urlparse(discovery["url"])
    assert url.path == "/metrics/targets"
    assert (url.hostname, url.port) == ("127.0.0.1", 8640)
    assert discovery["refresh_interval"] == "15s"
    assert job["scrape_interval"] == "5s"
    assert "static_configs" not in job


def test_the_dashboard_is_importable() -> None:
    dashboard = load_dashboard()
    assert dashboard["schemaVersion"] == 39
    assert [item["name"] for item in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    for panel in panels(dashboard):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids))
    (task,) = dashboard["templating"]["list"]
    assert task["name"] == "task" and "label_values(mars_task_info, task)" in task["definition"]


def test_every_metric_on_the_dashboard_exists() -> None:
    used = set().union(*(metric_names(e) for e in expressions(load_dashboard())))
    assert used - KNOWN == set()
    # the panels the dashboard is for
    assert {
        "mars_task_records_in_total",
        "mars_task_watermark_lag_seconds",
        "mars_mapper_consumer_lag_records",
        "mars_task_backlog_datasets",
        "mars_reducer_result_latency_seconds",
        "mars_reducer_commit_duration_seconds",
        "mars_redis_used_memory_bytes",
        "mars_reducer_owned_units",
    } <= used


def test_a_renamed_metric_would_be_caught() -> None:
    assert metric_names('rate(mars_reducer_result_latency_seconds_bucket{task=~"$task"}[1m])') == {
        "mars_reducer_result_latency_seconds"
    }
    assert metric_names("rate(mars_task_records_input_total[1m])") - KNOWN == {
        "mars_task_records_input_total"
    }
