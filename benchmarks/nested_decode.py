"""Decode speed of nested paths against flat fields: the same values, read from records where
they sit at the top level and from records where they sit two or three levels deep.

    .venv/bin/python benchmarks/nested_decode.py --records 1000000 --repeat 3

Each record has 20 fields (as the reference tuples of `devtools.gen`); the task reads four:
the event time, a user id, a tag and a number. Flat: `{"ts", "uid", "tag", "w", ...}`. Nested:
`{"ts", "m": {"u": {"id", "name"}, "tags": [..], "w", ...}, ...}`, read as `m.u.id`,
`m.tags[0]`, `m.w` (and, without the array, `m.u.id`, `m.u.name`, `m.w`). Batches of 5,000
records through `JsonRecordDecoder.decode` (msgspec, then the Polars frame); CPU seconds, best
of `--repeat`. docs/mapper.md reports the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence

from mars.engine.decode import FieldPlan, JsonRecordDecoder

BATCH = 5_000


def _records(count: int, *, nested: bool, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        uid, tags, w = rng.randint(0, 10_000), rng.sample(["a", "b", "c", "d"], 2), rng.random()
        filler = {f"x{j}": rng.choice(["GET", "POST", 200, 3.5, "10.0.0.1"]) for j in range(15)}
        if nested:
            inner = {"u": {"id": uid, "name": "n"}, "tags": tags, "w": w, "sib": {"a": [1, 2]}}
            record: dict[str, object] = {"ts": 1_700_000_000 + i, "m": inner, **filler}
        else:
            record = {"ts": 1_700_000_000 + i, "uid": uid, "tag": tags[0], "w": w, **filler}
            record |= {"name": "n", "tags": tags, "sib": {"a": [1, 2]}}  # the same bytes
        out.append(json.dumps(record).encode())
    return out


def _rate(fields: Sequence[str], values: list[bytes], repeat: int) -> tuple[float, float]:
    decoder = JsonRecordDecoder(FieldPlan(fields=tuple(fields)))
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for at in range(0, len(values), BATCH):
            decoded = decoder.decode(values[at : at + BATCH])
            assert not decoded.bad
        best = min(best, time.process_time() - start)
    size = sum(map(len, values)) / len(values)
    return len(values) / best, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    flat = _records(args.records, nested=False)
    nested = _records(args.records, nested=True)
    runs = [
        ("flat: ts, uid, tag, w", ("ts", "uid", "tag", "w"), flat),
        ("nested: ts, m.u.id, m.tags[0], m.w", ("ts", "$.m.u.id", "$.m.tags[0]", "$.m.w"), nested),
        ("flat: ts, uid, name, w", ("ts", "uid", "name", "w"), flat),
        ("nested: ts, m.u.id, m.u.name, m.w", ("ts", "$.m.u.id", "$.m.u.name", "$.m.w"), nested),
    ]
    for label, fields, values in runs:
        rate, size = _rate(fields, values, args.repeat)
        print(f"{label:40s} {rate:12,.0f} records/CPU-s  ({size:.0f} bytes/record)")


if __name__ == "__main__":
    main()
