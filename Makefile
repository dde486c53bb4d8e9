# make run    build the module and start a fresh redis-server with it, on
#             127.0.0.1:6379, or the next free port when 6379 is taken
#             (make run PORT=6400 for another); it saves nothing
# make test   the whole suite, every tier below in this order, after the
#             set-up (scripts/deps.sh --test): what CI runs
#
# The tiers, each runnable alone (each runs the set-up it needs first):
# make lint         formatting and lints: Rust (fmt, clippy), the Python
#                   client (ruff, mypy --strict), the Node package (tsc),
#                   the conformance suite (ruff, mypy)
# make unit         the unit and property tests, the fuzz corpora replayed;
#                   no server
# make integration  tests/ against every server of SERVERS, then the
#                   benchmark's smoke run once
# make clients      each client package's tests, as installed from dist/,
#                   against every server (CLIENTS: make python, make node)
# make conformance  the Lua backend's conformance suite
# make dist         into dist/: the prebuilt module's tarball, the Debian
#                   package, the Python client's wheel and sdist, the npm
#                   tarball, and SHA256SUMS (the tools from deps.sh --dist)
# make test-dist    dist/'s checks, then its extracted module on every server
#
# Outside make test:
# make test-package   as root: installs dist/'s Debian package, runs Debian's
#             redis-server with it, purges it (scripts/test-package.sh; CI
#             runs it after make test)
# make fuzz   every fuzz target (fuzz/, nightly) for FUZZ_SECONDS each;
#             make unit replays their corpora and saved crashes instead
# make bench  the side-by-side benchmark (python3 bench; bench/README.md):
#             throughput, instruction counts (with valgrind), the targets
#
# The order of the builds is this file's: scripts/deps.sh only installs
# tools and servers, and builds nothing of the repository.
SHELL := /bin/bash
PORT ?=
# The servers the tests run against, the whole suite on each: Redis 7.0.15
# (Debian), Valkey 9.1.2, Redis 8.2.3 and Valkey 8.1.8 (tmp/, from
# scripts/deps.sh --test). What each tier takes: bench/results/README.md.
# Add one per line, or choose some: make test SERVERS="redis-server ...".
SERVERS ?= redis-server \
           $(CURDIR)/tmp/bin/valkey-server \
           $(CURDIR)/tmp/bin/redis-server-8.2 \
           $(CURDIR)/tmp/bin/valkey-server-8.1
# Every recipe sees them as REDIS_SERVERS: scripts/each-server.sh loops
# over them, and a suite that runs once across all servers reads them.
export REDIS_SERVERS = $(SERVERS)
EACH_SERVER := scripts/each-server.sh
MODULE := target/release/libredis_ratelimit.so
# The module the client packages' tests and the conformance suite load.
RL_MODULE ?= $(CURDIR)/$(MODULE)
export RL_MODULE
# The Python client's virtual environment (scripts/python-venv.sh).
PYVENV := tmp/python-client/venv
# The Node package's tools, test dependencies and the package from dist/.
NODE_PREFIX := tmp/node
TSC := $(NODE_PREFIX)/node_modules/.bin/tsc
NODE_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' clients/node/package.json)
NODE_TARBALL := dist/redis-ratelimit-$(NODE_VERSION).tgz
# The benchmark's smoke test (bench/smoke.rs) checks the benchmark, not a
# server: it runs once, after the loop over the servers, which skips it.
BENCH_SMOKE := quick_benchmark_reports_every_row

# The client packages' tiers, each a target below: its tests, against
# every server of SERVERS. A suite that covers every server in one run
# reads $REDIS_SERVERS; a new package is its name here and one target:
#   <name>: build
#   	cd clients/<name> && <its build, lints and tests>
CLIENTS := python node java go
# make dist's parts; a new one is a target below and its name here.
DIST_PARTS := dist-module dist-deb dist-python dist-node

FUZZ_SECONDS ?= 60

.PHONY: deps setup node-tools build floor run test lint rust-lint python-lint node-lint \
	conformance-lint unit integration clients $(CLIENTS) java-setup go-setup go-driver python-install python-test \
	node-install node-test conformance dist $(DIST_PARTS) test-dist test-package \
	test-node lua-test lua-dist fuzz fuzz-seeds bench clean

