"""Reading a py-spy profile (`py-spy record --format raw`: one `frame;frame;... count` line per
distinct stack, outermost frame first, each frame `function (file:line)`).

py-spy samples the process from outside. An in-process profiler distorts this workload:
pyinstrument's hook runs on every call into C, so a loop over many small C calls (the
per-message loop, librdkafka's accessors) looked ten times more expensive under it than it
is. Idle threads are not sampled, so shares are shares of CPU time.
"""

from __future__ import annotations

LOOP = "MapperLoop.run_once"  # one iteration of the mapper: consume, then handle the batch
CONSUME = "Consumer.consume"  # confluent-kafka's, invisible to py-spy: the loop's own samples
NATIVE_CONSUME = "NativeConsumer.consume_grouped"  # mapper.consumer = native (the default)

HOT_FRAMES = (
    ("MapperLoop._process", "handling consumed batches (all tasks)"),
    ("Preaggregator.run", "pre-aggregation of a batch"),
    ("CsvRecordDecoder.decode", "CSV decode (Polars reader, whole batch)"),
    ("Preaggregator._datasets", "data sets: group by, encode, bucket"),
    ("group_by_partition", "per-message loop: offsets and values per partition"),
    ("SeqStore.apply_batch", "Redis apply script"),
    ("SideTopicProducer.publish", "side topics"),
    (NATIVE_CONSUME, "Kafka consume, native: librdkafka and the batch's columns built in Rust"),
    (CONSUME, "Kafka consume, confluent-kafka: librdkafka and one Message object per record"),
)


def stacks(text: str) -> list[tuple[list[str], int]]:
    """(function names outermost first, samples) per line of a raw py-spy profile (pure)."""
    parsed = []
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        parsed.append(([frame.split(" (")[0] for frame in stack.split(";")], int(count)))
    return parsed


def inclusive_samples(text: str) -> dict[str, int]:
    """Function -> samples with it anywhere on the stack (counted once per stack), plus
    `CONSUME`: the samples whose innermost Python frame is the loop itself."""
    samples: dict[str, int] = {}
    for frames, count in stacks(text):
        for name in set(frames):
            samples[name] = samples.get(name, 0) + count
        if frames[-1] == LOOP:
            samples[CONSUME] = samples.get(CONSUME, 0) + count
    return samples


def hot_frame_shares(text: str) -> dict[str, float]:
    """Hot frame -> its share of the mapper loop's samples."""
    samples = inclusive_samples(text)
    loop = samples.get(LOOP)
    if not loop:
        return {}
    return {name: samples[name] / loop for name, _ in HOT_FRAMES if name in samples}


def hot_frame_lines(text: str) -> list[str]:
    """One line per hot frame found: its share of the mapper loop's CPU samples."""
    shares = hot_frame_shares(text)
    meanings = dict(HOT_FRAMES)
    return [f"`{name}` ({meanings[name]}): {share:.0%}" for name, share in shares.items()]


def top_functions(text: str, *, count: int = 20) -> list[tuple[str, float]]:
    """The `count` functions under the loop with the largest share of its samples (inclusive;
    other threads and the loop's callers left out)."""
    samples: dict[str, int] = {}
    for frames, value in stacks(text):
        if LOOP in frames:
            for name in set(frames[frames.index(LOOP) + 1 :]):
                samples[name] = samples.get(name, 0) + value
    loop = inclusive_samples(text).get(LOOP)
    if not loop:
        return []
    ranked = sorted(samples.items(), key=lambda item: (-item[1], item[0]))
    return [(name, value / loop) for name, value in ranked[:count]]
