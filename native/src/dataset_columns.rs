//! `mars_native.decode_dataset_windows`: a data set's bytes (`mars.engine.dataset`'s msgpack
//! layout) read straight into each window's key and state columns (`DatasetWindow`), for the
//! reducer's columnar state (`mars.engine.dataset_frames`; `GroupTable`, group_table.rs, merges
//! them), with no Python object per group or value.
//!
//! It takes only the plain case and *declines* (None) anything else, for the Python path
//! (`decode_dataset`, the reference) to decode or to reject with its message: malformed bytes,
//! another version or other aggregates, a nested, binary or extension value (a big int) where a
//! scalar belongs, an int beyond int64, a column mixing kinds (ints and floats only in an AVG's
//! sum), a NaN where the columns may not hold one (keys, MIN and MAX).
//!
//! `decode_dataset` builds dicts, so a repeated window start or key keeps only its last
//! groups: rows here would be merged instead. Mappers write windows ascending and keys
//! ascending by their bytes, each value in msgspec's shortest form, so equal keys have equal
//! bytes; the decoder requires exactly that (starts strictly ascending; keys strictly ascending
//! by bytes, their values in the shortest form, no -0.0, which equals 0.0) and declines
//! otherwise, so a row here is a group there.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::group_entries::array_header;
use crate::typed_columns::{
    column_in, column_kind, column_out, Column, ColumnIn, ColumnOut, FLOAT, INT, NULL, STRING,
};

/// The data set is not the plain case: the Python path decodes it.
pub(crate) struct Decline;

pub(crate) type Read<T> = Result<T, Decline>;

/// How an aggregate's wire state becomes columns (`kinds` of `decode_dataset_windows`).
const STATE: u8 = 0; // one column, NaN allowed (COUNT, SUM)
const ORDERED: u8 = 1; // one column, no NaN (MIN, MAX: Python's comparisons need an order)
const AVERAGE: u8 = 2; // (sum, count): two columns, ints and floats in the sum make floats

/// Each window of `data` in order as (start, its rows), or None: declined. `names` are the
/// task's aggregates' wire names (the data set must carry exactly these), `kinds` how each
/// one's state reads.
#[pyfunction]
pub fn decode_dataset_windows(
    py: Python<'_>,
    data: &[u8],
    names: Vec<String>,
    kinds: Vec<u8>,
) -> Option<Vec<(i64, DatasetWindow)>> {
    if names.len() != kinds.len()
        || kinds
            .iter()
            .any(|k| !matches!(*k, STATE | ORDERED | AVERAGE))
    {
        return None;
    }
    let windows = py.detach(|| read_dataset(data, &names, &kinds)).ok()?;
    let typed = windows.iter().all(|window| {
        window
            .rows
            .columns
            .iter()
            .all(|(column, relaxed)| strict_kind(column, *relaxed).is_some())
    });
    typed.then(|| {
        windows
            .into_iter()
            .map(|window| (window.start, window.rows))
            .collect()
    })
}

/// `column_kind` (which declines strings or booleans mixed with any other kind), declining
/// ints mixed with floats too unless `relaxed`.
fn strict_kind(column: &Column, relaxed: bool) -> Option<u8> {
    if !relaxed && column.seen[INT as usize] && column.seen[FLOAT as usize] {
        return None;
    }
    column_kind(column.seen)
}

struct Window {
    start: i64,
    rows: DatasetWindow,
}

/// One window's groups of a data set, as read: each row's key and state values in columns
/// (`columns`: for a frame, `mars.engine.dataset_frames`), and each row's key as its bytes
/// (for `GroupTable.merge`: a key's bytes are one group's, see the module's docstring).
#[pyclass(frozen, module = "mars_native")]
pub struct DatasetWindow {
    pub(crate) rows: usize,
    pub(crate) key_width: usize,
    pub(crate) columns: Vec<(Column, bool)>, // (column, ints and floats make floats)
    keys: Vec<u8>,
    key_ends: Vec<usize>,
}

#[pymethods]
impl DatasetWindow {
    fn __len__(&self) -> usize {
        self.rows
    }

