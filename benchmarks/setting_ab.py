"""One setting's values against each other on the reference query, alternating in one sitting.

    python -m benchmarks.setting_ab MARS_REDUCER__COLUMNAR_STATE=false,true \\
        [--records 3000000] [--rounds 3] [--encodings csv,json]

prints one JSON line per run, then the median seconds and CPU seconds per value and encoding.
It preloads the reference tuples once per encoding on a fresh local cluster (its own run
folder), then runs experiment 3's Mars run (`exp_end_to_end.mars_run` with `BenchConfig`'s
processes, 2 mappers and 1 reducer, from the registration until every window is readable) once
per value and encoding in each round, the values' order reversed every other round, so a drift
of the machine's load falls on both sides. The processes of a run inherit the variable from
this one.

A comparison measured in one invocation, where two `mars bench` invocations a few minutes
apart differ by more than most changes do (docs/benchmarks.md, "Method and caveats").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

from benchmarks.bench_config import PROJECT_ROOT, BenchConfig
from benchmarks.exp_end_to_end import mars_run
from benchmarks.harness import BenchCluster
from benchmarks.workload import Dataset, preload
from devtools.gen import Encoding

RUN_DIR = PROJECT_ROOT / ".mars" / "setting_ab"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("setting", help="NAME=value1,value2,... (an environment variable)")
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--encodings", default="csv,json")
    args = parser.parse_args()
    name, _, listed = args.setting.partition("=")
    values = listed.split(",")
    if not name or len(values) < 2:
        parser.error("give a variable and at least two values: NAME=a,b")
    encodings = [Encoding(e) for e in args.encodings.split(",")]
    # experiment 3's partitions, span, processes and timeout: `mars bench`'s own defaults
    config = BenchConfig.build(quick=False, runs=1, experiments=(), command="setting_ab")
    runs: list[dict[str, Any]] = []
    bench = BenchCluster(run_dir=RUN_DIR)
    try:
        data = {e: _preloaded(bench, config, e, args.records) for e in encodings}
        for round_ in range(args.rounds):
            for encoding, dataset in data.items():
                for value in values if round_ % 2 == 0 else values[::-1]:
                    os.environ[name] = value
                    found = mars_run(
                        bench,
                        dataset,
                        mappers=config.mappers,
                        reducers=config.reducers,
                        timeout_s=config.timeout_s,
                    )
                    run = {
                        "round": round_,
                        "encoding": encoding.value,
                        name: value,
                        "seconds": round(found["seconds"], 2),
                        "records_per_s": round(found["records_per_s"]),
                        "cpu_s": round(found["cpu_s"], 2),
                        "reducer_peak_rss_mb": [round(m) for m in found["reducer_peak_rss_mb"]],
                        "duplicates": found["duplicates"],
                    }
                    runs.append(run)
                    print(json.dumps(run), flush=True)
    finally:
        bench.close()
    for encoding in encodings:
        for value in values:
            mine = [r for r in runs if r["encoding"] == encoding.value and r[name] == value]
            print(
                f"{encoding.value} {name}={value}: median "
                f"{statistics.median(r['seconds'] for r in mine):.2f} s, "
                f"{statistics.median(r['cpu_s'] for r in mine):.2f} CPU s over {len(mine)} runs"
            )


def _preloaded(
    bench: BenchCluster, config: BenchConfig, encoding: Encoding, records: int
) -> Dataset:
    return preload(
        bench.kafka,
        topic=f"S_ab_{encoding.value}",
        records=records,
        partitions=config.partitions,
        span_s=config.span_s,
        encoding=encoding,
        schema_dir=RUN_DIR,
    )


if __name__ == "__main__":
    main()
