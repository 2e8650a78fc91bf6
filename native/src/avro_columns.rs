//! `mars_native.AvroColumnsDecoder`: a batch of Avro payloads of one writer schema read
//! straight into the typed columns a task reads (`mars.formats.native_avro` wraps it).
//!
//! fastavro builds a Python dict per record (about 13 µs on the reference tuples); here each
//! payload is walked once with the GIL released, following the writer schema: a field no
//! column reads is skipped by its type, a field a column reads is appended to that column's
//! buffers (typed_columns.rs).
//!
//! Python builds the schema tree only for the plain case: every column's path runs through
//! records (unions with null included) to a scalar (null, boolean, int, long, float, double,
//! string, enum) or is missing from the writer schema (NULL). Anything else (a path into an
//! array or map, a column on bytes or on a record) keeps fastavro's path, the reference. The
//! decoder *declines* (None) a batch holding anything but well-formed payloads: a truncated or
//! overlong record, a union or enum index out of range, a boolean byte other than 0 or 1,
//! invalid UTF-8 in a string, a varint beyond 64 bits, a record without the expected header,
//! or a column mixing strings or booleans with other kinds; fastavro then decodes that batch
//! and gives the bad records their reasons.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyAnyMethods, PyTuple};

use crate::typed_columns::{columns_out, record_bounds, Column, ColumnOut};

const MAX_DEPTH: usize = 64;

enum Kind {
    Null,
    Boolean,
    Long, // Avro int and long: both zigzag varints
    Float,
    Double,
    Str,
    Bytes,
    Fixed(usize),
    Enum(Vec<Vec<u8>>),
    Array(Box<Node>),
    Map(Box<Node>),
    Union(Vec<Node>),
    Record(Vec<Node>),
}

/// A writer schema's type, with the columns whose path ends at it.
struct Node {
    kind: Kind,
    columns: Vec<usize>,
}

/// Why a batch is declined: fastavro decides it.
struct Decline;

type Walk<T> = Result<T, Decline>;

fn node_of(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Node> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err("the schema nests too deeply"));
    }
    let (name, argument, columns): (String, Bound<'_, PyAny>, Vec<usize>) = value.extract()?;
    let children = |argument: &Bound<'_, PyAny>| -> PyResult<Vec<Node>> {
        argument
            .cast::<PyTuple>()?
            .iter()
            .map(|child| node_of(&child, depth + 1))
            .collect()
    };
    let kind = match name.as_str() {
        "null" => Kind::Null,
        "boolean" => Kind::Boolean,
        "int" | "long" => Kind::Long,
        "float" => Kind::Float,
        "double" => Kind::Double,
        "string" => Kind::Str,
        "bytes" => Kind::Bytes,
        "fixed" => Kind::Fixed(argument.extract()?),
        "enum" => Kind::Enum(
            argument
                .extract::<Vec<String>>()?
                .into_iter()
                .map(String::into_bytes)
                .collect(),
        ),
        "array" => Kind::Array(Box::new(node_of(&argument, depth + 1)?)),
        "map" => Kind::Map(Box::new(node_of(&argument, depth + 1)?)),
        "union" => Kind::Union(children(&argument)?),
        "record" => Kind::Record(children(&argument)?),
        other => return Err(PyValueError::new_err(format!("unknown Avro type {other}"))),
    };
    Ok(Node { kind, columns })
}

#[pyclass(frozen, module = "mars_native")]
pub struct AvroColumnsDecoder {
    root: Node,
    columns: usize,
}

#[pymethods]
impl AvroColumnsDecoder {
    /// `schema`: the writer schema as nested `(type name, argument, columns)` tuples, the
    /// argument being None, a fixed's size, an enum's symbols, an array's or map's item node,
    /// or a tuple of a union's branches or a record's fields (in writer order); `columns`:
    /// how many columns the nodes' column numbers count.
    #[new]
    fn new(schema: &Bound<'_, PyAny>, columns: usize) -> PyResult<Self> {
        let root = node_of(schema, 0)?;
        Ok(Self { root, columns })
    }

    /// The columns of the payloads `data[start..ends[i]]` (`ends`: native-endian int64s, each
    /// payload after the previous one's end and one separator byte), each starting with
    /// `header` (a Confluent frame's magic byte and schema id, or nothing), or None: declined.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        ends: &[u8],
        header: &[u8],
    ) -> PyResult<Option<Vec<ColumnOut<'py>>>> {
        let bounds = record_bounds(data, ends)?;
        let walked = py.detach(|| self.walk(data, &bounds, header));
        Ok(walked.ok().and_then(|columns| columns_out(py, columns)))
    }
}

