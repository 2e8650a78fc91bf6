"""The task registry against a real ZooKeeper: CRUD, compare-and-set, watch, tombstones."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace

import pytest
from kazoo.client import KazooClient

from mars.registry import (
    InvalidTaskIdError,
    TaskExistsError,
    TaskNotFoundError,
    TaskRecord,
    TaskRegistry,
    TaskStatus,
)
from mars.tasks.spec import Preaggregation, TaskSpec

ClientFactory = Callable[..., KazooClient]  # fixtures from this folder's conftest.py
SpecFactory = Callable[..., TaskSpec]
Eventually = Callable[..., None]


class FakeClock:
    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        self.now += 1000
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry(zk_client: KazooClient, zk_root: str, clock: FakeClock) -> TaskRegistry:
    return TaskRegistry(zk_client, root=zk_root, clock_ms=clock)


def test_create_stores_the_documented_json(
    registry: TaskRegistry, zk_client: KazooClient, zk_root: str, make_spec: SpecFactory
) -> None:
    spec = make_spec("clicks")
    record = registry.create(spec)

    data, _ = zk_client.get(f"{zk_root}/tasks/clicks")
    doc = json.loads(data)
    assert doc == {
        "spec": json.loads(json.dumps(spec.to_json_dict())),
        "status": "RUNNING",
        "reason": None,
        "created_ms": record.created_ms,
        "updated_ms": record.created_ms,
    }
    assert registry.get("clicks") == record
    assert registry.get("clicks").spec == spec  # round trip through JSON


def test_duplicate_and_missing_ids_raise(registry: TaskRegistry, make_spec: SpecFactory) -> None:
    registry.create(make_spec("a"))
    with pytest.raises(TaskExistsError):
        registry.create(make_spec("a"))
    with pytest.raises(TaskNotFoundError):
        registry.get("nope")
    with pytest.raises(TaskNotFoundError):
        registry.set_status("nope", TaskStatus.PAUSED)
    with pytest.raises(TaskNotFoundError):
        registry.delete("nope")
    with pytest.raises(InvalidTaskIdError):
        registry.get("a/b")


def test_set_status_updates_and_validates(
    registry: TaskRegistry, make_spec: SpecFactory, clock: FakeClock
) -> None:
    created = registry.create(make_spec("t1"))
    paused = registry.set_status("t1", TaskStatus.PAUSED)
    assert paused.status is TaskStatus.PAUSED
    assert paused.version == created.version + 1
    assert paused.created_ms == created.created_ms < paused.updated_ms

    failed = registry.set_status("t1", TaskStatus.FAILED, "bad input schema")
    assert registry.get("t1") == failed
    assert failed.reason == "bad input schema"

    with pytest.raises(ValueError, match="reason"):
        registry.set_status("t1", TaskStatus.FAILED)
    with pytest.raises(ValueError, match="delete"):
        registry.set_status("t1", TaskStatus.DELETED)
    running = registry.set_status("t1", TaskStatus.RUNNING)
    assert running.reason is None


def test_set_preaggregation_changes_only_that_option(
    registry: TaskRegistry, make_spec: SpecFactory
) -> None:
    created = registry.create(make_spec("t1"))
    assert created.spec.options.preaggregation is Preaggregation.MAPPERS
    handed = registry.set_preaggregation("t1", Preaggregation.SPARK)
    assert handed.spec.options.preaggregation is Preaggregation.SPARK
    assert registry.get("t1") == handed and handed.status is created.status
    options = replace(created.spec.options, preaggregation=Preaggregation.SPARK)
    assert handed.spec == replace(created.spec, options=options)
    with pytest.raises(TaskNotFoundError):
        registry.set_preaggregation("nope", Preaggregation.SPARK)


def test_concurrent_status_writers_never_lose_an_update(
    zk_root: str, zk_client: KazooClient, new_zk_client: ClientFactory, make_spec: SpecFactory
) -> None:
    """Two clients flip the status 30 times each; every write lands (version counts them)."""
    TaskRegistry(zk_client, root=zk_root).create(make_spec("hot"))
    registries = [TaskRegistry(new_zk_client(), root=zk_root) for _ in range(2)]

    def writer(reg: TaskRegistry, status: TaskStatus) -> None:
        for _ in range(30):
            reg.set_status("hot", status)

    threads = [
        threading.Thread(target=writer, args=(registries[0], TaskStatus.PAUSED)),
        threading.Thread(target=writer, args=(registries[1], TaskStatus.RUNNING)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert registries[0].get("hot").version == 60


def test_list_is_sorted_and_delete_removes_the_node(
    registry: TaskRegistry, zk_client: KazooClient, zk_root: str, make_spec: SpecFactory
) -> None:
    for task_id in ("b", "a", "c"):
        registry.create(make_spec(task_id))
    assert [r.task_id for r in registry.list()] == ["a", "b", "c"]

    registry.delete("b")
    assert [r.task_id for r in registry.list()] == ["a", "c"]
    assert zk_client.exists(f"{zk_root}/tasks/b") is None
    registry.create(make_spec("b"))  # the id is free again
    assert registry.get("b").status is TaskStatus.RUNNING


def test_a_tombstone_left_by_a_crashed_delete_is_invisible_and_replaceable(
    registry: TaskRegistry, zk_client: KazooClient, zk_root: str, make_spec: SpecFactory
) -> None:
    record = registry.create(make_spec("ghost"))
    tombstone = TaskRecord(
        spec=record.spec,
        status=TaskStatus.DELETED,
        reason=None,
        created_ms=record.created_ms,
        updated_ms=record.updated_ms,
    )
    zk_client.set(f"{zk_root}/tasks/ghost", tombstone.to_bytes())  # delete crashed here

    assert registry.list() == []
    with pytest.raises(TaskNotFoundError):
        registry.get("ghost")
    with pytest.raises(TaskNotFoundError):
        registry.set_status("ghost", TaskStatus.RUNNING)
    assert registry.create(make_spec("ghost")).status is TaskStatus.RUNNING
    registry.set_status("ghost", TaskStatus.PAUSED)
    zk_client.set(f"{zk_root}/tasks/ghost", tombstone.to_bytes())
    registry.delete("ghost")  # finishing a crashed delete
    assert zk_client.exists(f"{zk_root}/tasks/ghost") is None


def test_watch_reports_the_full_set_on_every_change(
    registry: TaskRegistry,
    zk_root: str,
    new_zk_client: ClientFactory,
    make_spec: SpecFactory,
    eventually: Eventually,
) -> None:
    registry.create(make_spec("pre"))
    seen: list[dict[str, TaskStatus]] = []
    lock = threading.Lock()

    def on_tasks(tasks: Mapping[str, TaskRecord]) -> None:
        with lock:
            seen.append({task_id: r.status for task_id, r in tasks.items()})

    # Watch through another client, as a reducer would.
    watch = TaskRegistry(new_zk_client(), root=zk_root).watch(on_tasks)

    def latest() -> dict[str, TaskStatus] | None:
        with lock:
            return seen[-1] if seen else None

    assert latest() == {"pre": TaskStatus.RUNNING}  # called at once with the current set
    registry.create(make_spec("new"))
    eventually(lambda: latest() == {"pre": "RUNNING", "new": "RUNNING"}, what="add seen")
    registry.set_status("new", TaskStatus.PAUSED)
    eventually(lambda: latest() == {"pre": "RUNNING", "new": "PAUSED"}, what="pause seen")
    registry.delete("pre")
    eventually(lambda: latest() == {"new": "PAUSED"}, what="delete seen")
    registry.delete("new")
    registry.create(make_spec("new"))  # same id again
    eventually(lambda: latest() == {"new": "RUNNING"}, what="re-create seen")
    assert all("DELETED" not in s.values() for s in seen)

    watch.stop()
    count = len(seen)
    registry.create(make_spec("after-stop"))
    registry.set_status("new", TaskStatus.PAUSED)
    assert watch.tasks.keys() == {"new"}
    assert len(seen) == count
