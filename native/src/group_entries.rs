//! `mars_native.GroupEntries`: the groups of one batch as msgpack entries `[key, [state, ...]]`,
//! cut into (bucket, window) cells: the per-group half of `mars.engine.bucketed_datasets`.
//!
//! Python encodes each key column and each state column once, as one msgpack array (msgspec,
//! one call per column instead of one per group). Here each column is split at its values
//! and every row's entry is assembled from them: 0x92, the key (an array of the row's key
//! values), the states (an array of its state values). Those are exactly the bytes msgspec
//! gives for the row's `[key, [state, ...]]`: a msgpack value is encoded the same wherever it
//! sits. `key_crc32` hashes the keys (Python maps hashes to buckets: the bucket layout is
//! Python's); `cells` sorts the entries by cell, then by their bytes, and joins each cell's.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::typed_columns::{column_in, Column, ColumnIn, BOOL, FLOAT, INT, NULL};

#[pyclass(frozen, module = "mars_native")]
pub struct GroupEntries {
    buffer: Vec<u8>,
    /// Entry `i` is `buffer[starts[i]..starts[i + 1]]`; its key is `buffer[starts[i] + 1..key_ends[i]]`.
    starts: Vec<usize>,
    key_ends: Vec<usize>,
    key_columns: usize,
}

#[pymethods]
impl GroupEntries {
    /// `key_columns` and `state_columns`: msgpack arrays of `rows` values each.
    #[new]
    fn new(
        key_columns: Vec<Bound<'_, PyBytes>>,
        state_columns: Vec<Bound<'_, PyBytes>>,
        rows: usize,
    ) -> PyResult<Self> {
        // Borrowed, not copied: a batch's columns are a few hundred KB.
        let key_columns: Vec<&[u8]> = key_columns.iter().map(|c| c.as_bytes()).collect();
        let state_columns: Vec<&[u8]> = state_columns.iter().map(|c| c.as_bytes()).collect();
        let keys = split_columns(&key_columns, rows)?;
        let states = split_columns(&state_columns, rows)?;
        let key_header = array_header(key_columns.len());
        let states_header = array_header(state_columns.len());
        let values: usize = key_columns
            .iter()
            .chain(&state_columns)
            .map(|c| c.len())
            .sum();
        let per_row = 1 + key_header.len() + states_header.len();
        let mut buffer = Vec::with_capacity(values + rows * per_row);
        let mut starts = Vec::with_capacity(rows + 1);
        let mut key_ends = Vec::with_capacity(rows);
        for row in 0..rows {
            starts.push(buffer.len());
            buffer.push(0x92); // [key, states]
            buffer.extend_from_slice(&key_header);
            for (column, bounds) in key_columns.iter().zip(&keys) {
                buffer.extend_from_slice(&column[bounds[row]..bounds[row + 1]]);
            }
            key_ends.push(buffer.len());
            buffer.extend_from_slice(&states_header);
            for (column, bounds) in state_columns.iter().zip(&states) {
                buffer.extend_from_slice(&column[bounds[row]..bounds[row + 1]]);
            }
        }
        starts.push(buffer.len());
        Ok(Self {
            buffer,
            starts,
            key_ends,
            key_columns: key_columns.len(),
        })
    }

    fn __len__(&self) -> usize {
        self.key_ends.len()
    }

