//! `mars_native.ProtobufColumnsDecoder`: a batch of Protobuf payloads of one message type read
//! straight into the typed columns a task reads (`mars.formats.native_protobuf` wraps it).
//!
//! The `protobuf` runtime builds a message object per record and the reader then asks it for
//! each field; here each payload is walked once with the GIL released, following a graph of
//! the writer's messages built in Python: a message node per message along the task's paths
//! (whose scalar fields name the columns they fill), and one shared node per other message
//! type (recursive types included), walked only to check its bytes.
//!
//! Protobuf's wire rules decide what a row holds: a scalar written twice keeps its last value,
//! an embedded message written twice is merged, so a row's values are collected per column and
//! appended when the row ends. A column whose field was not written is then its default (a
//! proto3 field without presence, when every message above it was written; the default comes
//! from Python) or NULL.
//!
//! The decoder *declines* (None) a batch unless the runtime would surely read every record the
//! same: it declines a malformed payload (a truncated value, a bad tag, a varint beyond 64
//! bits, a packed field of the wrong size, nesting deeper than `MAX_DEPTH`), a group, a known
//! field of an unexpected wire type (the runtime keeps it as an unknown field), invalid UTF-8
//! in any string, an enum number its enum lacks, a uint64 or fixed64 read beyond i64::MAX,
//! two members of one oneof with a member read, and a payload without the batch's header. The
//! runtime, the reference, then decodes that batch and gives the bad records their reasons.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyAnyMethods, PyBool, PyFloat, PyInt, PyString};

use crate::typed_columns::{columns_out, record_bounds, Column, ColumnOut, STRING};

// Below the runtime's own limit (100), so a payload nested deeper is declined, never taken.
const MAX_DEPTH: usize = 64;
const DENSE_NUMBERS: u32 = 1024; // fields numbered below this are found by a table lookup

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

#[derive(Clone, Copy, PartialEq)]
enum Scalar {
    Int32,
    Int64,
    UInt32,
    UInt64,
    SInt32,
    SInt64,
    Bool,
    Enum,
    Fixed32,
    SFixed32,
    Fixed64,
    SFixed64,
    Float,
    Double,
    Str,
    Bytes,
}

impl Scalar {
    fn wire(self) -> u8 {
        match self {
            Self::Fixed64 | Self::SFixed64 | Self::Double => I64,
            Self::Fixed32 | Self::SFixed32 | Self::Float => I32,
            Self::Str | Self::Bytes => LEN,
            _ => VARINT,
        }
    }
}

enum Kind {
    Scalar(Scalar),
    Message(usize), // the node's index
    Group,          // declined wherever it is written
}

struct Field {
    number: u32,
    kind: Kind,
    repeated: bool,
    columns: Vec<usize>,             // the columns this scalar fills
    oneof: Option<usize>,            // its oneof's slot in a row, when a member of it is read
    enum_names: Vec<(i32, Vec<u8>)>, // an enum's value names by number, sorted
}

/// A message: its fields, found by number.
struct Node {
    fields: Vec<Field>,
    dense: Vec<u32>, // number -> index in `fields` + 1 (0: no such field), below DENSE_NUMBERS
}

impl Node {
    fn field(&self, number: u32) -> Option<&Field> {
        if number < DENSE_NUMBERS {
            let at = *self.dense.get(number as usize)?;
            return (at > 0).then(|| &self.fields[at as usize - 1]);
        }
        self.fields.iter().find(|field| field.number == number)
    }
}

/// A column's value in one row.
#[derive(Clone, Copy)]
enum Value<'a> {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(&'a [u8]),
}

enum DefaultValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(Vec<u8>),
}

impl DefaultValue {
    fn value(&self) -> Value<'_> {
        match self {
            Self::Int(value) => Value::Int(*value),
            Self::Float(value) => Value::Float(*value),
            Self::Bool(value) => Value::Bool(*value),
            Self::Text(text) => Value::Text(text),
        }
    }
}

/// Where a column is read: the message node holding its field, and its default when that
/// message is written without it (None: NULL).
struct ColumnSpec {
    parent: usize,
    default: Option<DefaultValue>,
}

/// Why a batch is declined: the runtime decides it.
struct Decline;

type Walk<T> = Result<T, Decline>;

fn scalar_of(name: &str) -> PyResult<Kind> {
    let scalar = match name {
        "int32" => Scalar::Int32,
        "int64" => Scalar::Int64,
        "uint32" => Scalar::UInt32,
        "uint64" => Scalar::UInt64,
        "sint32" => Scalar::SInt32,
        "sint64" => Scalar::SInt64,
        "bool" => Scalar::Bool,
        "enum" => Scalar::Enum,
        "fixed32" => Scalar::Fixed32,
        "sfixed32" => Scalar::SFixed32,
        "fixed64" => Scalar::Fixed64,
        "sfixed64" => Scalar::SFixed64,
        "float" => Scalar::Float,
        "double" => Scalar::Double,
        "string" => Scalar::Str,
        "bytes" => Scalar::Bytes,
        "group" => return Ok(Kind::Group),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown Protobuf type {other}"
            )))
        }
    };
    Ok(Kind::Scalar(scalar))
}

