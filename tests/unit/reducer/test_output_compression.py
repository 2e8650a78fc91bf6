"""Every `reducer.output_compression` the settings accept is one the bundled librdkafka can
write (a codec it was built without fails at the producer's construction, as the owner
starts)."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from mars.config import KafkaSettings, OutputCompression, ReducerSettings
from reducer.output import TransactionalOutput


@pytest.mark.parametrize("compression", get_args(OutputCompression))
def test_librdkafka_takes_every_output_compression(compression: OutputCompression) -> None:
    output = TransactionalOutput(
        kafka=KafkaSettings(bootstrap_servers="127.0.0.1:1", client_properties={"log_level": "0"}),
        transactional_id="mars-t-0",
        transaction_timeout_ms=60_000,
        compression=compression,
    )
    output.close()


def test_an_unknown_codec_is_refused_by_the_settings() -> None:
    with pytest.raises(ValidationError, match="output_compression"):
        ReducerSettings(output_compression="brotli")  # type: ignore[arg-type]
