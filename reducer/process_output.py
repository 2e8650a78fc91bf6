"""One transactional producer per reducer process, shared by its owners
(`reducer.output_producer = "process"`; docs/reducer.md, "One producer per process").

A producer per unit (`TransactionalOutput` with the unit's transactional id) fences a zombie
owner by the id alone: the next owner's `init_transactions` aborts its open transaction and
refuses its later ones. It costs a client and a transaction per unit and close: ten tasks of
eight buckets are 80 producers. Here a process runs as an *incarnation* (a fresh id at each
start and after its producer or its ZooKeeper session is lost) with one producer, whose
committer thread writes the commits its owners handed it since its last transaction in one
transaction, which the commits handed over while it is being written join (the owners of a
task close its windows at about the same time: their closes then take one transaction, not one
after the other).

What fences instead is the unit's holder node (`mars.registry.unit_holders`). An owner takes
its unit before it reads the progress: from nobody, from a holder that released it, or from
itself at once; from a live incarnation once that one released it (its owner's last
transaction has ended); from an incarnation that is gone (or that kept it longer than a
transaction may last) after fencing that incarnation's producer. So a unit changes hands only
after every transaction of its previous holder has ended, and the new holder reads the
progress after that.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from kazoo.exceptions import KazooException

from mars.config import KafkaSettings, OutputCompression
from mars.registry.unit_holders import Holder, UnitHolders
from mars.registry.units import Unit
from reducer.output import FencedError, OutputError, ToWrite, TransactionalOutput

log = logging.getLogger(__name__)

TAKE_POLL_S = 0.05
ALIVE_CHECK_S = 1.0  # how old the process's view of its own incarnation node may be
JOIN_SHARE_OF_TIMEOUT = 0.1  # of the transaction timeout, while commits may join a transaction


def process_transactional_id(incarnation: str) -> str:
    return f"mars.reducer.process.{incarnation}"


class _Commit:
    """One owner's commit, waiting for the transaction that writes it."""

    def __init__(self, records: Iterable[ToWrite]) -> None:
        self.records = records
        self.done = threading.Event()
        self.error: OutputError | None = None


