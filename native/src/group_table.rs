//! `GroupTable`: one open window's groups in a hash table keyed by each group's key bytes, its
//! states in fixed-width columns, for the reducer's columnar state (reducer/columnar_groups.py).
//!
//! A data set's window (`DatasetWindow`, dataset_columns.rs) is merged a row at a time: one
//! hash and one probe per row, the states merged in place. A window held as a Polars frame
//! instead is merged by concatenating the rows appended since and grouping them all again,
//! every row of the frame rehashed at each compaction: at 145,000 groups about five times the
//! CPU of the data sets' decoding, here about as much as the decoding.
//!
//! A key's bytes are its msgpack array, which the decoder takes only in msgspec's canonical
//! form: equal keys have equal bytes (dataset_columns.rs). The states merge as the aggregates'
//! `merge` does in Python (`mars.aggregates`), in the order the data sets come:
//! - `ADD` (COUNT, AVG's count): a + b;
//! - `ADD_NULLABLE` (SUM): a + b, NULL (no value yet) taking the other side;
//! - `ADD_RELAXED` (AVG's sum): a + b, an int and a float making a float;
//! - `MIN` and `MAX`: NULL taking the other side; on a tie MIN takes the newer value and MAX
//!   keeps the older (`_Extremum.merge`), which tells -0.0 from 0.0.
//!
//! `merge` *declines* (False, nothing merged) whatever the frame's rules would not hold as
//! columns either, for the caller to merge the window as a frame from then on (which falls
//! back to Python groups where needed, `reducer.columnar_groups`): keys of another width, a
//! column mixing kinds (ints and floats only in an AVG's sum), a boolean or string state, a
//! NULL in a COUNT or AVG state, ints whose absolute values summed over everything merged may
//! leave int64 (checked before any row is merged, as the frame's merge checks its sums).
//!
//! Each group has a changed mark, set by a merge and cleared by `saved`: a delta checkpoint
//! reads the changed groups only (`columns(changed_only=True)`).

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::dataset_columns::{put, DatasetWindow, Reader};
use crate::typed_columns::{
    column_kind, column_out, Column, ColumnOut, BOOL, FLOAT, INT, NULL, STRING,
};

const ADD: u8 = 0;
const ADD_NULLABLE: u8 = 1;
const ADD_RELAXED: u8 = 2;
const MIN: u8 = 3;
const MAX: u8 = 4;
/// Sums of absolute values below this cannot leave int64 (`INT_LIMIT` of the frames).
const INT_LIMIT: f64 = (1u64 << 62) as f64;

struct StateColumn {
    op: u8,
    tags: Vec<u8>,    // per group: NULL, INT or FLOAT
    values: Vec<u64>, // an int's or a float's bits, by the tag
    seen: [bool; 5],
    abs_total: f64, // the absolute values of every int merged, summed (ADD ops)
}

#[pyclass(module = "mars_native")]
pub struct GroupTable {
    key_width: Option<usize>,
    key_seen: Vec<[bool; 5]>,
    keys: Vec<u8>,      // every group's key bytes, one after the other
    key_ends: Vec<u32>, // group i's key ends here (and starts at the one before's end)
    index: HashTable<u32>,
    states: Vec<StateColumn>,
    changed: Vec<bool>,
    changed_count: usize,
}

#[pymethods]
impl GroupTable {
    /// A table whose state columns merge by `ops` (0 ADD, 1 ADD_NULLABLE, 2 ADD_RELAXED,
    /// 3 MIN, 4 MAX), in the order of the frame's state columns.
    #[new]
    fn new(ops: Vec<u8>) -> PyResult<Self> {
        if ops.iter().any(|&op| op > MAX) {
            return Err(PyValueError::new_err("unknown merge op"));
        }
        let states = ops
            .into_iter()
            .map(|op| StateColumn {
                op,
                tags: Vec::new(),
                values: Vec::new(),
                seen: [false; 5],
                abs_total: 0.0,
            })
            .collect();
        Ok(Self {
            key_width: None,
            key_seen: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            index: HashTable::new(),
            states,
            changed: Vec::new(),
            changed_count: 0,
        })
    }

    fn __len__(&self) -> usize {
        self.key_ends.len()
    }

    /// Merge a data set's window: True, or False when declined (nothing merged; see the
    /// module's docstring).
    fn merge(&mut self, py: Python<'_>, window: &DatasetWindow) -> bool {
        if window.rows == 0 {
            return true;
        }
        let Some(abs_totals) = self.accepts(window) else {
            return false;
        };
        py.detach(|| self.merge_rows(window, &abs_totals));
        true
    }

