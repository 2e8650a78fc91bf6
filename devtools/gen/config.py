"""`GeneratorConfig`: the frozen description of one simulated input stream."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mars.tasks.spec import TimeFormat

DEFAULT_START_S = 1_700_000_000  # 2023-11-14T22:13:20Z


class Encoding(StrEnum):
    """How a tuple is serialised into a Kafka record value."""

    JSON = "json"  # one JSON object, keys in `FIELD_NAMES` order, no whitespace
    CSV = "csv"  # the 20 values in `FIELD_NAMES` order, comma-separated, no header
    # devtools.gen.binary_encoding: framed with `GeneratorConfig.schema_id`, else bare payloads
    AVRO = "avro"
    PROTOBUF = "protobuf"


GENERATED_TIME_FORMATS = (TimeFormat.EPOCH_S, TimeFormat.EPOCH_MS, TimeFormat.ISO8601)


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratorConfig:
    """What to generate. Equal configs generate byte-identical records.

    Timestamps are spread evenly over `[start_s, start_s + span_s)` in record order. With
    `disorder_s > 0`, each record is moved back in time by up to `disorder_s` seconds (never
    before `start_s`), so no record is more than `disorder_s` behind the largest timestamp
    before it: the bounded out-of-orderness that a watermark with that much grace absorbs.
    """

    count: int
    seed: int = 0
    start_s: int = DEFAULT_START_S
    span_s: int = 3600
    disorder_s: int = 0
    sip_cardinality: int = 1000  # distinct `sip` values (the group cardinality)
    zipf_s: float = 0.0  # 0: every field uniform over its pool; > 0: Zipf with this exponent
    malformed_ratio: float = 0.0  # share of records made malformed (see `MalformedKind`)
    time_format: TimeFormat = TimeFormat.EPOCH_S
    encoding: Encoding = Encoding.JSON
    schema_id: int | None = None  # Avro / Protobuf: the registry's id of the writer schema

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.start_s < 0:
            raise ValueError(f"start_s must be >= 0, got {self.start_s}")
        if self.span_s <= 0:
            raise ValueError(f"span_s must be > 0, got {self.span_s}")
        if self.disorder_s < 0:
            raise ValueError(f"disorder_s must be >= 0, got {self.disorder_s}")
        if not 1 <= self.sip_cardinality <= 1 << 24:
            raise ValueError(f"sip_cardinality must be in 1..{1 << 24}")
        if self.zipf_s < 0:
            raise ValueError(f"zipf_s must be >= 0, got {self.zipf_s}")
        if not 0.0 <= self.malformed_ratio <= 1.0:
            raise ValueError(f"malformed_ratio must be in [0, 1], got {self.malformed_ratio}")
        if self.time_format not in GENERATED_TIME_FORMATS:
            raise ValueError(f"cannot generate time format {self.time_format}")

    @property
    def start_ms(self) -> int:
        return self.start_s * 1000

    @property
    def end_ms(self) -> int:
        """Exclusive upper bound of every generated timestamp."""
        return (self.start_s + self.span_s) * 1000
