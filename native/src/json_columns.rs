//! `mars_native.JsonColumnsDecoder`: a batch of JSON records read straight into typed columns,
//! only the fields and nested paths a task reads (`mars.engine.native_json` wraps it).
//!
//! The msgspec path (`mars.engine.decode.JsonRecordDecoder`) builds a Python object per record
//! and per value read, and Polars then types each column from a list of those objects. Here
//! each record is walked once with the GIL released: a key or element no path reads is
//! skipped (but still checked to be valid JSON), and a value a column reads is appended to
//! that column's buffers. Python gets, per column, Arrow buffers (validity bitmap, values,
//! string offsets), which become a Polars column without a Python object per value.
//!
//! The decoder *declines* (returns None) whenever a batch holds anything but the plain case,
//! so that the msgspec path, the reference, decides it: a record that is not one valid JSON
//! object (strict RFC 8259), invalid UTF-8 anywhere, a duplicate key on a read path, a path
//! through a value of the wrong kind, an object or array where a column needs a scalar, an
//! integer outside 64 bits, a float that overflows to infinity, a lone UTF-16 surrogate, more
//! than `MAX_DEPTH` levels of nesting, or a column mixing strings or booleans with other
//! kinds. What it accepts it types as the msgspec path does: ints alone Int64, ints and floats
//! Float64, booleans Boolean, strings String, nothing but nulls Null.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::typed_columns::{columns_out, record_bounds, Column, ColumnOut, BOOL, STRING};

const MAX_DEPTH: usize = 64;
const MAX_KEYS: usize = 64; // keys read of one object: a u64 marks the ones seen

/// A step of a path: an object's key or an array's 0-based index.
#[derive(FromPyObject)]
enum Step {
    Key(String),
    Index(usize),
}

/// A node of the tree of paths; node 0 is the record.
#[derive(Default)]
struct Node {
    keys: Vec<(Vec<u8>, usize)>,  // (key, child node)
    indexes: Vec<(usize, usize)>, // (index, child node)
    columns: Vec<usize>,          // the columns whose path ends here
}

/// Why a batch is declined: the msgspec path decides it.
struct Decline;

type Walk<T> = Result<T, Decline>;

