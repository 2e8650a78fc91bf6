"""The differential cases' Avro and Protobuf records read, through Mars's own decoders of their
schema files, the values the oracle reads in their JSON copies (no services)."""

from __future__ import annotations

import json
from collections import Counter

from mars.formats.decoders import file_reader
from mars.tasks.field_paths import path_name, read_path_text
from mars.tasks.spec import InputFormat
from tests.differential import binary_records
from tests.differential.cases import NESTED_PATHS, _path_value, random_case


def test_nested_cases_binary_records_decode_to_the_json_values_at_each_path() -> None:
    drawn = [c for c in map(random_case, range(200)) if c.input_format != "json" and c.shape.paths]
    assert {c.input_format for c in drawn} == set(binary_records.BINARY_FORMATS)
    assert {p for c in drawn for p in c.shape.paths} == set(NESTED_PATHS)
    valued: Counter[tuple[str, str]] = Counter()  # (format, path): records with a value there
    no_form = 0
    for c in drawn:
        names = {path: path_name(read_path_text(path)) for path in ("ts", "v", *c.shape.paths)}
        reader = file_reader(
            InputFormat(c.input_format),
            binary_records.schema_file(c.input_format, c.shape.unit),
            message=None,
            fields=tuple(names.values()),
        )
        for value in (v for values in c.partitions for v in values):
            no_form += value == binary_records.NO_FORM
            try:
                record = json.loads(value)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            read = reader.read(binary_records.encode(value, c.input_format, c.shape.unit))
            for path, name in names.items():
                expected = _path_value(record, path)
                assert read[name] == expected, (c.seed, path, value)
                valued[c.input_format, path] += expected is not None
    assert no_form > 0  # wrong kinds and NULL tags (Protobuf) the formats cannot carry
    assert all(valued[f, p] > 20 for f in binary_records.BINARY_FORMATS for p in NESTED_PATHS)


def test_a_nested_value_of_the_wrong_kind_has_no_form_only_where_it_is_read() -> None:
    value = json.dumps({"ts": 1, "m": {"u": 7, "tags": [None, "a"], "w": 2}}).encode()
    for input_format in binary_records.BINARY_FORMATS:
        assert binary_records.carried(value, input_format, "ms", ["m.w"]) == value
        assert binary_records.carried(value, input_format, "ms", ["m.u.id"]) == (
            binary_records.NO_FORM
        )
    # Avro carries a NULL element; Protobuf's repeated string cannot.
    assert binary_records.carried(value, "avro", "ms", ["m.tags[0]"]) == value
    assert binary_records.carried(value, "protobuf", "ms", ["m.tags[0]"]) == (
        binary_records.NO_FORM
    )