    /// The groups' columns (keys, then states, in the frame's layout) for Python, every
    /// group's or only those changed since `saved`.
    #[pyo3(signature = (*, changed_only = false))]
    fn columns<'py>(&self, py: Python<'py>, changed_only: bool) -> Vec<ColumnOut<'py>> {
        let rows: Vec<usize> = (0..self.key_ends.len())
            .filter(|&row| !changed_only || self.changed[row])
            .collect();
        let columns = py.detach(|| self.columns_of(&rows));
        columns
            .iter()
            .map(|column| column_out(py, column).expect("kinds checked at each merge"))
            .collect()
    }

    /// The groups changed since `saved` (or since the start).
    fn changed_count(&self) -> usize {
        self.changed_count
    }

    /// A checkpoint holds the groups as they are now: changes count from here.
    fn saved(&mut self) {
        self.changed.fill(false);
        self.changed_count = 0;
    }

    /// The bytes the table holds (its allocations' capacities).
    fn memory_bytes(&self) -> usize {
        let states: usize = self
            .states
            .iter()
            .map(|s| s.tags.capacity() + 8 * s.values.capacity())
            .sum();
        self.keys.capacity()
            + 4 * self.key_ends.capacity()
            + 5 * self.index.capacity()
            + self.changed.capacity()
            + states
    }
}

impl GroupTable {
    /// Whether `window` merges as columns: the new absolute-value totals of the states' ints
    /// if so, else None.
    fn accepts(&self, window: &DatasetWindow) -> Option<Vec<f64>> {
        let width = window.key_width;
        if self.key_width.is_some_and(|known| known != width)
            || window.columns.len() != width + self.states.len()
        {
            return None;
        }
        let (keys, states) = window.columns.split_at(width);
        for (j, (column, _)) in keys.iter().enumerate() {
            let known = self.key_seen.get(j).copied().unwrap_or([false; 5]);
            let kinds = joined(known, column.seen);
            if column_kind(kinds)? == FLOAT && kinds[INT as usize] {
                return None; // 1 and 1.0 are one key in Python, two here
            }
        }
        let mut abs_totals = Vec::with_capacity(self.states.len());
        for (state, (column, _)) in self.states.iter().zip(states) {
            let seen = column.seen;
            let kinds = joined(state.seen, seen);
            if seen[BOOL as usize] || seen[STRING as usize] {
                return None;
            }
            if seen[NULL as usize] && matches!(state.op, ADD | ADD_RELAXED) {
                return None;
            }
            if state.op != ADD_RELAXED && kinds[INT as usize] && kinds[FLOAT as usize] {
                return None;
            }
            let mut total = state.abs_total;
            if matches!(state.op, ADD | ADD_NULLABLE | ADD_RELAXED) && seen[INT as usize] {
                total += (0..window.rows)
                    .filter(|&row| column.tags[row] == INT)
                    .map(|row| column.ints[row].unsigned_abs() as f64)
                    .sum::<f64>();
                if total >= INT_LIMIT {
                    return None;
                }
            }
            abs_totals.push(total);
        }
        if self.keys.len() + window.keys_len() > u32::MAX as usize {
            return None;
        }
        Some(abs_totals)
    }

    fn merge_rows(&mut self, window: &DatasetWindow, abs_totals: &[f64]) {
        let width = window.key_width;
        self.key_width = Some(width);
        self.key_seen.resize(width, [false; 5]);
        let (keys, states) = window.columns.split_at(width);
        for (known, (column, _)) in self.key_seen.iter_mut().zip(keys) {
            *known = joined(*known, column.seen);
        }
        for ((state, (column, _)), &total) in self.states.iter_mut().zip(states).zip(abs_totals) {
            state.seen = joined(state.seen, column.seen);
            state.abs_total = total;
        }
        self.index.reserve(window.rows, |&group| {
            hash_key(key_of(&self.keys, &self.key_ends, group))
        });
        for row in 0..window.rows {
            let key = window.key(row);
            let hash = hash_key(key);
            let entry = self.index.entry(
                hash,
                |&group| key_of(&self.keys, &self.key_ends, group) == key,
                |&group| hash_key(key_of(&self.keys, &self.key_ends, group)),
            );
            let group = match entry {
                Entry::Occupied(found) => *found.get() as usize,
                Entry::Vacant(vacant) => {
                    let group = self.key_ends.len();
                    vacant.insert(group as u32);
                    self.keys.extend_from_slice(key);
                    self.key_ends.push(self.keys.len() as u32);
                    self.changed.push(false);
                    for state in &mut self.states {
                        state.tags.push(NULL);
                        state.values.push(0);
                    }
                    group
                }
            };
            if !self.changed[group] {
                self.changed[group] = true;
                self.changed_count += 1;
            }
            for (state, (column, _)) in self.states.iter_mut().zip(states) {
                state.merge(group, column, row);
            }
        }
    }

