//! A batch's typed columns as the native decoders build them (json_columns.rs,
//! avro_columns.rs, protobuf_columns.rs) and hand them to Python: per column, Arrow buffers
//! (validity bitmap, values, string offsets) that become a Polars column without a Python
//! object per value.

use std::borrow::Cow;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pub(crate) const NULL: u8 = 0;
pub(crate) const BOOL: u8 = 1;
pub(crate) const INT: u8 = 2;
pub(crate) const FLOAT: u8 = 3;
pub(crate) const STRING: u8 = 4;

/// One column's values, row by row: `tags[row]` is the kind of its value (NULL when missing).
pub(crate) struct Column {
    pub(crate) tags: Vec<u8>,
    pub(crate) ints: Vec<i64>,   // sized on first use
    pub(crate) floats: Vec<f64>, // sized on first use
    pub(crate) text: Vec<u8>,
    pub(crate) offsets: Vec<i64>, // pushed at each row's end: row i is text[offsets[i]..offsets[i + 1]]
    pub(crate) seen: [bool; 5],
}

impl Column {
    pub(crate) fn new(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Self {
            tags: vec![NULL; rows],
            ints: Vec::new(),
            floats: Vec::new(),
            text: Vec::new(),
            offsets,
            seen: [false; 5],
        }
    }

    pub(crate) fn set(&mut self, row: usize, tag: u8) {
        self.tags[row] = tag;
        self.seen[tag as usize] = true;
    }

    pub(crate) fn int(&mut self, row: usize, value: i64) {
        if self.ints.is_empty() {
            self.ints.resize(self.tags.len(), 0);
        }
        self.ints[row] = value;
        self.set(row, INT);
    }

    pub(crate) fn boolean(&mut self, row: usize, value: bool) {
        if self.ints.is_empty() {
            self.ints.resize(self.tags.len(), 0);
        }
        self.ints[row] = i64::from(value);
        self.set(row, BOOL);
    }

    pub(crate) fn float(&mut self, row: usize, value: f64) {
        if self.floats.is_empty() {
            self.floats.resize(self.tags.len(), 0.0);
        }
        self.floats[row] = value;
        self.set(row, FLOAT);
    }
}

/// A column handed to Python: (kind, validity bitmap or None when no NULL, values, offsets).
/// Kinds: 0 all NULL, 1 Boolean (values a bitmap), 2 Int64, 3 Float64 (native-endian), 4
/// String (values UTF-8, offsets native-endian int64s).
pub(crate) type ColumnOut<'py> = (
    u8,
    Option<Bound<'py, PyBytes>>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
);

/// A column as Python hands it in (`NativeColumn`, `series_column`): `ColumnOut`'s layout.
pub(crate) type ColumnIn<'py> = (
    u8,
    Option<Bound<'py, PyBytes>>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
);

/// A column of `rows` values from its Arrow buffers (`column_out`'s layout); None when they
/// do not read (another kind, buffers too short, text not UTF-8).
pub(crate) fn column_in(
    rows: usize,
    (kind, validity, values, offsets): ColumnIn<'_>,
) -> Option<Column> {
    let validity = validity.as_ref().map(|bits| bits.as_bytes());
    let values = values.as_bytes();
    let offsets = offsets.as_ref().map(|offsets| offsets.as_bytes());
    let bit = |bits: &[u8], row: usize| bits[row / 8] >> (row % 8) & 1 == 1;
    let bitmap_bytes = rows.div_ceil(8);
    if validity.is_some_and(|bits| bits.len() < bitmap_bytes) {
        return None;
    }
    let valid = |row: usize| validity.is_none_or(|bits| bit(bits, row));
    let word = |row: usize| -> [u8; 8] { values[8 * row..8 * row + 8].try_into().expect("8") };
    let mut column = Column::new(rows);
    match kind {
        NULL => {}
        BOOL if values.len() >= bitmap_bytes => {
            for row in (0..rows).filter(|&row| valid(row)) {
                column.boolean(row, bit(values, row));
            }
        }
        INT if values.len() >= 8 * rows => {
            for row in (0..rows).filter(|&row| valid(row)) {
                column.int(row, i64::from_ne_bytes(word(row)));
            }
        }
        FLOAT if values.len() >= 8 * rows => {
            for row in (0..rows).filter(|&row| valid(row)) {
                column.float(row, f64::from_ne_bytes(word(row)));
            }
        }
        STRING => {
            let offsets = offsets.filter(|offsets| offsets.len() >= 8 * (rows + 1))?;
            let offset = |row: usize| {
                let bytes = offsets[8 * row..8 * row + 8].try_into().expect("8");
                usize::try_from(i64::from_ne_bytes(bytes)).ok()
            };
            for row in 0..rows {
                if valid(row) {
                    let text = values.get(offset(row)?..offset(row + 1)?)?;
                    std::str::from_utf8(text).ok()?;
                    column.text.extend_from_slice(text);
                    column.set(row, STRING);
                }
                column.offsets.push(column.text.len() as i64);
            }
            return Some(column);
        }
        _ => return None,
    }
    column.offsets.resize(rows + 1, 0);
    Some(column)
}

