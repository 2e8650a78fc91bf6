"""`ChangedKeys`: the hashes of a columnar window's changed keys, and the rows they pick."""

from __future__ import annotations

import polars as pl

from reducer.changed_keys import ChangedKeys, rows_of_changed_keys

KEYS = ["k0"]


def as_is(frame: pl.DataFrame) -> pl.DataFrame:
    return frame


def keys_frame(*keys: str) -> pl.DataFrame:
    return pl.DataFrame({"k0": list(keys), "a0": [1] * len(keys)})


def test_the_keys_of_appended_frames_pick_their_rows_of_the_window() -> None:
    changes = ChangedKeys()
    changes.appended(keys_frame("a", "c"))
    changes.appended(keys_frame("c"))
    assert changes.has_unhashed() and not changes.hashed()
    changes.hash_appended(KEYS, as_is, deduplicate_rows=1_000)
    assert not changes.has_unhashed() and changes.hashed_rows == 3  # not deduplicated yet
    hashes = changes.deduplicated()
    assert hashes is not None and changes.hashed_rows == 2
    window = keys_frame("a", "b", "c", "d").lazy()
    picked = rows_of_changed_keys(window, KEYS, hashes).collect()
    assert picked.columns == ["k0", "a0"] and sorted(picked["k0"]) == ["a", "c"]


def test_hashes_are_deduplicated_once_they_doubled_and_reach_the_least_rows() -> None:
    changes = ChangedKeys()
    for _ in range(2):
        changes.appended(keys_frame("a", "b", "c"))
        changes.hash_appended(KEYS, as_is, deduplicate_rows=100)
    assert changes.hashed_rows == 6 and len(changes.frames()) == 2  # below the least rows
    changes.appended(keys_frame("a", "b", "c"))
    changes.hash_appended(KEYS, as_is, deduplicate_rows=9)
    assert changes.hashed_rows == 3 and len(changes.frames()) == 1


def test_a_window_without_key_columns_has_one_changed_group() -> None:
    changes = ChangedKeys()
    changes.appended(pl.DataFrame({"a0": [1, 2]}))
    changes.hash_appended([], as_is, deduplicate_rows=1)
    assert changes.hashed_rows == 1


def test_frames_gone_unhashed_are_forgotten() -> None:
    changes = ChangedKeys()
    changes.appended(keys_frame("a"))
    changes.forget_appended()
    changes.hash_appended(KEYS, as_is, deduplicate_rows=1)
    assert changes.deduplicated() is None and changes.frames() == []
