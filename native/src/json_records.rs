//! `mars_native.json_records`: a closed window's result records (JSON keys and values) made
//! from its output columns, the bytes msgspec writes for the same rows
//! (reducer/results_in_columns.py builds the templates; its Polars path is the one without
//! the extension).
//!
//! A record is a template of pieces: literal text (the window's fields, names, punctuation)
//! and a column's value, written as msgspec writes it: NULL `null`, booleans, ints in
//! decimal, floats in their shortest round-trip form (`ryu`: its layout is msgspec's, e.g.
//! `1e16`, `0.00001`, `2.5e-6`) with NaN and infinities `null`, text quoted with `"`, `\` and
//! control characters escaped (`\b \t \n \f \r`, else `\u00XX`) and everything else as is.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::typed_columns::{column_in, Column, ColumnIn, BOOL, FLOAT, INT, NULL};

/// A piece of a template: a column's value (its index), or literal text.
#[derive(FromPyObject)]
pub enum Piece {
    Column(usize),
    Text(String),
}

/// The keys and the values of `rows` records: `columns` hold `rows` values each; `key` and
/// `value` are each record's templates, naming columns by their index.
#[pyfunction]
pub fn json_records<'py>(
    py: Python<'py>,
    rows: usize,
    columns: Vec<ColumnIn<'py>>,
    key: Vec<Piece>,
    value: Vec<Piece>,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, Vec<Bound<'py, PyBytes>>)> {
    let columns = columns
        .into_iter()
        .map(|column| column_in(rows, column))
        .collect::<Option<Vec<Column>>>()
        .ok_or_else(|| PyValueError::new_err("a column does not read"))?;
    let beyond = |piece: &Piece| matches!(*piece, Piece::Column(at) if at >= columns.len());
    if key.iter().chain(&value).any(beyond) {
        return Err(PyValueError::new_err(
            "a template names a column beyond the columns",
        ));
    }
    let (keys, values) = py.detach(|| {
        (
            written(&key, &columns, rows),
            written(&value, &columns, rows),
        )
    });
    Ok((keys.pieces(py), values.pieces(py)))
}

/// Records written one after another: record `i` is `text[ends[i - 1]..ends[i]]`.
struct Written {
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl Written {
    fn pieces<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let record = PyBytes::new(py, &self.text[start..end]);
                start = end;
                record
            })
            .collect()
    }
}

fn written(template: &[Piece], columns: &[Column], rows: usize) -> Written {
    let mut text = Vec::with_capacity(rows * 64);
    let mut ends = Vec::with_capacity(rows);
    for row in 0..rows {
        for piece in template {
            match piece {
                Piece::Text(literal) => text.extend_from_slice(literal.as_bytes()),
                Piece::Column(at) => write_value(&mut text, &columns[*at], row),
            }
        }
        ends.push(text.len());
    }
    Written { text, ends }
}

fn write_value(out: &mut Vec<u8>, column: &Column, row: usize) {
    match column.tags[row] {
        NULL => out.extend_from_slice(b"null"),
        BOOL if column.ints[row] != 0 => out.extend_from_slice(b"true"),
        BOOL => out.extend_from_slice(b"false"),
        INT => out.extend_from_slice(itoa::Buffer::new().format(column.ints[row]).as_bytes()),
        FLOAT => {
            let value = column.floats[row];
            if value.is_finite() {
                out.extend_from_slice(ryu::Buffer::new().format_finite(value).as_bytes());
            } else {
                out.extend_from_slice(b"null");
            }
        }
        _ => {
            let start = column.offsets[row] as usize;
            let end = column.offsets[row + 1] as usize;
            write_text(out, &column.text[start..end]);
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_text(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'"');
    let mut plain = 0; // start of the run not yet written
    for (at, &byte) in text.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\x08' => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\x0c' => b"\\f",
            b'\r' => b"\\r",
            0..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(byte >> 4) as usize],
                HEX[(byte & 0xf) as usize],
            ],
            _ => continue,
        };
        out.extend_from_slice(&text[plain..at]);
        out.extend_from_slice(escaped);
        plain = at + 1;
    }
    out.extend_from_slice(&text[plain..]);
    out.push(b'"');
}