    /// The columns of groups `rows`, typed as the whole table's are.
    fn columns_of(&self, rows: &[usize]) -> Vec<Column> {
        let width = self.key_width.unwrap_or(0);
        let mut keys: Vec<Column> = (0..width).map(|_| Column::new(rows.len())).collect();
        for (at, &group) in rows.iter().enumerate() {
            let mut reader = Reader {
                data: key_of(&self.keys, &self.key_ends, group as u32),
                at: 0,
            };
            let _ = reader.array();
            for column in &mut keys {
                if let Ok(value) = reader.scalar() {
                    put(column, at, value);
                }
                column.offsets.push(column.text.len() as i64);
            }
        }
        let mut columns: Vec<Column> = keys
            .into_iter()
            .zip(&self.key_seen)
            .map(|(column, &seen)| typed_as(column, seen))
            .collect();
        for state in &self.states {
            let mut column = Column::new(rows.len());
            for (at, &group) in rows.iter().enumerate() {
                let bits = state.values[group];
                match state.tags[group] {
                    INT => column.int(at, bits as i64),
                    FLOAT => column.float(at, f64::from_bits(bits)),
                    _ => {}
                }
            }
            columns.push(typed_as(column, state.seen));
        }
        columns
    }
}

impl StateColumn {
    /// Merge row `row` of `column` into group `group`'s state.
    fn merge(&mut self, group: usize, column: &Column, row: usize) {
        let incoming = column.tags[row];
        let bits = match incoming {
            INT => column.ints[row] as u64,
            FLOAT => column.floats[row].to_bits(),
            _ => return, // NULL: no value (declined where a NULL is not one)
        };
        let held = self.tags[group];
        if held == NULL {
            self.tags[group] = incoming;
            self.values[group] = bits;
            return;
        }
        let old = self.values[group];
        let (tag, value) = match self.op {
            ADD | ADD_NULLABLE | ADD_RELAXED => {
                if held == INT && incoming == INT {
                    // (within int64: the absolute values' total was checked)
                    (INT, (old as i64).wrapping_add(bits as i64) as u64)
                } else {
                    (
                        FLOAT,
                        (as_float(held, old) + as_float(incoming, bits)).to_bits(),
                    )
                }
            }
            op => {
                let newer_wins = if held == INT {
                    let (old, new) = (old as i64, bits as i64);
                    if op == MIN {
                        new <= old
                    } else {
                        new > old
                    }
                } else {
                    let (old, new) = (f64::from_bits(old), f64::from_bits(bits));
                    if op == MIN {
                        new <= old
                    } else {
                        new > old
                    }
                };
                if newer_wins {
                    (incoming, bits)
                } else {
                    (held, old)
                }
            }
        };
        self.tags[group] = tag;
        self.values[group] = value;
    }
}

fn as_float(tag: u8, bits: u64) -> f64 {
    if tag == INT {
        bits as i64 as f64
    } else {
        f64::from_bits(bits)
    }
}

fn joined(left: [bool; 5], right: [bool; 5]) -> [bool; 5] {
    std::array::from_fn(|kind| left[kind] || right[kind])
}

/// `column` handed to Python as the kinds `seen` over the whole table make it (a column of
/// some groups only would otherwise be typed by theirs: NULL where the table holds ints).
fn typed_as(mut column: Column, seen: [bool; 5]) -> Column {
    let rows = column.tags.len();
    column.seen = seen;
    column.seen[NULL as usize] = column.tags.contains(&NULL);
    if (seen[INT as usize] || seen[BOOL as usize]) && column.ints.is_empty() {
        column.ints.resize(rows, 0);
    }
    if seen[FLOAT as usize] && column.floats.is_empty() {
        column.floats.resize(rows, 0.0);
    }
    column
}

fn key_of<'a>(keys: &'a [u8], ends: &[u32], group: u32) -> &'a [u8] {
    let group = group as usize;
    let start = if group == 0 {
        0
    } else {
        ends[group - 1] as usize
    };
    &keys[start..ends[group] as usize]
}

/// A 64-bit hash of a key's bytes: words mixed FxHash's way, then finished with MurmurHash3's
/// `fmix64`, whose last shifts bring the high bits down (hashbrown takes the bucket from the
/// low bits, and keys that differ in their last bytes differ in the high bits of a word).
fn hash_key(key: &[u8]) -> u64 {
    const SEED: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = key.len() as u64;
    let mut words = key.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        hash = (hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = (hash.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(SEED);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}
