"""The one validated settings object, built from `configs/mars.toml` and `MARS_...` variables.

Precedence, highest first: explicit overrides passed to `load_settings`, environment variables
(`MARS_<SECTION>__<NAME>`, e.g. `MARS_MAPPER__BATCH_SIZE=5000`), the TOML file
(`MARS_CONFIG_FILE` or `configs/mars.toml`), then the defaults below. The object is frozen and
passed explicitly; nothing reads the environment behind its back.

The fields below are the one source of every setting's default and meaning (`description`):
`configs/mars.toml` and the README's table are generated from them (`mars.settings_docs`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG_FILE = PROJECT_ROOT / "configs" / "mars.toml"
ENV_PREFIX = "MARS_"
NESTED_DELIMITER = "__"


class ConfigError(Exception):
    """A setting has a bad value; the message names the setting and the environment variable."""


class CredentialsError(ConfigError):
    """A server refused the credentials a setting holds (Kafka SASL/SSL, the Redis password):
    the message names the setting, never the secret. `mars` prints it and exits 2."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Section):
    """`client_properties` are librdkafka properties (`security.protocol`, `sasl.*`, `ssl.*`,
    ...) given to every Kafka client Mars makes, and with the `kafka.` prefix to Spark's Kafka
    source: `mars.clients.kafka_config` builds every client's configuration from this section."""

    bootstrap_servers: str = Field(default="127.0.0.1:9092", description="Kafka brokers")
    client_properties: dict[str, str] = Field(
        default_factory=dict,
        description="librdkafka properties (`security.protocol`, `sasl.*`, `ssl.*`, ...) for "
        "every Kafka client, as a JSON object (or the `[kafka.client_properties]` table); "
        "Spark's Kafka source gets them with the `kafka.` prefix (docs/deployment.md)",
    )
    result_partitions: int = Field(
        default=4,
        ge=1,
        description="partitions of a task's topics (results, updates, late, dead letters)",
    )
    # On 3 brokers, 3 and 2: one broker down loses no acknowledged write (docs/deployment.md).
    replication_factor: int = Field(
        default=1,
        ge=1,
        description="replication factor of the topics Mars creates (results, updates, late, "
        "dead letters, progress; `mars gen`'s source topic)",
    )
    min_insync_replicas: int = Field(
        default=1,
        ge=1,
        description="their `min.insync.replicas`, at most `replication_factor`",
    )

    @model_validator(mode="after")
    def _in_sync_within_replicas(self) -> KafkaSettings:
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"kafka.min_insync_replicas ({self.min_insync_replicas}) exceeds "
                f"kafka.replication_factor ({self.replication_factor}): no write could succeed"
            )
        return self


class RedisSettings(_Section):
    url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="Redis holding the partials; credentials go in it "
        "(`redis://:password@host:port/db`, `redis://user:password@...`); a Redis Cluster: "
        "`redis+cluster://host-1:6379,host-2:6379,...` (docs/deployment.md)",
    )


class ZooKeeperSettings(_Section):
    hosts: str = Field(default="127.0.0.1:2181", description="ZooKeeper ensemble")
    root: str = Field(default="/mars", description="root znode")
    session_timeout_s: float = Field(default=10.0, gt=0, description="session timeout")


# Records per Kafka batch. Larger batches share the per-batch work (Polars calls, a data set's
# groups, one Redis round trip per task) among more records: at 3,000,000 records end to end,
# 50,000 took about 30 % fewer CPU-seconds than [Mars]'s 5,000 (docs/mapper.md). A caught-up
# mapper's batches are bounded by `batch_timeout_ms` instead, so latency does not grow with it.
MAPPER_BATCH_SIZE = 50_000


class MapperSettings(_Section):
    group_id: str = Field(default="mars-mappers", description="the mappers' consumer group")
    consumer: Literal["native", "confluent"] = Field(
        default="native",
        description="the source consumer: `native` (the Rust extension in native/, a batch by "
        "partition without a Python object per message; confluent-kafka's when the extension "
        "is not built) or `confluent`",
    )
    batch_size: int = Field(
        default=MAPPER_BATCH_SIZE,
        ge=1,
        description="records per batch at most (docs/mapper.md: why not [Mars]'s 5,000)",
    )
    batch_timeout_ms: int = Field(
        default=100,
        ge=1,
        description="longest wait to fill a batch (a caught-up mapper writes at least this "
        "often: the first hop of result latency), and the broker's for a fetch at the "
        "partitions' ends (docs/mapper.md: when partitions move)",
    )
    heartbeat_interval_ms: int = Field(default=500, ge=10, description="idle-partition heartbeats")
    backlog_high_datasets: int = Field(
        default=20_000,
        ge=1,
        description="pause partitions above this many data sets no reducer has merged; "
        "resume at half",
    )
    redis_memory_high_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1024 * 1024,
        description="... or above this Redis memory while the task has data sets not yet released",
    )


