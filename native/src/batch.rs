//! The messages of one `BatchConsumer::consume`, cut by partition while they are read.

/// One partition's messages within a batch, in offset order.
pub(crate) struct Run {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) offsets: Vec<i64>,
    pub(crate) payloads: Vec<u8>, // joined by b'\n'
    pub(crate) ends: Vec<i64>, // message i is payloads[ends[i-1] + 1..ends[i]] (the first from 0)
}

/// The messages of one `consume`, one run per partition.
#[derive(Default)]
pub(crate) struct Batch {
    pub(crate) runs: Vec<Run>,
    last: Option<usize>, // the run the previous message went to: the next one usually does too
    pub(crate) count: usize,
}

impl Batch {
    pub(crate) fn push(&mut self, topic: &str, partition: i32, offset: i64, payload: &[u8]) {
        let index = match self.last {
            Some(i) if self.runs[i].partition == partition && self.runs[i].topic == topic => i,
            _ => self.run_of(topic, partition),
        };
        self.last = Some(index);
        let run = &mut self.runs[index];
        if run.offsets.last().is_some_and(|&last| last >= offset) {
            // Read again from `offset` (a seek, a new assignment): what follows it is outdated.
            let keep = run.offsets.partition_point(|&o| o < offset);
            self.count -= run.offsets.len() - keep;
            run.offsets.truncate(keep);
            run.ends.truncate(keep);
            run.payloads
                .truncate(run.ends.last().map_or(0, |&end| end as usize));
        }
        if !run.offsets.is_empty() {
            run.payloads.push(b'\n');
        }
        run.offsets.push(offset);
        run.payloads.extend_from_slice(payload);
        run.ends.push(run.payloads.len() as i64);
        self.count += 1;
    }

    /// The index of the partition's run, added when it has none yet.
    fn run_of(&mut self, topic: &str, partition: i32) -> usize {
        if let Some(i) = self
            .runs
            .iter()
            .position(|r| r.partition == partition && r.topic == topic)
        {
            return i;
        }
        self.runs.push(Run {
            topic: topic.to_string(),
            partition,
            offsets: Vec::new(),
            payloads: Vec::new(),
            ends: Vec::new(),
        });
        self.runs.len() - 1
    }

    /// Drop every message of the given partitions (revoked while this batch was collected).
    pub(crate) fn forget(&mut self, partitions: &[(String, i32)]) {
        if partitions.is_empty() {
            return;
        }
        self.runs.retain(|r| {
            !partitions
                .iter()
                .any(|(t, p)| *p == r.partition && *t == r.topic)
        });
        self.last = None;
        self.count = self.runs.iter().map(|r| r.offsets.len()).sum();
    }
}