    /// The key columns, then the state columns (each of one kind: checked at the decode, or
    /// the frame's).
    fn columns<'py>(&self, py: Python<'py>) -> Vec<ColumnOut<'py>> {
        self.columns
            .iter()
            .map(|(column, _)| column_out(py, column).expect("typed at the decode"))
            .collect()
    }

    /// A window of `rows` groups from a frame: `key_columns` each a msgpack array of the
    /// rows' values as msgspec encodes them (the mappers' encoding of a key column: the keys
    /// read as a data set's do, so a key merged from a data set later is the same bytes), then
    /// the `states` columns; None when a column does not read (another kind, buffers too
    /// short) or a key could not come from a data set (NaN, -0.0, not msgspec's form).
    #[staticmethod]
    fn of_columns(
        rows: usize,
        key_columns: Vec<Bound<'_, PyBytes>>,
        states: Vec<ColumnIn<'_>>,
    ) -> Option<Self> {
        let mut readers = key_columns
            .iter()
            .map(|column| {
                let mut reader = Reader {
                    data: column.as_bytes(),
                    at: 0,
                };
                (reader.array().ok() == Some(rows)).then_some(reader)
            })
            .collect::<Option<Vec<_>>>()?;
        let mut columns: Vec<(Column, bool)> = (0..readers.len())
            .map(|_| (Column::new(rows), false))
            .collect();
        let mut keys = Vec::new();
        let mut key_ends = Vec::with_capacity(rows);
        let header = array_header(readers.len());
        for row in 0..rows {
            keys.extend_from_slice(&header);
            for (reader, (column, _)) in readers.iter_mut().zip(&mut columns) {
                let at = reader.at;
                put(column, row, key_value(reader).ok()?);
                keys.extend_from_slice(&reader.data[at..reader.at]);
                column.offsets.push(column.text.len() as i64);
            }
            key_ends.push(keys.len());
        }
        if readers.iter().any(|reader| reader.at != reader.data.len()) {
            return None;
        }
        for state in states {
            columns.push((column_in(rows, state)?, false));
        }
        Some(Self {
            rows,
            key_width: readers.len(),
            columns,
            keys,
            key_ends,
        })
    }
}

impl DatasetWindow {
    /// Row `row`'s key: the msgpack array of its values.
    pub(crate) fn key(&self, row: usize) -> &[u8] {
        let start = if row == 0 { 0 } else { self.key_ends[row - 1] };
        &self.keys[start..self.key_ends[row]]
    }

    pub(crate) fn keys_len(&self) -> usize {
        self.keys.len()
    }
}

fn read_dataset(data: &[u8], names: &[String], kinds: &[u8]) -> Read<Vec<Window>> {
    let mut r = Reader { data, at: 0 };
    if r.array()? != 3 || r.int()? != 1 {
        return Err(Decline);
    }
    if r.array()? != names.len() {
        return Err(Decline);
    }
    for name in names {
        if r.string()? != name.as_bytes() {
            return Err(Decline);
        }
    }
    let count = r.array()?;
    r.room_for(count)?;
    let mut windows = Vec::with_capacity(count);
    let mut last_start: Option<i64> = None;
    for _ in 0..count {
        if r.array()? != 2 {
            return Err(Decline);
        }
        let start = r.int()?;
        if last_start.is_some_and(|last| start <= last) {
            return Err(Decline);
        }
        last_start = Some(start);
        windows.push(read_window(&mut r, start, kinds)?);
    }
    if r.at != data.len() {
        return Err(Decline); // trailing bytes: not one msgpack value
    }
    Ok(windows)
}