OutputCompression = Literal["none", "gzip", "snappy", "lz4", "zstd"]


class ReducerSettings(_Section):
    poll_interval_ms: int = Field(
        default=100,
        ge=1,
        description="how often an idle owner looks for new data sets while write wake-ups "
        "cannot reach it (Redis pub/sub down)",
    )
    # Woken owners still step this often: closing on idle partitions, checkpoints and EMIT
    # CHANGES intervals are time-driven.
    idle_poll_interval_ms: int = Field(
        default=500,
        ge=1,
        description="how often an idle owner steps although no mapper wrote its task (owners "
        'wake on every write: docs/reducer.md, "Wake-ups instead of polling")',
    )
    max_datasets_per_read: int = Field(default=500, ge=1, description="data sets per Redis read")
    transaction_timeout_ms: int = Field(
        default=60_000, ge=1000, description="Kafka transaction timeout"
    )
    results_kept: int = Field(
        default=200, ge=0, description="latest results kept for `GET /tasks/{id}/results`"
    )
    # A mapper that died just after reporting "caught up" must not make its partition look idle
    # for a whole idle_timeout (its unread records would turn late).
    idle_heartbeat_timeout_ms: int = Field(
        default=3000,
        ge=100,
        description="a partition is idle only while its mapper's caught-up heartbeat is "
        "younger than this",
    )
    checkpoint_interval_ms: int = Field(
        default=2000,
        ge=0,
        description="how often an owner checkpoints its open windows into Redis and releases "
        "the data sets it merged (docs/reducer.md; 0: every step that merged something)",
    )
    checkpoint_deltas: int = Field(
        default=16,
        ge=0,
        description="incremental checkpoints of tumbling and hopping windows: at most this "
        "many deltas (the groups changed since the checkpoint before) on top of a full "
        "checkpoint, while their groups and those of windows closed since number at most the "
        'full one\'s (docs/reducer.md, "Incremental checkpoints"; 0: every checkpoint is full)',
    )
    output_compression: OutputCompression = Field(
        default="lz4",
        description="how the owners compress the records they write to Kafka (results, late "
        "records, progress): librdkafka's `compression.type`; consumers decompress on their "
        'own (docs/reducer.md, "Output producers")',
    )
    output_producer: Literal["unit", "process"] = Field(
        default="process",
        description="`unit`: a transactional producer per unit, fenced by its transactional "
        "id; `process`: one per reducer process, committing its owners' commits together and "
        "fenced by the units' holder nodes in ZooKeeper (docs/reducer.md, \"One producer per "
        'process")',
    )
    columnar_state: bool = Field(
        default=True,
        description="hold the open windows of tasks whose aggregates are all COUNT, SUM, MIN, "
        "MAX or AVG (tumbling or hopping windows, no EMIT CHANGES) in a native group table "
        'or Polars columns rather than Python objects (docs/reducer.md, "Columnar open '
        'windows"; false: Python objects for every task, the reference the columnar state is '
        "tested against)",
    )
    freed_pages_decay_ms: int = Field(
        default=0,
        ge=0,
        description="how long a reducer's Polars allocator keeps freed pages for its next "
        "compaction before it returns them to the kernel (0: at once, the lowest RSS; longer "
        "trades memory for CPU where windows hold millions of groups: docs/reducer.md, "
        '"Memory of the process")',
    )
    state_budget_bytes: int | None = Field(
        default=None,
        ge=0,
        description="with `columnar_state`: the bytes of open-window state (group tables and "
        "frames) an owner holds in memory; past them it spills merged frames to `spill_dir`, "
        "the latest windows first, "
        "in hash partitions of about a quarter of it, merged and closed a partition at a time "
        '(docs/reducer.md, "State beyond memory"; unset: no spilling)',
    )
    spill_partition_min_rows: int = Field(
        default=65_536,
        ge=1,
        description="the rows a spilled window's hash partition holds at the least, whatever "
        "the budget: each partition costs a few Polars operations per spill and compaction, so "
        'many small ones cost more time than they save memory (docs/reducer.md, "State beyond '
        'memory")',
    )
    spill_dir: Path = Field(
        default=PROJECT_ROOT / ".mars" / "spill",
        description="where owners spill open-window frames (a directory per owner, removed "
        "when it stops)",
    )


