"""Wake-ups: an idle unit owner sleeps until a mapper writes its task, instead of polling.

`apply_batch.lua` publishes the task id on `WRITTEN_CHANNEL` after every applied batch. One
thread per reducer process subscribes and sets the wake events of that task's owners, so an
owner merges a batch as soon as it is in Redis (a hop of result latency) and hundreds of idle
owners do not poll Redis ten times a second each. A wake-up is a hint, never needed for
correctness: owners still step every `reducer.idle_poll_interval_ms` (closing on idle
partitions, checkpoints and EMIT CHANGES intervals are time-driven), and while the subscription
is down (Redis restarting) every `reducer.poll_interval_ms`, as without wake-ups.

Those idle steps are spread so that a process takes at most `IDLE_STEPS_PER_S` of them a
second (`idle_wait_s`): each costs Redis round trips under the process's one GIL, and 660
owners (100 tasks of 8 buckets) stepping twice a second took most of it, starving the owners
that had data to merge.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from mars.clients import REDIS_ERRORS, RedisClient
from mars.store import WRITTEN_CHANNEL
from mars.store.state import text_of

log = logging.getLogger(__name__)

RESUBSCRIBE_S = 1.0
LISTEN_S = 1.0  # how long one read waits for a message (the stop check's period)
IDLE_STEPS_PER_S = 100  # a process's idle steps a second at most, over all its owners


def idle_wait_s(interval_s: float, *, owners: int) -> float:
    """How long one of `owners` idle owners waits between steps: `interval_s`, or longer when
    the owners would together step more than `IDLE_STEPS_PER_S` times a second."""
    return max(interval_s, owners / IDLE_STEPS_PER_S)


class WriteWakeups:
    """The process's subscription to `WRITTEN_CHANNEL` and the owners' wake events by task."""

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._events: dict[str, set[threading.Event]] = {}
        self._stop = threading.Event()
        self._subscribed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="write-wakeups", daemon=True)

    def start(self) -> WriteWakeups:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=LISTEN_S + 5)

    @property
    def subscribed(self) -> bool:
        """Whether writes reach the owners now (else they must poll often)."""
        return self._subscribed.is_set()

    @property
    def watchers(self) -> int:
        """How many owners are watching (the process's running owners)."""
        with self._lock:
            return sum(len(events) for events in self._events.values())

    def watch(self, task_id: str, event: threading.Event) -> None:
        """Set `event` whenever a batch of `task_id` is applied."""
        with self._lock:
            self._events.setdefault(task_id, set()).add(event)

    def unwatch(self, task_id: str, event: threading.Event) -> None:
        with self._lock:
            events = self._events.get(task_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._events[task_id]

    def _run(self) -> None:
        while not self._stop.is_set():
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(WRITTEN_CHANNEL)
                self._subscribed.set()
                self._wake(None)  # writes while unsubscribed were not announced
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=LISTEN_S)
                    if message is not None and message.get("type") == "message":
                        self._wake(text_of(message["data"]))
            except REDIS_ERRORS as exc:
                log.warning("write wake-ups lost (%s); owners poll until resubscribed", exc)
            finally:
                self._subscribed.clear()
                with contextlib.suppress(*REDIS_ERRORS):
                    pubsub.close()
            self._stop.wait(RESUBSCRIBE_S)

    def _wake(self, task_id: str | None) -> None:
        """The owners of `task_id` (None: every owner)."""
        with self._lock:
            if task_id is None:
                events = [event for group in self._events.values() for event in group]
            else:
                events = list(self._events.get(task_id, ()))
        for event in events:
            event.set()
