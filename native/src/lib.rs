//! `mars_native`, the mapper's hot paths (and the reducer's data-set decode) without a Python object per record or group:
//! `BatchConsumer` (this file), `line_shape` (line_shape.rs: the checks before a CSV batch is
//! parsed whole), `JsonColumnsDecoder` (json_columns.rs: a JSON batch read straight into the
//! columns a task reads), `AvroColumnsDecoder` (avro_columns.rs: the same for Avro payloads),
//! `ProtobufColumnsDecoder` (protobuf_columns.rs: the same for Protobuf payloads; the
//! three build typed_columns.rs's columns) and `GroupEntries` (group_entries.rs: a batch's
//! groups encoded and cut into data-set cells); `decode_dataset_windows` (dataset_columns.rs:
//! a data set read into the reducer's columns) and `GroupTable` (group_table.rs: an open
//! window's groups, which those merge into).
//!
//! `BatchConsumer` is a Kafka consumer (librdkafka, through the `rdkafka` crate) whose
//! `consume` hands Python one batch cut by partition, with no Python object per message.
//!
//! confluent-kafka's `Consumer.consume` builds a `Message` object per record, and the mapper
//! then calls five methods on each; at 200,000 records/s that was a quarter of a mapper's CPU.
//! Here the read loop runs in Rust with the GIL released, takes messages a batch at a time from
//! each assigned partition's own queue (partition_queues.rs), and copies each partition's
//! payloads into one buffer, joined by newlines (batch.rs); then, with the GIL, each run becomes its
//! offsets (a list), that buffer and its values' ends (`bytes`, native-endian i64): the
//! columns of `mars.engine.records.PartitionBatch`, whose values
//! (`mars.engine.joined_values.JoinedValues`) the CSV decoder reads without splitting them.
//!
//! Everything else (group membership, rebalance callbacks, seeks, pauses, commits) is
//! librdkafka's, exposed one-to-one, so the mapper's control flow is the same with either
//! consumer. A rebalance calls the Python callback given to `subscribe` from inside `consume`
//! or `close`, on the calling thread, as confluent-kafka does.

mod avro_columns;
mod batch;
mod dataset_columns;
mod group_entries;
mod group_table;
mod json_columns;
mod json_records;
mod line_shape;
mod partition_queues;
mod protobuf_columns;
mod typed_columns;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use rdkafka::client::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::util::Timeout;

use batch::{Batch, Run};
use partition_queues::PartitionQueues;

create_exception!(mars_native, NativeKafkaError, PyException);

const OFFSET_INVALID: i64 = -1001; // librdkafka's RD_KAFKA_OFFSET_INVALID
const SEEK_TIMEOUT: Duration = Duration::from_secs(10);
// How long one wait for messages lasts: the consumer queue (rebalances) and the partitions'
// queues are looked at in turn, so a message waits at most this long to be seen.
const IDLE_WAIT: Duration = Duration::from_millis(5);

/// A Kafka error as `NativeKafkaError(code, message)`: `code` is librdkafka's error code
/// (negative: local), -1 when the crate's error has none.
fn kafka_error(err: KafkaError) -> PyErr {
    let code = err.rdkafka_error_code().map_or(-1, |code| code as i32);
    NativeKafkaError::new_err((code, err.to_string()))
}

type Partitions = Vec<(String, i32, i64)>;

fn elements(tpl: &TopicPartitionList) -> Partitions {
    tpl.elements()
        .iter()
        .map(|e| {
            (
                e.topic().to_string(),
                e.partition(),
                e.offset().to_raw().unwrap_or(OFFSET_INVALID),
            )
        })
        .collect()
}

fn partition_list(partitions: &[(String, i32, i64)]) -> PyResult<TopicPartitionList> {
    let mut tpl = TopicPartitionList::new();
    for (topic, partition, offset) in partitions {
        tpl.add_partition_offset(topic, *partition, Offset::from_raw(*offset))
            .map_err(kafka_error)?;
    }
    Ok(tpl)
}

/// Calls the Python rebalance callback; keeps the first error it raised for `consume`. Holds
/// the assigned partitions' own queues (partition_queues.rs), split off at each assignment.
struct RebalanceContext {
    callback: Mutex<Option<Py<PyAny>>>,
    raised: Mutex<Option<PyErr>>,
    revoked: Mutex<Vec<(String, i32)>>, // since the batch being collected last looked
    queues: Mutex<PartitionQueues>,
}

impl RebalanceContext {
    /// After `consumer.assign(partitions)`: read them from their own queues.
    fn split_queues(&self, consumer: &BaseConsumer<Self>, partitions: &TopicPartitionList) {
        let assigned: Vec<(String, i32)> = partitions
            .elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        let client = consumer.client().native_ptr();
        self.queues.lock().unwrap().split(client, &assigned);
    }
}

impl ClientContext for RebalanceContext {
    // librdkafka's own log lines go to stderr, as with confluent-kafka's default logger.
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        if (level as i32) <= (RDKafkaLogLevel::Warning as i32) {
            eprintln!("%{}|{}| {}", level as i32, fac, log_message);
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        eprintln!("librdkafka error: {error}: {reason}");
    }
}

