"""The cut a rewind's re-read makes to its data sets (mapper.rewind_reader)."""

from __future__ import annotations

from mapper.rewind_reader import windows_from
from mars.aggregates import CountAll, Sum
from mars.engine.dataset import decode_dataset, encode_dataset

AGGS = (CountAll(), Sum())


def test_the_reread_keeps_only_the_windows_from_t() -> None:
    data = encode_dataset(AGGS, {0: {("a",): [1, 1]}, 60: {("b",): [2, 5]}, 120: {}})
    kept, latest = windows_from(data, 60)
    assert kept is not None and latest == 120
    assert decode_dataset(kept).windows == {60: {("b",): [2, 5]}, 120: {}}
    assert windows_from(data, 180) == (None, None)
