"""The backing clients of one API process, opened at startup and closed at shutdown.

Held on `app.state.services` (no module globals); route handlers get it through
`get_services`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from kazoo.client import KazooClient

from api.live import CounterSampler
from api.pull_queries import DecodedCheckpoints
from api.task_topic_admin import TaskTopicAdmin
from mars.clients import RedisClient, connect_redis
from mars.config import Settings
from mars.registry import TaskRegistry
from mars.store.seq_store import SeqStore

ZK_CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiServices:
    settings: Settings
    zk: KazooClient
    registry: TaskRegistry
    redis: RedisClient
    seq_store: SeqStore
    topics: TaskTopicAdmin
    sampler: CounterSampler
    checkpoints: DecodedCheckpoints

    @classmethod
    def open(cls, settings: Settings) -> ApiServices:
        zk = KazooClient(
            hosts=settings.zookeeper.hosts, timeout=settings.zookeeper.session_timeout_s
        )
        zk.start(timeout=ZK_CONNECT_TIMEOUT_S)
        try:
            registry = TaskRegistry(zk, root=settings.zookeeper.root)
            redis_client = connect_redis(settings.redis)
            store = SeqStore(redis_client)
            sampler = CounterSampler(store, lambda: [r.task_id for r in registry.list()])
            sampler.start()
            return cls(
                settings=settings,
                zk=zk,
                registry=registry,
                redis=redis_client,
                seq_store=store,
                topics=TaskTopicAdmin(kafka=settings.kafka),
                sampler=sampler,
                checkpoints=DecodedCheckpoints(),
            )
        except Exception:
            zk.stop()
            zk.close()
            raise

    def close(self) -> None:
        self.sampler.stop()
        self.redis.close()
        self.zk.stop()
        self.zk.close()


def get_services(request: Request) -> ApiServices:
    """FastAPI dependency: the process's `ApiServices`."""
    services: ApiServices = request.app.state.services
    return services