class ProcessOutput:
    """The incarnation's producer and committer, and the units it holds."""

    def __init__(
        self,
        *,
        kafka: KafkaSettings,
        holders: UnitHolders,
        member_id: str,
        transaction_timeout_ms: int,
        compression: OutputCompression,
    ) -> None:
        self.incarnation = f"{member_id}.{uuid.uuid4().hex[:12]}"
        # a live holder keeps a unit at most as long as a transaction may last, then is fenced
        self._release_wait_s = transaction_timeout_ms / 1000
        # commits join a transaction while it is younger than this: far from its timeout
        self._join_for_s = self._release_wait_s * JOIN_SHARE_OF_TIMEOUT
        self.transactional_id = process_transactional_id(self.incarnation)
        self._holders = holders
        self._make_producer: Callable[[str], TransactionalOutput] = lambda tid: TransactionalOutput(
            kafka=kafka,
            transactional_id=tid,
            transaction_timeout_ms=transaction_timeout_ms,
            compression=compression,
        )
        holders.register(self.incarnation)
        self._output = self._make_producer(self.transactional_id)
        try:
            self._output.start()
        except OutputError:
            holders.unregister(self.incarnation)
            raise
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: list[_Commit] = []
        self._held: set[Unit] = set()
        self._closed = False
        self._alive, self._alive_checked = True, time.monotonic()
        self._fence_lock = threading.Lock()
        self._fenced: set[str] = set()  # incarnations this one fenced
        self._thread = threading.Thread(
            target=self._commit_loop, name="process-output", daemon=True
        )
        self._thread.start()
        log.info("incarnation %s: one producer for the process's owners", self.incarnation)

    def usable(self) -> bool:
        """Whether owners may still take units and commit through this incarnation: its
        producer is not fenced, and its node is there. (A node lost with its session only
        invites fencing: the process then makes a new incarnation.)"""
        if self._closed or not self._output.usable:
            return False
        now = time.monotonic()
        if now - self._alive_checked >= ALIVE_CHECK_S:
            self._alive = self._holders.alive(self.incarnation)
            self._alive_checked = now
        return self._alive

    def unit_output(self, unit: Unit, *, may_take: Callable[[], bool]) -> HeldUnitOutput:
        return HeldUnitOutput(self, unit, may_take=may_take)

    # -- holding units ----------------------------------------------------------------------

    def take(self, unit: Unit, may_take: Callable[[], bool]) -> None:
        """Become the unit's holder; returns once every transaction of the previous one ended."""
        task_id, bucket = unit
        mine = Holder(incarnation=self.incarnation, transactional_id=self.transactional_id)
        deadline = time.monotonic() + self._release_wait_s
        while True:
            if self._closed or not self._output.usable:
                raise FencedError(f"incarnation {self.incarnation} is fenced or closed")
            if not may_take():
                raise OutputError("not the owner any more; not taking the unit")
            read = self._holders.read(task_id, bucket)
            held = read.holder
            if held is not None and not held.released and held.incarnation != self.incarnation:
                if self._holders.alive(held.incarnation) and time.monotonic() < deadline:
                    time.sleep(TAKE_POLL_S)  # its owner stops once the move reaches it
                    continue
                self._fence(held)
            if self._holders.replace(task_id, bucket, mine, read):
                with self._lock:
                    self._held.add(unit)
                return

    def release(self, unit: Unit) -> None:
        """Let the unit go after its owner's last transaction ended. Not when this producer
        may still hold an open transaction: then the next holder must fence it. A release
        ZooKeeper did not take stays to do (`held_units`); meanwhile the next holder waits."""
        with self._lock:
            if unit not in self._held:
                return
        task_id, bucket = unit
        if self._output.usable:
            try:
                read = self._holders.read(task_id, bucket)
                held = read.holder
                mine = held is not None and held.incarnation == self.incarnation
                if mine and held is not None and not held.released:
                    released = replace(held, released=True)
                    if not self._holders.replace(task_id, bucket, released, read):
                        return  # changed meanwhile: the next pass reads it again
            except KazooException as exc:
                log.info(
                    "incarnation %s: unit %s not released yet: %s", self.incarnation, unit, exc
                )
                return
        with self._lock:
            self._held.discard(unit)

    def held_units(self) -> set[Unit]:
        with self._lock:
            return set(self._held)

    def _fence(self, held: Holder) -> None:
        """Abort the open transaction of `held`'s producer and refuse its later ones (once:
        the owners taking its other units wait for this one's fence)."""
        with self._fence_lock:
            if held.incarnation in self._fenced:
                return
            log.warning(
                "incarnation %s: fencing %s, which still holds a unit",
                self.incarnation,
                held.incarnation,
            )
            fencer = self._make_producer(held.transactional_id)
            try:
                fencer.start()
            finally:
                fencer.close()
            self._fenced.add(held.incarnation)

    # -- committing -------------------------------------------------------------------------

    def commit(self, records: Iterable[ToWrite]) -> None:
        """Write `records` in the next transaction, with whatever other owners hand over
        meanwhile; returns once it committed, raises if it did not."""
        commit = _Commit(records)
        with self._wake:
            if self._closed:
                raise OutputError(f"incarnation {self.incarnation} is closed")
            self._pending.append(commit)
            self._wake.notify()
        commit.done.wait()
        if commit.error is not None:
            raise commit.error

    def _commit_loop(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._closed:
                    self._wake.wait()
                batch, self._pending = self._pending, []
                closed = self._closed
            if closed:
                _fail(batch, OutputError(f"incarnation {self.incarnation} is closed"))
                return
            if not self._output.usable:
                _fail(batch, FencedError(f"incarnation {self.incarnation} is fenced"))
                continue
            try:
                self._output.commit(self._joined(batch))
            except OutputError as exc:
                _fail(batch, exc)
                continue
            except Exception as exc:  # a commit's records failed to be made: none written
                self._output.abort()
                _fail(batch, OutputError(f"{type(exc).__name__}: {exc}"))
                continue
            for commit in batch:
                commit.done.set()

    def _joined(self, batch: list[_Commit]) -> Iterator[ToWrite]:
        """The records of `batch`'s commits, then of those handed over while they were written,
        which join the transaction (appended to `batch`) while it is younger than
        `JOIN_SHARE_OF_TIMEOUT` of the transaction timeout (later ones wait for the next). An
        owner waits for its commit, so a transaction holds at most one commit per owner."""
        opened = time.monotonic()
        taken = 0
        while True:
            for commit in batch[taken:]:
                yield from commit.records
            taken = len(batch)
            with self._lock:
                if (
                    not self._pending
                    or self._closed
                    or time.monotonic() - opened >= self._join_for_s
                ):
                    return
                batch += self._pending
                self._pending = []

    def close(self) -> None:
        """Stop committing, drop the producer and the incarnation's node (its units' next
        holders fence instead of waiting)."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout=30)
        self._output.close()
        try:
            self._holders.unregister(self.incarnation)
        except KazooException as exc:
            log.warning("incarnation %s: node not removed: %s", self.incarnation, exc)


class HeldUnitOutput:
    """An owner's `Output` over its process's producer: `start` takes the unit, `close`
    releases it."""

    def __init__(self, process: ProcessOutput, unit: Unit, *, may_take: Callable[[], bool]) -> None:
        self._process = process
        self._unit = unit
        self._may_take = may_take

    def start(self) -> None:
        self._process.take(self._unit, self._may_take)

    def commit(self, records: Iterable[ToWrite]) -> None:
        self._process.commit(records)

    def abort(self) -> None:
        """Nothing to do: a failed transaction was aborted by the committer."""

    def close(self) -> None:
        self._process.release(self._unit)


def _fail(batch: list[_Commit], error: OutputError) -> None:
    for commit in batch:
        commit.error = error
        commit.done.set()
