# make run    build the module and start redis-server with it (127.0.0.1:$(PORT))
# make test   the set-up for the tests (scripts/deps.sh --test), then formatting,
#             lints, unit tests, and the integration tests against every server
# make dist   the packages into dist/ (dist-python: the Python client's
#             wheel and sdist, built from clients/python)
# make bench  the side-by-side benchmark (python3 bench; bench/README.md):
#             throughput, instruction counts (with valgrind), the targets
SHELL := /bin/bash
PORT ?= 6379
# The servers the integration tests run against, the whole suite on each:
# Redis 7.0.15 (Debian), Valkey 9.1.2, Redis 8.2.3 and Valkey 8.1.8 (tmp/,
# from scripts/deps.sh --test). On 2 shared cores each takes 80 to 115 s;
# all of make test from a clean clone, the cargo build from scratch
# included, 8 min 27 s with a load average about 2; 12 min 41 s with 6 to 9
# (two other make test runs on the machine at the same time).
# Add one per line, or choose some: make test SERVERS="redis-server ...".
SERVERS ?= redis-server \
           $(CURDIR)/tmp/bin/valkey-server \
           $(CURDIR)/tmp/bin/redis-server-8.2 \
           $(CURDIR)/tmp/bin/valkey-server-8.1
MODULE := target/release/libredis_ratelimit.so
# The Python client's virtual environment (scripts/python-venv.sh).
PYVENV := tmp/python-client/venv
RL_MODULE ?= $(CURDIR)/$(MODULE)
# The benchmark's smoke test (bench/smoke.rs) checks the benchmark, not a
# server: it runs once, after the loop over the servers, which skips it.
BENCH_SMOKE := quick_benchmark_reports_every_row

.PHONY: deps build run test bench clean dist dist-python python-install python-test

deps:
	@scripts/deps.sh

build: deps
	cargo build --release

run: build
	@if (exec 3<>/dev/tcp/127.0.0.1/$(PORT)) 2>/dev/null; then \
		echo "Port $(PORT) is taken (a redis-server service?). Stop it, or: make run PORT=6380"; exit 1; fi
	@echo "Starting redis-server on 127.0.0.1:$(PORT) with $(MODULE). Try: redis-cli -p $(PORT) RL.THROTTLE rl:user:1 15 30 60"
	exec redis-server redis.conf.example --port $(PORT)

dist: dist-python

# The wheel and the sdist of clients/python into dist/, built offline with
# the venv's hatchling.
dist-python:
	@scripts/python-venv.sh
	mkdir -p dist
	rm -f dist/redis_ratelimit_client-*
	$(PYVENV)/bin/python -m build --no-isolation --outdir dist clients/python

# The wheel of dist/ into the venv, as a user would install it.
python-install:
	$(PYVENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--force-reinstall --no-deps dist/redis_ratelimit_client-*.whl

# The Python client's lints and strict type check, then its tests run from
# tmp/ (where the source tree is not importable) against the wheel of dist/
# installed into the venv: make python-test REDIS_SERVER=... (the module
# from $(MODULE), built by make test, or $RL_MODULE).
python-test:
	$(PYVENV)/bin/ruff check clients/python examples/python
	cd clients/python && ../../$(PYVENV)/bin/mypy src
	cd tmp && RL_MODULE=$(RL_MODULE) $(CURDIR)/$(PYVENV)/bin/pytest -q -p no:cacheprovider \
		--rootdir $(CURDIR)/clients/python $(CURDIR)/clients/python/tests

test:
	@scripts/deps.sh --test
	$(MAKE) dist-python python-install
	cargo build --release
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo test --lib
	cargo build --example floor
	@for server in $(SERVERS); do \
		echo "== integration tests against $$server"; \
		start=$$SECONDS; \
		REDIS_SERVER=$$server cargo test --test '*' -- --skip $(BENCH_SMOKE) || exit 1; \
		pystart=$$SECONDS; \
		REDIS_SERVER=$$server $(MAKE) --no-print-directory python-test || exit 1; \
		echo "== $$server: $$((SECONDS - start)) s (the Python client's: $$((SECONDS - pystart)) s)"; \
	done
	@echo "== the benchmark's smoke run (bench/smoke.rs), against $(firstword $(SERVERS))"
	REDIS_SERVER=$(firstword $(SERVERS)) cargo test --test bench_smoke

bench: build
	cargo build --release --example floor
	python3 bench --module $(MODULE) --floor target/release/examples/libfloor.so
	$(MAKE) dist-python python-install
	RL_MODULE=$(RL_MODULE) $(PYVENV)/bin/python bench/clients/python_bench.py

clean:
	cargo clean
	rm -rf tmp