type FieldTuple<'py> = (u32, String, Bound<'py, PyAny>, bool, Vec<usize>, i64);

fn field_of(value: &Bound<'_, PyAny>, nodes: usize) -> PyResult<Field> {
    let (number, name, argument, repeated, columns, oneof): FieldTuple = value.extract()?;
    let mut enum_names = Vec::new();
    let kind = match name.as_str() {
        "message" => {
            let child: usize = argument.extract()?;
            if child >= nodes {
                return Err(PyValueError::new_err("a message field names no node"));
            }
            Kind::Message(child)
        }
        other => {
            if other == "enum" {
                let names: Vec<(i32, String)> = argument.extract()?;
                enum_names = names
                    .into_iter()
                    .map(|(n, s)| (n, s.into_bytes()))
                    .collect();
                enum_names.sort_by_key(|&(number, _)| number);
            }
            scalar_of(other)?
        }
    };
    if matches!(kind, Kind::Scalar(Scalar::Bytes)) && !columns.is_empty() {
        return Err(PyValueError::new_err("a column on bytes"));
    }
    let oneof = usize::try_from(oneof).ok();
    Ok(Field {
        number,
        kind,
        repeated,
        columns,
        oneof,
        enum_names,
    })
}

fn node_of(value: &Bound<'_, PyAny>, nodes: usize) -> PyResult<Node> {
    let fields = value
        .try_iter()?
        .map(|field| field_of(&field?, nodes))
        .collect::<PyResult<Vec<Field>>>()?;
    let mut dense = Vec::new();
    for (at, field) in fields.iter().enumerate() {
        if field.number < DENSE_NUMBERS {
            let number = field.number as usize;
            if dense.len() <= number {
                dense.resize(number + 1, 0);
            }
            dense[number] = at as u32 + 1;
        }
    }
    Ok(Node { fields, dense })
}

fn default_of(value: &Bound<'_, PyAny>) -> PyResult<Option<DefaultValue>> {
    Ok(if value.is_none() {
        None
    } else if value.is_instance_of::<PyBool>() {
        Some(DefaultValue::Bool(value.extract()?))
    } else if value.is_instance_of::<PyInt>() {
        Some(DefaultValue::Int(value.extract()?))
    } else if value.is_instance_of::<PyFloat>() {
        Some(DefaultValue::Float(value.extract()?))
    } else if value.is_instance_of::<PyString>() {
        Some(DefaultValue::Text(value.extract::<String>()?.into_bytes()))
    } else {
        return Err(PyValueError::new_err(
            "a default is a bool, int, float or str",
        ));
    })
}

#[pyclass(frozen, module = "mars_native")]
pub struct ProtobufColumnsDecoder {
    nodes: Vec<Node>,
    columns: Vec<ColumnSpec>,
    oneofs: usize,
}

#[pymethods]
impl ProtobufColumnsDecoder {
    /// `nodes`: the messages, the first being the payloads' own, each a list of its fields as
    /// `(number, type name, argument, repeated, columns, oneof slot or -1)`, the argument being
    /// a message's node index, an enum's `(number, name)` pairs, or None; `columns`: per
    /// column, `(the node holding its field, its default or None)`.
    #[new]
    fn new(nodes: &Bound<'_, PyAny>, columns: Vec<(usize, Bound<'_, PyAny>)>) -> PyResult<Self> {
        let count = nodes.len()?;
        let nodes = nodes
            .try_iter()?
            .map(|node| node_of(&node?, count))
            .collect::<PyResult<Vec<Node>>>()?;
        if nodes.is_empty() || columns.iter().any(|(parent, _)| *parent >= nodes.len()) {
            return Err(PyValueError::new_err("a column names no node"));
        }
        let columns = columns
            .iter()
            .map(|(parent, default)| {
                Ok(ColumnSpec {
                    parent: *parent,
                    default: default_of(default)?,
                })
            })
            .collect::<PyResult<Vec<ColumnSpec>>>()?;
        let fields = nodes.iter().flat_map(|node| &node.fields);
        if fields
            .clone()
            .flat_map(|f| &f.columns)
            .any(|&c| c >= columns.len())
        {
            return Err(PyValueError::new_err("a field names no column"));
        }
        let oneofs = fields
            .filter_map(|f| f.oneof)
            .max()
            .map_or(0, |slot| slot + 1);
        Ok(Self {
            nodes,
            columns,
            oneofs,
        })
    }

    /// The columns of the payloads `data[start..ends[i]]` (`ends`: native-endian int64s, each
    /// payload after the previous one's end and one separator byte), each starting with
    /// `header` (a Confluent frame's magic byte, schema id and message indexes, or nothing),
    /// or None: declined.
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