impl ConsumerContext for RebalanceContext {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let kind = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => "assign",
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS if consumer.assignment_lost() => {
                "lost"
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => "revoke",
            _ => "error",
        };
        if kind != "assign" {
            let mut revoked = self.revoked.lock().unwrap();
            revoked.extend(
                tpl.elements()
                    .iter()
                    .map(|e| (e.topic().to_string(), e.partition())),
            );
        }
        let handled = Python::attach(|py| {
            let callback = self
                .callback
                .lock()
                .unwrap()
                .as_ref()
                .map(|c| c.clone_ref(py));
            let Some(callback) = callback else {
                return false;
            };
            match callback.call1(py, (kind, elements(tpl))) {
                Ok(_) => true,
                Err(err) => {
                    self.raised.lock().unwrap().get_or_insert(err);
                    false
                }
            }
        });
        if !handled {
            // No callback, or it raised: librdkafka's default, so the group is not stuck.
            let result = if kind == "assign" {
                consumer
                    .assign(tpl)
                    .map(|()| self.split_queues(consumer, tpl))
            } else {
                consumer
                    .unassign()
                    .map(|()| self.queues.lock().unwrap().clear())
            };
            if let Err(err) = result {
                eprintln!("default {kind} failed: {err}");
            }
        }
    }
}

#[pyclass(module = "mars_native")]
struct BatchConsumer {
    consumer: BaseConsumer<RebalanceContext>,
}

#[pymethods]
impl BatchConsumer {
    /// `config`: librdkafka properties (values as strings).
    #[new]
    fn new(config: std::collections::HashMap<String, String>) -> PyResult<Self> {
        let mut client = ClientConfig::new();
        for (key, value) in &config {
            client.set(key, value);
        }
        let context = RebalanceContext {
            callback: Mutex::new(None),
            raised: Mutex::new(None),
            revoked: Mutex::new(Vec::new()),
            queues: Mutex::new(PartitionQueues::default()),
        };
        let consumer = client.create_with_context(context).map_err(kafka_error)?;
        Ok(Self { consumer })
    }

    /// Up to `max_messages` messages, waiting at most `timeout_s` for them (like
    /// confluent-kafka's `consume`). Returns `(runs, errors)`: runs are tuples
    /// `(topic, partition, offsets, payloads, ends)`, one per partition in the order they were
    /// first read: the payloads joined by newlines, `ends` each one's end in them as
    /// native-endian i64 bytes. Errors are strings. A message without a payload (a tombstone)
    /// is empty.
    fn consume<'py>(
        &self,
        py: Python<'py>,
        max_messages: usize,
        timeout_s: f64,
    ) -> PyResult<(Bound<'py, PyList>, Vec<String>)> {
        let (runs, errors) = py.detach(|| self.poll_batch(max_messages, timeout_s));
        if let Some(err) = self.consumer.context().raised.lock().unwrap().take() {
            return Err(err);
        }
        let out = PyList::empty(py);
        for run in runs {
            let ends: Vec<u8> = run.ends.iter().flat_map(|end| end.to_ne_bytes()).collect();
            out.append((
                run.topic,
                run.partition,
                run.offsets,
                PyBytes::new(py, &run.payloads),
                PyBytes::new(py, &ends),
            ))?;
        }
        Ok((out, errors))
    }

    /// Subscribe to `topics`; `on_rebalance(kind, partitions)` is called with kind "assign",
    /// "revoke", "lost" or "error" and a list of `(topic, partition, offset)`. It must call
    /// `assign` or `unassign`.
    fn subscribe(&self, topics: Vec<String>, on_rebalance: Py<PyAny>) -> PyResult<()> {
        *self.consumer.context().callback.lock().unwrap() = Some(on_rebalance);
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        self.consumer.subscribe(&names).map_err(kafka_error)
    }

    fn unsubscribe(&self) {
        self.consumer.unsubscribe();
    }

    fn assign(&self, partitions: Partitions) -> PyResult<()> {
        let tpl = partition_list(&partitions)?;
        self.consumer.assign(&tpl).map_err(kafka_error)?;
        self.consumer.context().split_queues(&self.consumer, &tpl);
        Ok(())
    }

    fn unassign(&self) -> PyResult<()> {
        self.consumer.unassign().map_err(kafka_error)?;
        self.consumer.context().queues.lock().unwrap().clear();
        Ok(())
    }

    fn pause(&self, partitions: Partitions) -> PyResult<()> {
        self.consumer
            .pause(&partition_list(&partitions)?)
            .map_err(kafka_error)
    }

    fn resume(&self, partitions: Partitions) -> PyResult<()> {
        self.consumer
            .resume(&partition_list(&partitions)?)
            .map_err(kafka_error)
    }

    /// Move the partition's fetch position; fails (like confluent-kafka's) while the
    /// partition's fetcher is not started.
    fn seek(&self, py: Python<'_>, topic: String, partition: i32, offset: i64) -> PyResult<()> {
        py.detach(|| {
            self.consumer.seek(
                &topic,
                partition,
                Offset::from_raw(offset),
                Timeout::After(SEEK_TIMEOUT),
            )
        })
        .map_err(kafka_error)
    }

    /// The next offset to fetch of each partition asked (-1001: unknown).
    fn position(&self, partitions: Vec<(String, i32)>) -> PyResult<Vec<i64>> {
        let positions = elements(&self.consumer.position().map_err(kafka_error)?);
        Ok(partitions
            .iter()
            .map(|(topic, partition)| {
                positions
                    .iter()
                    .find(|(t, p, _)| t == topic && p == partition)
                    .map_or(OFFSET_INVALID, |(_, _, offset)| *offset)
            })
            .collect())
    }

    #[pyo3(signature = (partitions, asynchronous))]
    fn commit(&self, py: Python<'_>, partitions: Partitions, asynchronous: bool) -> PyResult<()> {
        let tpl = partition_list(&partitions)?;
        let mode = if asynchronous {
            CommitMode::Async
        } else {
            CommitMode::Sync
        };
        py.detach(|| self.consumer.commit(&tpl, mode))
            .map_err(kafka_error)
    }

    /// topic -> (partition count, error or None), for every topic the cluster has.
    fn list_topics<'py>(&self, py: Python<'py>, timeout_s: f64) -> PyResult<Bound<'py, PyDict>> {
        let timeout = Duration::from_secs_f64(timeout_s);
        let metadata = py
            .detach(|| self.consumer.fetch_metadata(None, timeout))
            .map_err(kafka_error)?;
        let topics = PyDict::new(py);
        for topic in metadata.topics() {
            let error = topic.error().map(|code| format!("{code:?}"));
            topics.set_item(topic.name(), (topic.partitions().len(), error))?;
        }
        Ok(topics)
    }

    /// Leave the group (the revoke callback runs here) and stop fetching.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.consumer.close_queue().map_err(kafka_error)?;
        py.detach(|| {
            while !self.consumer.closed() {
                self.consumer.poll(Duration::from_millis(100));
            }
        });
        self.consumer.context().queues.lock().unwrap().clear();
        match self.consumer.context().raised.lock().unwrap().take() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}

