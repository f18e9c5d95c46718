# rocketwatch: `make demo` and `make test` work on a fresh machine (they create .venv and install).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast bench bench-streaming lint java chromium postgresql clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# PySpark needs a JVM (17+). Install Debian's when it is missing and we may.
java:
	@command -v java >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing a Java runtime for PySpark"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; \
	  else echo "PySpark needs Java 17+: install openjdk-17-jre-headless" >&2; exit 1; fi; }

# The status page's browser tests drive Debian's headless Chromium (no browser downloads here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Chromium for the status page's browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "the browser tests need Debian's chromium: apt-get install chromium" >&2; exit 1; fi; }

# The HA coordinator's tests run a real PostgreSQL on loopback (tests/helpers/postgres.py) from
# Debian's server binaries (/usr/lib/postgresql/<version>/bin); no cluster of the package's own is created.
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing PostgreSQL for the HA coordinator's tests"; \
	    mkdir -p /etc/postgresql-common && echo "create_main_cluster = false" >> /etc/postgresql-common/createcluster.conf; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold postgresql; \
	  else echo "the HA tests need Debian's PostgreSQL server: apt-get install postgresql" >&2; exit 1; fi; }

demo: $(STAMP) java
	$(VENV)/bin/rocketwatch demo

# Two runs: what starts neither Spark nor a daemon spread over both cores, then the rest in one
# process, so that every test of it shares the one SparkSession.
test: $(STAMP) java chromium postgresql
	$(PY) -m pytest -m "not spark and not slow" -n 2 --durations=15
	$(PY) -m daemon.diagnose.warmup --daemon  # the class archive the Spark tests' JVMs start from (once per machine)
	$(PY) -m pytest -m "spark or slow" --durations=40

# The inner loop: every test that starts neither Spark nor a daemon subprocess, less the `slow` ones
# (seconds each; `make test` runs them), on both cores (under 2 min).
test-fast: $(STAMP) postgresql
	$(PY) -m pytest -m "not spark and not slow" -n 2 -q

bench: $(STAMP) java postgresql
	$(PY) -m pip install --quiet -e ".[test,bench]"
	for f in $(filter-out bench/streaming.py bench/streaming_ways.py,$(wildcard bench/*.py)); do echo "== $$f"; $(PY) $$f || exit 1; done

# Structured Streaming against the kept frames (~25 minutes): a design measurement, run on its own.
bench-streaming: $(STAMP) java
	$(PY) bench/streaming.py

lint: $(STAMP)
	$(VENV)/bin/ruff check daemon rules spark config tests bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
