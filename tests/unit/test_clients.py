"""`mars.clients`: every Kafka client's configuration from the settings, Spark's options, the
Redis URL shown to people, and the setting set from the environment or TOML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mars.clients import client_config, redacted_url, spark_kafka_options
from mars.clients.redis_connection import ClusterUrl, RedisUrlError
from mars.config import KafkaSettings, load_settings

SASL = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "mars",
    "sasl.password": "pw",
    "ssl.ca.location": "/etc/ca.pem",
}


def test_a_client_gets_the_brokers_the_properties_and_its_own_keys_last() -> None:
    kafka = KafkaSettings(bootstrap_servers="b:9093", client_properties=SASL)
    config = client_config(kafka, {"group.id": "g", "sasl.mechanism": "PLAIN"})
    assert config == {
        "bootstrap.servers": "b:9093",
        **SASL,
        "group.id": "g",
        "sasl.mechanism": "PLAIN",
    }


def test_spark_gets_the_same_brokers_and_credentials_in_java_client_terms() -> None:
    options = spark_kafka_options(KafkaSettings(bootstrap_servers="b:9093", client_properties=SASL))
    assert options == {
        "kafka.bootstrap.servers": "b:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="mars" password="pw";'
        ),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/ca.pem",
    }
    assert spark_kafka_options(KafkaSettings(bootstrap_servers="b:1")) == {
        "kafka.bootstrap.servers": "b:1"
    }


def test_a_password_the_jaas_line_cannot_hold_is_refused_by_name() -> None:
    kafka = KafkaSettings(client_properties={**SASL, "sasl.password": 'a"b'})
    with pytest.raises(ValueError, match=r"kafka\.client_properties"):
        spark_kafka_options(kafka)


def test_the_redis_url_is_shown_without_its_password() -> None:
    assert redacted_url("redis://:s3cret@h:6379/0") == "redis://:***@h:6379/0"
    assert redacted_url("redis://bob:s3cret@h/1") == "redis://bob:***@h/1"
    assert redacted_url("redis://h:6379/0") == "redis://h:6379/0"
    assert redacted_url("redis+cluster://:pw@a:1,b:2") == "redis+cluster://:***@a:1,b:2"
    assert redacted_url("redis+cluster://a:1,b:2") == "redis+cluster://a:1,b:2"


def test_a_cluster_url_names_every_node_and_the_login() -> None:
    parsed = ClusterUrl.parse("redis+cluster://bob:p%40ss@10.0.0.1:7000,node-b:7001/")
    assert parsed == ClusterUrl(
        nodes=(("10.0.0.1", 7000), ("node-b", 7001)), username="bob", password="p@ss"
    )
    assert ClusterUrl.parse("redis+cluster://:pw@h:1").username is None
    assert ClusterUrl.parse("redis+cluster://h:1").password is None


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+cluster://", "names no host:port"),
        ("redis+cluster://:secret@h", "'h' is not host:port"),
        ("redis://h:1", "starts with redis+cluster://"),
    ],
)
def test_a_bad_cluster_url_says_what_is_wrong_without_the_password(url: str, says: str) -> None:
    with pytest.raises(RedisUrlError, match=re.escape(says)) as error:
        ClusterUrl.parse(url)
    assert "secret" not in str(error.value)


def test_client_properties_come_from_json_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MARS_KAFKA__CLIENT_PROPERTIES", json.dumps(SASL))
    assert load_settings().kafka.client_properties == SASL


def test_client_properties_come_from_a_toml_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "mars.toml"
    config.write_text('[kafka.client_properties]\n"security.protocol" = "SASL_PLAINTEXT"\n')
    monkeypatch.setenv("MARS_CONFIG_FILE", str(config))
    monkeypatch.delenv("MARS_KAFKA__CLIENT_PROPERTIES", raising=False)
    assert load_settings().kafka.client_properties == {"security.protocol": "SASL_PLAINTEXT"}
