"""`WINDOWING CUMULATE <size> STEP <step> [GRACE <g>]`: cumulative windows (Flink's CUMULATE).

The windows `[s, s + step)`, `[s, s + 2 step)`, ... `[s, s + size)` of each max window
`[s, s + size)` (epoch-aligned like tumbling windows). Checked here, each error at its clause:
STEP is required (and only allowed) with CUMULATE, SLIDE is not; the step is at least
`MIN_STEP_MS`, at most the size, divides it, and gives at most `MAX_STEPS` windows per max
window (each step emits a row per group with state: a watermark jump over a max window costs
that many windows). EMIT CHANGES is refused: a cumulative task's window closes every step.
"""

from __future__ import annotations

from collections.abc import Mapping

from mars.sql.clauses import Duration, OptionValue
from mars.sql.errors import TaskError
from mars.tasks.spec import TaskOptions, WindowSpec

MIN_STEP_MS = 10
MAX_STEPS = 100_000


def cumulate_window(
    size: Duration, step: Duration | None, slide: Duration | None, grace: Duration | None
) -> WindowSpec:
    """The window of `WINDOWING CUMULATE <size> STEP <step>`; `size` is the WINDOWING clause."""
    if step is not None and not size.cumulate:
        raise TaskError(
            "STEP applies only to WINDOWING CUMULATE <size> (use SLIDE for hopping windows)",
            position=step.position,
        )
    if size.session:
        raise TaskError("STEP does not apply to session windows", position=size.position)
    if slide is not None:
        raise TaskError(
            "SLIDE does not apply to cumulative windows: STEP says how often they grow",
            position=slide.position,
        )
    if step is None:
        raise TaskError(
            "WINDOWING CUMULATE <size> needs STEP <n> <unit> (how often the window grows, "
            "e.g. WINDOWING CUMULATE 1 d STEP 1 m)",
            position=size.position,
        )
    if step.ms < MIN_STEP_MS:
        raise TaskError(f"STEP must be at least {MIN_STEP_MS} ms", position=step.position)
    if step.ms > size.ms:
        raise TaskError("STEP must not be larger than the window size", position=step.position)
    if size.ms % step.ms:
        raise TaskError(
            f"the window size ({size.ms} ms) must be a multiple of STEP ({step.ms} ms)",
            position=step.position,
        )
    if size.ms // step.ms > MAX_STEPS:
        raise TaskError(
            f"at most {MAX_STEPS:,} steps per window ({size.ms // step.ms:,} given): "
            "use a longer STEP",
            position=step.position,
        )
    if grace is not None and grace.ms < 0:
        raise TaskError("GRACE must not be negative", position=grace.position)
    return WindowSpec(
        size_ms=size.ms,
        slide_ms=step.ms,
        grace_ms=grace.ms if grace else 0,
        cumulate=True,
    )


def check_cumulate_task(options: TaskOptions, clause: Mapping[str, OptionValue]) -> None:
    """What cumulative windows do not support, said where the task asks for it."""
    if options.emit_interval_ms is not None:
        given = clause.get("emit")
        raise TaskError(
            "EMIT CHANGES does not apply to cumulative windows: each step already emits the "
            "window so far",
            position=None if given is None else given.position,
        )