# --- set-up (scripts/deps.sh: installs, builds nothing) ---

deps:
	@scripts/deps.sh

setup:
	@scripts/deps.sh --test

node-tools:
	@scripts/deps.sh --node-tools

# --- builds ---

build: deps
	cargo build --release

# The benchmark's floor module (bench/floor.rs), for its smoke run.
floor: deps
	cargo build --example floor

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

# The npm tarball of clients/node (tsc, the Lua backend's shipped script
# of clients/lua/dist copied into lib/lua, then npm pack) into dist/; rebuilt only
# when a file it is made of is newer.
dist-node: $(NODE_TARBALL)
$(NODE_TARBALL): $(shell find clients/node/src clients/lua/dist clients/node/package.json \
		clients/node/README.md clients/node/tsconfig.json -type f 2>/dev/null)
	@scripts/deps.sh --node-tools
	rm -rf clients/node/lib
	cd clients/node && ../../$(TSC) -p tsconfig.json
	mkdir -p clients/node/lib/lua && cp clients/lua/dist/ratelimit.lua clients/lua/dist/manifest.json clients/node/lib/lua/
	mkdir -p dist
	cd clients/node && npm pack --silent --pack-destination ../../dist

# --- installs of what was built, as a user would install it ---

# The wheel of dist/ into the venv.
python-install: dist-python
	$(PYVENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--force-reinstall --no-deps dist/redis_ratelimit_client-*.whl

# The npm tarball of dist/ into tmp/node, where the tests import it
# (NODE_PATH); again only when it changed.
node-install: dist-node node-tools
	@if ! cmp -s $(NODE_TARBALL) $(NODE_PREFIX)/.package.tgz; then \
		echo "Installing $(NODE_TARBALL) into $(NODE_PREFIX) ..."; \
		npm install --silent --no-audit --no-fund --prefix $(NODE_PREFIX) ./$(NODE_TARBALL) && \
		cp $(NODE_TARBALL) $(NODE_PREFIX)/.package.tgz; \
	fi

# --- the tiers ---

test: setup lint unit integration clients conformance dist test-dist
	@echo "== make test: every tier passed"

lint: rust-lint python-lint node-lint conformance-lint

rust-lint: deps
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

python-lint: setup
	$(PYVENV)/bin/ruff check clients/python examples/python
	cd clients/python && ../../$(PYVENV)/bin/mypy src
	cd clients/python && ../../tmp/py39-check/venv/bin/mypy --config-file mypy-py39.ini src

# The package's sources, and a consumer's use of its installed types.
node-lint: setup node-install
	$(TSC) -p clients/node/tsconfig.json --noEmit
	$(TSC) -p clients/node/test/types/tsconfig.json

# Its type check imports the Python client as installed.
conformance-lint: setup python-install
	$(PYVENV)/bin/ruff check --config clients/conformance/pyproject.toml clients/conformance
	$(PYVENV)/bin/ruff format --check --config clients/conformance/pyproject.toml clients/conformance
	cd clients/conformance && ../../$(PYVENV)/bin/mypy --config-file pyproject.toml *.py

unit: deps
	CARGO_PROFILE_TEST_OPT_LEVEL=1 cargo test --lib

# The test binaries are built once, by the first server's run.
integration: setup floor
	@$(EACH_SERVER) "the integration tests" "cargo test --test '*' -- --skip $(BENCH_SMOKE)"
	@echo "== the benchmark's smoke run (bench/smoke.rs), against $(firstword $(SERVERS))"
	REDIS_SERVER=$(firstword $(SERVERS)) cargo test --test bench_smoke

clients: $(CLIENTS)

# The Python client's tests, run from tmp/ (where the source tree is not
# importable) against the wheel of dist/ installed into the venv.
python: python-lint python-install build
	@$(EACH_SERVER) "the Python client's tests" "$(MAKE) --no-print-directory python-test"

# One server's run: make python-test REDIS_SERVER=... (after make
# python-install and make build, or with RL_MODULE=<a module>).
python-test:
	cd tmp && $(CURDIR)/$(PYVENV)/bin/pytest -q -p no:cacheprovider \
		--rootdir $(CURDIR)/clients/python $(CURDIR)/clients/python/tests

# The Node package's tests, on the package installed from dist/ into
# tmp/node.
node: node-lint node-install build
	@$(EACH_SERVER) "the Node package's tests" "$(MAKE) --no-print-directory node-test"

node-test:
	NODE_PATH=$(CURDIR)/$(NODE_PREFIX)/node_modules node --test --test-concurrency=1 clients/node/test/*.test.js

# The Java packages (clients/java: the client, the Spring Boot starter, the
# gateway limiter; examples/java): their Maven repository is tmp/m2, filled
# by java-setup (the one Java step that downloads: dependencies and
# plugins, and the reactor installed there so that the example resolves),
# redone only when a pom changed. Then, offline: the reactor's tests
# against every server of SERVERS in one JVM (the starter, gateway and
# cluster tests on the first), the reactor installed into tmp/m2, and the
# example built against tmp/m2, not the reactor, tested over a real port:
# on Spring Boot 3.5 and again on Boot 4.0 (-Pboot4: the same sources under
# Boot 4's BOM), and the gateway example on Boot 4 with Spring Cloud 2025.1.
JAVA_MVN := mvn -B -q -Dmaven.repo.local=$(CURDIR)/tmp/m2
JAVA_POMS := $(shell find clients/java examples/java examples/java-gateway bench/clients/java -name pom.xml 2>/dev/null)
java-setup: tmp/m2/.resolved
tmp/m2/.resolved: $(JAVA_POMS)
	@echo "Resolving the Java packages' dependencies into tmp/m2 (Maven Central) ..."
	$(JAVA_MVN) -f clients/java/pom.xml install \
		-Dtest='ValuesTest,RequestLimiterTest' -Dsurefire.failIfNoSpecifiedTests=false
	$(JAVA_MVN) -f examples/java/pom.xml test-compile dependency:go-offline
	$(JAVA_MVN) -f examples/java/pom.xml -Pboot4 test-compile dependency:go-offline
	$(JAVA_MVN) -f examples/java-gateway/pom.xml test-compile dependency:go-offline
	$(JAVA_MVN) -f bench/clients/java/pom.xml compile dependency:go-offline
	mkdir -p tmp/java
	$(JAVA_MVN) -o -f clients/java/client/pom.xml dependency:build-classpath \
		-Dmdep.includeScope=runtime -Dmdep.outputFile=$(CURDIR)/tmp/java/deps.classpath
	echo "$(CURDIR)/tmp/m2/io/github/redis-ratelimit/redis-ratelimit-client/0.4.0/redis-ratelimit-client-0.4.0.jar:$$(cat tmp/java/deps.classpath)" \
		>tmp/java/conformance.classpath
	touch $@

java: setup java-setup build
	$(JAVA_MVN) -o -f clients/java/pom.xml install -Dredis.servers="$(SERVERS)" -Drl.module=$(RL_MODULE)
	$(JAVA_MVN) -o -f examples/java/pom.xml test -Dredis.servers="$(firstword $(SERVERS))" -Drl.module=$(RL_MODULE)
	$(JAVA_MVN) -o -f examples/java/pom.xml -Pboot4 test -Dredis.servers="$(firstword $(SERVERS))" -Drl.module=$(RL_MODULE)
	$(JAVA_MVN) -o -f examples/java-gateway/pom.xml test -Dredis.servers="$(firstword $(SERVERS))" -Drl.module=$(RL_MODULE)

# The Go package (clients/go: the package, redisrate, httplimit): go-setup
# downloads its modules and staticcheck into tmp/go (the one Go step that
# downloads); then gofmt, go vet, staticcheck, and go test -race across
# every server of SERVERS in one run (it reads REDIS_SERVERS); then
# examples/go, which imports the package by its module path (a replace),
# tested over a real port. The conformance driver (clients/conformance/
# go_driver, make go-driver) and the benchmark (bench/clients/go) are
# vetted here too.
GO_BIN := $(CURDIR)/tmp/go/bin
GO_DIRS := clients/go examples/go clients/conformance/go_driver bench/clients/go
STATICCHECK_VERSION := v0.8.2
go-setup: $(GO_BIN)/staticcheck
	cd clients/go && go mod download
	cd examples/go && go mod download
	cd clients/conformance/go_driver && go mod download
	cd bench/clients/go && go mod download
$(GO_BIN)/staticcheck:
	GOBIN=$(GO_BIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

go: go-setup build
	@test -z "$$(gofmt -l $(GO_DIRS))" || { gofmt -l $(GO_DIRS); echo "gofmt: the files above"; exit 1; }
	cd clients/go && go vet ./... && $(GO_BIN)/staticcheck ./...
	cd examples/go && go vet ./... && $(GO_BIN)/staticcheck ./...
	cd clients/conformance/go_driver && go vet ./... && $(GO_BIN)/staticcheck ./...
	cd bench/clients/go && go vet ./... && $(GO_BIN)/staticcheck ./...
	cd clients/go && go test -race -count=1 ./...
	cd examples/go && REDIS_SERVERS="$(firstword $(SERVERS))" go test -race -count=1 ./...

# The Lua backend's conformance suite (clients/conformance), with the Python
# package installed from dist/ into the venv and the Node package from
# dist/ into tmp/node (its executeLua, "node-lua"), the Java package as
# installed into tmp/m2 ("java-lua", one JVM) and the Go package through
# its driver ("go-lua", make go-driver): the recorded cases on
# Valkey 8.1.8 under a faked clock (the module and every package's scripts),
# what holds without a faked clock on the four servers (its own list,
# clients/conformance/harness.py's SERVERS), the randomized differential run, the two packages'
# calendar arguments compared, 50 clients on one key, a replica.
conformance: conformance-lint python-install node-install java-setup go-driver build
	python3 clients/lua/build.py --check
	cd tmp && $(CURDIR)/$(PYVENV)/bin/pytest -q \
		-p no:cacheprovider --rootdir $(CURDIR)/clients/conformance $(CURDIR)/clients/conformance

# The Go package's conformance driver ("go-lua": clients/conformance/go_driver),
# built against the package of this tree.
go-driver: go-setup
	cd clients/conformance/go_driver && go build -o $(GO_BIN)/conformance-driver .

# The Lua backend's shipped script (clients/lua/dist/: ratelimit.lua and
# manifest.json), assembled from its parts in clients/lua/src/ by
# clients/lua/build.py; make conformance fails when it is not current.
lua-dist:
	python3 clients/lua/build.py

# The older names of two tiers.
test-node: node
lua-test: conformance

# --- the artifacts ---

# Each part of DIST_PARTS (at the top) adds its files to dist/, then
# dist/SHA256SUMS lists them all.
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
test-dist: dist
	@scripts/test-dist.sh target/dist-check
	@RATELIMIT_MODULE=$$(cat target/dist-check/module-path) \
		$(EACH_SERVER) "the extracted dist module" "cargo test --test readme --test formats"

test-package:
	@scripts/test-package.sh

# --- outside make test ---

# cargo-fuzz on the nightly toolchain, each target for FUZZ_SECONDS
# (scripts/fuzz.sh: logs in tmp/fuzz/, a summary of executions, coverage
# and findings per target).
fuzz:
	@scripts/deps.sh --fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# Rewrites the seed inputs of fuzz/corpus/<target>/seed-* (src/fuzzing/tests.rs).
fuzz-seeds:
	cargo test --lib fuzzing::tests::write_seeds -- --ignored

bench: build setup python-install node-install java-setup go-setup
	cargo build --release --example floor
	python3 bench --module $(MODULE) --floor target/release/examples/libfloor.so
	$(PYVENV)/bin/python bench/clients/python_bench.py
	NODE_PATH=$(CURDIR)/$(NODE_PREFIX)/node_modules node bench/clients/node_bench.js
	bench/clients/java/run.sh $(firstword $(SERVERS))
	bench/clients/go/run.sh $(firstword $(SERVERS))

clean:
	cargo clean
	rm -rf tmp dist