/// The bytes that end a run of a string's plain text: a quote, a backslash, a control byte.
const STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        stops[byte] = true;
        byte += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` (eight bytes of a record, little-endian) that is a
/// quote, a backslash or a control byte; exact up to the first such byte (a subtraction's
/// borrow only runs upwards from a flagged byte), which is all `scan` reads.
fn stops_in_word(word: u64) -> u64 {
    let quotes = word ^ (ONES * u64::from(b'"'));
    let backslashes = word ^ (ONES * u64::from(b'\\'));
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    (zero(quotes) | zero(backslashes) | (word.wrapping_sub(ONES * 0x20) & !word)) & HIGHS
}

#[pyclass(frozen, module = "mars_native")]
pub struct JsonColumnsDecoder {
    nodes: Vec<Node>,
    columns: usize,
}

#[pymethods]
impl JsonColumnsDecoder {
    /// `paths[i]`: column i's path, a top-level key then keys (str) and indexes (int).
    #[new]
    fn new(paths: Vec<Vec<Step>>) -> PyResult<Self> {
        let mut nodes = vec![Node::default()];
        for (column, path) in paths.iter().enumerate() {
            if !matches!(path.first(), Some(Step::Key(_))) {
                return Err(PyValueError::new_err("a path starts with a field name"));
            }
            let mut at = 0;
            for step in path {
                let found = match step {
                    Step::Key(key) => nodes[at]
                        .keys
                        .iter()
                        .find(|(k, _)| k == key.as_bytes())
                        .map(|&(_, child)| child),
                    Step::Index(index) => nodes[at]
                        .indexes
                        .iter()
                        .find(|(i, _)| i == index)
                        .map(|&(_, child)| child),
                };
                at = match found {
                    Some(child) => child,
                    None => {
                        nodes.push(Node::default());
                        let child = nodes.len() - 1;
                        match step {
                            Step::Key(key) => nodes[at].keys.push((key.as_bytes().to_vec(), child)),
                            Step::Index(index) => nodes[at].indexes.push((*index, child)),
                        }
                        child
                    }
                };
            }
            nodes[at].columns.push(column);
        }
        if nodes.iter().any(|node| node.keys.len() > MAX_KEYS) {
            return Err(PyValueError::new_err(
                "more than 64 keys read of one object",
            ));
        }
        Ok(Self {
            nodes,
            columns: paths.len(),
        })
    }

    /// The columns of the records `data[start..ends[i]]` (`ends`: native-endian int64s, each
    /// record after the previous one's end and one separator byte), or None: declined.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        ends: &[u8],
    ) -> PyResult<Option<Vec<ColumnOut<'py>>>> {
        let bounds = record_bounds(data, ends)?;
        let walked = py.detach(|| self.walk(data, &bounds));
        Ok(walked.ok().and_then(|columns| columns_out(py, columns)))
    }
}

impl JsonColumnsDecoder {
    fn walk(&self, data: &[u8], bounds: &[(usize, usize)]) -> Walk<Vec<Column>> {
        if bounds.is_empty() {
            return Err(Decline); // nothing to gain; the Python path types it
        }
        if std::str::from_utf8(data).is_err() {
            return Err(Decline);
        }
        let mut columns: Vec<Column> = (0..self.columns)
            .map(|_| Column::new(bounds.len()))
            .collect();
        let mut reader = Reader {
            data,
            at: 0,
            scratch: Vec::new(),
        };
        for (row, &(start, end)) in bounds.iter().enumerate() {
            reader.data = &data[..end];
            reader.at = start;
            reader.space();
            if reader.peek() != Some(b'{') {
                return Err(Decline);
            }
            self.value(&mut reader, 0, row, 0, &mut columns)?;
            reader.space();
            if reader.at != end {
                return Err(Decline);
            }
            for column in &mut columns {
                column.offsets.push(column.text.len() as i64);
            }
        }
        Ok(columns)
    }

    /// Reads the value at `node` into its columns (and its children's).
    fn value(
        &self,
        r: &mut Reader,
        node: usize,
        row: usize,
        depth: usize,
        columns: &mut [Column],
    ) -> Walk<()> {
        if depth > MAX_DEPTH {
            return Err(Decline);
        }
        let n = &self.nodes[node];
        match r.peek() {
            Some(b'{') => {
                if !n.columns.is_empty() || !n.indexes.is_empty() {
                    return Err(Decline); // a nested value for a column, or an index of an object
                }
                self.object(r, node, row, depth, columns)
            }
            Some(b'[') => {
                if !n.columns.is_empty() || !n.keys.is_empty() {
                    return Err(Decline);
                }
                self.array(r, node, row, depth, columns)
            }
            Some(b'n') => r.literal(b"null"),
            Some(_) if !n.keys.is_empty() || !n.indexes.is_empty() => Err(Decline),
            Some(b'"') => {
                let text = r.string()?;
                for &column in &n.columns {
                    let column = &mut columns[column];
                    column.text.extend_from_slice(text);
                    column.set(row, STRING);
                }
                Ok(())
            }
            Some(b't') | Some(b'f') => {
                let value = r.peek() == Some(b't');
                r.literal(if value { b"true" } else { b"false" })?;
                for &column in &n.columns {
                    let column = &mut columns[column];
                    if column.ints.is_empty() {
                        column.ints.resize(column.tags.len(), 0);
                    }
                    column.ints[row] = i64::from(value);
                    column.set(row, BOOL);
                }
                Ok(())
            }
            Some(_) => match r.number()? {
                Number::Int(value) => {
                    for &column in &n.columns {
                        columns[column].int(row, value);
                    }
                    Ok(())
                }
                Number::Float(value) => {
                    for &column in &n.columns {
                        columns[column].float(row, value);
                    }
                    Ok(())
                }
            },
            None => Err(Decline),
        }
    }

    fn object(
        &self,
        r: &mut Reader,
        node: usize,
        row: usize,
        depth: usize,
        columns: &mut [Column],
    ) -> Walk<()> {
        let keys = &self.nodes[node].keys;
        let mut seen = 0u64;
        r.at += 1; // '{'
        r.space();
        if r.peek() == Some(b'}') {
            r.at += 1;
            return Ok(());
        }
        loop {
            r.space();
            let key = r.string()?;
            // Length and first byte before the bytes: most keys of a record are not read.
            let found = keys.iter().position(|(k, _)| {
                k.len() == key.len() && k.first() == key.first() && k.as_slice() == key
            });
            r.space();
            r.expect(b':')?;
            r.space();
            match found {
                Some(position) => {
                    if seen & (1 << position) != 0 {
                        return Err(Decline); // a duplicate key: the msgspec path decides
                    }
                    seen |= 1 << position;
                    self.value(r, keys[position].1, row, depth + 1, columns)?;
                }
                None => r.skip(depth + 1)?,
            }
            r.space();
            match r.next() {
                Some(b',') => continue,
                Some(b'}') => return Ok(()),
                _ => return Err(Decline),
            }
        }
    }

    fn array(
        &self,
        r: &mut Reader,
        node: usize,
        row: usize,
        depth: usize,
        columns: &mut [Column],
    ) -> Walk<()> {
        let indexes = &self.nodes[node].indexes;
        r.at += 1; // '['
        r.space();
        if r.peek() == Some(b']') {
            r.at += 1;
            return Ok(());
        }
        let mut index = 0usize;
        loop {
            r.space();
            match indexes.iter().find(|(i, _)| *i == index) {
                Some(&(_, child)) => self.value(r, child, row, depth + 1, columns)?,
                None => r.skip(depth + 1)?,
            }
            index += 1;
            r.space();
            match r.next() {
                Some(b',') => continue,
                Some(b']') => return Ok(()),
                _ => return Err(Decline),
            }
        }
    }
}

enum Number {
    Int(i64),
    Float(f64),
}

/// A cursor over one record; `data` ends where the record does.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    scratch: Vec<u8>, // a string with escapes, unescaped
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek();
        self.at += 1;
        byte
    }

    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Walk<()> {
        if self.next() == Some(byte) {
            Ok(())
        } else {
            Err(Decline)
        }
    }

    fn literal(&mut self, word: &[u8]) -> Walk<()> {
        if self.data[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(Decline)
        }
    }

    /// A string's text (unescaped), the cursor on its opening quote.
    fn string(&mut self) -> Walk<&[u8]> {
        self.expect(b'"')?;
        let start = self.at;
        if self.scan()? == b'"' {
            return Ok(&self.data[start..self.at - 1]);
        }
        // Escapes: unescape into `scratch`.
        self.scratch.clear();
        self.scratch
            .extend_from_slice(&self.data[start..self.at - 1]);
        loop {
            self.escape()?;
            let from = self.at;
            let end = self.scan()?;
            self.scratch
                .extend_from_slice(&self.data[from..self.at - 1]);
            if end == b'"' {
                return Ok(&self.scratch);
            }
        }
    }

    /// Moves past the next quote or backslash of a string, and says which it was; a control
    /// byte or the record's end first is malformed. Eight bytes at a time (`stops_in_word`),
    /// then a table lookup per byte for the last few: strings are short, shorter than what
    /// `memchr2` needs to pay off.
    #[inline]
    fn scan(&mut self) -> Walk<u8> {
        let data = self.data;
        let mut at = self.at;
        while let Some(word) = data.get(at..at + 8) {
            let stops = stops_in_word(u64::from_le_bytes(word.try_into().expect("8 bytes")));
            if stops != 0 {
                return self.stop_at(at + (stops.trailing_zeros() / 8) as usize);
            }
            at += 8;
        }
        while let Some(&byte) = data.get(at) {
            if STOPS[byte as usize] {
                return self.stop_at(at);
            }
            at += 1;
        }
        Err(Decline)
    }

    /// Moves past the stop byte at `at`, and says which it was.
    #[inline]
    fn stop_at(&mut self, at: usize) -> Walk<u8> {
        let byte = self.data[at];
        self.at = at + 1;
        if byte < 0x20 {
            return Err(Decline);
        }
        Ok(byte)
    }

    /// One escape, the cursor past its backslash, appended to `scratch`.
    fn escape(&mut self) -> Walk<()> {
        let byte = match self.next() {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                let unit = self.hex4()?;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        if self.next() != Some(b'\\') || self.next() != Some(b'u') {
                            return Err(Decline); // a lone surrogate
                        }
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Decline);
                        }
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return Err(Decline),
                    _ => unit,
                };
                let c = char::from_u32(code).ok_or(Decline)?;
                let mut buffer = [0u8; 4];
                self.scratch
                    .extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
                return Ok(());
            }
            _ => return Err(Decline),
        };
        self.scratch.push(byte);
        Ok(())
    }

    fn hex4(&mut self) -> Walk<u32> {
        let digits = self.data.get(self.at..self.at + 4).ok_or(Decline)?;
        let mut unit = 0u32;
        for &digit in digits {
            unit = unit * 16 + char::from(digit).to_digit(16).ok_or(Decline)?;
        }
        self.at += 4;
        Ok(unit)
    }

    /// A number (RFC 8259's grammar): an Int when it has no fraction or exponent.
    fn number(&mut self) -> Walk<Number> {
        if let Some(value) = self.short_int() {
            return Ok(Number::Int(value));
        }
        let start = self.at;
        let float = self.skip_number()?;
        // The bytes were checked to be ASCII digits, signs and dots: valid UTF-8.
        let text = std::str::from_utf8(&self.data[start..self.at]).map_err(|_| Decline)?;
        if float {
            let value: f64 = text.parse().map_err(|_| Decline)?;
            if value.is_finite() {
                Ok(Number::Float(value))
            } else {
                Err(Decline)
            }
        } else {
            text.parse().map(Number::Int).map_err(|_| Decline) // beyond 64 bits: declined
        }
    }

    /// The common case of `number` without its text parsed again: an integer of at most 18
    /// digits (no overflow), without a leading zero, fraction or exponent. None (the cursor
    /// unmoved) for anything else.
    #[inline]
    fn short_int(&mut self) -> Option<i64> {
        let negative = self.peek() == Some(b'-');
        let first = self.at + usize::from(negative);
        let mut at = first;
        let mut value: i64 = 0;
        while let Some(&digit @ b'0'..=b'9') = self.data.get(at) {
            value = value.wrapping_mul(10) + i64::from(digit - b'0');
            at += 1;
        }
        let digits = at - first;
        let plain = (1..=18).contains(&digits)
            && (digits == 1 || self.data[first] != b'0')
            && !matches!(self.data.get(at), Some(b'.' | b'e' | b'E'));
        if !plain {
            return None;
        }
        self.at = at;
        Some(if negative { -value } else { value })
    }

    /// Moves past a number, checking its grammar; says whether it is a float.
    fn skip_number(&mut self) -> Walk<bool> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next() {
            Some(b'0') => {}
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Decline),
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
            float = true;
        }
        Ok(float)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Walk<()> {
        match self.peek() {
            Some(b'0'..=b'9') => {
                self.digits();
                Ok(())
            }
            _ => Err(Decline),
        }
    }

    /// Skips one value no path reads, checking it is valid JSON.
    fn skip(&mut self, depth: usize) -> Walk<()> {
        if depth > MAX_DEPTH {
            return Err(Decline);
        }
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                self.space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(());
                }
                loop {
                    self.space();
                    self.skip_string()?;
                    self.space();
                    self.expect(b':')?;
                    self.space();
                    self.skip(depth + 1)?;
                    self.space();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b'}') => return Ok(()),
                        _ => return Err(Decline),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                self.space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(());
                }
                loop {
                    self.space();
                    self.skip(depth + 1)?;
                    self.space();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b']') => return Ok(()),
                        _ => return Err(Decline),
                    }
                }
            }
            Some(b'"') => self.skip_string(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => self.skip_number().map(|_| ()),
            None => Err(Decline),
        }
    }

    fn skip_string(&mut self) -> Walk<()> {
        self.expect(b'"')?;
        while self.scan()? == b'\\' {
            let mark = self.scratch.len();
            self.escape()?;
            self.scratch.truncate(mark);
        }
        Ok(())
    }
}
