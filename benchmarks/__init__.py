"""Benchmarks of Mars: [Mars]'s experiments, scaled to one machine (`mars bench`).

One module per experiment (`exp_*.py`, each an `experiment.Experiment`), listed once in
`registry.py`; `runner.py` runs the chosen ones on a fresh local cluster and writes
`benchmarks/results/*.json`, the plots in `docs/img/` and `docs/benchmarks.md` (`report.py`,
its prose in `templates/`).
"""
