"""Schemathesis fuzzes every operation of the running API from its OpenAPI document: no
request it generates may get a 5xx (user input is never a server error).

The source topic `S` of the schema's example SQL exists, so the fuzzer also registers tasks
for real (in the test API's own ZooKeeper root) and drives them through the other operations.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from confluent_kafka.admin import AdminClient

from tests.integration.api.conftest import PROJECT_ROOT, RunningApi

MAX_EXAMPLES = 30  # per operation; the whole run stays well under a minute


def test_fuzzed_requests_never_get_a_server_error(
    running_api: RunningApi, kafka_admin: AdminClient, make_topic: Callable[[str], str]
) -> None:
    if "S" not in kafka_admin.list_topics(timeout=30).topics:
        make_topic("S")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.api.schemathesis_runner",
            "run",
            f"{running_api.base_url}/openapi.json",
            "--checks",
            "not_a_server_error",
            "--hypothesis-max-examples",
            str(MAX_EXAMPLES),
            "--hypothesis-derandomize",
            "--experimental=openapi-3.1",  # FastAPI emits OpenAPI 3.1
            "--data-generation-method",
            "all",  # valid and invalid bodies, parameters and paths
            "-H",
            f"Authorization: Bearer {running_api.token}",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    assert "not_a_server_error" in done.stdout and " passed " in done.stdout, report