DEV_TOKEN = "mars-dev-token"  # fine on loopback only: `api.server` refuses it elsewhere


class ApiSettings(_Section):
    host: str = Field(default="127.0.0.1", description="REST API address")
    port: int = Field(default=8640, ge=1, le=65535, description="REST API port")
    token: str = Field(
        default=DEV_TOKEN,
        min_length=8,
        description="bearer token for mutating endpoints; the API refuses to start with this "
        "development token on an address other than loopback, saying how to set one",
    )


class MetricsSettings(_Section):
    """Where a mapper or reducer serves Prometheus `/metrics` (the API serves its own on the
    API port). Port 0 takes a free port; the address is published in ZooKeeper either way, and
    `GET /metrics/targets` lists every process for Prometheus's HTTP service discovery."""

    host: str = Field(
        default="127.0.0.1",
        description="where a mapper or reducer serves Prometheus `/metrics` (`0.0.0.0`: every "
        "interface)",
    )
    port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="its port (0: a free one; the address is published in ZooKeeper and "
        "listed by `GET /metrics/targets`)",
    )


class ElasticitySettings(_Section):
    """The CPU band of the elasticity advice ([SPSPS]'s TUT, UUT, LUT), as a share of one core
    per process (`mars.elasticity`)."""

    cpu_target: float = Field(
        default=0.6,
        gt=0,
        description="the elasticity advice in `GET /cluster`: outside [`cpu_lower`, "
        "`cpu_upper`], the count of a role's processes that puts each at this mean CPU share "
        "(1.0 = one core)",
    )
    cpu_upper: float = Field(
        default=0.8, gt=0, description="above this mean CPU share, the advice is more processes"
    )
    cpu_lower: float = Field(
        default=0.3, gt=0, description="below this mean CPU share, the advice is fewer processes"
    )

    @model_validator(mode="after")
    def _ordered(self) -> ElasticitySettings:
        if not self.cpu_lower < self.cpu_target < self.cpu_upper:
            raise ValueError("needs cpu_lower < cpu_target < cpu_upper")
        return self


class BalanceSettings(_Section):
    """Load moves of the reducer leader ([SPSPS]'s BalanceLoad; `reducer.coordination.
    load_balance`): units move from the busiest reducer to the idlest when the spread of their
    loads passes `imbalance_threshold` (UIT: standard deviation over mean)."""

    enabled: bool = Field(
        default=True,
        description='the leader\'s load moves (docs/reducer.md, "Load-aware placement"); '
        "`false`: units stay where consistent hashing puts them",
    )
    imbalance_threshold: float = Field(
        default=0.1,
        ge=0,
        description="move units when the reducers' loads (partial groups merged per second) "
        "spread more than this (standard deviation / mean)",
    )
    interval_s: float = Field(
        default=10.0, gt=0, description="at most one round of moves per interval"
    )
    unit_cooldown_s: float = Field(
        default=60.0, ge=0, description="a moved unit stays put this long"
    )
    max_moves: int = Field(
        default=4, ge=1, description="units moved per round at most, busiest reducer to idlest"
    )
    min_gain: float = Field(
        default=0.05, ge=0, description="a round must cut the busiest load by this share"
    )
    # [BPMigration]'s pressure: a unit's backlog that counts as a full queue.
    pressure_backlog: int = Field(
        default=400,
        ge=1,
        description="a reducer whose unit backlog reaches 80 % of this many data sets while "
        "growing is relieved first",
    )


