"""The reference query in Quix Streams, the Python peer of experiment 3.

    <peer venv>/bin/python -m benchmarks.quix_streams --bootstrap H:P --topic S --output OUT \
        --group G --state-dir DIR --columns 0,2,1 --grace-s 600 --sentinel-type sentinel

Runs under the peers' virtualenv (`scripts/setup_peers.sh`), so it imports nothing but the
standard library and `quixstreams`. The pipeline, written as Quix Streams' documentation
writes it: `Application(processing_guarantee="exactly-once", auto_offset_reset="earliest")`,
the CSV value parsed by a deserializer into {ts_ms, sip, type}, event time taken from it by the
topic's timestamp extractor -> `group_by([sip, type])` (a repartition topic) ->
`tumbling_window(60 s, grace).count().final(closing_strategy="partition")` -> one JSON row per
window and group (`window_start`, `sip`, `type`, `count`, the shape of the Spark peer's rows)
-> `to_topic`. State in RocksDB with changelog topics (the defaults), transactions committed
every `commit_interval` (default 5 s).

Quix Streams closes a tumbling window when the largest event time its state partition has seen
passes end + grace; there is no watermark over the source partitions. So `grace` must cover how
far apart in event time the consumer reads its partitions (else records are dropped as late),
and the benchmark's sentinels (one record per source partition, a day after the data) have to
reach every partition of the repartition topic only once every source partition is read: the
last one is copied under enough distinct keys, so one process reads every source partition.

Prints `SETTINGS <json>` (the version and settings, for the report) and then `STARTED <t>`
(wall seconds) once the Application is built, just before `app.run()`; runs until terminated
(SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from quixstreams import Application, message_context
from quixstreams import __version__ as quix_version
from quixstreams.models.serializers import Deserializer

# Copies of each sentinel per repartition partition, under distinct keys: with 16 copies per
# partition a partition is missed with probability about p * exp(-16) (the keys are fixed, so
# the outcome is the same every run).
SENTINEL_COPIES_PER_PARTITION = 16


class CsvFields(Deserializer):  # type: ignore[misc]  # quixstreams is not in .venv
    """A CSV tuple -> {ts_ms, sip, type} (the only fields the query reads)."""

    def __init__(self, *, timestamp: int, sip: int, type_: int) -> None:
        super().__init__()
        self._columns = (timestamp, sip, type_)

    def __call__(self, value: bytes, ctx: Any) -> dict[str, Any]:
        cells = value.split(b",")
        timestamp, sip, type_ = self._columns
        return {
            "ts_ms": int(cells[timestamp]) * 1000,
            "sip": cells[sip].decode(),
            "type": cells[type_].decode(),
        }


def event_time(value: dict[str, Any], _headers: Any, _timestamp: float, _kind: Any) -> int:
    return int(value["ts_ms"])


def sentinel_fan_out(sentinel_type: str, *, partitions: int, copies: int) -> Any:
    """Each record as itself, except the sentinels: held back until one was read from every
    source partition (a sentinel copied at once would close, in every repartition partition,
    windows that records of source partitions read later still belong to), then `copies`
    copies under distinct keys. Needs one process reading every source partition."""
    seen: set[int] = set()

    def fan_out(value: dict[str, Any]) -> list[dict[str, Any]]:
        if value["type"] != sentinel_type:
            return [value]
        seen.add(message_context().partition)
        if len(seen) < partitions:
            return []
        return [{**value, "sip": f"{value['sip']}#{n}"} for n in range(copies)]

    return fan_out


def result_row(window: dict[str, Any], key: Any, _timestamp: int, _headers: Any) -> dict[str, Any]:
    sip, type_ = key
    return {"window_start": window["start"], "sip": sip, "type": type_, "count": window["value"]}


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """What the report says about this peer: the version and every setting that matters."""
    return {
        "quixstreams": quix_version,
        "processing_guarantee": "exactly-once",
        "auto_offset_reset": "earliest",
        "commit_interval_s": args.commit_interval,
        "window_s": args.window_s,
        "grace_s": args.grace_s,
        "closing_strategy": "partition",
        "sentinel_copies": SENTINEL_COPIES_PER_PARTITION * args.partitions,
    }


def build(args: argparse.Namespace) -> Application:
    chosen = settings(args)
    timestamp, sip, type_ = (int(c) for c in args.columns.split(","))
    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.group,
        auto_offset_reset=chosen["auto_offset_reset"],
        processing_guarantee=chosen["processing_guarantee"],
        commit_interval=args.commit_interval,
        state_dir=args.state_dir,
        loglevel="INFO",
    )
    source = app.topic(
        args.topic,
        value_deserializer=CsvFields(timestamp=timestamp, sip=sip, type_=type_),
        timestamp_extractor=event_time,
    )
    output = app.topic(args.output, key_serializer="json", value_serializer="json")
    sdf = app.dataframe(source)
    fan_out = sentinel_fan_out(
        args.sentinel_type, partitions=args.partitions, copies=chosen["sentinel_copies"]
    )
    sdf = sdf.apply(fan_out, expand=True)
    sdf = sdf.group_by(lambda row: [row["sip"], row["type"]], name="sip_type")
    sdf = (
        sdf.tumbling_window(duration_ms=args.window_s * 1000, grace_ms=args.grace_s * 1000)
        .count()
        .final(closing_strategy=chosen["closing_strategy"])
    )
    sdf = sdf.apply(result_row, metadata=True)
    sdf.to_topic(output)
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--partitions", type=int, default=4, help="of the source topic")
    parser.add_argument(
        "--columns", required=True, help="CSV positions of timestamp,sip,type, e.g. 0,2,1"
    )
    parser.add_argument("--window-s", type=int, default=60)
    parser.add_argument("--grace-s", type=int, default=0)
    parser.add_argument("--sentinel-type", required=True)
    parser.add_argument("--commit-interval", type=float, default=5.0, help="Quix's default")
    args = parser.parse_args(argv)

    app = build(args)
    print(f"SETTINGS {json.dumps(settings(args))}", flush=True)
    print(f"STARTED {time.time()}", flush=True)
    app.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
