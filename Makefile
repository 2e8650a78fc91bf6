# The two commands for a fresh machine are `make run` and `make test`; both set up first.
PY := .venv/bin/python

.PHONY: setup run test lint unit bench down clean

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m cli.main demo

# The tests that need no server on both cores, then the integration tests (one cluster, one at
# a time: their timing assumes the cores are theirs).
test: setup lint
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --ignore=tests/integration
	$(PY) -m pytest -q -p no:cacheprovider --durations=20 tests/integration

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy --strict

unit: setup
	$(PY) -m pytest -q tests/unit

# The peers (Quix Streams, Flink SQL) get a virtualenv of their own; without it the bench notes
# them as not measured, hence the `-`.
bench: setup
	-@bash scripts/setup_peers.sh
	$(PY) -m cli.main bench

down:
	-$(PY) -m cli.main local down

clean: down
	rm -rf .venv .cache .mars
