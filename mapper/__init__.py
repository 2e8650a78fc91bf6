"""The mapper process: Kafka consumer group -> per-task pre-aggregation -> Redis SEQ protocol.

Run with `mars mapper`. The chain of steps, one file each:
`task_router` (which RUNNING tasks read which topic, from the registry) -> `consumer_loop`
(poll a batch, group by partition, position partitions from Redis on assignment) ->
`batch_writer` (pre-aggregate, side records, one `apply_batch` per task, trim and retry on
REJECTED) -> commit Kafka offsets. `backpressure` pauses partitions, `liveness` sends the
idle heartbeats, `metrics` keeps the local snapshot, `process` wires it all and handles signals.
"""