    /// crc32 (zlib's) of each row's key bytes, as native-endian uint32s.
    fn key_crc32<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let hashes: Vec<u8> = (0..self.key_ends.len())
            .flat_map(|row| {
                crc32fast::hash(&self.buffer[self.starts[row] + 1..self.key_ends[row]])
                    .to_ne_bytes()
            })
            .collect();
        PyBytes::new(py, &hashes)
    }

    /// `(cell, groups)` per distinct cell, ascending: `cell_of_rows` holds each row's cell as a
    /// native-endian int64; `groups` is the msgpack array of the cell's entries, sorted by bytes.
    fn cells<'py>(
        &self,
        py: Python<'py>,
        cell_of_rows: &[u8],
    ) -> PyResult<Vec<(i64, Bound<'py, PyBytes>)>> {
        let rows = self.key_ends.len();
        if cell_of_rows.len() != rows * 8 {
            return Err(PyValueError::new_err(format!(
                "{} bytes of cells for {rows} rows",
                cell_of_rows.len()
            )));
        }
        let cell_of: Vec<i64> = cell_of_rows
            .chunks_exact(8)
            .map(|b| i64::from_ne_bytes(b.try_into().expect("8 bytes")))
            .collect();
        let entry = |row: usize| &self.buffer[self.starts[row]..self.starts[row + 1]];
        // Sorted by (cell, the entry's first 16 bytes after the part all entries share, the
        // whole entry): most comparisons end at the prefix, two machine words (8 bytes often
        // tie: the string header and `10.1.2.` of an address).
        let shared = 1 + array_header(self.key_columns).len();
        let mut order: Vec<(i64, u128, usize)> = (0..rows)
            .map(|row| (cell_of[row], prefix(&entry(row)[shared..]), row))
            .collect();
        order.sort_unstable_by(|a, b| {
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then_with(|| entry(a.2).cmp(entry(b.2)))
        });
        let order: Vec<usize> = order.into_iter().map(|(_, _, row)| row).collect();
        let mut cells = Vec::new();
        for run in order.chunk_by(|&a, &b| cell_of[a] == cell_of[b]) {
            let header = array_header(run.len());
            let size = header.len() + run.iter().map(|&row| entry(row).len()).sum::<usize>();
            let groups = PyBytes::new_with(py, size, |out| {
                out[..header.len()].copy_from_slice(&header);
                let mut at = header.len();
                for &row in run {
                    let bytes = entry(row);
                    out[at..at + bytes.len()].copy_from_slice(bytes);
                    at += bytes.len();
                }
                Ok(())
            })?;
            cells.push((cell_of[run[0]], groups));
        }
        Ok(cells)
    }
}

/// The msgpack array msgspec writes for a column's values as Python objects (`to_list`): NULL
/// nil, booleans, ints in their shortest form (non-negative ones unsigned), floats as float64,
/// text as str; a key or state column for `GroupEntries` without a Python object per value.
#[pyfunction]
pub fn msgpack_array<'py>(
    py: Python<'py>,
    rows: usize,
    column: ColumnIn<'py>,
) -> PyResult<Bound<'py, PyBytes>> {
    let column =
        column_in(rows, column).ok_or_else(|| PyValueError::new_err("the column does not read"))?;
    let mut out = array_header(rows);
    for row in 0..rows {
        write_msgpack(&mut out, &column, row);
    }
    Ok(PyBytes::new(py, &out))
}

fn write_msgpack(out: &mut Vec<u8>, column: &Column, row: usize) {
    match column.tags[row] {
        NULL => out.push(0xc0),
        BOOL => out.push(if column.ints[row] != 0 { 0xc3 } else { 0xc2 }),
        INT => write_int(out, column.ints[row]),
        FLOAT => {
            out.push(0xcb);
            out.extend_from_slice(&column.floats[row].to_be_bytes());
        }
        _ => {
            let text = &column.text[column.offsets[row] as usize..column.offsets[row + 1] as usize];
            match text.len() {
                length @ 0..=31 => out.push(0xa0 | length as u8),
                length @ 32..=0xff => out.extend_from_slice(&[0xd9, length as u8]),
                length @ 0x100..=0xffff => {
                    out.push(0xda);
                    out.extend_from_slice(&(length as u16).to_be_bytes());
                }
                length => {
                    out.push(0xdb);
                    out.extend_from_slice(&(length as u32).to_be_bytes());
                }
            }
            out.extend_from_slice(text);
        }
    }
}