/// One row's state: each column's value so far, which message nodes were written, and which
/// member each read oneof holds (its field number; 0: none).
struct Row<'a> {
    values: Vec<Option<Value<'a>>>,
    present: Vec<bool>,
    cases: Vec<u32>,
}

/// A payload (or an embedded message, or a packed field) being read.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn bytes(&mut self, n: usize) -> Walk<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or(Decline)?;
        let out = self.data.get(self.at..end).ok_or(Decline)?;
        self.at = end;
        Ok(out)
    }

    /// A varint of at most `max` bytes, its bits beyond 64 declined.
    fn varint_of(&mut self, max: usize) -> Walk<u64> {
        let mut value: u64 = 0;
        for (i, shift) in (0..64).step_by(7).take(max).enumerate() {
            let byte = *self.data.get(self.at).ok_or(Decline)?;
            self.at += 1;
            if i == 9 && byte > 1 {
                return Err(Decline);
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Decline)
    }

    fn varint(&mut self) -> Walk<u64> {
        self.varint_of(10)
    }

    /// A field's (number, wire type): at most 5 bytes, within 32 bits, the number not 0.
    fn tag(&mut self) -> Walk<(u32, u8)> {
        let tag = u32::try_from(self.varint_of(5)?).map_err(|_| Decline)?;
        match tag >> 3 {
            0 => Err(Decline),
            number => Ok((number, (tag & 7) as u8)),
        }
    }

    fn delimited(&mut self) -> Walk<&'a [u8]> {
        let n = usize::try_from(self.varint()?).map_err(|_| Decline)?;
        self.bytes(n)
    }

    fn text(&mut self) -> Walk<&'a [u8]> {
        let text = self.delimited()?;
        std::str::from_utf8(text).map_err(|_| Decline)?;
        Ok(text)
    }

    fn fixed32(&mut self) -> Walk<[u8; 4]> {
        Ok(self.bytes(4)?.try_into().expect("4 bytes"))
    }

    fn fixed64(&mut self) -> Walk<[u8; 8]> {
        Ok(self.bytes(8)?.try_into().expect("8 bytes"))
    }

    /// Past a value of wire type `wire` (a group is declined).
    fn skip(&mut self, wire: u8) -> Walk<()> {
        match wire {
            VARINT => self.varint().map(|_| ()),
            I64 => self.bytes(8).map(|_| ()),
            LEN => self.delimited().map(|_| ()),
            I32 => self.bytes(4).map(|_| ()),
            _ => Err(Decline),
        }
    }

    /// Past a scalar no column reads, checked as the runtime checks it.
    fn skip_scalar(&mut self, scalar: Scalar) -> Walk<()> {
        match scalar {
            Scalar::Str => self.text().map(|_| ()),
            other => self.skip(other.wire()),
        }
    }

    /// A scalar's value as its column holds it.
    fn value(&mut self, scalar: Scalar, field: &'a Field) -> Walk<Value<'a>> {
        let big = |value: u64| i64::try_from(value).map(Value::Int).map_err(|_| Decline);
        Ok(match scalar {
            // int32, uint32, sint32 and enums keep a varint's low 32 bits, as the runtime does
            Scalar::Int32 => Value::Int(i64::from(self.varint()? as i32)),
            Scalar::Int64 => Value::Int(self.varint()? as i64),
            Scalar::UInt32 => Value::Int(i64::from(self.varint()? as u32)),
            Scalar::UInt64 => big(self.varint()?)?,
            Scalar::SInt32 => {
                let n = self.varint()? as u32;
                Value::Int(i64::from((n >> 1) as i32 ^ -((n & 1) as i32)))
            }
            Scalar::SInt64 => {
                let n = self.varint()?;
                Value::Int((n >> 1) as i64 ^ -((n & 1) as i64))
            }
            Scalar::Bool => Value::Bool(self.varint()? != 0),
            Scalar::Enum => {
                let number = self.varint()? as i32;
                let names = &field.enum_names;
                let at = names
                    .binary_search_by_key(&number, |&(n, _)| n)
                    .map_err(|_| Decline)?;
                Value::Text(&names[at].1)
            }
            Scalar::Fixed32 => Value::Int(i64::from(u32::from_le_bytes(self.fixed32()?))),
            Scalar::SFixed32 => Value::Int(i64::from(i32::from_le_bytes(self.fixed32()?))),
            Scalar::Fixed64 => big(u64::from_le_bytes(self.fixed64()?))?,
            Scalar::SFixed64 => Value::Int(i64::from_le_bytes(self.fixed64()?)),
            Scalar::Float => Value::Float(f64::from(f32::from_le_bytes(self.fixed32()?))),
            Scalar::Double => Value::Float(f64::from_le_bytes(self.fixed64()?)),
            Scalar::Str => Value::Text(self.text()?),
            Scalar::Bytes => return Err(Decline), // no column reads bytes (checked at build)
        })
    }
}

