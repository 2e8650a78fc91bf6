"""`mars local up | down | status`: the local cluster for people and demos."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from devtools.local import ClusterState, LocalCluster, ServiceError
from devtools.local.roles import process_url, scale_role, start_role
from mars.config import load_settings

REDIS_CLUSTER_MASTERS = 3


def register(subparsers: Any) -> None:
    local = subparsers.add_parser(
        "local",
        help="run a local cluster (Kafka, ZooKeeper, Redis; Spark and a schema registry if asked)",
    )
    commands = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = commands.add_parser("up", help="start the cluster in the background; return when ready")
    up.add_argument("--mappers", type=int, default=0, help="mapper processes to start")
    up.add_argument("--reducers", type=int, default=0, help="reducer processes to start")
    up.add_argument("--api", action="store_true", help="start the REST API too")
    up.add_argument(
        "--spark-workers",
        type=int,
        default=0,
        help="start a Spark standalone master and this many workers (1 core, 1 GiB each)",
    )
    up.add_argument(
        "--zookeeper-nodes",
        type=_positive,
        default=1,
        metavar="N",
        help="ZooKeeper servers: 1 is a standalone server, 3 (or 5) an ensemble of quorum "
        "peers on loopback that keeps serving while a minority of them, the quorum leader "
        "included, is down (default 1)",
    )
    up.add_argument(
        "--kafka-brokers",
        type=_positive,
        default=1,
        metavar="N",
        help="Kafka KRaft nodes (broker + controller each); with 3, the topics Mars creates get "
        "3 replicas and min.insync.replicas 2, so one broker can die (default 1)",
    )
    up.add_argument(
        "--redis-cluster",
        action="store_true",
        help=f"Redis as a Redis Cluster of {REDIS_CLUSTER_MASTERS} masters on loopback "
        "(redis.url becomes redis+cluster://...); a killed master is restarted from its AOF",
    )
    up.add_argument(
        "--schema-registry",
        action="store_true",
        help="start a schema registry too (Apicurio Registry, in-memory storage; its "
        "Confluent-compatible API becomes schema_registry.url for the Mars processes)",
    )
    up.set_defaults(handler=_up)

    down = commands.add_parser("down", help="stop every process the cluster started")
    down.set_defaults(handler=_down)

    scale = commands.add_parser(
        "scale",
        help="run exactly N mappers / reducers (GET /cluster's advice says how many the load "
        "needs)",
    )
    scale.add_argument("--mappers", type=int, help="mapper processes to run")
    scale.add_argument("--reducers", type=int, help="reducer processes to run")
    scale.set_defaults(handler=_scale)

    status = commands.add_parser("status", help="services and processes with PID and health")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=_status)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _cluster(
    *, zookeeper_nodes: int = 1, kafka_brokers: int = 1, redis_cluster: bool = False
) -> LocalCluster:
    return LocalCluster(
        settings=load_settings(),
        zookeeper_nodes=zookeeper_nodes,
        kafka_brokers=kafka_brokers,
        redis_cluster_masters=REDIS_CLUSTER_MASTERS if redis_cluster else None,
    )


def _up(args: argparse.Namespace) -> int:
    cluster = _cluster(
        zookeeper_nodes=args.zookeeper_nodes,
        kafka_brokers=args.kafka_brokers,
        redis_cluster=args.redis_cluster,
    )
    try:
        state = cluster.up()
        if args.schema_registry:  # before the Mars processes, which get its URL
            cluster.start_schema_registry()
        for _ in range(args.mappers):
            start_role(cluster, "mapper")
        for _ in range(args.reducers):
            start_role(cluster, "reducer")
        if args.api:
            start_role(cluster, "api")
        if args.spark_workers:
            cluster.start_spark(workers=args.spark_workers)
    except ServiceError as error:
        print(f"mars local up: {error}", file=sys.stderr)
        cluster.down()
        return 1
    _print_addresses(state)
    return 0


def _print_addresses(state: ClusterState) -> None:
    print(f"kafka      {state.kafka_bootstrap}")
    print(f"zookeeper  {state.zk_hosts}")
    print(f"redis      {state.redis_url}")
    if state.spark_master:
        print(f"spark      {state.spark_master}   (`mars spark preagg ... --master` it)")
    if state.schema_registry_url:
        print(f"schema registry {state.schema_registry_url}   (Confluent-compatible API)")
    for process in state.processes:
        if process.role in ("mapper", "reducer", "api"):
            address = process_url(process.role, process.address)
            print(f"{process.name:<10} pid {process.pid} {address}")
    print(f"run folder {state.run_dir}   (stop with `mars local down`)")


def _down(args: argparse.Namespace) -> int:
    stopped = _cluster().down()
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _scale(args: argparse.Namespace) -> int:
    cluster = _cluster()
    if cluster.state is None:
        print("mars local scale: no local cluster is up (`mars local up`)", file=sys.stderr)
        return 1
    wanted = {"mapper": args.mappers, "reducer": args.reducers}
    if any(count is not None and count < 0 for count in wanted.values()):
        print("mars local scale: a count must not be negative", file=sys.stderr)
        return 2
    try:
        for role, count in wanted.items():
            if count is None:
                continue
            started, stopped = scale_role(cluster, role, count)
            changes = [f"started {name}" for name in started]
            changes += [f"stopped {name}" for name in stopped]
            print(f"{role}s: {count} ({', '.join(changes) or 'unchanged'})")
    except ServiceError as error:
        print(f"mars local scale: {error}", file=sys.stderr)
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    status = _cluster().status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        print(f"run folder {status['run_dir']}: {'UP' if status['up'] else 'DOWN'}")
        if status.get("spark_master"):
            print(f"  spark master {status['spark_master']}")
        if status.get("schema_registry_url"):
            print(f"  schema registry {status['schema_registry_url']}")
        for row in status["processes"]:
            health = "healthy" if row["healthy"] else ("running" if row["running"] else "stopped")
            address = process_url(row["role"], row["address"])
            mode = f" ({row['mode']})" if row.get("mode") else ""  # a ZooKeeper node's
            print(f"  {row['name']:<15} pid {row['pid']:<8} {address:<36} {health}{mode}")
    return 0 if status["up"] else 1