/// A payload being read.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Walk<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or(Decline)?;
        let out = self.data.get(self.at..end).ok_or(Decline)?;
        self.at = end;
        Ok(out)
    }

    /// A zigzag varint, as Avro's int and long are written.
    fn long(&mut self) -> Walk<i64> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = *self.data.get(self.at).ok_or(Decline)?;
            self.at += 1;
            if shift == 63 && byte > 1 {
                return Err(Decline); // beyond 64 bits
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(Decline)
    }

    fn length(&mut self) -> Walk<usize> {
        usize::try_from(self.long()?).map_err(|_| Decline)
    }

    fn text(&mut self) -> Walk<&'a [u8]> {
        let n = self.length()?;
        let text = self.bytes(n)?;
        std::str::from_utf8(text).map_err(|_| Decline)?;
        Ok(text)
    }

    /// An array's or map's blocks: a count (negative: its absolute value, then the block's
    /// size in bytes), items, until a count of 0.
    fn blocks(&mut self, mut item: impl FnMut(&mut Self) -> Walk<()>) -> Walk<()> {
        loop {
            let count = self.long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                self.long()?;
            }
            for _ in 0..count.unsigned_abs() {
                item(self)?;
            }
        }
    }
}

impl AvroColumnsDecoder {
    fn walk(&self, data: &[u8], bounds: &[(usize, usize)], header: &[u8]) -> Walk<Vec<Column>> {
        if bounds.is_empty() {
            return Err(Decline); // nothing to gain; the Python path types it
        }
        let mut columns: Vec<Column> = (0..self.columns)
            .map(|_| Column::new(bounds.len()))
            .collect();
        for (row, &(start, end)) in bounds.iter().enumerate() {
            let payload = &data[start..end];
            if !payload.starts_with(header) {
                return Err(Decline);
            }
            let mut reader = Reader {
                data: payload,
                at: header.len(),
            };
            read(&self.root, &mut reader, row, &mut columns)?;
            if reader.at != payload.len() {
                return Err(Decline); // bytes after the record
            }
            for column in &mut columns {
                column.offsets.push(column.text.len() as i64);
            }
        }
        Ok(columns)
    }
}

/// Reads the value of `node` into its columns (and its children's).
fn read(node: &Node, r: &mut Reader, row: usize, columns: &mut [Column]) -> Walk<()> {
    match &node.kind {
        Kind::Null => Ok(()),
        Kind::Boolean => {
            let value = match r.bytes(1)?[0] {
                0 => false,
                1 => true,
                _ => return Err(Decline),
            };
            for &column in &node.columns {
                columns[column].boolean(row, value);
            }
            Ok(())
        }
        Kind::Long => {
            let value = r.long()?;
            for &column in &node.columns {
                columns[column].int(row, value);
            }
            Ok(())
        }
        Kind::Float => {
            let bytes = r.bytes(4)?;
            let value = f64::from(f32::from_le_bytes(bytes.try_into().expect("4 bytes")));
            for &column in &node.columns {
                columns[column].float(row, value);
            }
            Ok(())
        }
        Kind::Double => {
            let value = f64::from_le_bytes(r.bytes(8)?.try_into().expect("8 bytes"));
            for &column in &node.columns {
                columns[column].float(row, value);
            }
            Ok(())
        }
        Kind::Str => {
            let text = r.text()?;
            for &column in &node.columns {
                string(&mut columns[column], row, text);
            }
            Ok(())
        }
        Kind::Enum(symbols) => {
            let index = usize::try_from(r.long()?).map_err(|_| Decline)?;
            let symbol = symbols.get(index).ok_or(Decline)?;
            for &column in &node.columns {
                string(&mut columns[column], row, symbol);
            }
            Ok(())
        }
        Kind::Bytes => {
            let n = r.length()?;
            r.bytes(n).map(|_| ())
        }
        Kind::Fixed(size) => r.bytes(*size).map(|_| ()),
        Kind::Array(item) => r.blocks(|r| read(item, r, row, columns)),
        Kind::Map(value) => r.blocks(|r| {
            r.text()?;
            read(value, r, row, columns)
        }),
        Kind::Union(branches) => {
            let index = usize::try_from(r.long()?).map_err(|_| Decline)?;
            read(branches.get(index).ok_or(Decline)?, r, row, columns)
        }
        Kind::Record(fields) => fields.iter().try_for_each(|f| read(f, r, row, columns)),
    }
}

fn string(column: &mut Column, row: usize, text: &[u8]) {
    column.text.extend_from_slice(text);
    column.set(row, crate::typed_columns::STRING);
}