fn read_window(r: &mut Reader, start: i64, kinds: &[u8]) -> Read<Window> {
    let rows = r.array()?;
    r.room_for(rows)?;
    let mut window = DatasetWindow {
        rows,
        key_width: 0,
        columns: Vec::new(),
        keys: Vec::new(),
        key_ends: Vec::with_capacity(rows),
    };
    if rows == 0 {
        return Ok(Window {
            start,
            rows: window,
        });
    }
    let mut width = None;
    let mut last_key: &[u8] = &[];
    for row in 0..rows {
        if r.array()? != 2 {
            return Err(Decline);
        }
        let key_at = r.at;
        let header = r.data.get(r.at).copied().ok_or(Decline)?;
        let key_width = r.array()?;
        if !canonical_array(header, key_width) {
            return Err(Decline);
        }
        if width.is_none() {
            width = Some(key_width);
            window.key_width = key_width;
            window.columns = (0..key_width)
                .map(|_| (Column::new(rows), false))
                .chain(kinds.iter().flat_map(|&kind| {
                    let columns: &[bool] = if kind == AVERAGE {
                        &[true, false]
                    } else {
                        &[false]
                    };
                    columns.iter().map(|&relaxed| (Column::new(rows), relaxed))
                }))
                .collect();
        }
        if Some(key_width) != width {
            return Err(Decline);
        }
        let (keys, states) = window.columns.split_at_mut(key_width);
        for (column, _) in keys.iter_mut() {
            put(column, row, key_value(r)?);
        }
        let key = &r.data[key_at..r.at];
        if row > 0 && key <= last_key {
            return Err(Decline);
        }
        last_key = key;
        window.keys.extend_from_slice(key);
        window.key_ends.push(window.keys.len());
        if r.array()? != kinds.len() {
            return Err(Decline);
        }
        let mut states = states.iter_mut();
        for &kind in kinds {
            if kind == AVERAGE {
                if r.array()? != 2 {
                    return Err(Decline);
                }
                let (sums, _) = states.next().ok_or(Decline)?;
                put(sums, row, r.scalar()?);
                let (counts, _) = states.next().ok_or(Decline)?;
                let count = r.int()?; // `from_wire` takes int(count): only an int is itself
                put(counts, row, Scalar::Int(count));
            } else {
                let (column, _) = states.next().ok_or(Decline)?;
                let value = r.scalar()?;
                if kind == ORDERED && matches!(value, Scalar::Float(f) if f.is_nan()) {
                    return Err(Decline);
                }
                put(column, row, value);
            }
        }
        for (column, _) in window.columns.iter_mut() {
            column.offsets.push(column.text.len() as i64);
        }
    }
    Ok(Window {
        start,
        rows: window,
    })
}

/// A key's next value: only msgspec's (shortest) form, and no float a data set's key may not
/// hold (NaN, which equals nothing; -0.0, which equals 0.0 with other bytes).
fn key_value<'a>(r: &mut Reader<'a>) -> Read<Scalar<'a>> {
    let at = r.at;
    let value = r.scalar()?;
    if !canonical_scalar(&value, &r.data[at..r.at]) {
        return Err(Decline);
    }
    if let Scalar::Float(f) = value {
        if f.is_nan() || (f == 0.0 && f.is_sign_negative()) {
            return Err(Decline);
        }
    }
    Ok(value)
}

pub(crate) fn put(column: &mut Column, row: usize, value: Scalar) {
    match value {
        Scalar::Nil => column.set(row, NULL),
        Scalar::Bool(b) => column.boolean(row, b),
        Scalar::Int(i) => column.int(row, i),
        Scalar::Float(f) => column.float(row, f),
        Scalar::Str(s) => {
            column.text.extend_from_slice(s);
            column.set(row, STRING);
        }
    }
}

/// Whether `header` is msgspec's (the shortest) header of an array of `len`.
fn canonical_array(header: u8, len: usize) -> bool {
    match header {
        0x90..=0x9f => true,
        0xdc => len > 15,
        _ => len > 0xffff,
    }
}

/// Whether `bytes` are msgspec's encoding of `value` (the shortest; floats as float64).
fn canonical_scalar(value: &Scalar, bytes: &[u8]) -> bool {
    let len = bytes.len();
    match *value {
        Scalar::Nil | Scalar::Bool(_) => true,
        Scalar::Float(_) => bytes[0] == 0xcb,
        Scalar::Str(s) => {
            let header = match s.len() {
                0..=31 => 1,
                32..=0xff => 2,
                0x100..=0xffff => 3,
                _ => 5,
            };
            len == header + s.len()
        }
        Scalar::Int(i) => {
            let expected = if i >= 0 {
                match i {
                    0..=0x7f => 1,
                    0x80..=0xff => 2,
                    0x100..=0xffff => 3,
                    0x1_0000..=0xffff_ffff => 5,
                    _ => 9,
                }
            } else {
                match i {
                    -32..=-1 => 1,
                    -128..=-33 => 2,
                    -32768..=-129 => 3,
                    -2_147_483_648..=-32769 => 5,
                    _ => 9,
                }
            };
            // a non-negative int in a signed format has the same length as in the unsigned
            // one only where both exist; msgspec uses the unsigned ones
            len == expected && !(i >= 0 && (0xd0..=0xd3).contains(&bytes[0]))
        }
    }
}

