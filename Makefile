# The two commands for a fresh machine are `make run` and `make test`; both set up first.
PY := .venv/bin/python

.PHONY: setup run test lint unit bench down clean test-compose test-long

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m cli.main demo

# The tests that need no server on both cores; then the integration tests, two at a time (a
# worker and a cluster each, a test file per worker: most of them wait on servers and clocks);
# then, one at a time on one cluster, those marked `exclusive`, whose load or timing needs the
# cores to itself.
test: setup lint
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --ignore=tests/integration
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -m "not exclusive" \
		--durations=15 tests/integration
	$(PY) -m pytest -q -p no:cacheprovider -m exclusive --durations=15 tests/integration

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy --strict

# docker-compose.yml run with podman on images built from a local Debian base (no Docker Hub):
# podman set-up, the images (cached: rebuilt when their inputs change), then the cluster's test.
test-compose: setup
	@bash scripts/setup_compose.sh
	@bash scripts/compose_images.sh
	MARS_COMPOSE_TESTS=1 $(PY) -m pytest -q -p no:cacheprovider -s --durations=5 tests/compose

# The long modes, outside `make test`: the differential test's 240 random cases, a million
# groups in one window through a reducer killed after incremental checkpoints, and the
# mappers' acceptance volume (a million records).
test-long: setup
	MARS_DIFFERENTIAL_CASES=240 MARS_DIFFERENTIAL_BUDGET_S=1200 MARS_DIFFERENTIAL_SEED=2611 \
		$(PY) -m pytest -q -p no:cacheprovider -s tests/integration/test_differential.py
	MARS_MANY_GROUPS=1000000 $(PY) -m pytest -q -p no:cacheprovider -s \
		tests/integration/test_many_groups.py
	MARS_TEST_MAPPER_RECORDS=1000000 $(PY) -m pytest -q -p no:cacheprovider -s \
		tests/integration/mapper/test_mapper_exactness.py

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
