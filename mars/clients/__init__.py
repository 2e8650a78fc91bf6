"""Every Kafka and Redis client Mars makes is built here from the settings, credentials
included (`kafka.client_properties`, `redis.url`), and `check_access` turns a refused login
into an error naming the setting (docs/deployment.md, "Secured clusters")."""

from mars.clients.access import check_access
from mars.clients.kafka_config import admin_client, client_config, spark_kafka_options
from mars.clients.redis_connection import (
    REDIS_ERRORS,
    RedisClient,
    connect_redis,
    redacted_url,
)

__all__ = [
    "REDIS_ERRORS",
    "RedisClient",
    "admin_client",
    "check_access",
    "client_config",
    "connect_redis",
    "redacted_url",
    "spark_kafka_options",
]
