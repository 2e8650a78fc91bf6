"""Fail fast, with the setting's name, when Kafka or Redis refuses Mars's credentials.

librdkafka retries a refused SASL login for ever and Redis answers every command with an
authentication error, so a process with a wrong password would otherwise run without doing
anything. The `mars` commands call `check_access` before they start: a refusal raises
`CredentialsError` (a `ConfigError`: `mars` prints it and exits 2) naming
`kafka.client_properties` or `redis.url`, never the secret. A server that does not answer is
not an error here: the processes keep waiting for it, as they always did.
"""

from __future__ import annotations

import logging
import time

import redis
from confluent_kafka import KafkaError, KafkaException

from mars.clients.kafka_config import admin_client, client_properties_setting
from mars.clients.redis_connection import connect_redis, redacted_url
from mars.config import (
    ConfigError,
    CredentialsError,
    KafkaSettings,
    RedisSettings,
    Settings,
    setting_env_name,
)

log = logging.getLogger(__name__)

# A refused login (SASL) or handshake (SSL: certificates, trust store) is a settings problem.
_REFUSED = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL})
REDIS_URL_SETTING = f"redis.url ({setting_env_name(('redis', 'url'))})"


def check_access(
    settings: Settings, *, kafka: bool = True, redis: bool = True, timeout_s: float = 15.0
) -> None:
    """Check the Kafka and/or Redis credentials of `settings` (see the module docstring)."""
    if kafka:
        check_kafka_access(settings.kafka, timeout_s=timeout_s)
    if redis:
        check_redis_access(settings.redis, timeout_s=timeout_s)


def check_kafka_access(kafka: KafkaSettings, *, timeout_s: float = 15.0) -> None:
    """List the topics once; raise `CredentialsError` if a broker refuses the login, or
    `ConfigError` if librdkafka refuses a property."""
    refused: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.code() in _REFUSED:
            refused.append(error)

    try:  # log_level 0: the refusal is reported below, once, not as a log line per retry
        admin = admin_client(kafka, {"error_cb": on_error, "log_level": 0})
    except KafkaException as exc:
        raise ConfigError(f"{client_properties_setting()}: {exc.args[0].str()}") from None
    deadline = time.monotonic() + timeout_s
    while not refused:
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException:
            admin.poll(0)  # serves the error callbacks
        if time.monotonic() >= deadline:
            log.warning(
                "Kafka at %s did not answer within %.0f s; going on (it may still be starting)",
                kafka.bootstrap_servers,
                timeout_s,
            )
            return
    raise CredentialsError(
        f"Kafka at {kafka.bootstrap_servers} refused the credentials in "
        f"{client_properties_setting()}: {refused[0].str()}"
    )


def check_redis_access(settings: RedisSettings, *, timeout_s: float = 15.0) -> None:
    """PING once; raise `CredentialsError` naming `redis.url` if Redis refuses the login or
    wants one the URL does not give."""
    client = None
    try:
        client = connect_redis(settings, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        client.ping()
    except redis.AuthenticationError as exc:  # WRONGPASS, NOAUTH, no password configured
        raise CredentialsError(
            f"Redis at {redacted_url(settings.url)} refused the credentials in "
            f"{REDIS_URL_SETTING}: {exc} (give them as redis://user:password@host:port/db, "
            "redis://:password@host:port/db for requirepass, or "
            "redis+cluster://user:password@host:port,... for a Redis Cluster)"
        ) from None
    except redis.ConnectionError as exc:
        log.warning("Redis at %s did not answer: %s; going on", redacted_url(settings.url), exc)
    finally:
        if client is not None:
            client.close()
