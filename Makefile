# make run    build the module and start redis-server with it (127.0.0.1:$(PORT))
# make test   the set-up for the tests (scripts/deps.sh --test), then formatting,
#             lints, unit tests, and the integration tests against every server
# make bench  the side-by-side benchmark (python3 scripts/bench): throughput,
#             instruction counts when valgrind is installed, the targets
SHELL := /bin/bash
PORT ?= 6379
# The servers the integration tests run against: add one per line.
SERVERS ?= redis-server \
           $(CURDIR)/tmp/bin/valkey-server
MODULE := target/release/libredis_ratelimit.so

.PHONY: deps build run test bench clean

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
		REDIS_SERVER=$$server cargo test --test '*' || exit 1; \
	done

bench: build
	cargo build --release --example floor
	python3 scripts/bench --module $(MODULE) --floor target/release/examples/libfloor.so

clean:
	cargo clean
	rm -rf tmp