impl BatchConsumer {
    /// The consumer queue first: its events (a rebalance calls the Python callback from here,
    /// on this thread) and any message forwarded to it before its partition's queue was split
    /// off; then the partitions' own queues (partition_queues.rs), a batch per call. When both
    /// are empty, a wait on the consumer queue of at most `IDLE_WAIT`, until the deadline.
    ///
    /// A rebalance while the batch is collected forgets what was collected for the revoked
    /// partitions, and a partition read again from an earlier offset (a seek, a new
    /// assignment) keeps only its messages before that offset: what librdkafka's batch consume
    /// does within one call. So a partition's offsets always ascend within a batch, each at
    /// most once.
    fn poll_batch(&self, max_messages: usize, timeout_s: f64) -> (Vec<Run>, Vec<String>) {
        let deadline = Instant::now() + Duration::from_secs_f64(timeout_s.max(0.0));
        let context = self.consumer.context();
        let mut batch = Batch::default();
        let mut errors = Vec::new();
        let mut wait = Duration::ZERO;
        while batch.count < max_messages {
            let polled = self.consumer.poll(wait);
            let revoked = std::mem::take(&mut *context.revoked.lock().unwrap());
            batch.forget(&revoked);
            match polled {
                Some(Ok(message)) => {
                    batch.push(
                        message.topic(),
                        message.partition(),
                        message.offset(),
                        message.payload().unwrap_or_default(),
                    );
                    wait = Duration::ZERO;
                    continue;
                }
                Some(Err(err)) => {
                    errors.push(err.to_string());
                    continue;
                }
                None => {}
            }
            let read = context
                .queues
                .lock()
                .unwrap()
                .read(&mut batch, &mut errors, max_messages);
            wait = if read > 0 {
                Duration::ZERO
            } else {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                left.min(IDLE_WAIT)
            };
        }
        (batch.runs, errors)
    }
}

impl Drop for BatchConsumer {
    // The partitions' queues hold references into the client: let them go before it.
    fn drop(&mut self) {
        self.consumer.context().queues.lock().unwrap().clear();
    }
}

#[pymodule]
fn mars_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BatchConsumer>()?;
    m.add_class::<group_entries::GroupEntries>()?;
    m.add_function(wrap_pyfunction!(group_entries::msgpack_array, m)?)?;
    m.add_class::<json_columns::JsonColumnsDecoder>()?;
    m.add_class::<avro_columns::AvroColumnsDecoder>()?;
    m.add_class::<protobuf_columns::ProtobufColumnsDecoder>()?;
    m.add_function(wrap_pyfunction!(line_shape::line_shape, m)?)?;
    m.add_function(wrap_pyfunction!(
        dataset_columns::decode_dataset_windows,
        m
    )?)?;
    m.add_class::<dataset_columns::DatasetWindow>()?;
    m.add_class::<group_table::GroupTable>()?;
    m.add_function(wrap_pyfunction!(json_records::json_records, m)?)?;
    m.add("NativeKafkaError", m.py().get_type::<NativeKafkaError>())?;
    Ok(())
}