/// Past a packed repeated scalar's values: whole varints, or a whole number of fixed values.
fn check_packed(scalar: Scalar, body: &[u8]) -> Walk<()> {
    match scalar.wire() {
        VARINT => {
            let mut r = Reader { data: body, at: 0 };
            while !r.done() {
                r.varint()?;
            }
            Ok(())
        }
        I32 if body.len() % 4 == 0 => Ok(()),
        I64 if body.len() % 8 == 0 => Ok(()),
        _ => Err(Decline),
    }
}

impl ProtobufColumnsDecoder {
    fn walk(&self, data: &[u8], bounds: &[(usize, usize)], header: &[u8]) -> Walk<Vec<Column>> {
        if bounds.is_empty() {
            return Err(Decline); // nothing to gain; the Python path types it
        }
        let mut columns: Vec<Column> = (0..self.columns.len())
            .map(|_| Column::new(bounds.len()))
            .collect();
        let mut state = Row {
            values: vec![None; self.columns.len()],
            present: vec![false; self.nodes.len()],
            cases: vec![0; self.oneofs],
        };
        for (row, &(start, end)) in bounds.iter().enumerate() {
            let body = data[start..end].strip_prefix(header).ok_or(Decline)?;
            state.values.fill(None);
            state.present.fill(false);
            state.present[0] = true;
            state.cases.fill(0);
            self.message(0, body, &mut state, 0)?;
            for ((column, spec), value) in columns.iter_mut().zip(&self.columns).zip(&state.values)
            {
                let default = || {
                    let written = state.present[spec.parent];
                    spec.default
                        .as_ref()
                        .filter(|_| written)
                        .map(DefaultValue::value)
                };
                match value.or_else(default) {
                    Some(Value::Int(value)) => column.int(row, value),
                    Some(Value::Float(value)) => column.float(row, value),
                    Some(Value::Bool(value)) => column.boolean(row, value),
                    Some(Value::Text(text)) => {
                        column.text.extend_from_slice(text);
                        column.set(row, STRING);
                    }
                    None => {}
                }
                column.offsets.push(column.text.len() as i64);
            }
        }
        Ok(columns)
    }

    /// Reads a message of node `node` from `body` into the row.
    fn message<'a>(
        &'a self,
        node: usize,
        body: &'a [u8],
        row: &mut Row<'a>,
        depth: usize,
    ) -> Walk<()> {
        if depth > MAX_DEPTH {
            return Err(Decline);
        }
        let node = &self.nodes[node];
        let mut r = Reader { data: body, at: 0 };
        while !r.done() {
            let (number, wire) = r.tag()?;
            match node.field(number) {
                None => r.skip(wire)?, // an unknown field
                Some(field) => self.field(field, wire, &mut r, row, depth)?,
            }
        }
        Ok(())
    }

    /// Reads a value of `field` written in wire type `wire`: into the row when columns read
    /// it, else only checked. A repeated field's value (no column reads one) is an element in
    /// its own wire type or a packed run of scalars.
    fn field<'a>(
        &'a self,
        field: &'a Field,
        wire: u8,
        r: &mut Reader<'a>,
        row: &mut Row<'a>,
        depth: usize,
    ) -> Walk<()> {
        if let Some(slot) = field.oneof {
            // another member written before: the runtime clears it; not followed here
            if row.cases[slot] != 0 && row.cases[slot] != field.number {
                return Err(Decline);
            }
            row.cases[slot] = field.number;
        }
        match field.kind {
            Kind::Message(child) if wire == LEN => {
                let body = r.delimited()?;
                row.present[child] = true;
                self.message(child, body, row, depth + 1)
            }
            Kind::Scalar(scalar) if wire == scalar.wire() => {
                if field.columns.is_empty() {
                    return r.skip_scalar(scalar);
                }
                let value = r.value(scalar, field)?;
                for &column in &field.columns {
                    row.values[column] = Some(value);
                }
                Ok(())
            }
            Kind::Scalar(scalar) if field.repeated && wire == LEN => {
                check_packed(scalar, r.delimited()?)
            }
            _ => Err(Decline), // a group, or a wire type the field does not have
        }
    }
}