class LocalSettings(_Section):
    run_dir: Path = Field(
        default=PROJECT_ROOT / ".mars" / "local", description="the local cluster's run folder"
    )
    jars_dir: Path = Field(
        default=PROJECT_ROOT / ".cache" / "jars", description="where `make setup` puts the jars"
    )
    kafka_heap_mb: int = Field(default=768, ge=256, description="local broker heap")
    redis_maxmemory_mb: int = Field(
        default=2048,
        ge=64,
        description="local Redis `maxmemory`, policy `noeviction` (also in "
        "`docker-compose.yml`): when full, writes fail loudly and are retried; nothing is "
        "evicted",
    )
    start_timeout_s: float = Field(
        default=90.0, gt=0, description="how long a service may take to answer"
    )
    schema_registry_heap_mb: int = Field(
        default=384, ge=128, description="local schema registry (Apicurio Registry) heap"
    )
    schema_registry_start_timeout_s: float = Field(
        default=180.0,
        gt=0,
        description="how long the local schema registry may take to answer (a Quarkus "
        "application: 30 to 85 s were seen on two busy cores)",
    )


class SchemaRegistrySettings(_Section):
    url: str | None = Field(
        default=None,
        description="base URL of a Confluent-compatible schema registry API (e.g. "
        "`http://127.0.0.1:8081`, or Apicurio's `http://host:8080/apis/ccompat/v7`) for Avro "
        "and Protobuf input and `mars gen --format`; unset: tasks need a `schema_file` "
        "(`mars local up --schema-registry` starts one and sets it)",
    )


class RewindSettings(_Section):
    read_margin_ms: int = Field(
        default=300_000,
        ge=0,
        description="how far before `from - grace` (by Kafka record timestamp) a rewind's "
        "re-read starts: the sources' largest lateness of a record's timestamp behind its "
        "event time (docs/rewind.md)",
    )
    max_mapper_records: int = Field(
        default=5_000_000,
        ge=1,
        description="the most records a rewind's re-read may cover; one further back is "
        "refused with a 409 (the Spark path for it is not built: docs/rewind.md)",
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=NESTED_DELIMITER,
        frozen=True,
        extra="forbid",
    )

    kafka: KafkaSettings = KafkaSettings()
    redis: RedisSettings = RedisSettings()
    zookeeper: ZooKeeperSettings = ZooKeeperSettings()
    mapper: MapperSettings = MapperSettings()
    reducer: ReducerSettings = ReducerSettings()
    api: ApiSettings = ApiSettings()
    metrics: MetricsSettings = MetricsSettings()
    elasticity: ElasticitySettings = ElasticitySettings()
    balance: BalanceSettings = BalanceSettings()
    local: LocalSettings = LocalSettings()
    schema_registry: SchemaRegistrySettings = SchemaRegistrySettings()
    rewind: RewindSettings = RewindSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = Path(os.environ.get("MARS_CONFIG_FILE", DEFAULT_CONFIG_FILE))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file))


def setting_env_name(location: tuple[str | int, ...]) -> str:
    """`("mapper", "batch_size")` -> `MARS_MAPPER__BATCH_SIZE`."""
    return ENV_PREFIX + NESTED_DELIMITER.join(str(part).upper() for part in location)


def load_settings(**overrides: Any) -> Settings:
    """Build the settings; a bad value raises ConfigError naming every offending setting."""
    config_file = os.environ.get("MARS_CONFIG_FILE")
    if config_file and not Path(config_file).is_file():
        raise ConfigError(f"MARS_CONFIG_FILE: no such file: {config_file}")
    try:
        return Settings(**overrides)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(p) for p in e['loc'])} ({setting_env_name(e['loc'])}): {e['msg']}"
            for e in error.errors()
        ]
        raise ConfigError("invalid settings:\n  " + "\n  ".join(problems)) from None


def settings_as_env(settings: Settings) -> dict[str, str]:
    """The settings as `MARS_...` variables, to hand to a child process."""
    env: dict[str, str] = {}
    for section, values in settings.model_dump(mode="json").items():
        for name, value in values.items():
            if value is None:  # unset (schema_registry.url): the child's default is None too
                continue
            text = json.dumps(value) if isinstance(value, dict) else str(value)
            env[setting_env_name((section, name))] = text
    return env


def known_setting_env_names() -> frozenset[str]:
    """Every `MARS_...` variable a deployment may set (used by the compose consistency test)."""
    names = {"MARS_CONFIG_FILE"}
    for section, field in Settings.model_fields.items():
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        names.update(setting_env_name((section, name)) for name in model.model_fields)
    return frozenset(names)
