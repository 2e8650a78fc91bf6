"""Every experiment of `mars bench`, in the order a run of all of them measures them.

Adding an experiment: a module defining it (`benchmarks.experiment.Experiment`), and its line
here; its settings, results file entry and report sections come with it.
"""

from __future__ import annotations

from typing import Any

from benchmarks.exp_balance import Balance
from benchmarks.exp_end_to_end import EndToEnd, Steady
from benchmarks.exp_faults import Faults
from benchmarks.exp_formats import InputFormats
from benchmarks.exp_group_scale import GroupScale
from benchmarks.exp_key_watermarks import KeyWatermarks
from benchmarks.exp_latency import Latency
from benchmarks.exp_mapper import BatchSize, ProcessCount
from benchmarks.exp_nexmark import Nexmark
from benchmarks.exp_profile import Profile
from benchmarks.exp_pull_query import PullQueries
from benchmarks.exp_spark_stream import SparkStream
from benchmarks.exp_state import State
from benchmarks.exp_statistics import Statistics
from benchmarks.exp_tasks import ManyTasks
from benchmarks.experiment import Experiment

EXPERIMENTS: tuple[Experiment[Any, Any], ...] = (
    BatchSize(),
    ProcessCount(),
    EndToEnd(),
    Steady(),
    InputFormats(),
    Latency(),  # after e2e and processes: it runs at half the rate they measured
    Faults(),
    State(),
    PullQueries(),
    Balance(),
    ManyTasks(),
    Profile(),
    Nexmark(),
    Statistics(),
    KeyWatermarks(),
    GroupScale(),
    SparkStream(),  # last: the Spark master and workers it starts stay up until the end
)
BY_NAME = {experiment.name: experiment for experiment in EXPERIMENTS}
NAMES = tuple(BY_NAME)
