"""`decoder_for` picks the decoder of a task's `InputFormat`; anything else is an error, never
silently JSON."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mars.engine.decode import CsvRecordDecoder, FieldPlan, JsonRecordDecoder, decoder_for
from mars.engine.errors import EngineError
from mars.tasks.spec import CsvFormat, InputFormat

PLAN = FieldPlan(fields=("ts", "k"))
CSV = CsvFormat(columns=("ts", "k"), delimiter=";")


def test_each_input_format_gets_its_decoder() -> None:
    json = decoder_for(plan=PLAN, input_format=InputFormat.JSON, csv_format=None)
    assert isinstance(json, JsonRecordDecoder)
    assert json.decode([b'{"ts": 1, "k": "a"}']).frame["k"].to_list() == ["a"]
    csv = decoder_for(plan=PLAN, input_format=InputFormat.CSV, csv_format=CSV)
    assert isinstance(csv, CsvRecordDecoder)
    assert csv.decode([b"1;a"]).frame["k"].to_list() == ["a"]


def test_csv_without_a_header_spec_is_an_error() -> None:
    with pytest.raises(EngineError, match="header spec"):
        decoder_for(plan=PLAN, input_format=InputFormat.CSV, csv_format=None)


@pytest.mark.parametrize("unknown", ["xml", "csv", "json", None])
def test_an_unknown_format_is_an_error_not_json(unknown: Any) -> None:
    # Plain strings too, even a member's value: the caller passes the enum.
    with pytest.raises(EngineError, match="unknown input format") as raised:
        decoder_for(plan=PLAN, input_format=cast(InputFormat, unknown), csv_format=CSV)
    assert "InputFormat.JSON, InputFormat.CSV" in str(raised.value)
