"""The one home of a Kafka client's configuration: `bootstrap.servers`, then the deployment's
`kafka.client_properties` (librdkafka properties: `security.protocol`, `sasl.*`, `ssl.*`, ...),
then the caller's own keys. Every Producer, Consumer and AdminClient Mars makes is configured
here, so none can forget the credentials; Spark's Kafka source gets the same properties with
the `kafka.` prefix (`spark_kafka_options`).

The caller's own keys win over `client_properties`: they carry Mars's semantics
(`transactional.id`, `isolation.level`, `enable.idempotence`, ...), while `client_properties`
says how to reach and authenticate to the brokers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import AdminClient

from mars.config import KafkaSettings, setting_env_name

CLIENT_PROPERTIES_SETTING = "kafka.client_properties"

# librdkafka's SASL user and password; the Java client (Spark) takes them in a JAAS line.
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


# Every consumer that reads a backlog as fast as it can (the mappers; the benchmarks' result
# readers; docs/mapper.md, "What the mapper waited on").
# - librdkafka stops fetching a partition whose prefetch queue is full and, by default, waits
#   1 s before asking again: a mapper reading a backlog emptied its queue in half that and then
#   waited, 60 % of its time; a benchmark's reader of 289,329 result records read them in three
#   bursts about 0.6 s apart, all committed before the first.
# - A fetch brings at most 1 MiB of a partition by default: with 16 MiB, experiment 16 at
#   8,000 groups (1,000,000 JSON records, 2 mappers) ran at a 19 % higher rate.
#   The prefetch stays bounded by `queued.max.messages.kbytes` (64 MiB) as before.
BACKLOG_CONSUMER: Mapping[str, Any] = {
    "fetch.queue.backoff.ms": 10,
    "max.partition.fetch.bytes": 16 << 20,
}

# Every idempotent (and so every transactional) producer's settings. librdkafka (2.16) sets an
# idempotent producer's broker thread to wake at once when a partition's batch is ready, then
# allows the partition `5 - (messages in flight)` new requests: with 5 in flight it polls
# without waiting until an ack comes (docs/reducer.md, "Output producers"). With at most 4
# requests in flight per connection, requests of one message each (a trickle) cannot get
# there: the fifth waits unsent and the backpressure threshold (1) stops the serve first.
IDEMPOTENT_PRODUCER: Mapping[str, Any] = {
    "enable.idempotence": True,
    "max.in.flight.requests.per.connection": 4,
}


def client_config(kafka: KafkaSettings, own: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The configuration of one librdkafka client (Producer, Consumer, AdminClient)."""
    return {"bootstrap.servers": kafka.bootstrap_servers, **kafka.client_properties, **(own or {})}


def admin_client(kafka: KafkaSettings, own: Mapping[str, Any] | None = None) -> AdminClient:
    return AdminClient(client_config(kafka, own))


def client_properties_setting() -> str:
    """How people set the properties, for error messages."""
    env = setting_env_name(tuple(CLIENT_PROPERTIES_SETTING.split(".")))
    return f"{CLIENT_PROPERTIES_SETTING} ({env}, or [kafka.client_properties] in the config file)"


def spark_kafka_options(kafka: KafkaSettings) -> dict[str, str]:
    """Spark's Kafka source/sink options (`kafka.<Java client property>`) for the same brokers
    and credentials. librdkafka and the Java client share most names (`security.protocol`,
    `sasl.mechanism`, `ssl.*` stores); librdkafka's `sasl.username`/`sasl.password` become the
    Java client's `sasl.jaas.config` (PLAIN, SCRAM) and `ssl.ca.location` a PEM trust store."""
    properties = dict(kafka.client_properties)
    username = properties.pop("sasl.username", None)
    password = properties.pop("sasl.password", None)
    mechanism = properties.get("sasl.mechanism", properties.get("sasl.mechanisms", "PLAIN"))
    properties.pop("sasl.mechanisms", None)
    if username is not None and password is not None and "sasl.jaas.config" not in properties:
        module = _JAAS_MODULES.get(mechanism.upper())
        if module is None:
            raise ValueError(
                f"{CLIENT_PROPERTIES_SETTING}: Spark needs sasl.jaas.config for the SASL "
                f"mechanism {mechanism}"
            )
        properties["sasl.mechanism"] = mechanism
        properties["sasl.jaas.config"] = (
            f'{module} required username="{jaas_quoted(username)}" '
            f'password="{jaas_quoted(password)}";'
        )
    ca_location = properties.pop("ssl.ca.location", None)
    if ca_location is not None and "ssl.truststore.location" not in properties:
        properties["ssl.truststore.type"] = "PEM"
        properties["ssl.truststore.location"] = ca_location
    java = {"bootstrap.servers": kafka.bootstrap_servers, **properties}
    return {f"kafka.{key}": value for key, value in java.items()}


def jaas_quoted(value: str) -> str:
    """A value inside a JAAS line's double quotes. A double quote or backslash cannot be
    written there reliably (the Java side reads escapes differently by source), so it is
    refused."""
    if '"' in value or "\\" in value:
        raise ValueError(
            f"{CLIENT_PROPERTIES_SETTING}: a SASL user name or password with a double quote or "
            "a backslash cannot be given to the Java Kafka client (Spark); change it or set "
            "sasl.jaas.config yourself"
        )
    return value
