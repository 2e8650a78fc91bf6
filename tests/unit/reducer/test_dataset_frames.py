"""The native data-set decoder (`mars.engine.dataset_frames`, native/src/dataset_columns.rs)
against the reference, `groups_frame(decode_dataset(...))` per window: on random data sets
(key widths 0-3 of ints near and beyond the int64 limits, floats with NaN, -0.0 and infinities,
strings, bools, None, mixed kinds, nested values; every columnar aggregate; several windows)
both give the same frames (names, dtypes, values), or the native one declines: wherever the
reference refuses, and for a -0.0 key or an AVG sum beyond int64 (the Python path decodes
those); on bytes that are not what a mapper writes (keys or windows out of order or repeated,
other encodings, corrupted or cut bytes) the native answer, when there is one, is still the
reference's."""

from __future__ import annotations

import math
import struct
from typing import Any

import polars as pl
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from mars.aggregates import (
    Aggregate,
    Average,
    CountAll,
    CountNonNull,
    Max,
    Min,
    Sum,
    msgpack_wire,
    wire_name,
)
from mars.engine.dataset import OpenWindows, decode_dataset, encode_dataset
from mars.engine.dataset_frames import dataset_windows, window_frame
from mars.native import native_available
from reducer.columnar_groups import DoesNotFit, groups_frame


def dataset_frames(
    data: bytes, aggregates: tuple[Aggregate[Any], ...]
) -> dict[int, pl.DataFrame] | None:
    """Window start -> its groups as the native path's frame; None: declined."""
    windows = dataset_windows(data, aggregates)
    if windows is None:
        return None
    return {start: window_frame(aggregates, window) for start, window in windows.items()}


KINDS = (CountAll, CountNonNull, Sum, Min, Max, Average)
INT64 = 2**63

edge_ints = st.sampled_from(
    [0, 1, -1, 127, 128, -32, -33, 255, 256, 2**31, 2**32, INT64 - 1, -INT64, INT64, -INT64 - 1]
)
ints = st.one_of(st.integers(-1000, 1000), edge_ints, st.integers(-(2**70), 2**70))
floats = st.one_of(
    st.floats(-1e6, 1e6), st.sampled_from([float("nan"), -0.0, 0.0, math.inf, -math.inf, 1e300])
)
texts = st.text(max_size=40)  # past 31 characters: another string header
nested = st.one_of(st.lists(st.integers(0, 3), max_size=2).map(tuple), st.binary(max_size=2))
scalars = st.one_of(ints, floats, texts, st.booleans(), st.none())


@st.composite
def column(draw: st.DrawFn) -> st.SearchStrategy[Any]:
    """One column's values in one window: usually of one kind (what fits), or not."""
    base = draw(st.sampled_from([ints, floats, texts, st.booleans(), st.integers(-5, 5)]))
    odd = draw(st.integers(0, 9))
    if odd == 0:
        return st.one_of(base, scalars)
    if odd == 1:
        return st.one_of(base, nested)
    return st.one_of(base, st.none()) if draw(st.booleans()) else base


@st.composite
def datasets(draw: st.DrawFn) -> tuple[tuple[Aggregate[Any], ...], OpenWindows]:
    kinds: list[type[Aggregate[Any]]] = draw(st.lists(st.sampled_from(KINDS), min_size=1))
    aggregates = tuple(kind() for kind in kinds)
    windows: OpenWindows = {}
    starts = st.one_of(st.integers(0, 10).map(lambda i: i * 1000), st.sampled_from([-5, INT64 - 1]))
    for start in draw(st.lists(starts, max_size=3, unique=True)):
        width = draw(st.integers(0, 3))
        keys = [draw(column()) for _ in range(width)]
        states = [draw(column()) for _ in range(len(aggregates))]
        sums = [draw(column()) for _ in range(len(aggregates))]
        groups = windows[start] = {}
        for _ in range(draw(st.integers(0, 1 if width == 0 else 8))):
            key = tuple(draw(k) for k in keys)
            groups[key] = [
                (draw(sums[i]), draw(st.one_of(st.integers(0, 9), ints)))
                if isinstance(agg, Average)
                else draw(states[i])
                for i, agg in enumerate(aggregates)
            ]
    return aggregates, windows


def reference(data: bytes, aggregates: tuple[Aggregate[Any], ...]) -> dict[int, Any] | None:
    """`groups_frame` of each window of `decode_dataset(data)`; None where that refuses
    (an error, other aggregates, a window that does not fit)."""
    try:
        dataset = decode_dataset(data)
    except Exception:  # DataSetFormatError, or what `from_wire` raises on odd wire forms
        return None
    if dataset.aggregate_names != tuple(wire_name(agg) for agg in aggregates):
        return None
    frames: dict[int, Any] = {}
    for start, groups in dataset.windows.items():
        try:
            frames[start] = groups_frame(aggregates, groups) if groups else None
        except DoesNotFit:
            return None
    return frames


def assert_same(native: dict[int, pl.DataFrame], expected: dict[int, Any]) -> None:
    assert list(native) == list(expected)
    for start, frame in native.items():
        if expected[start] is None:
            assert frame.height == 0
        else:
            assert_frame_equal(frame, expected[start], check_exact=True)


