"""Any Flink SQL job (PyFlink), its statements given as text: the runner both Flink peers use.

    <peer venv>/bin/python -m benchmarks.flink_job --job JOB.json --log-dir DIR

`JOB.json` holds `configuration` (the Flink settings the TableEnvironment is built with),
`settings` (what the report says about the run, printed back), `statements` (the DDL, run in
order) and `insert` (the INSERT that starts the job). `benchmarks.flink_sql` (the reference
query) and `benchmarks.flink_json` (a query over a JSON topic: the Nexmark queries, experiment
16's) write the text; this module only runs it, under the peers' virtualenv, so it imports
nothing but the standard library and `pyflink`, and that only in `run_job`.

Prints `SETTINGS <json>`, `SESSION <t>` once the TableEnvironment (and its JVM) is up, then,
once the INSERT is submitted, `SUBMITTED <t>` (the INSERT's call returned: the query planned,
the local MiniCluster started, the job handed to it) and `STARTED <t>` (wall seconds just
before that call); runs until terminated (SIGTERM). The markers go to the original stdout;
the JVM's own stdout is sent to stderr (the log), so that nothing fills a pipe nobody reads.
Checkpoints go to `DIR/checkpoints` (file system checkpoint storage), whatever the job's size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO


def markers_out() -> TextIO:
    """The original stdout, for the markers; fd 1 (inherited by the gateway's JVM) becomes
    stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return out


def run_job(
    *,
    configuration: Mapping[str, str],
    settings: Mapping[str, Any],
    statements: Sequence[str],
    insert: str,
    log_dir: Path,
) -> int:
    """Build a streaming TableEnvironment, run `statements`, submit `insert`, wait for it."""
    out = markers_out()
    log_dir.mkdir(parents=True, exist_ok=True)
    os.environ["FLINK_LOG_DIR"] = str(log_dir)

    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment
    from pyflink.version import __version__ as flink_version

    config = Configuration()
    # Checkpoints to files under the log directory: the default storage, the JobManager's
    # heap, refuses a checkpoint past 5 MiB of state, and a job whose state outgrows it fails
    # every checkpoint and restarts (300,000 groups' window state did, 2026-11-27).
    config.set_string("execution.checkpointing.dir", (log_dir / "checkpoints").resolve().as_uri())
    for key, value in configuration.items():
        config.set_string(key, value)
    env = TableEnvironment.create(
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(config).build()
    )
    print(f"SETTINGS {json.dumps({'flink': flink_version, **settings})}", file=out)
    print(f"SESSION {time.time()}", file=out)
    for statement in statements:
        env.execute_sql(statement)
    started = time.time()
    result = env.execute_sql(insert)
    print(f"SUBMITTED {time.time()}", file=out)
    print(f"STARTED {started}", file=out)
    result.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--job", required=True, help="the job's JSON file")
    parser.add_argument("--log-dir", required=True, help="where the JVM writes its log")
    args = parser.parse_args(argv)
    job = json.loads(Path(args.job).read_text())
    return run_job(
        configuration=job["configuration"],
        settings=job["settings"],
        statements=job["statements"],
        insert=job["insert"],
        log_dir=Path(args.log_dir),
    )


if __name__ == "__main__":
    sys.exit(main())
