"""`LocalCredentials`: one user name and password that secure a local cluster (`LocalCluster(
credentials=...)`): Kafka's client listener speaks SASL_PLAINTEXT with the PLAIN mechanism for
this user, Redis runs with `requirepass`. The controller listener stays PLAINTEXT on loopback.
For tests and local trials only: the password is on redis-server's command line and in the
run folder's `cluster.json` and `server.properties`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from mars.clients.kafka_config import jaas_quoted

KAFKA_LISTENER = "SASL_PLAINTEXT"


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalCredentials:
    username: str = "mars"
    password: str

    def kafka_client_properties(self) -> dict[str, str]:
        """What a client sets in `kafka.client_properties` to talk to the broker."""
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": self.username,
            "sasl.password": self.password,
        }

    def kafka_jaas_config(self) -> str:
        """The broker's JAAS line: its own (inter-broker) login and the one user it accepts."""
        user, password = jaas_quoted(self.username), jaas_quoted(self.password)
        return (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{user}" password="{password}" user_{user}="{password}";'
        )

    def redis_login(self) -> str:
        """The URL part `:<password>@` of Redis's default user (`requirepass`)."""
        return f":{quote(self.password, safe='')}@"

    def redis_url(self, port: int) -> str:
        """Redis's default user with this password (`requirepass`)."""
        return f"redis://{self.redis_login()}127.0.0.1:{port}/0"