/// The column for Python, or None when it mixes kinds (strings or booleans with anything
/// else): the decoders then decline the batch, and the Python path types it.
pub(crate) fn column_out<'py>(py: Python<'py>, column: &Column) -> Option<ColumnOut<'py>> {
    let kind = column_kind(column.seen)?;
    let rows = column.tags.len();
    let validity = column
        .tags
        .contains(&NULL)
        .then(|| PyBytes::new(py, &bitmap(column.tags.iter().map(|&tag| tag != NULL))));
    let values: Cow<'_, [u8]> = match kind {
        NULL => Cow::Borrowed(&[]),
        BOOL => Cow::Owned(bitmap(column.ints.iter().map(|&value| value != 0))),
        INT => column.ints.iter().flat_map(|v| v.to_ne_bytes()).collect(),
        FLOAT => (0..rows)
            .flat_map(|row| {
                let value = match column.tags[row] {
                    INT => column.ints[row] as f64,
                    FLOAT => column.floats[row],
                    _ => 0.0,
                };
                value.to_ne_bytes()
            })
            .collect(),
        _ => Cow::Borrowed(&column.text),
    };
    let offsets = (kind == STRING).then(|| {
        PyBytes::new(
            py,
            &column
                .offsets
                .iter()
                .flat_map(|o| o.to_ne_bytes())
                .collect::<Vec<u8>>(),
        )
    });
    Some((kind, validity, PyBytes::new(py, &values), offsets))
}

/// The kind a column of values of the `seen` kinds is handed to Python as (ints with floats
/// make floats), or None when it mixes strings or booleans with any other kind.
pub(crate) fn column_kind(seen: [bool; 5]) -> Option<u8> {
    let [_, bools, ints, floats, strings] = seen;
    match (bools, ints, floats, strings) {
        (false, false, false, false) => Some(NULL),
        (true, false, false, false) => Some(BOOL),
        (false, true, false, false) => Some(INT),
        (false, _, true, false) => Some(FLOAT),
        (false, false, false, true) => Some(STRING),
        _ => None,
    }
}

/// Arrow's bitmap (least significant bit first) of `bits`.
fn bitmap(bits: impl Iterator<Item = bool>) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, bit) in bits.enumerate() {
        if i % 8 == 0 {
            out.push(0);
        }
        if bit {
            *out.last_mut().expect("pushed") |= 1 << (i % 8);
        }
    }
    out
}

/// Each record's `(start, end)` in a batch's `data`: `ends` native-endian int64s, each record
/// after the previous one's end and one separator byte (`JoinedValues`).
pub(crate) fn record_bounds(data: &[u8], ends: &[u8]) -> PyResult<Vec<(usize, usize)>> {
    if ends.len() % 8 != 0 {
        return Err(PyValueError::new_err("ends must be int64s"));
    }
    let mut bounds = Vec::with_capacity(ends.len() / 8);
    let mut start = 0usize;
    for chunk in ends.chunks_exact(8) {
        let end = i64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
        let end = usize::try_from(end)
            .ok()
            .filter(|&end| end >= start && end <= data.len())
            .ok_or_else(|| PyValueError::new_err("ends out of bounds"))?;
        bounds.push((start, end));
        start = end + 1;
    }
    Ok(bounds)
}

/// Every column for Python, or None when one mixes kinds (`column_out`): the batch is declined.
pub(crate) fn columns_out<'py>(
    py: Python<'py>,
    columns: Vec<Column>,
) -> Option<Vec<ColumnOut<'py>>> {
    columns
        .iter()
        .map(|column| column_out(py, column))
        .collect()
}
