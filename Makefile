# make run    build the module and start a fresh redis-server with it, on
#             127.0.0.1:6379, or the next free port when 6379 is taken
#             (make run PORT=6400 for another); it saves nothing
# make test   the set-up for the tests (scripts/deps.sh --test), then formatting,
#             lints, unit tests (with the replay of the fuzz corpora), the
#             integration tests and the client packages' tests against every
#             server, the Lua backend's conformance suite; then make dist and the checks of its
#             module (glibc, a smoke run of the extracted .so on every server)
# make dist   into dist/: the prebuilt module's tarball, the Debian package,
#             the Python client's wheel and sdist, and SHA256SUMS (the tools
#             from scripts/deps.sh --dist)
# make test-package   as root: installs dist/'s Debian package, runs Debian's
#             redis-server with it, purges it (scripts/test-package.sh)
# make fuzz   every fuzz target (fuzz/, nightly) for FUZZ_SECONDS each;
#             make test replays their corpora and saved crashes instead
# make bench  the side-by-side benchmark (python3 bench; bench/README.md):
#             throughput, instruction counts (with valgrind), the targets
SHELL := /bin/bash
PORT ?=
# The servers the integration tests run against, the whole suite on each:
# Redis 7.0.15 (Debian), Valkey 9.1.2, Redis 8.2.3 and Valkey 8.1.8 (tmp/,
# from scripts/deps.sh --test). On 2 cores each takes 100 to 122 s with the
# client packages' tests; all of .ci/run (make test, then make
# test-package) from a clean clone, every download and the builds from
# scratch included, 14 min 6 s (2026-11-28, load average about 1).
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
# make dist's parts; a new one is a target below and its name here.
DIST_PARTS := dist-module dist-deb dist-python dist-node

FUZZ_SECONDS ?= 60

.PHONY: deps build run test bench clean dist $(DIST_PARTS) test-dist test-package \
	python-install python-test test-node lua-test lua-dist fuzz fuzz-seeds

deps:
	@scripts/deps.sh

build: deps
	cargo build --release

# A fresh server each time: its directory is tmp/run/, emptied first, and it
# saves nothing (no dump.rdb, no AOF), so no key outlives it.
run: build
	@port="$(PORT)"; taken() { (exec 3<>"/dev/tcp/127.0.0.1/$$1") 2>/dev/null; }; \
	if [ -z "$$port" ]; then \
		port=6379; while taken $$port; do port=$$((port + 1)); done; \
		[ $$port = 6379 ] || echo "Port 6379 is taken (by the redis-server service?): using $$port."; \
	elif taken $$port; then echo "Port $$port is taken: make run PORT=<another>"; exit 1; fi; \
	rm -rf tmp/run && mkdir -p tmp/run && \
	echo "Starting redis-server on 127.0.0.1:$$port with $(MODULE). In another terminal: redis-cli -p $$port" && \
	exec redis-server redis.conf.example --port $$port --dir "$(CURDIR)/tmp/run" \
		--loadmodule "$(CURDIR)/$(MODULE)" --save "" --appendonly no

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
	CARGO_PROFILE_TEST_OPT_LEVEL=1 cargo test --lib
	cargo build --example floor
	tmp/node/node_modules/.bin/tsc -p clients/node/tsconfig.json --noEmit
	tmp/node/node_modules/.bin/tsc -p clients/node/test/types/tsconfig.json
	@for server in $(SERVERS); do \
		echo "== integration tests against $$server"; \
		start=$$SECONDS; \
		REDIS_SERVER=$$server cargo test --test '*' -- --skip $(BENCH_SMOKE) || exit 1; \
		pystart=$$SECONDS; \
		REDIS_SERVER=$$server $(MAKE) --no-print-directory python-test || exit 1; \
		nodestart=$$SECONDS; \
		REDIS_SERVER=$$server $(NODE_TESTS) || exit 1; \
		echo "== $$server: $$((SECONDS - start)) s (the Python client's: $$((nodestart - pystart)) s, the Node package's: $$((SECONDS - nodestart)) s)"; \
	done
	$(MAKE) --no-print-directory lua-test
	@echo "== the benchmark's smoke run (bench/smoke.rs), against $(firstword $(SERVERS))"
	REDIS_SERVER=$(firstword $(SERVERS)) cargo test --test bench_smoke
	$(MAKE) --no-print-directory dist test-dist

# The prebuilt artifacts: each part of DIST_PARTS (at the top) adds its
# files to dist/, then dist/SHA256SUMS lists them all.
dist: $(DIST_PARTS)
	@scripts/dist.sh sums

