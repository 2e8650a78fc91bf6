"""PNG plots of a results dict (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.state_figures import window_label
from benchmarks.targets import LATENCY_P99_TARGET_S


def _series(
    rows: dict[str, Any], key: str
) -> tuple[list[int], list[float], list[float], list[float]]:
    xs = [int(x) for x in rows]
    med = [rows[x][key]["median"] for x in rows]
    low = [rows[x][key]["min"] for x in rows]
    high = [rows[x][key]["max"] for x in rows]
    return xs, med, low, high


def plot_all(results: dict[str, Any], img_dir: Path) -> dict[str, Path]:
    """Write every plot the results allow; returns name -> file."""
    img_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    if results.get("batch"):
        xs, med, low, high = _series(results["batch"], "records_per_s")
        fig, ax = plt.subplots(figsize=(6, 3.6))
        ax.plot(xs, med, marker="o", label="records/s (median)")
        ax.fill_between(xs, low, high, alpha=0.2, label="min–max")
        ax.set_xscale("log")
        ax.set_xlabel("batch size (records)")
        ax.set_ylabel("records/s, 1 mapper")
        ax.set_title("Mapper throughput vs batch size")
        ax.grid(True, alpha=0.3)
        ax.legend()
        written["batch"] = _save(fig, img_dir / "bench_batch_size.png")
    if results.get("processes"):
        xs, med, low, high = _series(results["processes"], "records_per_s")
        fig, ax = plt.subplots(figsize=(5, 3.4))
        ax.bar(
            [str(x) for x in xs],
            med,
            yerr=[
                [m - lo for m, lo in zip(med, low, strict=True)],
                [h - m for m, h in zip(med, high, strict=True)],
            ],
            capsize=4,
        )
        ax.set_xlabel("mapper processes")
        ax.set_ylabel("records/s")
        ax.set_title(f"Throughput vs mappers ({results['machine']['nproc']} cores)")
        written["processes"] = _save(fig, img_dir / "bench_processes.png")
    if results.get("e2e"):
        e2e = results["e2e"]
        bars = [
            ("Mars", e2e["mars"], "tab:blue"),
            ("PySpark SS", e2e["spark"], "tab:orange"),
            *([("Quix Streams", e2e["quix"], "tab:green")] if e2e.get("quix") else []),
            *([("Flink SQL", e2e["flink"], "tab:purple")] if e2e.get("flink") else []),
            ("ceiling\n(consume+decode)", e2e["ceiling"], "tab:gray"),
        ]
        fig, ax = plt.subplots(figsize=(7.5, 3.4))
        ax.bar(
            [name for name, _, _ in bars],
            [system["records_per_s"]["median"] for _, system, _ in bars],
            color=[color for _, _, color in bars],
        )
        ax.set_ylabel("records/s (median)")
        ax.set_title("End to end, reference query")
        written["e2e"] = _save(fig, img_dir / "bench_end_to_end.png")
    latency = results.get("latency") or {}
    if latency.get("latencies_s"):
        fig, ax = plt.subplots(figsize=(5.5, 3.4))
        for point in (latency, latency.get("lighter") or {}):
            ordered = sorted(point.get("latencies_s") or [])
            if ordered:
                shares = [(i + 1) / len(ordered) for i in range(len(ordered))]
                label = f"{point['rate']:,.0f} records/s"
                ax.plot(ordered, shares, marker=".", label=label)
        ax.axvline(
            LATENCY_P99_TARGET_S,
            color="tab:red",
            linestyle="--",
            label=f"target p99 <= {LATENCY_P99_TARGET_S:g} s",
        )
        ax.set_xlabel("seconds after the watermark passed end + grace")
        ax.set_ylabel("share of windows")
        ax.set_title("Window results readable (CDF)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        written["latency"] = _save(fig, img_dir / "bench_latency.png")
    if results.get("state"):
        written["state"] = _state_plot(results["state"], img_dir / "bench_state.png")
    return written


def _state_plot(state: dict[str, Any], path: Path) -> Path:
    """Redis above idle and reducer RSS over the run, one line per window length (run 1)."""
    fig, (redis_ax, rss_ax) = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    for window_s, row in state["by_window"].items():
        if not row.get("runs"):
            continue
        run = row["runs"][0]
        series, label = run["series"], window_label(int(window_s))
        idle = run["redis_idle_mb"]
        redis_ax.plot(series["t_s"], [v - idle for v in series["redis_mb"]], label=label)
        rss_ax.plot(series["t_s"], series["rss_mb"], label=label)
    redis_ax.set_ylabel("Redis MiB above idle")
    redis_ax.set_title(f"Memory vs window length ({state['rate']:,.0f} records/s)")
    rss_ax.set_ylabel("reducer RSS MiB")
    rss_ax.set_xlabel("seconds of traffic")
    for ax in (redis_ax, rss_ax):
        ax.grid(True, alpha=0.3)
        ax.legend(title="window")
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
