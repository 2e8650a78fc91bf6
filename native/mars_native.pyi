"""Types of the `mars_native` extension (native/src/lib.rs); wrapped by
`mars.clients.native_consumer.NativeConsumer`."""

from collections.abc import Callable
from typing import Any

Partitions = list[tuple[str, int, int]]  # (topic, partition, offset)
# A partition's messages of one consume, one run per partition: (topic, partition, offsets,
# payloads joined by newlines, each payload's end in them as native-endian int64 bytes).
Run = tuple[str, int, list[int], bytes, bytes]

class NativeKafkaError(Exception):
    """args: (librdkafka error code, message)."""

class BatchConsumer:
    def __init__(self, config: dict[str, str]) -> None: ...
    def consume(self, max_messages: int, timeout_s: float) -> tuple[list[Run], list[str]]: ...
    def subscribe(
        self, topics: list[str], on_rebalance: Callable[[str, Partitions], None]
    ) -> None: ...
    def unsubscribe(self) -> None: ...
    def assign(self, partitions: Partitions) -> None: ...
    def unassign(self) -> None: ...
    def pause(self, partitions: Partitions) -> None: ...
    def resume(self, partitions: Partitions) -> None: ...
    def seek(self, topic: str, partition: int, offset: int) -> None: ...
    def position(self, partitions: list[tuple[str, int]]) -> list[int]: ...
    def commit(self, partitions: Partitions, asynchronous: bool) -> None: ...
    def list_topics(self, timeout_s: float) -> dict[str, tuple[int, str | None]]: ...
    def close(self) -> None: ...

class GroupEntries:
    """A batch's groups as msgpack entries `[key, [state, ...]]` (native/src/group_entries.rs)."""

    def __init__(self, key_columns: list[bytes], state_columns: list[bytes], rows: int) -> None: ...
    def __len__(self) -> int: ...
    def key_crc32(self) -> bytes: ...
    def cells(self, cell_of_rows: bytes) -> list[tuple[int, bytes]]: ...

class JsonColumnsDecoder:
    """Reads JSON records straight into the columns of `paths` (native/src/json_columns.rs)."""

    def __init__(self, paths: list[list[str | int]]) -> None: ...
    def decode(
        self, data: bytes, ends: bytes
    ) -> list[tuple[int, bytes | None, bytes, bytes | None]] | None:
        """Per path: (kind, validity bitmap or None, values, string offsets or None); None when
        declined."""

# An Avro writer schema node: (type name, argument, columns ending here).
AvroNode = tuple[str, Any, list[int]]

class AvroColumnsDecoder:
    """Reads Avro payloads of one writer schema straight into typed columns
    (native/src/avro_columns.rs)."""

    def __init__(self, schema: AvroNode, columns: int) -> None: ...
    def decode(
        self, data: bytes, ends: bytes, header: bytes
    ) -> list[tuple[int, bytes | None, bytes, bytes | None]] | None:
        """Per column: (kind, validity bitmap or None, values, string offsets or None); None
        when declined."""

# A Protobuf message's field: (number, type name, argument, repeated, columns it fills, oneof
# slot or -1); the argument a message's node index, an enum's (number, name) pairs, or None.
ProtobufField = tuple[int, str, Any, bool, list[int], int]

class ProtobufColumnsDecoder:
    """Reads Protobuf payloads of one message type straight into typed columns
    (native/src/protobuf_columns.rs)."""

    def __init__(
        self,
        nodes: list[list[ProtobufField]],
        columns: list[tuple[int, bool | int | float | str | None]],
    ) -> None:
        """`nodes`: the messages, the payloads' own first; `columns`: per column, the node
        holding its field and its default (None: NULL)."""

    def decode(
        self, data: bytes, ends: bytes, header: bytes
    ) -> list[tuple[int, bytes | None, bytes, bytes | None]] | None:
        """Per column: (kind, validity bitmap or None, values, string offsets or None); None
        when declined."""

def line_shape(data: bytes, delimiter: int) -> tuple[int, int, int, int, int]:
    """(lines, shortest, longest, fewest fields, most fields) of `data` cut at newlines
    (native/src/line_shape.rs)."""

# A column as the native decoders hand it over: (kind, validity bitmap or None, values, string
# offsets or None), native/src/typed_columns.rs.
NativeColumn = tuple[int, bytes | None, bytes, bytes | None]

class DatasetWindow:
    """One window's groups of a data set (native/src/dataset_columns.rs)."""

    def __len__(self) -> int: ...
    def columns(self) -> list[NativeColumn]:
        """The key columns, then the state columns."""
    @staticmethod
    def of_columns(
        rows: int, key_columns: list[bytes], states: list[NativeColumn]
    ) -> DatasetWindow | None:
        """A window from a frame: each key column as one msgpack array of its values (msgspec's
        encoding, a mapper's), then the state columns; None when a column does not read or a
        key is one no data set holds (NaN, -0.0, not msgspec's form)."""

def decode_dataset_windows(
    data: bytes, names: list[str], kinds: list[int]
) -> list[tuple[int, DatasetWindow]] | None:
    """Per window of a data set, in order: (start, its groups), or None when declined
    (native/src/dataset_columns.rs). `kinds` per aggregate: 0 one column, 1 one column without
    NaN (MIN, MAX), 2 AVG's (sum, count)."""

class GroupTable:
    """One open window's groups in a hash table (native/src/group_table.rs). `ops` per state
    column: 0 ADD, 1 ADD_NULLABLE (SUM), 2 ADD_RELAXED (AVG's sum), 3 MIN, 4 MAX."""

    def __init__(self, ops: list[int]) -> None: ...
    def __len__(self) -> int: ...
    def merge(self, window: DatasetWindow) -> bool:
        """Merge a data set's window; False: declined, nothing merged."""
    def columns(self, *, changed_only: bool = False) -> list[NativeColumn]:
        """The key columns, then the state columns, of every group or of those changed."""
    def changed_count(self) -> int: ...
    def saved(self) -> None:
        """Changes count from here."""
    def memory_bytes(self) -> int: ...

def json_records(
    rows: int, columns: list[NativeColumn], key: list[str | int], value: list[str | int]
) -> tuple[list[bytes], list[bytes]]:
    """The keys and values of `rows` result records as JSON (native/src/json_records.rs):
    `key` and `value` are each record's templates, literal text or the index of the column
    whose value goes there."""

def msgpack_array(rows: int, column: NativeColumn) -> bytes:
    """The msgpack array msgspec writes for the column's values as Python objects
    (native/src/group_entries.rs)."""