def has_negative_zero_key(windows: OpenWindows) -> bool:
    """-0.0 == 0.0, so the decoder declines it in keys (it could not tell them apart)."""
    return any(
        isinstance(v, float) and v == 0 and math.copysign(1, v) < 0
        for groups in windows.values()
        for key in groups
        for v in key
    )


def has_wide_average_sum(aggregates: tuple[Aggregate[Any], ...], windows: OpenWindows) -> bool:
    """An AVG's sum beyond int64: the reference makes its column floats when floats are beside
    it, the decoder reads no int beyond int64 and declines (the Python path decodes it)."""
    averages = [i for i, agg in enumerate(aggregates) if isinstance(agg, Average)]
    return any(
        isinstance(states[i][0], int)
        and not isinstance(states[i][0], bool)
        and not -INT64 <= states[i][0] < INT64
        for groups in windows.values()
        for states in groups.values()
        for i in averages
    )


def test_the_native_extension_is_built() -> None:
    assert native_available(), "mars_native is not built: run `make setup`"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
@example(((Sum(),), {0: {(1,): [INT64 - 1], (2,): [-INT64]}}))
@example(((Sum(),), {0: {(1,): [INT64]}}))  # uint64: no Int64
@example(((Max(),), {0: {("a",): [float("nan")]}}))
@example(((Sum(),), {0: {("a",): [float("nan")]}}))
@example(((Average(),), {0: {(1,): [(1, 2)], (2,): [(1.5, 1)]}}))  # one float column
@example(((Sum(),), {0: {(1,): [1], (2,): [1.5]}}))  # ints and floats: no
@example(((CountAll(),), {0: {(): [3]}, 5: {}}))
@example(((CountAll(),), {0: {("x" * 40, True, None): [3]}}))
@example(
    ((Average(),), {0: {("", 0): [(INT64, 0)], ("", 1): [(0.0, 0)]}})
)  # floats to the reference
def test_native_frames_are_the_reference_frames(case: Any) -> None:
    aggregates, windows = case
    data = encode_dataset(aggregates, windows)  # as a mapper writes it
    native = dataset_frames(data, aggregates)
    expected = reference(data, aggregates)
    event("native frames" if native is not None else "declined")
    if native is None:
        assert (
            expected is None
            or has_negative_zero_key(windows)
            or has_wide_average_sum(aggregates, windows)
        )
    else:
        assert expected is not None
        assert_same(native, expected)


@st.composite
def odd_bytes(draw: st.DrawFn) -> tuple[tuple[Aggregate[Any], ...], bytes]:
    """Bytes a mapper does not write: a body in any order, with repeats and other encodings,
    or a data set's bytes corrupted or cut short."""
    aggregates, windows = draw(datasets())
    names = [wire_name(agg) for agg in aggregates]
    if draw(st.booleans()):
        data = bytearray(encode_dataset(aggregates, windows))
        for _ in range(draw(st.integers(1, 3))):
            if data:
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return aggregates, bytes(data[: draw(st.integers(0, len(data)))])
    body: list[list[Any]] = [
        [start, [[list(key), [agg.to_wire(s) for agg, s in zip(aggregates, states, strict=True)]]
                 for key, states in groups.items()]]
        for start, groups in windows.items()
    ]  # fmt: skip
    for window in body:
        window[1] = draw(st.permutations(window[1]))
        if window[1] and draw(st.booleans()):
            window[1].append(window[1][0])  # a repeated key
    if draw(st.booleans()) and body:
        body.append(body[0])  # a repeated window
    heads: list[list[Any]] = [[1, names], [2, names], [1, names[:-1]], [1, [*names, "sum"]]]
    head = draw(st.sampled_from(heads))
    encode = wide_encode if draw(st.booleans()) else msgpack_wire.encode
    return aggregates, encode([*head, draw(st.permutations(body))])


def wide_encode(value: Any) -> bytes:
    """msgpack of `value` in wider forms than msgspec's where there is one (ints as int16,
    strings as str16, arrays as array16, floats as float64): the same values to a decoder."""
    if isinstance(value, list | tuple):
        return b"\xdc" + struct.pack(">H", len(value)) + b"".join(map(wide_encode, value))
    if isinstance(value, str):
        text = value.encode()
        return b"\xda" + struct.pack(">H", len(text)) + text
    if type(value) is int and -(2**15) <= value < 2**15:
        return b"\xd1" + struct.pack(">h", value)
    return msgpack_wire.encode(value)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_bytes())
def test_on_any_bytes_a_native_answer_is_the_reference_one(case: Any) -> None:
    aggregates, data = case
    native = dataset_frames(data, aggregates)
    event("native frames" if native is not None else "declined")
    if native is not None:
        expected = reference(data, aggregates)
        assert expected is not None
        assert_same(native, expected)


def test_keys_equal_in_python_but_encoded_apart_are_declined() -> None:
    """(1,) written as a fixint and as a uint16 are one group to `decode_dataset`."""
    names = ["count_all"]
    key = msgpack_wire.encode([1])
    wide = bytes([0x91, 0xCD, 0x00, 0x01])
    for keys in ([key, wide], [wide, key]):
        body = b"".join(b"\x92" + k + b"\x91\x03" for k in keys)
        data = b"\x93\x01" + msgpack_wire.encode(names) + b"\x91\x92\x00\x92" + body
        assert len(decode_dataset(data).windows[0]) == 1
        assert dataset_frames(data, (CountAll(),)) is None