fn write_int(out: &mut Vec<u8>, value: i64) {
    match value {
        0..=0x7f | -32..=-1 => out.push(value as u8),
        0x80..=0xff => out.extend_from_slice(&[0xcc, value as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(value as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(value as u32).to_be_bytes());
        }
        0x1_0000_0000.. => {
            out.push(0xcf);
            out.extend_from_slice(&(value as u64).to_be_bytes());
        }
        -128..=-33 => out.extend_from_slice(&[0xd0, value as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(value as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(value as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&value.to_be_bytes());
        }
    }
}

/// The first 16 bytes of `bytes` as a big-endian number, zero-padded: numbers compare as the
/// bytes do, up to a tie (a tie needs the whole comparison).
fn prefix(bytes: &[u8]) -> u128 {
    let mut word = [0u8; 16];
    let length = bytes.len().min(16);
    word[..length].copy_from_slice(&bytes[..length]);
    u128::from_be_bytes(word)
}

/// The msgpack array header msgspec writes for `length` items (smallest form): also a
/// checkpoint's keys' (dataset_columns.rs, `DatasetWindow.of_columns`).
pub(crate) fn array_header(length: usize) -> Vec<u8> {
    if length < 16 {
        vec![0x90 | length as u8]
    } else if length < 1 << 16 {
        let mut header = vec![0xdc];
        header.extend_from_slice(&(length as u16).to_be_bytes());
        header
    } else {
        let mut header = vec![0xdd];
        header.extend_from_slice(&(length as u32).to_be_bytes());
        header
    }
}

/// Per column, the `rows + 1` boundaries of its array's values.
fn split_columns(columns: &[&[u8]], rows: usize) -> PyResult<Vec<Vec<usize>>> {
    columns
        .iter()
        .map(|column| {
            let invalid = || PyValueError::new_err("a column is not a msgpack array of the rows");
            let (length, mut at) = array_length(column).ok_or_else(invalid)?;
            if length != rows {
                return Err(PyValueError::new_err(format!(
                    "a column holds {length} values for {rows} rows"
                )));
            }
            let mut bounds = Vec::with_capacity(rows + 1);
            bounds.push(at);
            for _ in 0..rows {
                at = value_end(column, at).ok_or_else(invalid)?;
                bounds.push(at);
            }
            if at != column.len() {
                return Err(invalid());
            }
            Ok(bounds)
        })
        .collect()
}

/// (item count, offset of the first item) of the msgpack array at the start of `bytes`.
fn array_length(bytes: &[u8]) -> Option<(usize, usize)> {
    match *bytes.first()? {
        tag @ 0x90..=0x9f => Some(((tag & 0x0f) as usize, 1)),
        0xdc => Some((read_size(bytes, 1, 2)?, 3)),
        0xdd => Some((read_size(bytes, 1, 4)?, 5)),
        _ => None,
    }
}

/// A big-endian unsigned integer of `width` bytes at `at`.
fn read_size(bytes: &[u8], at: usize, width: usize) -> Option<usize> {
    let field = bytes.get(at..at + width)?;
    Some(field.iter().fold(0usize, |size, &b| size << 8 | b as usize))
}

/// The offset just past the msgpack value starting at `at`; None when it runs past the end or
/// is not msgpack.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    let tag = *bytes.get(at)?;
    let sized = |width: usize, extra: usize| -> Option<usize> {
        Some(at + 1 + width + extra + read_size(bytes, at + 1, width)?)
    };
    let end = match tag {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => at + 1,
        0x80..=0x8f => items_end(bytes, at + 1, 2 * (tag & 0x0f) as usize)?,
        0x90..=0x9f => items_end(bytes, at + 1, (tag & 0x0f) as usize)?,
        0xa0..=0xbf => at + 1 + (tag & 0x1f) as usize,
        0xc4 | 0xd9 => sized(1, 0)?,
        0xc5 | 0xda => sized(2, 0)?,
        0xc6 | 0xdb => sized(4, 0)?,
        0xc7 => sized(1, 1)?, // ext: size, type, data
        0xc8 => sized(2, 1)?,
        0xc9 => sized(4, 1)?,
        0xca => at + 5,
        0xcb => at + 9,
        0xcc | 0xd0 => at + 2,
        0xcd | 0xd1 => at + 3,
        0xce | 0xd2 => at + 5,
        0xcf | 0xd3 => at + 9,
        0xd4 => at + 3, // fixext: type, data
        0xd5 => at + 4,
        0xd6 => at + 6,
        0xd7 => at + 10,
        0xd8 => at + 18,
        0xdc => items_end(bytes, at + 3, read_size(bytes, at + 1, 2)?)?,
        0xdd => items_end(bytes, at + 5, read_size(bytes, at + 1, 4)?)?,
        0xde => items_end(bytes, at + 3, 2 * read_size(bytes, at + 1, 2)?)?,
        0xdf => items_end(bytes, at + 5, 2 * read_size(bytes, at + 1, 4)?)?,
        0xc1 => return None, // never used
    };
    (end <= bytes.len()).then_some(end)
}

fn items_end(bytes: &[u8], mut at: usize, items: usize) -> Option<usize> {
    for _ in 0..items {
        at = value_end(bytes, at)?;
    }
    Some(at)
}
