"""`ChangedKeys`: which groups of one columnar window were merged since its last checkpoint.

A delta (an incremental checkpoint, docs/reducer.md) holds those groups with their current
states. `ColumnarGroups` notes each data set's frame as it is appended; the keys are kept as
64-bit hashes, and a delta takes the rows whose key hashes to one of them
(`rows_of_changed_keys`), so a collision adds an unchanged group to it, never misses a changed
one. The keys themselves cost about 100 bytes of RSS per open group at 1,000,000 groups (string
keys; the hashes about 13).

The frames are hashed in bulk (`hash_appended`: before they go in a compaction or a spill, and
when the changes are read), not at each append: hashing every data set's keys on its own was
half of a small data set's merge (about 0.25 ms a window, Polars's calls, not the rows). Every
data set brings its keys again, so the hashes are deduplicated into one frame whenever they
doubled: they hold at most about twice the changed groups' hashes, where a checkpoint interval
at high cardinality held a copy of every data set's keys.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

HASH = "\0key_hash"  # the hashes' column (no column of a window's layout has this name)


class ChangedKeys:
    """The keys of the frames appended to a window since its last checkpoint."""

    __slots__ = ("_hashes", "_unhashed", "every")

    def __init__(self) -> None:
        self._hashes: list[pl.DataFrame] = []
        self._unhashed: list[pl.DataFrame] = []  # appended since the last `hash_appended`
        # A key column's type changed since the checkpoint: the hashes taken before were of the
        # other type, so every group counts as changed.
        self.every = False

    @property
    def hashed_rows(self) -> int:
        """The hashes noted (each changed key once, right after `deduplicated`)."""
        return sum(hashes.height for hashes in self._hashes)

    def hashed(self) -> bool:
        """Whether keys were hashed since the checkpoint (in the window's types of then)."""
        return bool(self._hashes)

    def has_unhashed(self) -> bool:
        """Whether frames were appended since the last `hash_appended`."""
        return bool(self._unhashed)

    def appended(self, frame: pl.DataFrame) -> None:
        """A data set's frame was appended: its keys changed."""
        self._unhashed.append(frame)

    def hash_appended(
        self,
        keys: list[str],
        typed: Callable[[pl.DataFrame], pl.DataFrame],
        *,
        deduplicate_rows: int,
    ) -> None:
        """Hash the keys of the frames appended since the last call, taken in the window's
        types by `typed` (a key column all NULL in a frame appended before it widened is cast,
        as `rows_of_changed_keys` hashes the window's rows); with no key columns, the window's
        one group. The hashes are deduplicated once they doubled and number at least
        `deduplicate_rows`."""
        if not self._unhashed:
            return
        frames, self._unhashed = self._unhashed, []
        if keys:
            hashes = pl.concat([typed(frame.select(keys)) for frame in frames]).select(
                _key_hash(keys)
            )
        else:
            hashes = pl.DataFrame({HASH: [0]}, schema={HASH: pl.UInt64})
        self._hashes.append(hashes)
        first = self._hashes[0].height  # (the last deduplication's, if any)
        if len(self._hashes) > 1 and self.hashed_rows >= max(2 * first, deduplicate_rows):
            self.deduplicated()

    def deduplicated(self) -> pl.DataFrame | None:
        """The hashes noted, each once, as one frame (kept as the only one); None: none."""
        if not self._hashes:
            return None
        hashes = pl.concat(self._hashes).unique()
        self._hashes = [hashes]
        return hashes

    def forget_appended(self) -> None:
        """The appended frames are gone without a hash (the window fell back to Python groups,
        whose deltas hold every group)."""
        self._unhashed = []

    def frames(self) -> list[pl.DataFrame]:
        """The frames held: those not hashed yet (also appended to the window), the hashes."""
        return [*self._unhashed, *self._hashes]


def rows_of_changed_keys(part: pl.LazyFrame, keys: list[str], hashes: pl.DataFrame) -> pl.LazyFrame:
    """The rows of `part` whose key hashes to one of `hashes` (`ChangedKeys.deduplicated`)."""
    return part.with_columns(_key_hash(keys)).join(hashes.lazy(), on=HASH, how="semi").drop(HASH)


def _key_hash(keys: list[str]) -> pl.Expr:
    """A row's key columns (in the window's types) as one 64-bit hash, the same in every frame
    of the window (Polars's hash with a fixed seed; held in memory only, never written)."""
    return pl.struct(keys).hash(seed=0).alias(HASH)
