//! Each assigned partition's fetch queue, read a batch at a time.
//!
//! librdkafka forwards every partition's fetched messages to the consumer queue, where
//! rust-rdkafka's `poll` returns them one event at a time: three clock reads, two queue locks
//! and an allocation per message (a perf profile put the clock reads alone at 8 % of a mapper's
//! CPU). `rd_kafka_consume_batch_queue` takes a whole batch per call, but on the consumer queue
//! it would also serve the rebalance events, which librdkafka then answers with an unassign of
//! its own (rust-rdkafka registers no rebalance callback with it, only the event).
//!
//! So each partition's fetch queue is split off the consumer queue when it is assigned
//! (`rd_kafka_queue_get_partition`, then `rd_kafka_queue_forward(.., NULL)`, after which
//! librdkafka never forwards it again) and read here in batches, while the consumer queue is
//! left with the events. Messages forwarded to the consumer queue before the split are older
//! than any in the partition's own queue: `BatchConsumer::poll_batch` reads the consumer queue
//! first. `rd_kafka_consume_batch_queue` drops messages made outdated by a seek or a new
//! assignment, as a poll does.

use std::ffi::CString;

use rdkafka::bindings as rdsys;
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

use crate::batch::Batch;

/// One partition's fetch queue, split off the consumer queue.
struct PartitionQueue {
    topic: String,
    partition: i32,
    queue: *mut rdsys::rd_kafka_queue_t,
}

// librdkafka's queues are thread-safe; the pointer is only freed on drop.
unsafe impl Send for PartitionQueue {}
unsafe impl Sync for PartitionQueue {}

impl PartitionQueue {
    /// Up to `share` queued messages into `batch` (errors into `errors`), without waiting;
    /// `messages` is scratch space for librdkafka's array. Returns how many were pushed.
    fn take(
        &self,
        share: usize,
        messages: &mut Vec<*mut rdsys::rd_kafka_message_t>,
        batch: &mut Batch,
        errors: &mut Vec<String>,
    ) -> usize {
        messages.resize(share, std::ptr::null_mut());
        let got = unsafe {
            rdsys::rd_kafka_consume_batch_queue(self.queue, 0, messages.as_mut_ptr(), share)
        };
        let mut pushed = 0;
        for &message in &messages[..got.max(0) as usize] {
            let message_ref = unsafe { &*message };
            if message_ref.err == rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                let payload = if message_ref.payload.is_null() {
                    &[][..]
                } else {
                    unsafe {
                        std::slice::from_raw_parts(
                            message_ref.payload as *const u8,
                            message_ref.len,
                        )
                    }
                };
                batch.push(&self.topic, self.partition, message_ref.offset, payload);
                pushed += 1;
            } else {
                let code = RDKafkaErrorCode::from(message_ref.err);
                let error = KafkaError::MessageConsumption(code);
                errors.push(format!("{} [{}]: {error}", self.topic, self.partition));
            }
            unsafe { rdsys::rd_kafka_message_destroy(message) };
        }
        pushed
    }
}

impl Drop for PartitionQueue {
    fn drop(&mut self) {
        unsafe { rdsys::rd_kafka_queue_destroy(self.queue) };
    }
}

/// The fetch queues of the partitions assigned now.
#[derive(Default)]
pub(crate) struct PartitionQueues {
    queues: Vec<PartitionQueue>,
    next: usize, // the queue the next read starts at: no partition waits behind a busy one
}

impl PartitionQueues {
    /// After an assignment: split off each partition's queue (the previous ones are let go).
    pub(crate) fn split(&mut self, client: *mut rdsys::rd_kafka_t, partitions: &[(String, i32)]) {
        self.queues.clear();
        for (topic, partition) in partitions {
            let Ok(name) = CString::new(topic.as_str()) else {
                continue; // no such topic name: nothing is fetched for it
            };
            let queue =
                unsafe { rdsys::rd_kafka_queue_get_partition(client, name.as_ptr(), *partition) };
            if queue.is_null() {
                continue;
            }
            unsafe { rdsys::rd_kafka_queue_forward(queue, std::ptr::null_mut()) };
            self.queues.push(PartitionQueue {
                topic: topic.clone(),
                partition: *partition,
                queue,
            });
        }
        self.next = 0;
    }

    /// Let every queue go (after an unassign); their messages are outdated.
    pub(crate) fn clear(&mut self) {
        self.queues.clear();
    }

    /// Move what the queues hold into `batch` without waiting, until it holds `max_messages`,
    /// each queue taking an even share of what is left per pass. Returns how many were read.
    pub(crate) fn read(
        &mut self,
        batch: &mut Batch,
        errors: &mut Vec<String>,
        max_messages: usize,
    ) -> usize {
        let count = self.queues.len();
        if count == 0 {
            return 0;
        }
        let mut messages: Vec<*mut rdsys::rd_kafka_message_t> = Vec::new();
        let mut read = 0;
        loop {
            let mut this_pass = 0;
            for step in 0..count {
                let left = max_messages.saturating_sub(batch.count);
                if left == 0 {
                    break;
                }
                let queue = &self.queues[(self.next + step) % count];
                this_pass += queue.take(left.div_ceil(count), &mut messages, batch, errors);
            }
            self.next = (self.next + 1) % count;
            read += this_pass;
            if this_pass == 0 || batch.count >= max_messages {
                return read;
            }
        }
    }
}
