# make run    build the module and start redis-server with it (127.0.0.1:$(PORT))
# make test   the set-up for the tests (scripts/deps.sh --test), then formatting,
#             lints, unit tests, and the integration tests against every server
# make fuzz   every fuzz target (fuzz/, nightly) for FUZZ_SECONDS each;
#             make test replays their corpora and saved crashes instead
# make bench  the side-by-side benchmark (python3 scripts/bench): throughput,
#             instruction counts when valgrind is installed, the targets
SHELL := /bin/bash
PORT ?= 6379
# The servers the integration tests run against, the whole suite on each:
# Redis 7.0.15 (Debian), Valkey 9.1.2, Redis 8.2.3 and Valkey 8.1.8 (tmp/,
# from scripts/deps.sh --test). On 2 shared cores each takes 1 to 2.5
# minutes, the four 5 to 7.5; all of make test 5.5 to 8.5 (under 15).
# Add one per line, or choose some: make test SERVERS="redis-server ...".
SERVERS ?= redis-server \
           $(CURDIR)/tmp/bin/valkey-server \
           $(CURDIR)/tmp/bin/redis-server-8.2 \
           $(CURDIR)/tmp/bin/valkey-server-8.1
MODULE := target/release/libredis_ratelimit.so

FUZZ_SECONDS ?= 60

.PHONY: deps build run test bench clean fuzz fuzz-seeds

deps:
	@scripts/deps.sh

build: deps
	cargo build --release

run: build
	@if (exec 3<>/dev/tcp/127.0.0.1/$(PORT)) 2>/dev/null; then \
		echo "Port $(PORT) is taken (a redis-server service?). Stop it, or: make run PORT=6380"; exit 1; fi
	@echo "Starting redis-server on 127.0.0.1:$(PORT) with $(MODULE). Try: redis-cli -p $(PORT) RL.THROTTLE rl:user:1 15 30 60"
	exec redis-server redis.conf.example --port $(PORT)

test:
	@scripts/deps.sh --test
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo test --lib
	cargo build --example floor
	@for server in $(SERVERS); do \
		echo "== integration tests against $$server"; \
		start=$$SECONDS; \
		REDIS_SERVER=$$server cargo test --test '*' || exit 1; \
		echo "== $$server: $$((SECONDS - start)) s"; \
	done

# On demand, outside make test: cargo-fuzz on the nightly toolchain, each
# target for FUZZ_SECONDS (scripts/fuzz.sh: logs in tmp/fuzz/, a summary of
# executions, coverage and findings per target).
fuzz:
	@scripts/deps.sh --fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# Rewrites the seed inputs of fuzz/corpus/<target>/seed-* (src/fuzzing.rs).
fuzz-seeds:
	cargo test --lib fuzzing::tests::write_seeds -- --ignored

bench: build
	cargo build --release --example floor
	python3 scripts/bench --module $(MODULE) --floor target/release/examples/libfloor.so

clean:
	cargo clean
	rm -rf tmp