dist-module:
	@scripts/deps.sh --dist
	@scripts/dist.sh module

dist-deb: dist-module
	@scripts/dist.sh deb

# The tarball's checks (checksums, contents, glibc 2.17 at most), then a
# smoke run of its extracted module on every server: every command of the
# README and docs/ sessions, and every saved format of tests/fixtures.
test-dist:
	@scripts/test-dist.sh target/dist-check
	@for server in $(SERVERS); do \
		echo "== the extracted dist module against $$server"; \
		RATELIMIT_MODULE=$$(cat target/dist-check/module-path) REDIS_SERVER=$$server \
			cargo test --test readme --test formats || exit 1; \
	done

test-package:
	@scripts/test-package.sh

# The npm tarball of clients/node (tsc, the Lua backend's scripts of
# clients/lua/dist copied into lib/lua, then npm pack) into dist/.
dist-node:
	@scripts/deps.sh --node-tools
	rm -rf clients/node/lib
	cd clients/node && ../../tmp/node/node_modules/.bin/tsc -p tsconfig.json
	mkdir -p clients/node/lib/lua && cp clients/lua/dist/ratelimit.lua clients/lua/dist/manifest.json clients/node/lib/lua/
	mkdir -p dist
	cd clients/node && npm pack --silent --pack-destination ../../dist

# The Node package's tests, on the package installed from dist/ into
# tmp/node (make test runs them on every server of SERVERS).
# The module they load: RL_MODULE, by default the release build.
NODE_TESTS = RL_MODULE=$(RL_MODULE) NODE_PATH=$(CURDIR)/tmp/node/node_modules node --test --test-concurrency=1 clients/node/test/*.test.js
test-node:
	@scripts/deps.sh --test
	cargo build --release
	tmp/node/node_modules/.bin/tsc -p clients/node/tsconfig.json --noEmit
	tmp/node/node_modules/.bin/tsc -p clients/node/test/types/tsconfig.json
	@for server in $(SERVERS); do \
		echo "== Node package tests against $$server"; \
		start=$$SECONDS; \
		REDIS_SERVER=$$server $(NODE_TESTS) || exit 1; \
		echo "== Node package, $$server: $$((SECONDS - start)) s"; \
	done
# The Lua backend's conformance suite (clients/conformance): lints and types,
# then its tests with the Python package installed from dist/ into the venv
# and the Node package from dist/ into tmp/node (its executeLua, "node-lua"):
# the recorded cases on Valkey 8.1.8 under a faked clock (module and both
# packages' scripts), what holds without a faked clock on every server of
# SERVERS, the randomized differential run, the two packages' calendar
# arguments compared, 50 clients on one key, a replica.
lua-test:
	python3 clients/lua/build.py --check
	$(PYVENV)/bin/ruff check --config clients/conformance/pyproject.toml clients/conformance
	$(PYVENV)/bin/ruff format --check --config clients/conformance/pyproject.toml clients/conformance
	cd clients/conformance && ../../$(PYVENV)/bin/mypy --config-file pyproject.toml *.py
	cd tmp && RL_MODULE=$(RL_MODULE) $(CURDIR)/$(PYVENV)/bin/pytest -q \
		-p no:cacheprovider --rootdir $(CURDIR)/clients/conformance $(CURDIR)/clients/conformance

# The Lua backend's shipped script (clients/lua/dist/: ratelimit.lua and
# manifest.json), assembled from its parts in clients/lua/src/ by
# clients/lua/build.py; lua-test fails when it is not current.
lua-dist:
	python3 clients/lua/build.py

# On demand, outside make test: cargo-fuzz on the nightly toolchain, each
# target for FUZZ_SECONDS (scripts/fuzz.sh: logs in tmp/fuzz/, a summary of
# executions, coverage and findings per target).
fuzz:
	@scripts/deps.sh --fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# Rewrites the seed inputs of fuzz/corpus/<target>/seed-* (src/fuzzing/tests.rs).
fuzz-seeds:
	cargo test --lib fuzzing::tests::write_seeds -- --ignored

bench: build
	cargo build --release --example floor
	python3 bench --module $(MODULE) --floor target/release/examples/libfloor.so
	$(MAKE) dist-python python-install
	RL_MODULE=$(RL_MODULE) $(PYVENV)/bin/python bench/clients/python_bench.py
	@scripts/deps.sh --test
	NODE_PATH=$(CURDIR)/tmp/node/node_modules RL_MODULE=$(RL_MODULE) node bench/clients/node_bench.js

clean:
	cargo clean
	rm -rf tmp dist
