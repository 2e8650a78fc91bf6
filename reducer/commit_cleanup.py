"""`CommitCleanup`: what a unit's owner does in Redis once a transaction committed.

Release the data sets below the committed rseq (GC), drop the unit's checkpoints older than the
one the progress names, push the result rows to the REST list. Only after the commit: Redis's
rseq is never ahead of the committed progress, and a checkpoint counts only once a committed
progress names it. Skipped steps (a crash in between) are redone by the next commit.
"""

from __future__ import annotations

from collections.abc import Mapping

from mars.store import SeqStore, Snapshot
from reducer.commit_records import CommitRecords
from reducer.progress_record import ProgressRecord


class CommitCleanup:
    """The Redis side of one unit's commits (`results_kept` 0: no REST list)."""

    def __init__(
        self, store: SeqStore, *, task_id: str, unit_bucket: int, results_kept: int
    ) -> None:
        self._store = store
        self._task_id = task_id
        self._unit_bucket = unit_bucket
        self._results_kept = results_kept

    def after(
        self,
        commit: CommitRecords,
        *,
        snapshots: Mapping[int, Snapshot],
        previous: ProgressRecord,
    ) -> None:
        """After `commit` is in Kafka: `snapshots` are this step's (their rseq is Redis's, so
        a bucket whose rseq did not move is not released again)."""
        store, task = self._store, self._task_id
        progress = commit.progress
        for bucket, rseq in progress.rseqs.items():
            if rseq > snapshots[bucket].rseq:
                store.release(task, bucket, rseq)
        chain = progress.checkpoint_chain
        if chain and chain[0] != next(iter(previous.checkpoint_chain), None):
            # a new full checkpoint: the old chain, and what crashed owners left, go
            store.drop_checkpoints_before(task, self._unit_bucket, chain[0].number)
        if commit.rows and self._results_kept > 0:
            values = commit.results.latest_values(self._results_kept)
            store.results.push_encoded(task, values, keep=self._results_kept)
