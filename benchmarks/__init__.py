"""Benchmarks of Mars: the paper's experiments, scaled to one machine (`mars bench`).

One module per experiment (`exp_*.py`); `runner.py` runs them on a fresh local cluster and
writes `benchmarks/results/*.json`, the plots in `docs/img/` and `docs/benchmarks.md`.
"""