pub(crate) enum Scalar<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a [u8]), // valid UTF-8
}

pub(crate) struct Reader<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or(Decline)?;
        let bytes = self.data.get(self.at..end).ok_or(Decline)?;
        self.at = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Read<u8> {
        Ok(self.take(1)?[0])
    }

    fn be<const N: usize>(&mut self) -> Read<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    /// Declines a count of items that cannot fit in the bytes left (each takes one at least),
    /// before anything is sized by it.
    fn room_for(&self, items: usize) -> Read<()> {
        if items > self.data.len() - self.at {
            return Err(Decline);
        }
        Ok(())
    }

    pub(crate) fn array(&mut self) -> Read<usize> {
        match self.byte()? {
            b @ 0x90..=0x9f => Ok(usize::from(b & 0x0f)),
            0xdc => Ok(usize::from(u16::from_be_bytes(self.be()?))),
            0xdd => Ok(u32::from_be_bytes(self.be()?) as usize),
            _ => Err(Decline),
        }
    }

    fn int(&mut self) -> Read<i64> {
        match self.scalar()? {
            Scalar::Int(i) => Ok(i),
            _ => Err(Decline),
        }
    }

    fn string(&mut self) -> Read<&'a [u8]> {
        match self.scalar()? {
            Scalar::Str(s) => Ok(s),
            _ => Err(Decline),
        }
    }

    pub(crate) fn scalar(&mut self) -> Read<Scalar<'a>> {
        let b = self.byte()?;
        Ok(match b {
            0x00..=0x7f => Scalar::Int(i64::from(b)),
            0xe0..=0xff => Scalar::Int(i64::from(b as i8)),
            0xc0 => Scalar::Nil,
            0xc2 => Scalar::Bool(false),
            0xc3 => Scalar::Bool(true),
            0xcc => Scalar::Int(i64::from(self.byte()?)),
            0xcd => Scalar::Int(i64::from(u16::from_be_bytes(self.be()?))),
            0xce => Scalar::Int(i64::from(u32::from_be_bytes(self.be()?))),
            // beyond int64 Python's int becomes no Int64 value: the Python path says so
            0xcf => {
                Scalar::Int(i64::try_from(u64::from_be_bytes(self.be()?)).map_err(|_| Decline)?)
            }
            0xd0 => Scalar::Int(i64::from(self.byte()? as i8)),
            0xd1 => Scalar::Int(i64::from(i16::from_be_bytes(self.be()?))),
            0xd2 => Scalar::Int(i64::from(i32::from_be_bytes(self.be()?))),
            0xd3 => Scalar::Int(i64::from_be_bytes(self.be()?)),
            0xca => Scalar::Float(f64::from(f32::from_be_bytes(self.be()?))),
            0xcb => Scalar::Float(f64::from_be_bytes(self.be()?)),
            0xa0..=0xbf => self.str_of(usize::from(b & 0x1f))?,
            0xd9 => {
                let n = usize::from(self.byte()?);
                self.str_of(n)?
            }
            0xda => {
                let n = usize::from(u16::from_be_bytes(self.be()?));
                self.str_of(n)?
            }
            0xdb => {
                let n = u32::from_be_bytes(self.be()?) as usize;
                self.str_of(n)?
            }
            _ => return Err(Decline), // arrays, maps, binary, extensions (big ints)
        })
    }

    fn str_of(&mut self, n: usize) -> Read<Scalar<'a>> {
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes).map_err(|_| Decline)?;
        Ok(Scalar::Str(bytes))
    }
}
